"""Glicko-1 ratings of test cases and agents: the sequential update and :func:`rate` (the orders' pass is in
:mod:`.orders`, :func:`~agielo_dagster.rating.placement.place_agents` in :mod:`.placement`).

Every (agent, test case) result is a match. The agent scores S, the test case
1 − S. Each match is its own rating period: both players are updated from their
pre-match values with the standard Glicko-1 equations (Glickman 1999), with
q = ln 10 / 400 and g(σ) = 1 / √(1 + 3q²σ²/π²)::

    E   = 1 / (1 + 10^(−g(σ_j)(μ_i − μ_j)/400))
    σ'² = 1 / (1/σ² + q² g(σ_j)² E (1 − E))
    μ'  = μ + q σ'² g(σ_j) (S − E)

σ only shrinks (no rating-period inflation, no floor), as in the AGI-Elo paper.

One order of the matches decides a lot (on a benchmark of near-tied agents, two seeds
disagree on the ranking), so :func:`rate` plays ``orders`` orders and reports their
mean. Orders come in antithetic pairs: a random permutation and the same permutation
read backwards. A match early in one is late in the other, which makes the pair's
mean markedly less noisy than two independent orders (measured on the demo's
benchmarks: the spread of rating differences falls as if 3.6 independent orders had
been played). ``orders=1`` is the paper's single order, unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from . import _kernels as K
from .frames import Flavour, Matches, Table, encode_matches, to_flavour, to_pandas
from .graph import components, warn_if_disconnected
from .intervals import agent_intervals, interval_ranks, order_variance
from .order_moments import OrderMoments
from .order_reliability import RELIABILITY_COLUMNS
from .orders import (
    HISTORY_LEVELS,
    _pairs,
    agent_snapshot_fractions,
    default_workers,
    final_ratings,
    history_slots,
    match_orders,
    run_orders,
    snapshot_ends,
)
from .settings import (
    DEFAULT_LEVEL,
    DEFAULT_ORDERS,
    DEFAULT_SHUFFLES,
    DEFAULT_SNAPSHOT_FRACTIONS,
    DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    RatingSettings,
    Setting,
    accepts_old_names,
)

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_ORDERS",
    "DEFAULT_SHUFFLES",
    "DEFAULT_SNAPSHOT_FRACTIONS",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS",
    "Q",
    "RatingResult",
    "RatingSettings",
    "final_ratings",
    "g",
    "glicko_expected",
    "match_orders",
    "rate",
    "snapshot_ends",
    "update_match",
    "update_rating_period",
]

Q = K.Q


def g(sigma: ArrayLike) -> np.ndarray:
    """Glicko's attenuation g(σ) = 1 / √(1 + 3q²σ²/π²) of an opponent's rating deviation."""
    sigma = np.asarray(sigma, dtype=np.float64)
    return 1.0 / np.sqrt(1.0 + 3.0 * Q * Q * sigma * sigma / (math.pi * math.pi))


def glicko_expected(mu: ArrayLike, mu_opponent: ArrayLike, sigma_opponent: ArrayLike) -> np.ndarray:
    """Glicko's expected score E of a player rated ``mu`` against an opponent N(μ_j, σ_j²)."""
    diff = np.asarray(mu, dtype=np.float64) - np.asarray(mu_opponent, dtype=np.float64)
    return 1.0 / (1.0 + 10.0 ** (-g(sigma_opponent) * diff / 400.0))


