"""How far the ratings can be trusted, as the share of matches grows.

At each snapshot (the state after a share of the matches, in processing order):

- ``rho_test_cases``: Spearman ρ between test-case ratings and their mean metric
  over the matches played so far (expected negative: harder cases, lower metric);
- ``rho_agents``: the same for agents (expected positive);
- ``mae``, ``mse``: between empirical and predicted performance, binned as the
  AGI-Elo authors do. Per agent, the matches played so far are put in 100-point
  bins of rating difference (agent − test case, current ratings), left-closed,
  with edges −1250, −1150, …, 1150 (differences outside are left out). Each
  (agent, bin) compares the agents' mean score with the expected score at the
  bin's mean difference, 1 / (1 + 10^(−d̄/400)); errors are weighted by the
  (agent, bin) match count.

Two choices differ from the authors' script, and only before 100% of a full
cross of agents × test cases: players enter ρ only once they have played, and a
bin's mean difference is taken over the matches played (the script uses every
test case, played or not, at its current rating). For metrics where lower is
better (``minmax`` with ``higher_is_better: false``) both ρ change sign.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pandas as pd

from .frames import Matches, encode_matches, flavour_of, to_flavour, to_pandas

__all__ = ["BIN_EDGES", "binned_calibration", "reliability", "snapshot_reliability"]

BIN_LO, BIN_WIDTH, N_BINS = -1250.0, 100.0, 24
BIN_EDGES = BIN_LO + BIN_WIDTH * np.arange(N_BINS + 1)  # −1250 … 1150


def reliability(matches: Any, result: Any) -> Any:
    """One row per snapshot fraction: ``fraction, rho_test_cases, rho_agents, mae, mse``.

    ``result`` is what :func:`~agielo_dagster.rating.rate` returned for ``matches``.
    It carries the table when rated with ``with_reliability=True`` (the default,
    computed during the rating pass); otherwise the matches are rated again with
    the result's settings.
    """
    if result.reliability is not None and result.n_matches == len(matches):
        return result.reliability
    from .glicko import rate

    return rate(matches, **result.settings, with_reliability=True).reliability


def snapshot_reliability(ordered: Matches, stop: int, a_mu, t_mu, a_mean, t_mean) -> tuple[float, float, float, float]:
    """ρ_test_cases, ρ_agents, MAE, MSE after the first ``stop`` matches of ``ordered``.

    ``ordered`` holds the matches in processing order; ``a_mu``/``t_mu`` are the
    ratings and ``a_mean``/``t_mean`` the mean metrics (NaN before a player's first
    match) at that point.
    """
    mae, mse = _binned_errors(ordered.agent, ordered.test_case, ordered.score, stop, a_mu, t_mu)
    return _spearman_played(t_mu, t_mean), _spearman_played(a_mu, a_mean), mae, mse


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _binned_errors(agent, test_case, score, stop, a_mu, t_mu):
    n_a = len(a_mu)
    count = np.zeros(n_a * N_BINS)
    score_sum = np.zeros(n_a * N_BINS)
    diff_sum = np.zeros(n_a * N_BINS)
    span = BIN_WIDTH * N_BINS
    for i in range(stop):
        a = agent[i]
        d = a_mu[a] - t_mu[test_case[i]]
        x = d - BIN_LO
        if x >= 0.0 and x < span:
            j = a * N_BINS + int(x / BIN_WIDTH)  # x >= 0: truncation is floor
            count[j] += 1.0
            score_sum[j] += score[i]
            diff_sum[j] += d
    w = 0.0
    abs_err = 0.0
    sq_err = 0.0
    for j in range(n_a * N_BINS):
        c = count[j]
        if c > 0:
            err = 1.0 / (1.0 + 10.0 ** (-(diff_sum[j] / c) / 400.0)) - score_sum[j] / c
            w += c
            abs_err += c * abs(err)
            sq_err += c * err * err
    if w == 0.0:
        return np.nan, np.nan
    return abs_err / w, sq_err / w


def _spearman_played(rating: np.ndarray, mean_metric: np.ndarray) -> float:
    """Spearman ρ (average ranks for ties) over the players that have played (mean not NaN)."""
    played = ~np.isnan(mean_metric)
    if played.sum() < 2:
        return np.nan
    x, y = rating[played], mean_metric[played]
    return _pearson(_average_ranks(x, np.argsort(x)), _average_ranks(y, np.argsort(y)))


@numba.njit(cache=True, nogil=True)
def _average_ranks(x, idx):
    """1-based ranks of ``x`` given its sorting permutation ``idx``; ties share their mean rank."""
    n = len(x)
    ranks = np.empty(n)
    i = 0
    while i < n:
        j = i
        while j + 1 < n and x[idx[j + 1]] == x[idx[i]]:
            j += 1
        r = 0.5 * (i + j) + 1.0
        for q in range(i, j + 1):
            ranks[idx[q]] = r
        i = j + 1
    return ranks


@numba.njit(cache=True, nogil=True)
def _pearson(x, y):
    xm = x - x.mean()
    ym = y - y.mean()
    sxx = (xm * xm).sum()
    syy = (ym * ym).sum()
    if sxx == 0.0 or syy == 0.0:
        return np.nan
    return (xm * ym).sum() / np.sqrt(sxx * syy)


def binned_calibration(matches: Any, test_cases: Any, agents: Any) -> Any:
    """Predicted against empirical score per agent and bin of rating difference.

    Parameters
    ----------
    matches : DataFrame
        ``test_case_id, agent_id, metric, score``.
    test_cases, agents : DataFrame
        ``test_case_id, mu`` and ``agent_id, mu`` (e.g. from :func:`rate`).

    Returns
    -------
    DataFrame
        ``agent_id, bin_lo, bin_hi, matches, mean_rating_diff, empirical_score,
        expected_score``: one row per (agent, bin) holding at least one match.
        The count-weighted mean of ``|expected − empirical|`` is the 100% ``mae``.
    """
    flavour = flavour_of(matches)
    m = encode_matches(matches)
    t_mu = to_pandas(test_cases).astype({"test_case_id": str}).set_index("test_case_id")["mu"].reindex(m.test_case_ids).to_numpy()
    a_mu = to_pandas(agents).astype({"agent_id": str}).set_index("agent_id")["mu"].reindex(m.agent_ids).to_numpy()
    diff = a_mu[m.agent] - t_mu[m.test_case]
    inside = (diff >= BIN_EDGES[0]) & (diff < BIN_EDGES[-1])
    key = m.agent[inside] * N_BINS + np.floor((diff[inside] - BIN_LO) / BIN_WIDTH).astype(np.int64)
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
