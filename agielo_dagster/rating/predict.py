"""Predictions from ratings: expected score and metric, hard cases, competency gaps.

With ratings on the Elo scale, an agent rated R_a is expected to score
E[S] = 1 / (1 + 10^((R_t − R_a)/400)) on a test case rated R_t, and to reach the
metric E[M] = f⁻¹(E[S]). An oracle that solves every test case with confidence
S is rated R_oracle = R_t,max + 400·log10(S / (1 − S)); an agent's competency
gap is R_oracle − R_a.
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
    "competency_gaps",
    "expected_metric",
    "expected_score",
    "hard_cases",
    "oracle_rating",
    "share_beaten",
]


def expected_score(agent_rating: Any, test_case_rating: Any) -> Any:
    """E[S] = 1 / (1 + 10^((R_t − R_a)/400)); broadcasts like numpy."""
    diff = np.asarray(test_case_rating, dtype=np.float64) - np.asarray(agent_rating, dtype=np.float64)
    out = 1.0 / (1.0 + 10.0 ** (diff / 400.0))
    return out[()] if out.ndim == 0 else out


def expected_metric(agent_rating: Any, test_case_rating: Any, scoring: Scoring | None = None) -> Any:
    """E[M] = f⁻¹(E[S]) in the metric's own units (identity scoring by default)."""
    out = (scoring or identity()).metric(expected_score(agent_rating, test_case_rating))
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
    R_a − 400·log10(c / (1 − c)) and held flat beyond the easiest and hardest case.
    """
    ratings = np.sort(np.asarray(test_case_ratings, dtype=np.float64))
    n = len(ratings)
    shift = 400.0 * math.log10(confidence / (1.0 - confidence))
    out = np.interp(np.asarray(agent_rating, dtype=np.float64) - shift, ratings, 100.0 * np.arange(1, n + 1) / n)
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
        pct_beaten_50, pct_beaten_91``.
    """
    flavour = flavour_of(agents)
    _, t_mu = _ratings(test_cases, "test_case_id", "test-case table")
    a_df, a_mu = _ratings(agents, "agent_id", "agent table")
    hardest = float(t_mu.max())
    out = pd.DataFrame({"agent_id": a_df["agent_id"].astype(str).to_numpy(), "rating": a_mu})
    out["hardest_test_case_rating"] = hardest
    out["expected_score_on_hardest"] = expected_score(a_mu, hardest)
    out["expected_metric_on_hardest"] = (scoring or identity()).metric(out["expected_score_on_hardest"].to_numpy())
    for c in confidences:
        label = _confidence_label(c)
        out[f"oracle_rating_{label}"] = oracle_rating(hardest, c)
        out[f"gap_{label}"] = out[f"oracle_rating_{label}"] - a_mu
    out["pct_beaten_50"] = share_beaten(a_mu, t_mu, 0.5)
    out["pct_beaten_91"] = share_beaten(a_mu, t_mu, 0.91)
    out = out.sort_values(["rating", "agent_id"], ascending=[False, True], kind="stable")
    return to_flavour(out, flavour)


def hard_cases(
    test_cases: Any,
    agent_rating: float,
    metric_threshold: float,
    scoring: Scoring | None = None,
) -> Any:
    """The test cases on which an agent is expected to fall short of a metric threshold.

    The long tail of paper eq. 11: test cases whose expected metric
    E[M] = f⁻¹(E[S]) is worse than ``metric_threshold`` (below it, or above it
    for lower-is-better metrics).

    Returns
    -------
    DataFrame
        The matching rows of ``test_cases`` (all their columns) plus
        ``expected_score`` and ``expected_metric``, hardest first.
    """
    scoring = scoring or identity()
    flavour = flavour_of(test_cases)
    df, t_mu = _ratings(test_cases, "test_case_id", "test-case table")
    e_s = expected_score(float(agent_rating), t_mu)
    e_m = scoring.metric(e_s)
    out = df.assign(expected_score=e_s, expected_metric=e_m)
    out = out[scoring.is_worse(e_m, metric_threshold)]
    out = out.sort_values(["mu", "test_case_id"], ascending=[False, True], kind="stable")
    return to_flavour(out, flavour)
