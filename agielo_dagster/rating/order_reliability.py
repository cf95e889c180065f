"""Reliability measured along one order as it is played: the bins and the measurer the rating pass uses.

Its own module so that the rating pass (``glicko``) and the reliability tables (``reliability``,
which rates twins with ``rate``) both import it, and neither imports the other at module level.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BIN_EDGES",
    "BIN_LO",
    "BIN_WIDTH",
    "N_BINS",
    "RELIABILITY_COLUMNS",
    "RHO_TEST_CASES",
    "OrderReliability",
    "rho_sample",
]

BIN_LO, BIN_WIDTH, N_BINS = -1250.0, 100.0, 24
BIN_EDGES = BIN_LO + BIN_WIDTH * np.arange(N_BINS + 1)  # −1250 … 1150
RELIABILITY_COLUMNS = ("fraction", "rho_test_cases", "rho_agents", "mae", "mse", "matches_outside_bins", "orders")

RHO_TEST_CASES = 200_000
"""Above this many test cases, ``rho_test_cases`` is Spearman's ρ over a fixed sample of this many (:func:`rho_sample`):
an approximation, its sampling sd about 0.0006 at ρ = 0.89 and 0.0015 at ρ = 0.43 at the last snapshots (20 draws
from 3M test cases; fewer of the sample have played at the first ones). Ranking every test case at each of 100
snapshots was most of a wide benchmark's rating time (1 agent × 10M test cases: about 190 s of about 590), and a
sample of 1M still took about 8 s there (0.08 s a snapshot; 200,000: 0.01 s) and some 60 bytes a test case while
it ran (issue 25). Every other reliability figure, and every rating, is computed on every match."""


def rho_sample(n_test_cases: int) -> np.ndarray | None:
    """The test cases ``rho_test_cases`` is measured on, in code order (None: every one): a seeded draw, the same for
    every benchmark of this many test cases."""
    if n_test_cases <= RHO_TEST_CASES:
        return None
    return np.sort(np.random.default_rng(20251125).choice(n_test_cases, RHO_TEST_CASES, replace=False))


class OrderReliability:
    """Reliability measurements along one order of matches.

    Holds each agent's matches in processing order (a counting sort of the ordered
    matches by agent), so that the binned errors after ``k`` matches read each agent's
    first ``played[a]`` matches in sequence, with its 24 bins in cache. ρ of the test cases is
    measured on ``sample`` (:func:`rho_sample`) when it is not None.
    """

    def __init__(self, agent, test_case, score, n_agents: int, n_test_cases: int = 0):
        from ._kernels import group_by  # imported on use: the package itself loads without numba

        self.csr_test_case = np.empty(len(agent), dtype=test_case.dtype)
        self.csr_score = np.empty(len(agent), dtype=score.dtype)
        self.start = group_by(agent, n_agents, test_case, score, self.csr_test_case, self.csr_score)
        self.n_agents = n_agents
        self.sample = rho_sample(n_test_cases)

    def binned(self, a_mu, t_mu, played) -> tuple[float, float, int]:
        """MAE, MSE and matches outside the bins, with each agent's first ``played[a]`` matches."""
        from ._kernels import binned_errors_by_agent

        w, abs_err, sq_err, outside = binned_errors_by_agent(
            self.start, played, self.csr_test_case, self.csr_score, a_mu, t_mu, BIN_LO, BIN_WIDTH, N_BINS
        )
        mae, mse = (abs_err / w, sq_err / w) if w > 0 else (np.nan, np.nan)
        return float(mae), float(mse), int(outside)

    def measure(self, a_mu, t_mu, a_mean, t_mean, played) -> tuple[float, float, float, float, int]:
        """ρ_test_cases, ρ_agents, MAE, MSE and matches outside the bins (players enter ρ once they have played).

        ``t_mean`` is every test case's mean metric, or only the sample's (in its order)."""
        from ._kernels import spearman_played

        if self.sample is not None:
            t_mean = t_mean if len(t_mean) == len(self.sample) else t_mean[self.sample]
        with np.errstate(invalid="ignore"):
            rho_t = spearman_played(t_mu if self.sample is None else t_mu[self.sample], t_mean)
            rho_a = spearman_played(a_mu, a_mean)
        return (rho_t, rho_a, *self.binned(a_mu, t_mu, played))
