"""Plackett-Luce aggregation of sample-level results, as in ONEBench.

Per test case the agents measured on it are ordered by their score S = f(M), which honours the
metric's direction (an error, lower is better, scores higher the smaller it is). The ordering is
broken into pairwise comparisons: a higher score wins, and equal scores tie, counting half a win
to each. ``by="metric"`` orders by the raw metric instead (as ONEBench), in the direction that
``higher_is_better`` names. The pairwise win matrix gives the maximum-likelihood Bradley-Terry (pairwise
Plackett-Luce) strengths. Agents may be missing from any subset of test cases; only agents
measured on the same test case are compared.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..frames import Matches, MatchTableError, Table, encode_matches, to_flavour
from ._scale import LOGIT_TO_ELO


def pairwise_wins(matches: Table, *, by: str = "score", higher_is_better: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The win matrix ``W[i, j]`` (times agent i beat agent j; a tie adds ½ to both) and the agent ids.

    ``by="score"`` (default) compares scores, which honour the metric's direction; ``by="metric"``
    compares raw metrics (as ONEBench), the higher winning unless ``higher_is_better=False``.
    """
    m = encode_matches(matches)
    return wins_of(m, by=by, higher_is_better=higher_is_better), m.agent_ids


def check_ordering(by: str, higher_is_better: bool) -> None:
    """Refuse an ordering other than ``score`` or ``metric``, or a direction that is not a bool."""
    if by not in ("score", "metric"):
        raise ValueError(f"by must be 'score' or 'metric', got {by!r}")
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ValueError(f"higher_is_better must be true or false, got {higher_is_better!r}")


def ordering_values(m: Matches, by: str, higher_is_better: bool = True) -> np.ndarray:
    """What orders the agents on a test case, higher better: the score, or the metric in its direction."""
    check_ordering(by, higher_is_better)
    if by == "score":
        return m.score
    return m.metric if higher_is_better else -m.metric


def wins_of(m: Matches, *, by: str = "score", higher_is_better: bool = True) -> np.ndarray:
    """The pairwise win matrix of encoded matches (see :func:`pairwise_wins`)."""
    values = ordering_values(m, by, higher_is_better)
    n_t, n_a = len(m.test_case_ids), len(m.agent_ids)
    table = np.full((n_t, n_a), np.nan)
    table[m.test_case, m.agent] = values  # encode_matches refuses repeated (agent, test case) pairs
    present = ~np.isnan(table)
    wins = np.zeros((n_a, n_a))
    for i in range(n_a):
        rows = present[:, i]
        mine = table[rows, i][:, None]
        theirs = table[rows]
        both = present[rows]
        wins[i] = ((mine > theirs) & both).sum(axis=0) + 0.5 * ((mine == theirs) & both).sum(axis=0)
    np.fill_diagonal(wins, 0.0)
    return wins


def bradley_terry_mle(wins: np.ndarray, *, alpha: float = 0.0, tol: float = 1e-12, max_iter: int = 200) -> np.ndarray:
    """Maximum-likelihood log-strengths (mean 0) of a pairwise win matrix, by Newton's method.

    ``alpha`` adds ``alpha`` pseudo-wins each way between every pair (a symmetric prior that keeps
    the estimate finite for agents that never lose or never win).
    """
    w = np.asarray(wins, dtype=np.float64) + alpha * (1.0 - np.eye(len(wins)))
    n = w + w.T
    _check_connected(w)
    theta = np.zeros(len(w))
    total_wins = w.sum(axis=1)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j] = P(i beats j)
        grad = total_wins - (n * p).sum(axis=1)
        hess = n * p * p.T
        np.fill_diagonal(hess, 0.0)
        hess[np.diag_indices_from(hess)] = -hess.sum(axis=1)
        # the likelihood is invariant to a common shift: solve on the first n-1 coordinates
        step = np.zeros_like(theta)
        step[1:] = np.linalg.solve(hess[1:, 1:], -grad[1:])
        theta = theta + step
        if np.abs(step).max() < tol:
            break
    return theta - theta.mean()


def _check_connected(w: np.ndarray) -> None:
    """A finite MLE needs every agent to beat and be beaten along some chain (strong connectivity)."""
    from scipy.sparse.csgraph import connected_components

    n_components, _ = connected_components((w > 0).astype(np.int8), directed=True, connection="strong")
    if n_components > 1:
        raise MatchTableError(
            "the comparison graph is not strongly connected (some agent never loses or never wins against the rest), "
            "so its Plackett-Luce score is infinite; use alpha > 0 (rule: comparisons_connected)",
            rule="comparisons_connected",
        )


def plackett_luce(
    matches: Table,
    *,
    alpha: float = 0.0,
    by: str = "score",
    higher_is_better: bool = True,
    reference_agent: str | None = None,
    reference_rating: float = 1500.0,
) -> Table:
    """Agent scores from sample-level results, on the Elo scale.

    Parameters
    ----------
    matches : DataFrame
        ``test_case_id, agent_id, metric, score`` (incomplete coverage allowed).
    alpha : float
        L2-like regularization: pseudo-wins each way between every pair (0 = plain MLE).
    by : {"score", "metric"}
        What orders the agents on a test case: the score (default; honours the metric's
        direction) or the raw metric (ONEBench).
    higher_is_better : bool
        With ``by="metric"``: ``False`` for errors, latencies and other lower-is-better metrics.
    reference_agent, reference_rating : str, float
        Place ``reference_agent`` at ``reference_rating`` (default: the mean agent at it).

    Returns
    -------
    DataFrame
        ``agent_id, rating, strength`` (log-strength θ, mean 0; rating = 400·log10(e^θ) + shift),
        ``comparisons`` (pairwise comparisons the agent took part in), best first.
    """
    from ..frames import flavour_of
    from ..graph import warn_disconnected

    m = encode_matches(matches)
    check_ordering(by, higher_is_better)
    if alpha > 0:  # without pseudo-wins a disconnected graph is an error (rule comparisons_connected)
        warn_disconnected(m, "plackett_luce")
    wins, agent_ids = wins_of(m, by=by, higher_is_better=higher_is_better), m.agent_ids
    theta = bradley_terry_mle(wins, alpha=alpha)
    rating = theta * LOGIT_TO_ELO
    if reference_agent is None:
        rating = rating - rating.mean() + reference_rating
    else:
        where = np.flatnonzero(agent_ids == str(reference_agent))
        if len(where) == 0:
            raise MatchTableError(f"reference agent {reference_agent!r} is not in the match table", rule="reference_known")
        rating = rating - rating[where[0]] + reference_rating
    out = pd.DataFrame({"agent_id": agent_ids, "rating": rating, "strength": theta, "comparisons": (wins + wins.T).sum(axis=1)})
    out = out.sort_values(["rating", "agent_id"], ascending=[False, True], kind="stable")
    return to_flavour(out, flavour_of(matches))
