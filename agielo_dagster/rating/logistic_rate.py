"""A logistic model's :class:`~agielo_dagster.rating.ratings.RatingResult`: its tables, snapshots and reliability.

The ratings are one fit of every match (:func:`~agielo_dagster.rating.logistic.fit_logistic`); they do not
depend on the seed or on the table's row order. The snapshots are fits of the matches played by each
snapshot fraction, in the seed's order of the matches: the first from the ratings, each next from the one
before, by Laplace's approximation (:func:`~agielo_dagster.rating.logistic.fit_logistic`'s
``quadrature=False``), under the test cases' prior spread the whole benchmark gives (``fit_spread=False``:
from a share of the matches Laplace's approximation under-estimated a wide spread, 584 Elo for 701); a tall
benchmark's first tenth diverges, spread fitted or fixed (docs/engine.md, "Targets not met"); the last is the ratings themselves.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import _kernels
from .frames import Matches, to_flavour
from .graph import components, warn_if_disconnected
from .intervals import interval_ranks, z_of
from .item_quality import QUALITY_COLUMNS, item_quality
from .likelihood_interval import likelihood_sides, stretch
from .logistic import (
    CENTRE,
    DERIVED_TOLERANCE,
    LOGIT,
    RASCH,
    TOLERANCE,
    ByTestCase,
    LogisticFit,
    LogisticModel,
    by_test_case,
    canonical_order,
    fit_logistic,
    relative_variance,
    solve_hessian,
)
from .order_reliability import RELIABILITY_COLUMNS, OrderReliability
from .orders import agent_snapshot_fractions, match_orders, snapshot_ends
from .result import Fitted, RatingResult
from .settings import RatingSettings
from .tables import from_arrow, snapshot_table, with_ids
from .twopl import TWOPL

__all__ = ["fitted_logistic", "gap_steps", "rate_logistic"]

SNAPSHOT_PASSES = 12  # a snapshot's fit stops at DERIVED_TOLERANCE, or after this many passes
LOGISTIC_MODELS = {model.name: model for model in (RASCH, TWOPL)}


def _is_binary(score: np.ndarray) -> bool:
    return bool(np.all((score == 0.0) | (score == 1.0)))


def fitted_logistic(
    m: Matches,
    settings: RatingSettings,
    start: LogisticFit | None = None,
    passes: int | None = None,
    tolerance: float = TOLERANCE,
) -> Fitted:
    """:func:`~agielo_dagster.rating.ratings.fitted_ratings` of a logistic model, warm from ``start`` (a fit of these
    codes); ``passes`` caps its Newton steps (None: to convergence at ``tolerance``)."""
    _, a_comp, _ = components(m)
    data = by_test_case(m)
    model = LOGISTIC_MODELS[settings.model]
    same = start is not None and start.model == model.name and len(start.theta) == m.n_agents
    warm = _warm(start, m, model) if same and len(start.mode) == m.n_test_cases else {}
    limit = {} if passes is None else {"max_iterations": passes}
    fit = fit_logistic(data, a_comp, binary=_is_binary(m.score), model=model, tolerance=tolerance, **warm, **limit)
    with np.errstate(divide="ignore"):
        agent_sigma = LOGIT / np.sqrt(fit.info)
    agent_mu = _same_for_same_results(m, _elo(fit.theta))
    return Fitted(agent_mu, agent_sigma, CENTRE + LOGIT * fit.beta_mean, LOGIT * np.sqrt(fit.beta_var), fit)


def _warm(fit: LogisticFit, m: Matches, model: LogisticModel) -> dict:
    """Where a fit of ``m`` starts from ``fit``: a player without a match in ``m`` where a cold fit leaves it (a
    held-out fold's agent must not keep a rating fitted on its held-out matches)."""
    played = np.bincount(m.agent, minlength=m.n_agents) > 0
    tested = np.bincount(m.test_case, minlength=m.n_test_cases) > 0
    mode = np.where(tested[:, None], fit.mode, np.asarray(model.mode))
    return dict(theta=np.where(played, fit.theta, 0.0), variances=fit.variances, phi=fit.phi, mode=mode)


def gap_steps(m: Matches, fit: LogisticFit, leader: int, challengers: list[int]) -> list[np.ndarray]:
    """Per challenger, per test case, the one-step change of μ_leader − μ_challenger (Elo) when the test case is
    removed: its part u_t of the agents' score goes, and every agent moves by −H⁻¹ u_t (H the fit's Hessian).
    One solve per challenger, or one per test case where the challengers outnumber them (a tall benchmark's tier)."""
    data = by_test_case(m)
    test_case = np.repeat(np.arange(m.n_test_cases), np.diff(data.start))
    if len(challengers) > m.n_test_cases:
        moves = np.empty((m.n_agents, m.n_test_cases))  # column t: H⁻¹ u_t
        for t in range(m.n_test_cases):
            rows = slice(data.start[t], data.start[t + 1])
            u = np.bincount(data.agent[rows], fit.match_score[rows], m.n_agents)
            moves[:, t] = solve_hessian(fit, data, u)
        return [-LOGIT * (moves[leader] - moves[c]) for c in challengers]
    out = []
    for c in challengers:
        unit = np.zeros(m.n_agents)
        unit[leader], unit[c] = 1.0, -1.0
        direction = solve_hessian(fit, data, unit)
        out.append(-LOGIT * np.bincount(test_case, direction[data.agent] * fit.match_score, m.n_test_cases))
    return out


def rate_logistic(m: Matches, settings: RatingSettings, *, warn: bool = True) -> RatingResult:
    """:func:`~agielo_dagster.rating.rate` of a logistic model (``settings.model`` "rasch" or "2pl")."""
    model = LOGISTIC_MODELS[settings.model]
    n, n_a, n_t = len(m), m.n_agents, m.n_test_cases
    n_components, a_comp, t_comp = components(m)
    if warn:
        warn_if_disconnected(n_components, a_comp, m.agent_ids, "rate")
    binary = _is_binary(m.score)
    data = by_test_case(m)
    fit = fit_logistic(data, a_comp, binary=binary, model=model)
    # binary scores: the model's own variance; graded ones: the larger of it and the sandwich (their variance is
    # not the model's, and an agent scoring near 0 or 1 leaves the sandwich too few residuals to see it)
    sd = np.sqrt(relative_variance(fit, data, a_comp, sandwich=not binary))
    z = z_of(settings.level)
    if model is RASCH:
        down, up = likelihood_sides(fit, data, z)
        scale = stretch(fit, data, sd)
        down, up = down * scale, up * scale
    else:
        down = up = z * sd
    a_mu = _same_for_same_results(m, _elo(fit.theta))
    sd = _same_for_same_results(m, LOGIT * sd)
    lo = _same_for_same_results(m, a_mu - LOGIT * down)
    hi = _same_for_same_results(m, a_mu + LOGIT * up)
    rank, rank_lo, rank_hi = interval_ranks(lo, hi, a_comp)
    a_n, a_score, a_metric, t_n, t_score, t_metric = _kernels.summaries(m.agent, m.test_case, m.score, m.metric, n_a, n_t)
    agents = pd.DataFrame(
        {
            "agent_id": m.agent_ids,
            "mu": a_mu,
            "sigma": sd,
            "matches": a_n,
            "mean_score": a_score / a_n,
            "mean_metric": a_metric / a_n,
            "mu_lo": lo,
            "mu_hi": hi,
            "rank": rank,
            "rank_lo": rank_lo,
            "rank_hi": rank_hi,
            "component": a_comp,
        }
    )
    t_mu = CENTRE + LOGIT * fit.beta_mean
    arrow_ids = not isinstance(m.test_case_ids, np.ndarray)
    test_cases = pd.DataFrame(
        {
            **({} if arrow_ids else {"test_case_id": m.test_case_ids}),
            "mu": t_mu,
            "sigma": LOGIT * np.sqrt(fit.beta_var),
            "matches": t_n,
            "mean_score": 1.0 - t_score / t_n,
            "mean_metric": t_metric / t_n,
            "component": t_comp,
        }
    )
    # the 2PL's own discrimination (its posterior given the agents: mean ± z sd), else one fitted per test case
    own = (fit.mean[:, 1], np.sqrt(fit.var[:, 1])) if model is TWOPL else None
    quality = item_quality(
        data, fit.theta, fit.beta_mean, tau2=fit.tau2, phi=fit.phi, binary=binary, level=settings.level, model=own
    )
    after_sigma = test_cases.columns.get_loc("sigma") + 1  # test_case_id is added later for Arrow ids
    for place, column in enumerate(QUALITY_COLUMNS):
        test_cases.insert(after_sigma + place, column, getattr(quality, column))
    snapshots, reliability = _snapshots(m, data, fit, a_comp, settings, binary, model)
    flavour = m.flavour
    return RatingResult(
        test_cases=with_ids(test_cases, m.test_case_ids, flavour),
        agents=to_flavour(agents, flavour),
        snapshots=from_arrow(snapshots, flavour),
        reliability=None if reliability is None else to_flavour(reliability, flavour),
        settings=settings.reproducing(),
        n_matches=n,
        n_components=n_components,
        fitted=Fitted(a_mu, LOGIT / np.sqrt(fit.info), t_mu, LOGIT * np.sqrt(fit.beta_var), fit),
    )


def _elo(theta: np.ndarray) -> np.ndarray:
    """Ratings in Elo to the micro-Elo, far finer than the fit's tolerance (1e-5 of a standard error) and far coarser than its
    rounding: agents equal in exact arithmetic (results alike up to the test cases' names) come out equal, not a
    last bit apart (which put one first, at random, in a tie)."""
    return np.round(CENTRE + LOGIT * theta, 6)


def _same_for_same_results(m: Matches, values: np.ndarray) -> np.ndarray:
    """``values`` with every agent whose results equal another's (the same scores on the same test cases) given the
    first such agent's value: equal in exact arithmetic, and now to the bit (a dense inverse treats rows in turn).
    Agents are grouped by two 64-bit sums over their matches of a mixed (test case, score) pair."""
    keys = np.zeros((m.n_agents, 3), dtype=np.uint64)
    _kernels.result_keys(m.agent, m.test_case, np.ascontiguousarray(m.score, dtype=np.float64).view(np.uint64), keys)
    order = np.lexsort(keys.T[::-1])  # stable: each group's first agent comes first in it
    ranked = keys[order]
    starts = np.ones(m.n_agents, dtype=bool)
    starts[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    out = np.empty_like(values)
    out[order] = values[order[np.flatnonzero(starts)][np.cumsum(starts) - 1]]
    return out


def _subset(data: ByTestCase, keep: np.ndarray) -> tuple[ByTestCase, np.ndarray]:
    """The canonical matches where ``keep``, with the test cases that still have one: (data, their codes)."""
    counts = np.bincount(np.repeat(np.arange(data.n_test_cases), np.diff(data.start)), keep, data.n_test_cases).astype(np.int64)
    played = np.flatnonzero(counts)
    start = np.zeros(len(played) + 1, dtype=np.int64)
    np.cumsum(counts[played], out=start[1:])
    return ByTestCase(start, data.agent[keep], data.score[keep], data.n_agents), played


def _snapshots(
    m: Matches,
    data: ByTestCase,
    fit: LogisticFit,
    a_comp: np.ndarray,
    settings: RatingSettings,
    binary: bool,
    model: LogisticModel,
):
    """The snapshot table and the reliability table (None without ``with_reliability``)."""
    n, n_a, n_t = len(m), m.n_agents, m.n_test_cases
    a_fractions = agent_snapshot_fractions(settings.snapshot_fractions, n, n_a)
    t_fractions = np.asarray(settings.test_case_snapshot_fractions, dtype=np.float64)
    fractions = np.asarray(settings.snapshot_fractions, dtype=np.float64)
    every = np.union1d(fractions, t_fractions)
    ends = snapshot_ends(every, n)
    (order,) = match_orders(n, seed=settings.seed, row_order=settings.row_order)
    # each canonical row's place in the order of play
    canonical = canonical_order(m)
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    place = place[canonical]
    measurer = None
    if settings.with_reliability:
        measurer = OrderReliability(m.agent[order], m.test_case[order], m.score[order], n_a, n_t)
    a_mu_at, a_sig_at, t_mu_at, t_sig_at, rows = [], [], [], [], []
    start = None
    for f, end in zip(every, ends, strict=True):
        if end >= n:
            theta, beta, beta_var, part = fit.theta, fit.beta_mean, fit.beta_var, np.arange(n_t)
        else:
            sub, part = _subset(data, place < end)
            start = fit_logistic(
                sub,
                a_comp,
                binary=binary,
                model=model,
                theta=(start or fit).theta,
                variances=fit.variances,
                phi=(start or fit).phi,
                quadrature=False,
                fit_spread=False,
                tolerance=DERIVED_TOLERANCE,
                max_iterations=SNAPSHOT_PASSES,
            )
            theta, beta, beta_var = start.theta, start.beta_mean, start.beta_var
        a_played = np.bincount(m.agent[order[:end]], minlength=n_a)
        mu = np.where(a_played > 0, _elo(theta), np.nan)
        t_mu = np.full(n_t, np.nan)
        t_mu[part] = CENTRE + LOGIT * beta
        t_sd = np.full(n_t, np.nan)
        t_sd[part] = LOGIT * np.sqrt(beta_var)
        if np.isin(f, a_fractions):
            a_mu_at.append(mu)
            a_sig_at.append(np.full(n_a, np.nan))
        if np.isin(f, t_fractions):
            t_mu_at.append(t_mu)
            t_sig_at.append(t_sd)
        if measurer is not None and np.isin(f, fractions):
            rows.append((f, *_measure(m, order, end, mu, t_mu, measurer, a_played)))
    table = snapshot_table(a_fractions, m.agent_ids, a_mu_at, a_sig_at, t_fractions, m.test_case_ids, t_mu_at, t_sig_at)
    if measurer is None:
        return table, None
    reliability = pd.DataFrame(rows, columns=list(RELIABILITY_COLUMNS[:-1]))
    reliability["matches_outside_bins"] = reliability["matches_outside_bins"].astype(np.int64)
    reliability["orders"] = np.zeros(len(reliability), dtype=np.int64)  # no orders: every row is one fit
    return table, reliability


def _measure(m: Matches, order: np.ndarray, end: int, a_mu, t_mu, measurer: OrderReliability, a_played: np.ndarray):
    """ρ of the test cases and agents with their mean metric so far, and the binned errors, after ``end`` matches."""
    first = order[:end]
    agent, test_case, metric = m.agent[first], m.test_case[first], m.metric[first]
    a_count, a_sum = np.bincount(agent, minlength=m.n_agents), np.bincount(agent, metric, m.n_agents)
    t_count, t_sum = np.bincount(test_case, minlength=m.n_test_cases), np.bincount(test_case, metric, m.n_test_cases)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_mean, t_mean = a_sum / a_count, t_sum / t_count
    return measurer.measure(np.nan_to_num(a_mu), np.nan_to_num(t_mu), a_mean, t_mean, a_played)
