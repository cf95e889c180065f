"""Glicko-1 ratings of test cases and agents, ``rate(model="glicko")``: the AGI-Elo paper's sequential update
(the orders' pass is in :mod:`.orders`, :func:`~agielo_dagster.rating.placement.place_agents` in :mod:`.placement`).

Every (agent, test case) result is a match. The agent scores S, the test case
1 − S. Each match is its own rating period: both players are updated from their
pre-match values with the standard Glicko-1 equations (Glickman 1999), with
q = ln 10 / 400 and g(σ) = 1 / √(1 + 3q²σ²/π²)::

    E   = 1 / (1 + 10^(−g(σ_j)(μ_i − μ_j)/400))
    σ'² = 1 / (1/σ² + q² g(σ_j)² E (1 − E))
    μ'  = μ + q σ'² g(σ_j) (S − E)

σ only shrinks (no rating-period inflation, no floor), as in the AGI-Elo paper.

One order of the matches decides a lot (on a benchmark of near-tied agents, two seeds
disagree on the ranking), so :func:`rate_glicko` plays ``orders`` orders and reports their
mean. Orders come in antithetic pairs: a random permutation and the same permutation
read backwards. A match early in one is late in the other, which makes the pair's
mean markedly less noisy than two independent orders (measured on the demo's
benchmarks: the spread of rating differences falls as if 3.6 independent orders had
been played). ``orders=1`` is the paper's single order, unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from . import _kernels as K
from .frames import Matches, to_flavour
from .graph import components, warn_if_disconnected
from .intervals import agent_intervals, interval_ranks, order_variance
from .item_quality import QUALITY_COLUMNS, glicko_item_quality
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
from .result import RatingResult
from .settings import RatingSettings
from .tables import from_arrow, snapshot_table, with_ids

__all__ = [
    "Q",
    "final_ratings",
    "g",
    "glicko_expected",
    "match_orders",
    "rate_glicko",
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


def rate_glicko(m: Matches, settings: RatingSettings, *, warn: bool = True) -> RatingResult:
    """:func:`~agielo_dagster.rating.rate` with ``model="glicko"``: every order played, its tables built."""
    seed, row_order, level = settings.seed, settings.row_order, settings.level
    init_mu, init_sigma, workers = settings.init_mu, settings.init_sigma, settings.workers
    with_reliability = settings.with_reliability
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
        snapshots = snapshot_table(
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
    quality = glicko_item_quality(m, a_mu, t_mu, level)
    after_sigma = test_cases.columns.get_loc("sigma") + 1  # test_case_id is added later for Arrow ids
    for place, column in enumerate(QUALITY_COLUMNS):
        test_cases.insert(after_sigma + place, column, getattr(quality, column))

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
        test_cases=with_ids(test_cases, m.test_case_ids, flav),
        agents=to_flavour(agents, flav),
        snapshots=from_arrow(snapshots, flav),
        reliability=None if reliability is None else to_flavour(reliability, flav),
        settings=settings.reproducing(),
        n_matches=n,
        n_components=n_components,
    )
