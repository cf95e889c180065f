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

On graded scores the logistic link itself can be off: a calibrated link (:func:`score_link`,
a non-decreasing map of R_a − R_t to the mean score, fitted by isotonic regression on the
benchmark's own matches) replaces 1 / (1 + 10^(−(R_a − R_t)/400)) with ``link=``. It is the
held-out check's default prediction on graded benchmarks (docs/engine.md, "The held-out check").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .frames import (
    MatchTableError,
    Table,
    flavour_of,
    floats_of,
    ids_of,
    require_columns,
    to_flavour,
    to_pandas,
)
from .scoring import Scoring, identity

Floats: TypeAlias = "np.float64 | NDArray[np.float64]"
"""What the predictions return: a scalar for scalar inputs, else an array (they broadcast like numpy)."""

__all__ = [
    "ScoreLink",
    "combined_sigma",
    "competency_gaps",
    "expected_metric",
    "expected_score",
    "hard_cases",
    "link_from_diffs",
    "oracle_rating",
    "score_link",
    "share_beaten",
]


@dataclass(frozen=True, eq=False)
class ScoreLink:
    """A calibrated link: the expected score as a non-decreasing function of R_a − R_t.

    Piecewise linear through the knots (``rating_diff`` increasing, ``score`` non-decreasing),
    flat beyond the outer knots. Built by :func:`score_link` or :func:`link_from_diffs`.

    Attributes
    ----------
    rating_diff, score : ndarray
        The knots (read-only).
    matches : int
        How many matches it was fitted on.
    """

    rating_diff: np.ndarray
    score: np.ndarray
    matches: int

    def __call__(self, rating_diff: ArrayLike) -> np.ndarray:
        """E[S] at R_a − R_t (broadcasts like numpy)."""
        return np.interp(np.asarray(rating_diff, dtype=np.float64), self.rating_diff, self.score)


def link_from_diffs(rating_diff: ArrayLike, score: ArrayLike) -> ScoreLink:
    """The isotonic (least-squares, non-decreasing) regression of ``score`` on ``rating_diff``, as a :class:`ScoreLink`.

    Raises ``ValueError`` when there is nothing to fit (no match, or a non-finite value).
    """
    from sklearn.isotonic import IsotonicRegression  # imported on use: the package itself loads without sklearn

    d = np.asarray(rating_diff, dtype=np.float64)
    s = np.asarray(score, dtype=np.float64)
    if d.shape != s.shape or d.ndim != 1 or len(d) == 0:
        raise ValueError(f"a link needs as many rating differences as scores, at least one; got {d.shape} and {s.shape}")
    if not (np.isfinite(d).all() and np.isfinite(s).all()):
        raise ValueError("a link needs finite rating differences and scores")
    iso = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(d, s)
    knots_d, knots_s = np.array(iso.X_thresholds_, dtype=np.float64), np.array(iso.y_thresholds_, dtype=np.float64)
    knots_d.setflags(write=False)
    knots_s.setflags(write=False)
    return ScoreLink(rating_diff=knots_d, score=knots_s, matches=len(d))


def score_link(matches: Table, test_cases: Table, agents: Table) -> ScoreLink:
    """Calibrate the link between ratings and scores on a benchmark's matches.

    Parameters
    ----------
    matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: the matches the ratings were fitted on.
    test_cases, agents : DataFrame
        ``test_case_id, mu`` and ``agent_id, mu`` (e.g. from :func:`rate`).

    Returns
    -------
    ScoreLink
        For ``expected_score(..., link=)``, ``expected_metric(..., link=)``, ``hard_cases(..., link=)``.
        Meant for graded scores; on binary ones the logistic link is as good held out (docs/engine.md).
    """
    from .frames import encode_matches

    m = encode_matches(matches)
    t_df, _ = _ratings(test_cases, "test_case_id", "test-case table")
    a_df, _ = _ratings(agents, "agent_id", "agent table")
    t_mu = t_df.astype({"test_case_id": str}).set_index("test_case_id")["mu"].reindex(m.test_case_ids).to_numpy(np.float64)
    a_mu = a_df.astype({"agent_id": str}).set_index("agent_id")["mu"].reindex(m.agent_ids).to_numpy(np.float64)
    for ids, mu, what in ((m.test_case_ids, t_mu, "test_case_id"), (m.agent_ids, a_mu, "agent_id")):
        missing = np.flatnonzero(np.isnan(mu))
        if len(missing):
            raise MatchTableError(
                f"match table: {what} {ids[missing[0]]!r} has no rating ({len(missing)} ids lack one; rule: rated)",
                rule="rated",
                column=what,
            )
    return link_from_diffs(a_mu[m.agent] - t_mu[m.test_case], m.score)