def update_rating_period(
    mu: float, sigma: float, opponent_mu: ArrayLike, opponent_sigma: ArrayLike, scores: ArrayLike
) -> tuple[float, float]:
    """One Glicko-1 rating period of one player against several opponents.

    Parameters
    ----------
    mu, sigma : float
        The player's rating before the period.
    opponent_mu, opponent_sigma, scores : array_like
        One entry per game: the opponent's rating and the player's score in [0, 1].

    Returns
    -------
    (mu', sigma') : tuple of float
    """
    opp_mu = np.asarray(opponent_mu, dtype=np.float64)
    opp_g = g(opponent_sigma)
    s = np.asarray(scores, dtype=np.float64)
    e = 1.0 / (1.0 + 10.0 ** (-opp_g * (mu - opp_mu) / 400.0))
    inv_d2 = Q * Q * np.sum(opp_g * opp_g * e * (1.0 - e))
    new_var = 1.0 / (1.0 / (sigma * sigma) + inv_d2)
    return float(mu + Q * new_var * np.sum(opp_g * (s - e))), float(math.sqrt(new_var))


def update_match(
    mu_agent: ArrayLike, sigma_agent: ArrayLike, mu_test_case: ArrayLike, sigma_test_case: ArrayLike, score: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The AGI-Elo update of one match (vectorized over independent matches).

    The agent scores ``score``, the test case ``1 − score``; both are updated
    from their pre-match values. Returns ``(mu_agent', sigma_agent', mu_test_case', sigma_test_case')``.
    """
    args = np.broadcast_arrays(
        *(np.asarray(a, dtype=np.float64) for a in (mu_agent, sigma_agent, mu_test_case, sigma_test_case, score))
    )
    out = [np.empty(args[0].shape) for _ in range(4)]
    for idx in np.ndindex(args[0].shape):
        r = K.match_update(*(float(a[idx]) for a in args))
        for o, v in zip(out, r, strict=True):
            o[idx] = v
    return tuple(o if o.ndim else o[()] for o in out)


@dataclass(frozen=True)
class RatingResult:
    """What :func:`rate` returns.

    Attributes
    ----------
    test_cases : DataFrame or pyarrow.Table
        ``test_case_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd, component``
        and the test case's history, ``mu_after_<j>, sigma_after_<j>`` for j = 1, 2, 4, …, 128
        below its number of matches (NaN beyond): its rating after its j-th match, mean and
        mixture σ over the orders, which :func:`place_agents` replays a newcomer against.
        ``mean_score`` is the test case's own score (1 − S), ``mean_metric`` the agents' mean
        metric on it.
    agents : DataFrame or pyarrow.Table
        ``agent_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd, mu_lo, mu_hi,
        rank, rank_lo, rank_hi, component``:

        - ``mu``: the mean over the orders; ``sigma``: the standard deviation of the mixture
          of the orders' Glicko posteriors, √(mean σ² + variance of μ across orders);
          refined (the default; see ``refine``): the joint
          refinement's rating and its standard error relative to the component's mean
          (:mod:`agielo_dagster.rating.refine`);
        - ``mu_order_sd``: the spread of the Glicko μ across the orders (NaN with a single order);
        - ``mu_lo, mu_hi``: the ``level`` interval (95 % by default) accounting for the
          match order and for the sampling of test cases (see
          :mod:`agielo_dagster.rating.intervals`); refined: μ ± z·``sigma``;
        - ``rank``: 1 + the number of agents of the same component whose interval lies
          entirely above this one (agents no interval separates share a rank, as LMArena
          ranks by confidence interval); ``rank_lo`` (= ``rank``) and ``rank_hi``: the best
          and worst ranks the intervals allow;
        - ``component``: the connected component of the match graph (0 = the largest);
          ratings and ranks compare only within a component.
    snapshots : DataFrame or pyarrow.Table
        ``fraction, kind, id, mu, sigma``: the state after that share of the matches
        (mean and mixture σ over the orders).
    reliability : DataFrame or pyarrow.Table or None
        ``fraction, rho_test_cases, rho_agents, mae, mse, matches_outside_bins, orders``
        (see :mod:`agielo_dagster.rating.reliability`).
    settings : dict
        The arguments of :func:`rate`, to reproduce the result.
    n_matches : int
    n_components : int
        Connected components of the (agent, test case) graph; more than one also warns
        (:class:`~agielo_dagster.rating.DisconnectedMatchesWarning`).
    """

    test_cases: Table
    agents: Table
    snapshots: Table
    reliability: Table | None
    settings: dict = field(repr=False)
    n_matches: int = 0
    n_components: int = 1

    def component_of(self, kind: str = "agent") -> pd.Series:
        """Which players are in which component: a Series id → component, for ``kind`` "agent" or "test_case"."""
        table = to_pandas(self.agents if kind == "agent" else self.test_cases)
        return table.set_index(f"{kind}_id")["component"]


@accepts_old_names
def rate(
    matches: Table,
    *,
    seed: int | None = 42,
    row_order: bool = False,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
    snapshot_fractions: Iterable[float] = DEFAULT_SNAPSHOT_FRACTIONS,
    test_case_snapshot_fractions: Iterable[float] = DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    orders: int = DEFAULT_ORDERS,
    with_reliability: bool = True,
    level: float = DEFAULT_LEVEL,
    workers: int | None = None,
    refine: bool | None = None,
) -> RatingResult:
    """Rate every test case and agent of a match table with sequential Glicko-1, over several match orders.

    Parameters
    ----------
    matches : pandas or polars DataFrame, or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: one row per match; each (agent, test case)
        pair at most once. Ids may be strings or dictionary-encoded strings (Arrow).
    seed : int
        Seed of the match orders; the same seed gives bit-identical results, whatever
        ``workers`` is.
    row_order : bool
        ``True`` processes the matches in the table's row order (then ``orders`` must be 1);
        ``shuffle``, its earlier name (``shuffle=False`` is ``row_order=True``), is still read,
        with a :class:`DeprecationWarning`.
    init_mu, init_sigma : float
        Every player's starting rating: ``init_mu`` within ±10,000, ``init_sigma`` in (0, 1000]
        (:func:`~agielo_dagster.rating.checks.check_start`).
    snapshot_fractions : sequence of float
        Shares of the matches after which agent ratings (and reliability) are recorded.
    test_case_snapshot_fractions : sequence of float
        Shares after which test-case ratings are recorded (fewer: there are many test cases).
    orders : int
        Orders to average (``DEFAULT_ORDERS`` = 16: eight antithetic pairs). ``orders=1`` is
        the AGI-Elo paper's single order, as in earlier versions of this engine. ``shuffles``, its
        earlier name, is still read, with a :class:`DeprecationWarning`.
    with_reliability : bool
        Compute the reliability table during the first order's pass (see
        :func:`~agielo_dagster.rating.reliability`).
    level : float
        Confidence level of ``mu_lo, mu_hi`` and of the ranks.
    workers : int
        Threads for the orders and the reliability (default: the cores available).
    refine : bool or None
        Replace the Glicko ratings and intervals by the joint refinement of
        :mod:`agielo_dagster.rating.refine`: an unbiased scale and calibrated intervals at any
        spread of the agents, dense or sparse, binary or graded, its level the Glicko scale's at
        the median agent. ``None`` (the default) refines unless ``orders`` is 1: several orders
        are this engine's ratings, refined; a single order is the AGI-Elo paper's procedure and
        reproduces its published ratings exactly, so it stays Glicko alone (pass ``refine=True``
        to refine it too). Skipped, with a :class:`~agielo_dagster.rating.refine.RefinementSkippedWarning`,
        above ``refine.MAX_AGENTS`` agents or ``refine.MAX_PAIRS`` agent pairs sharing a test case; the
        result's ``settings["refine"]`` then says ``False`` (what was done, and what reproduces it).

    Returns
    -------
    RatingResult
        Tables in the flavour of ``matches`` (pandas, polars or pyarrow).

    Notes
    -----
    Cost, for 1,000,000 matches on 2 cores: one order's Glicko pass about 0.07 s; its 100
    snapshots and reliability about 0.25 s of CPU, spread over the cores (the whole job with
    one order, from a pandas table of string ids: median 0.26–0.27 s); each further order about
    0.04 s of wall time (16 orders: about 0.9 s). For 10⁸ matches use :func:`rate_parquet`: one order
    in about 23 s and 3.2 GiB, 16 in about 85 s and 4.8 GiB. See ``benchmarks/rate_1m.py``
    and ``benchmarks/rate_100m.py``.
    """
    settings = RatingSettings.of(
        seed=seed,
        row_order=row_order,
        init_mu=init_mu,
        init_sigma=init_sigma,
        snapshot_fractions=snapshot_fractions,
        test_case_snapshot_fractions=test_case_snapshot_fractions,
        orders=orders,
        with_reliability=with_reliability,
        level=level,
        workers=workers,
        refine=refine,
    )
    return rate_encoded(encode_matches(matches), settings)


def rate_encoded(m: Matches, settings: RatingSettings | Mapping[str, Setting], *, warn: bool = True) -> RatingResult:
    """:func:`rate` on an already encoded match table, with ``settings`` its keyword arguments (or a mapping of them)."""
    if not isinstance(settings, RatingSettings):
        settings = RatingSettings.of(settings)
    seed, row_order, level = settings.seed, settings.row_order, settings.level
    init_mu, init_sigma, workers = settings.init_mu, settings.init_sigma, settings.workers
    with_reliability, refine = settings.with_reliability, settings.refines
    fractions = np.asarray(settings.snapshot_fractions, dtype=np.float64)
    tc_fractions = np.asarray(settings.test_case_snapshot_fractions, dtype=np.float64)
    pairs = _pairs(len(m), seed, row_order, settings.orders)
    workers = default_workers() if workers is None else int(workers)
    n, n_a, n_t = len(m), m.n_agents, m.n_test_cases
    ends, tc_ends = snapshot_ends(fractions, n), snapshot_ends(tc_fractions, n)
    a_fractions = agent_snapshot_fractions(fractions, n, n_a)  # a tall benchmark's agents: every k-th fraction
    played_tc_ends = tc_ends[tc_ends < n]  # a wide benchmark's orders keep 16 bytes a test case fewer each
    n_components, a_comp, t_comp = components(m)
    if warn:
        warn_if_disconnected(n_components, a_comp, m.agent_ids, "rate")

    skipped: list[bool] = []  # the refinement skipped (too wide): the result's settings then say refine=False

    def tables(o: OrderMoments):
        """The rating tables from the orders (run while the reliability of the first order is still measured)."""
        a_mu_k = o.agents_by_order()
        # the test cases' snapshots at the last match are their final ratings (the same sums): not played twice;
        # read first and dropped, like the histories, so that the rest of the tables is built without their sums
        before_end = o.mean_and_sigma("t_mu_at", "t_sig_at")
        after_mu_mean, after_sig = o.mean_and_sigma("t_mu_after", "t_sig_after")
        a_mu, t_mu = o.mean("a_mu"), o.mean("t_mu")
        a_sig, t_sig = o.sigma("a_mu", "a_sig"), o.sigma("t_mu", "t_sig")
        final_t = t_mu, t_sig  # Glicko's, also where the refinement replaces them below
        a_n, a_score, a_metric, t_n, t_score, t_metric = K.summaries(m.agent, m.test_case, m.score, m.metric, n_a, n_t)
        a_mean_metric, t_mean_metric = a_metric / a_n, t_metric / t_n

        _, lo, hi = agent_intervals(m, a_mu, a_sig, t_mu, t_sig, order_variance(a_mu_k), level)
        # --- refinement hook (rating/refine.py): the joint fit replaces the Glicko ratings and intervals
        if refine:
            from .refine import refine_ratings

            r = refine_ratings(
                m,
                a_mu,
                t_mu,
                t_sig,
                a_comp,
                t_comp,
                init_mu=float(init_mu),
                init_sigma=float(init_sigma),
                level=level,
                seed=seed,
            )
            skipped.append(r.skipped)
            a_mu, t_mu, t_sig = r.agent_mu, r.test_case_mu, r.test_case_sigma
            a_sig = np.where(r.refined, r.agent_se, a_sig)
            lo = np.where(r.refined, r.agent_lo, lo)
            hi = np.where(r.refined, r.agent_hi, hi)
        # --- end of the refinement hook
        rank, rank_lo, rank_hi = interval_ranks(lo, hi, a_comp)
        agents = pd.DataFrame(
            {
                "agent_id": m.agent_ids,
                "mu": a_mu,
                "sigma": a_sig,
                "matches": a_n,
                "mean_score": a_score / a_n,
                "mean_metric": a_mean_metric,
                "mu_order_sd": o.order_sd("a_mu"),
                "mu_lo": lo,
                "mu_hi": hi,
                "rank": rank,
                "rank_lo": rank_lo,
                "rank_hi": rank_hi,
                "component": a_comp,
            }
        )
        t_mu_at = [*before_end[0], *[final_t[0]] * (len(tc_ends) - len(played_tc_ends))]
        t_sig_at = [*before_end[1], *[final_t[1]] * (len(tc_ends) - len(played_tc_ends))]
        arrow_ids = not isinstance(m.test_case_ids, np.ndarray)  # added in Arrow below, never as Python strings
        test_cases = pd.DataFrame(
            {
                **({} if arrow_ids else {"test_case_id": m.test_case_ids}),
                "mu": t_mu,
                "sigma": t_sig,
                "matches": t_n,
                "mean_score": 1.0 - t_score / t_n,
                "mean_metric": t_mean_metric,
                "mu_order_sd": o.order_sd("t_mu"),
                "component": t_comp,
            }
        )
        slot = history_slots(t_n)
        for depth in range(HISTORY_LEVELS):
            j = 1 << depth
            if j < t_n.max():
                test_cases[f"mu_after_{j}"] = np.where(j < t_n, after_mu_mean[depth][slot], np.nan)
                test_cases[f"sigma_after_{j}"] = np.where(j < t_n, after_sig[depth][slot], np.nan)
        snapshots = _snapshot_table(
            a_fractions,
            m.agent_ids,
            o.mean("a_mu_at"),
            o.sigma("a_mu_at", "a_sig_at"),
            tc_fractions,
            m.test_case_ids,
            t_mu_at,
            t_sig_at,
        )
        return agents, test_cases, snapshots, a_mu, t_mu, a_mean_metric, t_mean_metric, a_n

    moments, rel_table, measurer, done = run_orders(
        m,
        pairs,
        ends,
        played_tc_ends,
        float(init_mu),
        float(init_sigma),
        with_reliability,
        workers,
        then=tables,
        agent_ends=snapshot_ends(a_fractions, n),
    )
    agents, test_cases, snapshots, a_mu, t_mu, a_mean_metric, t_mean_metric, a_n = done

    reliability = None
    if rel_table is not None:
        orders = np.ones(len(fractions), dtype=np.int64)
        if moments.k > 1 and fractions[-1] == 1.0:
            # the published ratings: the mean over the orders, measured on every match
            rel_table[-1] = measurer.measure(a_mu, t_mu, a_mean_metric, t_mean_metric, a_n.astype(np.int64))
            orders[-1] = moments.k
        reliability = pd.DataFrame(
            dict(
                zip(
                    RELIABILITY_COLUMNS,
                    [fractions, *rel_table[:, :4].T, rel_table[:, 4].astype(np.int64), orders],
                    strict=True,
                )
            )
        )
    flav = m.flavour
    return RatingResult(
        test_cases=_with_ids(test_cases, m.test_case_ids, flav),
        agents=to_flavour(agents, flav),
        snapshots=_from_arrow(snapshots, flav),
        reliability=None if reliability is None else to_flavour(reliability, flav),
        settings=settings.reproducing() | ({"refine": False} if any(skipped) else {}),
        n_matches=n,
        n_components=n_components,
    )


def _snapshot_table(fractions, agent_ids, a_mu_at, a_sig_at, tc_fractions, test_case_ids, t_mu_at, t_sig_at):
    """The snapshots as one pyarrow table, one chunk per fraction and kind: the ids are converted to
    strings once and every chunk of a kind shares them, as it shares its ``kind`` array; ``mu`` and
    ``sigma`` are views of the snapshot arrays. A wide benchmark's test-case rows are not copied.

    (A pandas frame per kind, concatenated and converted, held three copies of the test cases'
    rows at once: 600 bytes a test case, the peak of ``rate`` on a benchmark of one agent.)
    """
    import pyarrow as pa

    chunks: dict[str, list] = {name: [] for name in ("fraction", "kind", "id", "mu", "sigma")}
    for kind, fr, ids, mu_at, sig_at in (
        ("agent", fractions, agent_ids, a_mu_at, a_sig_at),
        ("test_case", tc_fractions, test_case_ids, t_mu_at, t_sig_at),
    ):
        n = len(ids)
        strings = (
            ids.cast(pa.large_string())
            if isinstance(ids, pa.Array)
            else pa.array(np.asarray(ids, dtype=object), pa.large_string())
        )
        kinds = pa.array([kind], pa.large_string()).take(pa.array(np.zeros(n, dtype=np.int64)))
        for k, f in enumerate(np.asarray(fr, dtype=np.float64)):
            chunks["fraction"].append(pa.array(np.full(n, f)))
            chunks["kind"].append(kinds)
            chunks["id"].append(strings)
            chunks["mu"].append(pa.array(np.ascontiguousarray(mu_at[k], dtype=np.float64)))
            chunks["sigma"].append(pa.array(np.ascontiguousarray(sig_at[k], dtype=np.float64)))
    types = {
        "fraction": pa.float64(),
        "kind": pa.large_string(),
        "id": pa.large_string(),
        "mu": pa.float64(),
        "sigma": pa.float64(),
    }
    return pa.table({name: pa.chunked_array(c, types[name]) for name, c in chunks.items()})


_STRING_BYTES = 2**31 - 1  # the most bytes an Arrow ``string`` array holds


def _with_ids(test_cases: pd.DataFrame, ids, flavour: Flavour) -> Table:
    """The test-case table in ``flavour``, its ``test_case_id`` column first: ``ids`` given as Arrow strings are put in
    as Arrow strings (``string``, in chunks under 2 GiB each, as a pandas column of Python strings converts), with the
    same schema and pandas metadata."""
    import pyarrow as pa

    if not isinstance(ids, pa.Array):
        return to_flavour(test_cases, flavour)
    if flavour != "arrow" or len(ids) == 0:
        return to_flavour(
            test_cases.assign(test_case_id=ids.to_numpy(zero_copy_only=False))[["test_case_id", *test_cases]], flavour
        )
    head = test_cases.head(1).copy()
    head.insert(0, "test_case_id", ids.slice(0, 1).to_pylist())
    schema = pa.Schema.from_pandas(head, preserve_index=False)
    table = pa.Table.from_pandas(test_cases, preserve_index=False)
    ids = ids.cast(pa.large_string())
    offsets = np.frombuffer(ids.buffers()[1], dtype=np.int64, count=len(ids) + 1, offset=8 * ids.offset)
    bounds = [0]
    while bounds[-1] < len(ids):
        end = int(np.searchsorted(offsets, offsets[bounds[-1]] + _STRING_BYTES, "right")) - 1
        bounds.append(max(end, bounds[-1] + 1))
    chunks = [ids.slice(a, b - a).cast(pa.string()) for a, b in zip(bounds[:-1], bounds[1:], strict=False)]
    return pa.Table.from_arrays([pa.chunked_array(chunks, pa.string()), *table.columns], schema=schema)


def _from_arrow(table, flavour: Flavour) -> Table:
    """A pyarrow table as the caller's flavour."""
    if flavour == "arrow":
        return table
    if flavour == "pandas":
        return table.to_pandas()
    import polars as pl

    return pl.from_arrow(table)
