"""Reliability measured along one order as it is played: the bins and the measurer the rating pass uses.

Its own module so that the rating pass (``glicko``) and the reliability tables (``reliability``,
which rates twins with ``rate``) both import it, and neither imports the other at module level.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BIN_EDGES", "BIN_LO", "BIN_WIDTH", "N_BINS", "RELIABILITY_COLUMNS", "OrderReliability"]

BIN_LO, BIN_WIDTH, N_BINS = -1250.0, 100.0, 24
BIN_EDGES = BIN_LO + BIN_WIDTH * np.arange(N_BINS + 1)  # −1250 … 1150
RELIABILITY_COLUMNS = ("fraction", "rho_test_cases", "rho_agents", "mae", "mse", "matches_outside_bins", "orders")


class OrderReliability:
    """Reliability measurements along one order of matches.

    Holds each agent's matches in processing order (a counting sort of the ordered
    matches by agent), so that the binned errors after ``k`` matches read each agent's
    first ``played[a]`` matches in sequence, with its 24 bins in cache.
    """

    def __init__(self, agent, test_case, score, n_agents: int):
        from ._kernels import group_by  # imported on use: the package itself loads without numba

        self.csr_test_case = np.empty(len(agent), dtype=test_case.dtype)
        self.csr_score = np.empty(len(agent), dtype=score.dtype)
        self.start = group_by(agent, n_agents, test_case, score, self.csr_test_case, self.csr_score)
        self.n_agents = n_agents

    def binned(self, a_mu, t_mu, played) -> tuple[float, float, int]:
        """MAE, MSE and matches outside the bins, with each agent's first ``played[a]`` matches."""
        from ._kernels import binned_errors_by_agent

        w, abs_err, sq_err, outside = binned_errors_by_agent(
            self.start, played, self.csr_test_case, self.csr_score, a_mu, t_mu, BIN_LO, BIN_WIDTH, N_BINS
        )
        mae, mse = (abs_err / w, sq_err / w) if w > 0 else (np.nan, np.nan)
        return float(mae), float(mse), int(outside)

    def measure(self, a_mu, t_mu, a_mean, t_mean, played) -> tuple[float, float, float, float, int]:
        """ρ_test_cases, ρ_agents, MAE, MSE and matches outside the bins (players enter ρ once they have played)."""
        from ._kernels import spearman_played

        with np.errstate(invalid="ignore"):
            rho_t = spearman_played(t_mu, t_mean)
            rho_a = spearman_played(a_mu, a_mean)
        return (rho_t, rho_a, *self.binned(a_mu, t_mu, played))
