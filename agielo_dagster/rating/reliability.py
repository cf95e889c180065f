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

A logistic model's rows are fits of the matches played by then (``orders`` 0: no
order is averaged). With ``rate(model="glicko", orders=K)`` the rows before 100 % describe
the first order, the paper's single order, as it matures (they equal ``orders=1`` with the
same seed); the 100 % row measures the published ratings, the mean of the K orders, on every
match, and says ``orders = K``.

Two choices differ from the authors' script, and only before 100% of a full
cross of agents × test cases: players enter ρ only once they have played, and a
bin's mean difference is taken over the matches played (the script uses every
test case, played or not, at its current rating). For metrics where lower is
better (``minmax`` with ``higher_is_better: false``) both ρ change sign.

**A yardstick for the binned error** (:func:`calibration_twins`, the last three columns of
:func:`reliability`): even perfectly calibrated ratings leave a binned MAE, from the noise of
the scores in each (agent, bin) cell and from the ratings being estimated. A *twin* of the
benchmark has the same (agent, test case) pairs, and scores drawn from the fitted ratings as if
the model were true: binary scores S ~ Bernoulli(E), graded ones S ~ Beta(E·κ, (1 − E)·κ) with
the benchmark's dispersion, Var S = φ·E(1 − E), φ = Σ(S − E)² / ΣE(1 − E) and κ = 1/φ − 1
(Bernoulli when φ ≥ 1), E = 1 / (1 + 10^(−(R_a − R_t)/400)) from the published ratings. Each twin
is rated the same way (the result's model and settings; a logistic model's by ``TWIN_PASSES`` Newton steps
from the benchmark's fit) and its binned MAE at 100 % computed the same way. ``mae_twin`` is the twins' mean, ``mae_twin_hi`` their 95 % upper
quantile, and ``miscalibration_visible`` says whether the benchmark's own MAE exceeds it. φ is
measured against the published ratings, miscalibration included, so the twin is if anything
noisier than the benchmark: a visible miscalibration is a real one. Only the 100 % row carries
them (one rating pass per twin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .frames import Matches, Table, encode_matches, flavour_of, to_flavour, to_pandas
from .order_reliability import BIN_EDGES, BIN_LO, BIN_WIDTH, N_BINS, RELIABILITY_COLUMNS
from .ratings import fitted_ratings

if TYPE_CHECKING:
    import pyarrow as pa

    from .result import RatingResult

__all__ = [
    "BIN_EDGES",
    "DEFAULT_TWINS",
    "RELIABILITY_COLUMNS",
    "TWIN_COLUMNS",
    "CalibrationYardstick",
    "binned_calibration",
    "calibration_twins",
    "reliability",
    "with_yardstick",
]

TWIN_COLUMNS = ("mae_twin", "mae_twin_hi", "miscalibration_visible")
DEFAULT_TWINS = 10
TWIN_PASSES = 1
"""Newton steps a logistic model's twin takes from the benchmark's fit: one gives its ratings to first order (a twin's
scores are drawn from that fit), at a fraction of a fit."""


def reliability(matches: Table, result: RatingResult, *, twins: int = DEFAULT_TWINS, seed: int = 0) -> Table:
    """One row per snapshot fraction: ``fraction, rho_test_cases, rho_agents, mae, mse, matches_outside_bins, orders``,
    and the yardstick ``mae_twin, mae_twin_hi, miscalibration_visible`` on the 100 % row (null on the others).

    ``result`` is what :func:`~agielo_dagster.rating.rate` returned for ``matches``.
    It carries the table when rated with ``with_reliability=True`` (the default,
    computed during the rating pass); otherwise the matches are rated again with
    the result's settings. ``twins`` perfectly calibrated twins of the benchmark give the
    yardstick (:func:`calibration_twins`, seeded by ``seed``); ``twins=0`` leaves it out and
    returns the rating pass's table itself.
    """
    if result.reliability is not None and result.n_matches == len(matches):
        table = result.reliability
    else:
        from .ratings import rate

        table = rate(matches, **result.settings, with_reliability=True).reliability
    if not twins:
        return table
    return with_yardstick(table, calibration_twins(matches, result, twins=twins, seed=seed))


@dataclass(frozen=True)
class CalibrationYardstick:
    """What perfectly calibrated twins of a benchmark give for the binned MAE at 100 % (module docstring).

    Attributes
    ----------
    mae : float
        The benchmark's own binned MAE with its published ratings.
    mae_twins : tuple of float
        Each twin's binned MAE, rated the same way.
    mae_twin, mae_twin_hi : float
        Their mean and 95 % upper quantile (linear interpolation between the twins).
    miscalibration_visible : bool
        ``mae > mae_twin_hi``: the ratings miss the scores by more than noise explains.
    noise : str
        ``"bernoulli"`` or ``"beta"``; ``dispersion`` φ (1 for Bernoulli).
    twins, seed : int
    """

    mae: float
    mae_twins: tuple[float, ...]
    mae_twin: float
    mae_twin_hi: float
    miscalibration_visible: bool
    noise: str
    dispersion: float
    twins: int
    seed: int


def _bin_cells(agent: np.ndarray, diff: np.ndarray, score: np.ndarray, n_agents: int):
    """The (agent, bin) cells holding a match, agents and bins in order: cell key, match count, mean difference, mean score."""
    inside = (diff >= BIN_EDGES[0]) & (diff < BIN_EDGES[-1])
    key = agent[inside].astype(np.int64) * N_BINS + np.floor((diff[inside] - BIN_LO) / BIN_WIDTH).astype(np.int64)
    size = n_agents * N_BINS
    count = np.bincount(key, minlength=size)
    cells = np.flatnonzero(count)
    mean_diff = np.bincount(key, diff[inside], size)[cells] / count[cells]
    empirical = np.bincount(key, score[inside], size)[cells] / count[cells]
    return cells, count[cells], mean_diff, empirical


def _binned_mae(
    agent: np.ndarray, test_case: np.ndarray, score: np.ndarray, a_mu: np.ndarray, t_mu: np.ndarray, n_agents: int
) -> float:
    """The reliability table's binned MAE (per agent and 100-point bin, match-weighted) of every match, in numpy."""
    _, count, mean_diff, empirical = _bin_cells(agent, a_mu[agent] - t_mu[test_case], score, n_agents)
    if not len(count):
        return float("nan")
    expected = 1.0 / (1.0 + 10.0 ** (-mean_diff / 400.0))
    return float(np.sum(count * np.abs(expected - empirical)) / count.sum())


def calibration_twins(matches: Table, result: RatingResult, *, twins: int = DEFAULT_TWINS, seed: int = 0) -> CalibrationYardstick:
    """Rate ``twins`` perfectly calibrated twins of the benchmark and measure their binned MAE at 100 %.

    Parameters
    ----------
    matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: the matches ``result`` was rated on.
    result : RatingResult
        What :func:`~agielo_dagster.rating.rate` (or ``rate_parquet``) returned for them.
    twins : int
        How many twins (each costs one rating pass with the result's orders).
    seed : int
        Seed of the twins' scores.

    Returns
    -------
    CalibrationYardstick
    """
    if not isinstance(twins, (int, np.integer)) or isinstance(twins, bool) or twins < 1:
        raise ValueError(f"twins must be an integer >= 1, got {twins!r}")
    m = encode_matches(matches)
    a_mu = _ratings_of(result.agents, "agent_id", m.agent_ids)
    t_mu = _ratings_of(result.test_cases, "test_case_id", m.test_case_ids)
    mae = _binned_mae(m.agent, m.test_case, m.score, a_mu, t_mu, m.n_agents)
    expected = np.clip(1.0 / (1.0 + 10.0 ** (-(a_mu[m.agent] - t_mu[m.test_case]) / 400.0)), 1e-12, 1.0 - 1e-12)
    binary = bool(np.all((m.score == 0.0) | (m.score == 1.0)))
    spread = expected * (1.0 - expected)
    dispersion = 1.0 if binary else float(np.sum((m.score - expected) ** 2) / np.sum(spread))
    noise = "bernoulli" if binary or dispersion >= 1.0 else "beta"
    settings = result.settings  # the twins are rated as the benchmark was, each from the benchmark's own fit
    start = result.fitted if result.fitted is not None and result.n_matches == len(m) else fitted_ratings(m, settings)
    rng = np.random.default_rng(seed)
    maes = []
    for _ in range(int(twins)):
        if noise == "bernoulli":
            score = (rng.random(len(m)) < expected).astype(np.float64)
        else:
            kappa = 1.0 / dispersion - 1.0
            score = rng.beta(expected * kappa, (1.0 - expected) * kappa)
        twin = Matches(m.agent, m.test_case, score, score, m.agent_ids, m.test_case_ids, m.flavour)
        fitted = fitted_ratings(twin, settings, start, passes=TWIN_PASSES)
        maes.append(_binned_mae(m.agent, m.test_case, score, fitted.agent_mu, fitted.test_case_mu, m.n_agents))
    mae_twin_hi = float(np.quantile(maes, 0.95))
    return CalibrationYardstick(
        mae=mae,
        mae_twins=tuple(maes),
        mae_twin=float(np.mean(maes)),
        mae_twin_hi=mae_twin_hi,
        miscalibration_visible=bool(mae > mae_twin_hi),
        noise=noise,
        dispersion=dispersion,
        twins=int(twins),
        seed=seed,
    )


def with_yardstick(table: Table, yardstick: CalibrationYardstick | None) -> Table:
    """The reliability table with ``mae_twin, mae_twin_hi, miscalibration_visible`` on its 100 % row (null elsewhere).

    With ``yardstick=None`` the three columns are there and null (no twins were rated).
    """
    flavour = flavour_of(table)
    frame = to_pandas(table).copy()
    final = (frame["fraction"] == 1.0).to_numpy() & (yardstick is not None)
    frame["mae_twin"] = np.where(final, yardstick.mae_twin if yardstick else np.nan, np.nan)
    frame["mae_twin_hi"] = np.where(final, yardstick.mae_twin_hi if yardstick else np.nan, np.nan)
    visible = [yardstick.miscalibration_visible if f else pd.NA for f in final]
    frame["miscalibration_visible"] = pd.array(visible, dtype="boolean")
    return to_flavour(frame, flavour)


def _ratings_of(players: Table, id_column: str, ids: np.ndarray) -> np.ndarray:
    """``mu`` of each of ``ids`` (NaN for an unknown one), converting only the two columns needed."""
    if flavour_of(players) == "arrow":  # looked up in arrow: no pandas index of a wide benchmark's ids
        import pyarrow as pa
        import pyarrow.compute as pc

        pos = pc.index_in(
            pa.array(np.asarray(ids, dtype=object), pa.string()), value_set=players.column(id_column).cast(pa.string())
        )
        found = pos.is_valid().to_numpy(zero_copy_only=False)
        mu = players.column("mu").to_numpy().astype(np.float64)
        return (
            np.where(found, mu[pos.fill_null(0).to_numpy(zero_copy_only=False)], np.nan) if len(mu) else np.full(len(ids), np.nan)
        )
    frame = to_pandas(players, (id_column, "mu")).astype({id_column: str})
    return frame.set_index(id_column)["mu"].reindex(ids).to_numpy()


def _plain_arrow_matches(matches: Table) -> bool:
    """An arrow match table with string (or dictionary) ids, numeric scores and no missing value: read as it is."""
    import pyarrow as pa

    names = set(matches.column_names)
    if not {"test_case_id", "agent_id", "score"} <= names:
        return False
    columns = [matches.column(c) for c in ("test_case_id", "agent_id", "score")]
    if any(c.null_count for c in columns):
        return False
    ids_ok = all(
        pa.types.is_string(t) or pa.types.is_large_string(t) or (pa.types.is_dictionary(t) and pa.types.is_string(t.value_type))
        for t in (columns[0].type, columns[1].type)
    )
    return ids_ok and (pa.types.is_floating(columns[2].type) or pa.types.is_integer(columns[2].type))


def _arrow_codes(column: pa.ChunkedArray, players: Table, id_column: str) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Each match's code among the sorted distinct ids (as :func:`encode_matches` numbers them), those ids
    (arrow strings) and each one's ``mu`` (NaN for an unknown one), without converting an id to Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column.cast(pa.string()).combine_chunks())
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    ids = encoded.dictionary.take(pa.array(order))
    codes = rank[encoded.indices.to_numpy()]
    del encoded, order, rank  # a wide benchmark's: freed before the look-up builds its own table of the ids
    if flavour_of(players) == "arrow":
        known, mu = players.column(id_column).cast(pa.string()), players.column("mu").to_numpy()
    else:
        frame = to_pandas(players, (id_column, "mu"))
        known, mu = pa.array(frame[id_column].astype(str), pa.string()), frame["mu"].to_numpy()
    mu = np.asarray(mu, dtype=np.float64)
    if len(known) == len(ids) and pc.all(pc.equal(known, ids)).as_py():  # the rated table, in code order: no look-up
        return codes, ids, mu  # (hashing 10M ids took about 10 s)
    pos = pc.index_in(ids, value_set=known)
    found = pos.is_valid().to_numpy(zero_copy_only=False)
    at = pos.fill_null(0).to_numpy(zero_copy_only=False)
    return codes, ids, np.where(found, mu[at], np.nan) if len(mu) else np.full(len(ids), np.nan)


def binned_calibration(matches: Table, test_cases: Table, agents: Table) -> Table:
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
    if flavour == "arrow" and _plain_arrow_matches(matches):  # a wide benchmark's ids never become Python strings
        t_code, _, t_mu = _arrow_codes(matches.column("test_case_id"), test_cases, "test_case_id")
        a_code, agent_ids, a_mu = _arrow_codes(matches.column("agent_id"), agents, "agent_id")
        score = matches.column("score").to_numpy().astype(np.float64, copy=False)
        cells, count, mean_diff, empirical = _bin_cells(a_code, a_mu[a_code] - t_mu[t_code], score, len(agent_ids))
        cell_agents = agent_ids.take(cells // N_BINS).to_numpy(zero_copy_only=False)
    else:
        m = encode_matches(matches)
        t_mu = _ratings_of(test_cases, "test_case_id", m.test_case_ids)
        a_mu = _ratings_of(agents, "agent_id", m.agent_ids)
        cells, count, mean_diff, empirical = _bin_cells(m.agent, a_mu[m.agent] - t_mu[m.test_case], m.score, len(m.agent_ids))
        cell_agents = m.agent_ids[cells // N_BINS]
    out = pd.DataFrame(
        {
            "agent_id": cell_agents,
            "bin": cells % N_BINS,
            "matches": count,
            "mean_rating_diff": mean_diff,
            "empirical_score": empirical,
        }
    )
    out.insert(1, "bin_lo", BIN_EDGES[out["bin"].to_numpy()])
    out.insert(2, "bin_hi", out["bin_lo"] + BIN_WIDTH)
    out["expected_score"] = 1.0 / (1.0 + 10.0 ** (-out["mean_rating_diff"] / 400.0))
    return to_flavour(out.drop(columns="bin"), flavour)
