"""Uncertainty of agent ratings: 95% intervals and ranks that treat overlapping intervals as ties.

An agent's rating varies for two reasons:

- **match order.** Sequential Glicko depends on the order of the matches. With K orders
  the published rating is their mean; its order variance is estimated from the orders
  themselves (from the antithetic pairs' means when there are at least two pairs, else
  ``mu_order_sd² / K``). A single order (``orders=1``) cannot measure its own order noise,
  and its interval leaves it out.
- **sampling of test cases.** Another draw of test cases from the same population would
  give another rating. The agent's rating solves Σ_t g_t (S_t − E_t) ≈ 0 over its matches,
  so its sampling variance is the robust (sandwich) variance of that estimating equation:
  Σ g_t² r_t² / (q Σ g_t² E_t(1 − E_t))², with the residuals r_t = S_t − E_t inflated by
  1/(1 − h_t) because each test case's rating has already absorbed the agent's result
  (h_t = q²σ_t²g(σ_a)²E_t(1 − E_t), the share of the test case's information from that match).
  It holds for graded scores as for binary ones (no likelihood is assumed for the residuals).

The interval is μ ± z·√(sampling variance + order variance). It describes where the agent
stands against the benchmark's test cases, i.e. against the other agents of its component:
Elo ratings have no absolute origin, and a common shift of every rating is not counted.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from ._kernels import Q, sandwich_sums

__all__ = ["agent_intervals", "interval_ranks", "order_variance", "ranks_among", "z_of"]


def z_of(level: float) -> float:
    """The two-sided normal quantile of a confidence level (1.96 for 0.95)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be inside (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def order_variance(per_order: np.ndarray) -> np.ndarray:
    """Variance of the mean over orders, from per-order values (rows: orders in antithetic pairs).

    Orders come in pairs (a permutation and its reverse); the pair means are independent,
    so with P ≥ 2 complete pairs the variance of the mean is var(pair means)/P. Otherwise
    the orders are treated as independent (var/K, conservative for antithetic pairs);
    with one order the order noise is unknown and counted as 0.
    """
    k = per_order.shape[0]
    if k == 1:
        return np.zeros(per_order.shape[1:])
    if k % 2 == 0 and k >= 4:
        pairs = 0.5 * (per_order[0::2] + per_order[1::2])
        return pairs.var(axis=0, ddof=1) / pairs.shape[0]
    return per_order.var(axis=0, ddof=1) / k


def agent_intervals(m, a_mu, a_sig, t_mu, t_sig, order_var, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(se, lo, hi) of every agent's rating: sampling of test cases (sandwich) plus match order."""
    num, info = sandwich_sums(m.agent, m.test_case, m.score, a_mu, a_sig, t_mu, t_sig, m.n_agents)
    with np.errstate(divide="ignore", invalid="ignore"):
        sampling = np.where(info > 0, num / (Q * info) ** 2, np.inf)
    se = np.sqrt(sampling + order_var)
    z = z_of(level)
    return se, a_mu - z * se, a_mu + z * se


def ranks_among(lo, hi, ref_lo, ref_hi) -> tuple[np.ndarray, np.ndarray]:
    """The best and worst ranks (1 = best) that intervals ``[lo, hi]`` allow among reference intervals.

    best = 1 + the number of references whose interval lies entirely above (``ref_lo > hi``);
    worst = 1 + the number of references whose interval reaches ``lo`` or higher (``ref_hi ≥ lo``).
    E.g. where a provisional agent, placed from part of a benchmark, would stand among the agents
    rated jointly, without changing their ranks.
    """
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    n = len(ref_lo)
    best = 1 + n - np.searchsorted(np.sort(np.asarray(ref_lo, dtype=np.float64)), hi, side="right")
    worst = 1 + n - np.searchsorted(np.sort(np.asarray(ref_hi, dtype=np.float64)), lo, side="left")
    return best.astype(np.int64), worst.astype(np.int64)


def interval_ranks(lo: np.ndarray, hi: np.ndarray, component: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks from intervals, within each component (1 = best).

    ``rank_lo`` = 1 + the number of agents whose interval lies entirely above this one
    (LMArena's rank by confidence interval: agents no interval separates share a rank);
    ``rank_hi`` = the number of agents whose interval reaches this one's lower end or higher,
    itself included: the worst rank the intervals allow. ``rank`` equals ``rank_lo``.
    """
    n = len(lo)
    rank_lo = np.empty(n, dtype=np.int64)
    rank_hi = np.empty(n, dtype=np.int64)
    for c in np.unique(component):
        idx = np.flatnonzero(component == c)
        best, worst = ranks_among(lo[idx], hi[idx], lo[idx], hi[idx])
        rank_lo[idx] = best
        rank_hi[idx] = worst - 1  # each agent's own interval reaches its lower end
    return rank_lo.copy(), rank_lo, rank_hi
