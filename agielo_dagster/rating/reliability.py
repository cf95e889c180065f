"""How far the ratings can be trusted, as the share of matches grows.

At each snapshot (the state after a share of the matches, in processing order):

- ``rho_test_cases``: Spearman ρ between test-case ratings and their mean metric
  over the matches played so far (expected negative: harder cases, lower metric);
- ``rho_agents``: the same for agents (expected positive);
- ``mae``, ``mse``: between empirical and predicted performance, binned as the
  AGI-Elo authors do. Per agent, the matches played so far are put in 100-point
  bins of rating difference (agent − test case, current ratings), left-closed,
  with edges −1250, −1150, …, 1150. Each (agent, bin) compares the agents' mean
  score with the expected score at the bin's mean difference, 1 / (1 + 10^(−d̄/400));
  errors are weighted by the (agent, bin) match count;
- ``matches_outside_bins``: how many of the matches played so far fall outside
  −1250 … 1150 and so are left out of ``mae`` and ``mse`` (the authors' edges are
  kept for comparability; on easy benchmarks, where strong agents meet weak test
  cases, this can be a sizeable share: compare it with the matches played,
  ``fraction · n_matches``);
- ``orders``: how many match orders the row's ratings average (see below).

With ``rate(shuffles=K)`` the rows before 100 % describe the first order, the
paper's single order, as it matures (they equal ``shuffles=1`` with the same seed);
the 100 % row measures the published ratings, the mean of the K orders, on every
match, and says ``orders = K``.

Two choices differ from the authors' script, and only before 100% of a full
cross of agents × test cases: players enter ρ only once they have played, and a
bin's mean difference is taken over the matches played (the script uses every
test case, played or not, at its current rating). For metrics where lower is
better (``minmax`` with ``higher_is_better: false``) both ρ change sign.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .frames import encode_matches, flavour_of, to_flavour, to_pandas

__all__ = ["BIN_EDGES", "RELIABILITY_COLUMNS", "binned_calibration", "reliability"]

BIN_LO, BIN_WIDTH, N_BINS = -1250.0, 100.0, 24
BIN_EDGES = BIN_LO + BIN_WIDTH * np.arange(N_BINS + 1)  # −1250 … 1150
RELIABILITY_COLUMNS = ("fraction", "rho_test_cases", "rho_agents", "mae", "mse", "matches_outside_bins", "orders")


def reliability(matches: Any, result: Any) -> Any:
    """One row per snapshot fraction: ``fraction, rho_test_cases, rho_agents, mae, mse, matches_outside_bins, orders``.

    ``result`` is what :func:`~agielo_dagster.rating.rate` returned for ``matches``.
    It carries the table when rated with ``with_reliability=True`` (the default,
    computed during the rating pass); otherwise the matches are rated again with
    the result's settings.
    """
    if result.reliability is not None and result.n_matches == len(matches):
        return result.reliability
    from .glicko import rate

    return rate(matches, **result.settings, with_reliability=True).reliability


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


def _ratings_of(players: Any, id_column: str, ids: np.ndarray) -> np.ndarray:
    """``mu`` of each of ``ids`` (NaN for an unknown one), converting only the two columns needed."""
    if flavour_of(players) == "arrow":  # looked up in arrow: no pandas index of a wide benchmark's ids
        import pyarrow as pa
        import pyarrow.compute as pc

        pos = pc.index_in(pa.array(np.asarray(ids, dtype=object), pa.string()), value_set=players.column(id_column).cast(pa.string()))
        found = pos.is_valid().to_numpy(zero_copy_only=False)
        mu = players.column("mu").to_numpy().astype(np.float64)
        return np.where(found, mu[pos.fill_null(0).to_numpy(zero_copy_only=False)], np.nan) if len(mu) else np.full(len(ids), np.nan)
    frame = to_pandas(players, (id_column, "mu")).astype({id_column: str})
    return frame.set_index(id_column)["mu"].reindex(ids).to_numpy()


def binned_calibration(matches: Any, test_cases: Any, agents: Any) -> Any:
    """Predicted against empirical score per agent and bin of rating difference.

    Parameters
    ----------
    matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``.
    test_cases, agents : DataFrame
        ``test_case_id, mu`` and ``agent_id, mu`` (e.g. from :func:`rate`).

    Returns
    -------
    DataFrame
        ``agent_id, bin_lo, bin_hi, matches, mean_rating_diff, empirical_score,
        expected_score``: one row per (agent, bin) holding at least one match.
        The count-weighted mean of ``|expected − empirical|`` is the 100% ``mae``.
        Matches whose difference falls outside −1250 … 1150 are in no row (the
        reliability table counts them in ``matches_outside_bins``).
    """
    flavour = flavour_of(matches)
    m = encode_matches(matches)
    t_mu = _ratings_of(test_cases, "test_case_id", m.test_case_ids)
    a_mu = _ratings_of(agents, "agent_id", m.agent_ids)
    diff = a_mu[m.agent] - t_mu[m.test_case]
    inside = (diff >= BIN_EDGES[0]) & (diff < BIN_EDGES[-1])
    key = m.agent[inside].astype(np.int64) * N_BINS + np.floor((diff[inside] - BIN_LO) / BIN_WIDTH).astype(np.int64)
    size = len(m.agent_ids) * N_BINS
    count = np.bincount(key, minlength=size)
    cells = np.flatnonzero(count)  # (agent, bin) cells holding a match, agents and bins in order
    out = pd.DataFrame(
        {
            "agent_id": m.agent_ids[cells // N_BINS],
            "bin": cells % N_BINS,
            "matches": count[cells],
            "mean_rating_diff": np.bincount(key, diff[inside], size)[cells] / count[cells],
            "empirical_score": np.bincount(key, m.score[inside], size)[cells] / count[cells],
        }
    )
    out.insert(1, "bin_lo", BIN_EDGES[out["bin"].to_numpy()])
    out.insert(2, "bin_hi", out["bin_lo"] + BIN_WIDTH)
    out["expected_score"] = 1.0 / (1.0 + 10.0 ** (-out["mean_rating_diff"] / 400.0))
    return to_flavour(out.drop(columns="bin"), flavour)
