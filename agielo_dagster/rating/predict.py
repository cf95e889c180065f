"""Predictions from ratings: expected score and metric, hard cases, competency gaps.

With ratings on the Elo scale, an agent rated R_a is expected to score
E[S] = 1 / (1 + 10^((R_t − R_a)/400)) on a test case rated R_t, and to reach the
metric E[M] = f⁻¹(E[S]). An oracle that solves every test case with confidence
S is rated R_oracle = R_t,max + 400·log10(S / (1 − S)); an agent's competency
gap is R_oracle − R_a.

Ratings are estimates. With ``sigma`` (the combined rating deviation of the pair,
√(σ_a² + σ_t²)) the expected score integrates over them as Glicko does,
E[S] = 1 / (1 + 10^(−g(σ)(R_a − R_t)/400)): closer to ½ the less is known. On test
cases rated from a dozen matches this matters (``tests/rating/test_calibration.py``
measures it on a real regression benchmark).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .frames import (
    MatchTableError,
    flavour_of,
    floats_of,
    ids_of,
    require_columns,
    to_flavour,
    to_pandas,
)
from .scoring import Scoring, identity

__all__ = [
    "combined_sigma",
    "competency_gaps",
    "expected_metric",
    "expected_score",
    "hard_cases",
    "oracle_rating",
    "share_beaten",
]


def expected_score(agent_rating: Any, test_case_rating: Any, *, sigma: Any = None) -> Any:
    """E[S] = 1 / (1 + 10^((R_t − R_a)/400)); broadcasts like numpy.

    Parameters
    ----------
    agent_rating, test_case_rating : array_like
        R_a and R_t.
    sigma : array_like, optional
        The rating deviation of the difference, √(σ_a² + σ_t²) for two estimated ratings.
        Given, the prediction integrates over it (Glicko's g(σ)): E[S] = 1 / (1 + 10^(−g(σ)(R_a − R_t)/400)).
    """
    diff = np.asarray(test_case_rating, dtype=np.float64) - np.asarray(agent_rating, dtype=np.float64)
    if sigma is not None:
        s = np.asarray(sigma, dtype=np.float64)
        diff = diff / np.sqrt(1.0 + 3.0 * (math.log(10.0) / 400.0) ** 2 * s * s / (math.pi * math.pi))
    out = 1.0 / (1.0 + 10.0 ** (diff / 400.0))
    return out[()] if out.ndim == 0 else out


def combined_sigma(agent_sigma: Any, test_case_sigma: Any) -> Any:
    """√(σ_a² + σ_t²): the deviation of a rating difference, for ``expected_score(..., sigma=)``."""
    return np.hypot(np.asarray(agent_sigma, dtype=np.float64), np.asarray(test_case_sigma, dtype=np.float64))


def expected_metric(agent_rating: Any, test_case_rating: Any, scoring: Scoring | None = None, *, sigma: Any = None) -> Any:
    """E[M] = f⁻¹(E[S]) in the metric's own units (identity scoring by default); ``sigma`` as in :func:`expected_score`."""
    out = (scoring or identity()).metric(expected_score(agent_rating, test_case_rating, sigma=sigma))
    return out[()] if np.ndim(out) == 0 else out


def oracle_rating(hardest_test_case_rating: float, confidence: float) -> float:
    """Rating of an agent that beats the hardest test case with the given confidence."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be inside (0, 1), got {confidence}")
    return hardest_test_case_rating + 400.0 * math.log10(confidence / (1.0 - confidence))


def share_beaten(agent_rating: Any, test_case_ratings: Any, confidence: float = 0.5) -> Any:
    """Percentage of test cases the agent beats with at least ``confidence``.

    Computed as the AGI-Elo site does: the empirical CDF of the sorted test-case
    ratings (position i of N at 100·i/N), linearly interpolated at
    R_a − 400·log10(c / (1 − c)); 100 above the hardest case and 0 below the easiest
    (an agent that beats no test case beats none, not 1/N of them).
    """
    ratings = np.sort(np.asarray(test_case_ratings, dtype=np.float64))
    n = len(ratings)
    shift = 400.0 * math.log10(confidence / (1.0 - confidence))
    out = np.interp(np.asarray(agent_rating, dtype=np.float64) - shift, ratings, 100.0 * np.arange(1, n + 1) / n, left=0.0)
    return out[()] if np.ndim(out) == 0 else out


def _confidence_label(c: float) -> str:
    return f"{100 * c:g}".replace(".", "_")


def _ratings(df: Any, id_column: str, what: str) -> tuple[pd.DataFrame, np.ndarray]:
    pdf = to_pandas(df)
    require_columns(pdf, (id_column, "mu"), what)
    if len(pdf) == 0:
        raise MatchTableError(f"{what} has no rows (rule: non_empty)", rule="non_empty")
    ids_of(pdf, id_column, what)
    return pdf, floats_of(pdf, "mu", what)


def competency_gaps(
    test_cases: Any,
    agents: Any,
    confidences: Sequence[float] = (0.5, 0.9, 0.99),
    scoring: Scoring | None = None,
) -> Any:
    """Each agent's distance to an oracle that solves every test case.

    Parameters
    ----------
    test_cases : DataFrame
        ``test_case_id, mu``.
    agents : DataFrame
        ``agent_id, mu``.
    confidences : sequence of float
        Oracle confidences S; each gives ``oracle_rating_<100·S>`` and ``gap_<100·S>``.
    scoring : Scoring
        To express the expected score on the hardest case in metric units (identity by default).

    Returns
    -------
    DataFrame
        One row per agent, best first: ``agent_id, rating, hardest_test_case_rating,
        expected_score_on_hardest, expected_metric_on_hardest, oracle_rating_50, gap_50, …,
        pct_beaten_50, pct_beaten_91``, and ``component`` when both tables carry it.

    Notes
    -----
    When both tables carry the ``component`` column of :func:`rate` (the connected
    components of the match graph), each agent is measured against the test cases of
    its own component only: its hardest test case, its oracle and its share beaten. A
    gap across components would compare ratings that nothing links. An agent whose
    component has no test case in ``test_cases`` is an error (rule ``component_known``).
    """
    flavour = flavour_of(agents)
    t_df, t_mu = _ratings(test_cases, "test_case_id", "test-case table")
    a_df, a_mu = _ratings(agents, "agent_id", "agent table")
    by_component = "component" in a_df.columns and "component" in t_df.columns
    a_comp = a_df["component"].to_numpy() if by_component else np.zeros(len(a_df), dtype=np.int64)
    t_comp = t_df["component"].to_numpy() if by_component else np.zeros(len(t_df), dtype=np.int64)
    hardest = np.empty(len(a_mu))
    beaten_50, beaten_91 = np.empty(len(a_mu)), np.empty(len(a_mu))
    for c in np.unique(a_comp):
        mine, theirs = a_comp == c, t_comp == c
        if not theirs.any():
            row = int(np.flatnonzero(mine)[0])
            raise MatchTableError(
                f"agent table row {row}: component {c} has no test case in the test-case table (rule: component_known)",
                rule="component_known",
                row=row,
                column="component",
            )
        hardest[mine] = t_mu[theirs].max()
        beaten_50[mine] = share_beaten(a_mu[mine], t_mu[theirs], 0.5)
        beaten_91[mine] = share_beaten(a_mu[mine], t_mu[theirs], 0.91)
    out = pd.DataFrame({"agent_id": a_df["agent_id"].astype(str).to_numpy(), "rating": a_mu})
    out["hardest_test_case_rating"] = hardest
    out["expected_score_on_hardest"] = expected_score(a_mu, hardest)
    out["expected_metric_on_hardest"] = (scoring or identity()).metric(out["expected_score_on_hardest"].to_numpy())
    for c in confidences:
        label = _confidence_label(c)
        out[f"oracle_rating_{label}"] = hardest + oracle_rating(0.0, c)  # per agent: its component's hardest case
        out[f"gap_{label}"] = out[f"oracle_rating_{label}"] - a_mu
    out["pct_beaten_50"] = beaten_50
    out["pct_beaten_91"] = beaten_91
    if by_component:
        out["component"] = a_comp
    out = out.sort_values(["rating", "agent_id"], ascending=[False, True], kind="stable")
    return to_flavour(out, flavour)


def hard_cases(
    test_cases: Any,
    agent_rating: float,
    metric_threshold: float,
    scoring: Scoring | None = None,
    *,
    agent_sigma: float | None = None,
) -> Any:
    """The test cases on which an agent is expected to fall short of a metric threshold.

    The long tail of paper eq. 11: test cases whose expected metric
    E[M] = f⁻¹(E[S]) is worse than ``metric_threshold`` (below it, or above it
    for lower-is-better metrics). With ``agent_sigma`` the expectation integrates over
    both ratings' deviations (the test-case table's ``sigma`` column and ``agent_sigma``;
    see :func:`expected_score`).

    Returns
    -------
    DataFrame
        The matching rows of ``test_cases`` (all their columns) plus
        ``expected_score`` and ``expected_metric``, hardest first.
    """
    scoring = scoring or identity()
    flavour = flavour_of(test_cases)
    df, t_mu = _ratings(test_cases, "test_case_id", "test-case table")
    sigma = None
    if agent_sigma is not None:
        require_columns(df, ("sigma",), "test-case table")
        sigma = combined_sigma(float(agent_sigma), floats_of(df, "sigma", "test-case table", 0.0))
    e_s = expected_score(float(agent_rating), t_mu, sigma=sigma)
    e_m = scoring.metric(e_s)
    out = df.assign(expected_score=e_s, expected_metric=e_m)
    out = out[scoring.is_worse(e_m, metric_threshold)]
    out = out.sort_values(["mu", "test_case_id"], ascending=[False, True], kind="stable")
    return to_flavour(out, flavour)
