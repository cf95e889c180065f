"""Matches simulated from known ratings: for recovery studies, tests and benchmarks."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["simulate_matches"]


def simulate_matches(
    test_case_ratings: ArrayLike,
    agent_ratings: ArrayLike,
    *,
    seed: int = 0,
    outcome: str = "binary",
    coverage: float = 1.0,
    discrimination: ArrayLike | None = None,
) -> pd.DataFrame:
    """Matches of every agent on every test case, drawn from the AGI-Elo model.

    Parameters
    ----------
    test_case_ratings, agent_ratings : array_like
        True ratings; test case ``i`` is named ``tc_{i}``, agent ``j`` ``agent_{j}``.
    seed : int
        Seed of the outcomes (and of the subset kept when ``coverage < 1``).
    outcome : {"binary", "graded", "expected"}
        ``binary`` draws S ~ Bernoulli(E[S]); ``graded`` draws S ~ Binomial(4, E[S]) / 4 (partial
        credit in quarters, mean E[S]); ``expected`` uses S = E[S] itself.
    coverage : float
        Share of the (agent, test case) pairs kept, at random.
    discrimination : array_like, optional
        Each test case's discrimination α (the 2PL): E[S] = 1 / (1 + 10^(−α (agent − test case)/400)); default 1.

    Returns
    -------
    pandas.DataFrame
        ``test_case_id, agent_id, metric, score`` with ``metric == score``.
    """
    t_true = np.asarray(test_case_ratings, dtype=np.float64)
    a_true = np.asarray(agent_ratings, dtype=np.float64)
    rng = np.random.default_rng(seed)
    a_idx = np.tile(np.arange(len(a_true)), len(t_true))
    t_idx = np.repeat(np.arange(len(t_true)), len(a_true))
    if coverage < 1.0:
        keep = rng.random(len(a_idx)) < coverage
        a_idx, t_idx = a_idx[keep], t_idx[keep]
    alpha = np.ones(len(t_true)) if discrimination is None else np.asarray(discrimination, dtype=np.float64)
    p = 1.0 / (1.0 + 10.0 ** (alpha[t_idx] * (t_true[t_idx] - a_true[a_idx]) / 400.0))
    if outcome == "binary":
        score = (rng.random(len(p)) < p).astype(np.float64)
    elif outcome == "graded":
        score = rng.binomial(4, p) / 4.0
    elif outcome == "expected":
        score = p
    else:
        raise ValueError(f"outcome must be 'binary', 'graded' or 'expected', got {outcome!r}")
    width_t, width_a = len(str(max(len(t_true) - 1, 0))), len(str(max(len(a_true) - 1, 0)))
    t_names = np.array([f"tc_{i:0{width_t}d}" for i in range(len(t_true))], dtype=object)
    a_names = np.array([f"agent_{j:0{width_a}d}" for j in range(len(a_true))], dtype=object)
    return pd.DataFrame({"test_case_id": t_names[t_idx], "agent_id": a_names[a_idx], "metric": score, "score": score})