def expected_score(
    agent_rating: ArrayLike, test_case_rating: ArrayLike, *, sigma: ArrayLike | None = None, link: ScoreLink | None = None
) -> Floats:
    """E[S] = 1 / (1 + 10^((R_t − R_a)/400)); broadcasts like numpy.

    Parameters
    ----------
    agent_rating, test_case_rating : array_like
        R_a and R_t.
    sigma : array_like, optional
        The rating deviation of the difference, √(σ_a² + σ_t²) for two estimated ratings.
        Given, the prediction integrates over it (Glicko's g(σ)): E[S] = 1 / (1 + 10^(−g(σ)(R_a − R_t)/400)).
    link : ScoreLink, optional
        A calibrated link (:func:`score_link`): E[S] = link(R_a − R_t) instead of the logistic curve.
        It already holds the ratings' uncertainty as the benchmark's matches show it, so not with ``sigma``.
    """
    if link is not None:
        if sigma is not None:
            raise ValueError("give sigma or link, not both: a calibrated link already holds the ratings' uncertainty")
        out = link(np.asarray(agent_rating, dtype=np.float64) - np.asarray(test_case_rating, dtype=np.float64))
        return out[()] if out.ndim == 0 else out
    diff = np.asarray(test_case_rating, dtype=np.float64) - np.asarray(agent_rating, dtype=np.float64)
    if sigma is not None:
        s = np.asarray(sigma, dtype=np.float64)
        diff = diff / np.sqrt(1.0 + 3.0 * (math.log(10.0) / 400.0) ** 2 * s * s / (math.pi * math.pi))
    out = 1.0 / (1.0 + 10.0 ** (diff / 400.0))
    return out[()] if out.ndim == 0 else out


def combined_sigma(agent_sigma: ArrayLike, test_case_sigma: ArrayLike) -> Floats:
    """√(σ_a² + σ_t²): the deviation of a rating difference, for ``expected_score(..., sigma=)``."""
    return np.hypot(np.asarray(agent_sigma, dtype=np.float64), np.asarray(test_case_sigma, dtype=np.float64))


def expected_metric(
    agent_rating: ArrayLike,
    test_case_rating: ArrayLike,
    scoring: Scoring | None = None,
    *,
    sigma: ArrayLike | None = None,
    link: ScoreLink | None = None,
) -> Floats:
    """E[M] = f⁻¹(E[S]) in the metric's own units (identity scoring by default); ``sigma``, ``link`` as in :func:`expected_score`.

    For a linear scoring (``identity``, ``minmax``) f⁻¹(E[S]) is the expected metric itself.
    """
    out = (scoring or identity()).metric(expected_score(agent_rating, test_case_rating, sigma=sigma, link=link))
    return out[()] if np.ndim(out) == 0 else out


def oracle_rating(hardest_test_case_rating: float, confidence: float) -> float:
    """Rating of an agent that beats the hardest test case with the given confidence."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be inside (0, 1), got {confidence}")
    return hardest_test_case_rating + 400.0 * math.log10(confidence / (1.0 - confidence))


def share_beaten(agent_rating: ArrayLike, test_case_ratings: ArrayLike, confidence: float = 0.5) -> Floats:
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


def _ratings(df: Table, id_column: str, what: str, *, ids: bool = True) -> tuple[pd.DataFrame, np.ndarray]:
    """The table as pandas and its ``mu``; ids checked where present, required unless ``ids`` is False."""
    pdf = to_pandas(df)
    require_columns(pdf, (id_column, "mu") if ids else ("mu",), what)
    if len(pdf) == 0:
        raise MatchTableError(f"{what} has no rows (rule: non_empty)", rule="non_empty")
    if id_column in pdf:
        ids_of(pdf, id_column, what)
    return pdf, floats_of(pdf, "mu", what)


def competency_gaps(
    test_cases: Table,
    agents: Table,
    confidences: Sequence[float] = (0.5, 0.9, 0.99),
    scoring: Scoring | None = None,
) -> Table:
    """Each agent's distance to an oracle that solves every test case.

    Parameters
    ----------
    test_cases : DataFrame
        ``mu`` (and ``test_case_id``, checked where present; the gaps never read it: a wide benchmark's
        pipeline leaves its millions of ids out).
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
    t_df, t_mu = _ratings(test_cases, "test_case_id", "test-case table", ids=False)
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
    test_cases: Table,
    agent_rating: float,
    metric_threshold: float,
    scoring: Scoring | None = None,
    *,
    agent_sigma: float | None = None,
    link: ScoreLink | None = None,
) -> Table:
    """The test cases on which an agent is expected to fall short of a metric threshold.

    The long tail of paper eq. 11: test cases whose expected metric
    E[M] = f⁻¹(E[S]) is worse than ``metric_threshold`` (below it, or above it
    for lower-is-better metrics). With ``agent_sigma`` the expectation integrates over
    both ratings' deviations (the test-case table's ``sigma`` column and ``agent_sigma``;
    see :func:`expected_score`); with ``link`` through a calibrated link (:func:`score_link`).

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
    e_s = expected_score(float(agent_rating), t_mu, sigma=sigma, link=link)
    e_m = scoring.metric(e_s)
    out = df.assign(expected_score=e_s, expected_metric=e_m)
    out = out[scoring.is_worse(e_m, metric_threshold)]
    out = out.sort_values(["mu", "test_case_id"], ascending=[False, True], kind="stable")
    return to_flavour(out, flavour)
