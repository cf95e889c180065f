"""Test-case selection by difficulty: expected information, the difficulty strata, their weights and
:func:`select_test_cases` (the design is described in :mod:`agielo_dagster.rating.selection`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .frames import (
    Table,
    floats_of,
    require_columns,
    test_case_index,
    to_pandas,
)
from .glicko import Q, g

METHODS = ("information", "stratified", "random")
SEQUENTIAL_METHODS = ("stratified", "importance", "information", "random")
DEFAULT_SPREAD = 25.0
"""Elo: two test cases of a batch closer in difficulty than this are treated as near-duplicates."""
START_MU, START_SIGMA = 1500.0, 350.0
"""The prior of a new agent (as in :func:`rate` and :func:`place_agents`)."""
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(21)  # ∫ f(x) N(x; 0, 1) dx ≈ Σ w f(x) / √(2π)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def expected_information(
    mu_test_case: ArrayLike, sigma_test_case: ArrayLike, agent_mu: float, agent_sigma: float = 0.0
) -> np.ndarray:
    """Fisher information of one match against each test case, expected over the agent's rating N(μ, σ²).

    Parameters
    ----------
    mu_test_case, sigma_test_case : array_like
        The test cases' ratings (σ = 0: exactly known).
    agent_mu, agent_sigma : float
        The agent's estimate; ``agent_sigma = 0`` is the information at ``agent_mu`` itself.

    Returns
    -------
    numpy.ndarray
        q² g(σ_j)² E(1 − E), averaged over the agent's rating by 21-point Gauss–Hermite quadrature.
    """
    mu_t = np.asarray(mu_test_case, dtype=np.float64)
    g_t = g(sigma_test_case)
    thetas = agent_mu + agent_sigma * _NODES if agent_sigma > 0 else np.array([agent_mu])
    weights = _WEIGHTS if agent_sigma > 0 else np.array([1.0])
    out = np.zeros(np.broadcast(mu_t, g_t).shape)
    for theta, w in zip(thetas, weights, strict=True):
        e = 1.0 / (1.0 + 10.0 ** (-g_t * (theta - mu_t) / 400.0))
        out += w * e * (1.0 - e)
    return Q * Q * g_t * g_t * out


def _agent_estimate(agent_rating: Any, agent_sigma: Any) -> tuple[float, float] | None:
    """``(mu, sigma)`` from ``agent_rating`` (a number or a pair) and ``agent_sigma``; None: nothing known."""
    if agent_rating is None:
        if agent_sigma is not None:
            raise ValueError("agent_sigma needs agent_rating: a spread around which rating?")
        return None
    if isinstance(agent_rating, (tuple, list, np.ndarray)):
        if len(agent_rating) != 2:
            raise ValueError(f"agent_rating must be a rating or a pair (mu, sigma), got {agent_rating!r}")
        if agent_sigma is not None:
            raise ValueError("give sigma either in agent_rating=(mu, sigma) or as agent_sigma, not both")
        mu, sigma = agent_rating
    else:
        mu, sigma = agent_rating, (0.0 if agent_sigma is None else agent_sigma)
    try:
        mu, sigma = float(mu), float(sigma)
    except (TypeError, ValueError):
        raise ValueError(f"agent_rating must be numbers, got {agent_rating!r} and sigma {agent_sigma!r}") from None
    if not math.isfinite(mu):
        raise ValueError(f"agent_rating must be finite, got {mu}")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"the agent's sigma must be finite and >= 0, got {sigma}")
    return mu, sigma


def _candidates(test_cases: Table, exclude: Iterable[str]) -> pd.DataFrame:
    """``test_case_id, mu, sigma`` of the rated test cases not excluded (σ = 0 when the table has none)."""
    tc = to_pandas(test_cases)
    require_columns(tc, ("test_case_id", "mu"), "test-case table")
    ids = test_case_index(tc).to_numpy(dtype=object)
    mu = floats_of(tc, "mu", "test-case table")
    sigma = floats_of(tc, "sigma", "test-case table", 0.0) if "sigma" in tc.columns else np.zeros(len(tc))
    keep = ~_excluded(ids, exclude)
    return pd.DataFrame({"test_case_id": ids[keep], "mu": mu[keep], "sigma": sigma[keep]})


def _excluded(ids: np.ndarray, exclude: Iterable[str]) -> np.ndarray:
    """Which of ``ids`` (strings) are in ``exclude``, a collection of ids."""
    if isinstance(exclude, (str, bytes)):
        raise ValueError("exclude must be a collection of test-case ids, not one string")
    excluded = {str(x) for x in exclude}
    return np.isin(ids, np.array(sorted(excluded), dtype=object)) if excluded else np.zeros(len(ids), dtype=bool)


def _information_at(pool: pd.DataFrame, estimate: tuple[float, float] | None) -> np.ndarray:
    """Expected information of each test case of ``pool`` at the agent's estimate (the new-agent prior when None)."""
    at_mu, at_sigma = estimate if estimate is not None else (START_MU, START_SIGMA)
    return expected_information(pool["mu"].to_numpy(), pool["sigma"].to_numpy(), at_mu, at_sigma)


def _check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget must be an integer >= 1, got {budget!r}")
    return int(budget)


def _spread_greedy(mu: np.ndarray, info: np.ndarray, n: int, spread: float, tiebreak: np.ndarray) -> np.ndarray:
    """Greedy batch: the most informative test case, then the next most informative discounted by its closeness in μ.

    A candidate's worth is its information × Π over the batch so far of (1 − exp(−½(Δμ/spread)²)): a
    near-duplicate of a chosen difficulty is worth almost nothing until the band around it is used up.
    """
    worth = info.astype(np.float64).copy()
    chosen = np.empty(n, dtype=np.int64)
    free = np.ones(len(mu), dtype=bool)
    for k in range(n):
        masked = np.where(free, worth, -np.inf)
        best = np.flatnonzero(masked == masked.max())
        pick = best[np.argmin(tiebreak[best])] if len(best) > 1 else best[0]
        chosen[k] = pick
        free[pick] = False
        if spread > 0:
            worth *= 1.0 - np.exp(-0.5 * ((mu - mu[pick]) / spread) ** 2)
    return chosen


def _stratified(mu: np.ndarray, n: int, tiebreak: np.ndarray) -> np.ndarray:
    """The test cases nearest the quantiles (k + ½)/n of μ, the median first, then outwards."""
    order = np.lexsort((tiebreak, mu))
    targets = (np.arange(n) + 0.5) / n * len(mu) - 0.5
    picks = np.clip(np.round(targets).astype(np.int64), 0, len(mu) - 1)
    used = np.zeros(len(mu), dtype=bool)
    out = []
    for q in np.argsort(np.abs((np.arange(n) + 0.5) / n - 0.5), kind="stable"):
        p = picks[q]
        step = 0
        while used[p]:  # taken (more quantiles than distinct ranks): the nearest free rank
            step += 1
            for cand in (picks[q] - step, picks[q] + step):
                if 0 <= cand < len(mu) and not used[cand]:
                    p = cand
                    break
        used[p] = True
        out.append(order[p])
    return np.asarray(out, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# the stratified design


MAX_STRATA = 10
"""Difficulty strata of the ``stratified`` design (fewer when the budget is small)."""


def difficulty_strata(mu: ArrayLike, n_strata: int) -> np.ndarray:
    """Stratum of each test case: ``n_strata`` groups of (nearly) equal size by increasing μ (ties by position)."""
    mu = np.asarray(mu, dtype=np.float64)
    order = np.argsort(mu, kind="stable")
    strata = np.empty(len(mu), dtype=np.int64)
    strata[order] = np.arange(len(mu)) * n_strata // max(len(mu), 1)
    return strata


def neyman_shares(information, strata, n_strata: int, uniform_share: float) -> np.ndarray:
    """Each stratum's share of the sample: Neyman allocation N_h·S_h blended with proportional allocation.

    ``information`` is each test case's expected information at the agent's estimate
    (:func:`expected_information`); S_h = √(its mean over the stratum) is the spread of a
    result's term g(S − E) there under the model, so the strata near the agent's rating, whose
    results vary, get more of the sample than the ones it surely wins or loses; ``uniform_share`` of
    the sample stays proportional to the strata's sizes (bounding every weight, and guarding against
    results the model does not expect).
    """
    size = np.bincount(strata, minlength=n_strata).astype(np.float64)
    spread = np.sqrt(np.bincount(strata, information, minlength=n_strata) / np.maximum(size, 1.0))
    neyman = size * spread / max(float(np.sum(size * spread)), np.finfo(float).tiny)
    return (1.0 - uniform_share) * neyman + uniform_share * size / size.sum()


def _allocate(strata, n_strata: int, shares: np.ndarray, taken: np.ndarray, size: int, rng) -> np.ndarray:
    """Draw ``size`` more test cases (indices), without replacement, each from the stratum furthest below its share.

    Every stratum first gets one test case (its weight needs a result); then the next pick goes to
    the stratum with the largest deficit ``total·share − taken`` among those with test cases left.
    Within a stratum the pick is uniform at random.
    """
    n_h = np.bincount(strata[taken], minlength=n_strata).astype(np.float64)
    left = np.bincount(strata[~taken], minlength=n_strata)
    total = n_h.sum() + size
    picks = []
    for _ in range(size):
        open_ = left > 0
        if not open_.any():
            break
        empty = open_ & (n_h == 0)
        deficit = np.where(empty, np.inf, total * shares - n_h)
        h = int(np.argmax(np.where(open_, deficit, -np.inf)))
        free = np.flatnonzero((strata == h) & ~taken)
        pick = int(free[rng.integers(len(free))])
        taken[pick] = True
        picks.append(pick)
        n_h[h] += 1
        left[h] -= 1
    return np.asarray(picks, dtype=np.int64)


def default_strata(n_results: int, n_test_cases: int) -> int:
    """Strata for ``n_results`` results: about three results a stratum, at most ``MAX_STRATA``."""
    return max(1, min(MAX_STRATA, n_results // 3, n_test_cases))


def stratum_weights(test_cases: Table, test_case_ids: Iterable[str], *, n_strata: int | None = None) -> pd.Series:
    """Post-stratified design weights of evaluated test cases: N_h / n_h of their difficulty stratum.

    The benchmark's test cases are cut into ``n_strata`` strata of equal size by difficulty
    (:func:`difficulty_strata`); an evaluated test case stands for the N_h test cases of its stratum
    shared among the n_h evaluated there. With these weights a placement answers to the whole
    benchmark, whichever strata the sample favoured (the ``stratified`` design of
    :func:`select_test_cases` favours the strata near the agent's rating).

    Parameters
    ----------
    test_cases : DataFrame or pyarrow.Table
        The frozen test-case ratings (``test_case_id, mu``).
    test_case_ids : iterable of ids
        The test cases the agent was evaluated on (repeats count once; unknown ids are ignored).
    n_strata : int, optional
        Default :func:`default_strata` of the number evaluated.

    Returns
    -------
    pandas.Series
        Weight per evaluated test-case id (for ``place_on_subset(design=...)``).
    """
    pool = _candidates(test_cases, ())
    ids = pool["test_case_id"].to_numpy()
    pos = pd.Index(ids).get_indexer(pd.Index(sorted({str(x) for x in test_case_ids})))
    pos = pos[pos >= 0]
    h = default_strata(len(pos), len(pool)) if n_strata is None else _check_budget(n_strata)
    strata = difficulty_strata(pool["mu"].to_numpy(), h)
    size = np.bincount(strata, minlength=h)
    n_h = np.bincount(strata[pos], minlength=h)
    return pd.Series(size[strata[pos]] / n_h[strata[pos]], index=ids[pos], dtype=np.float64)


def _stratified_sample(test_cases, n: int, estimate, exclude, seed: int, n_strata, uniform_share: float) -> pd.DataFrame:
    pool = _candidates(test_cases, ())
    taken = _excluded(pool["test_case_id"].to_numpy(), exclude)  # the excluded count as drawn already
    h = default_strata(int(taken.sum()) + n, len(pool)) if n_strata is None else _check_budget(n_strata)
    strata = difficulty_strata(pool["mu"].to_numpy(), h)
    info = _information_at(pool, estimate)
    picks = _allocate(strata, h, neyman_shares(info, strata, h, uniform_share), taken, n, np.random.default_rng(seed))
    return pool.iloc[picks].assign(information=info[picks]).reset_index(drop=True)


def select_test_cases(
    test_cases: Table,
    budget: int,
    *,
    agent_rating: ArrayLike | None = None,
    agent_sigma: float | None = None,
    exclude: Iterable[str] = (),
    method: str = "information",
    seed: int = 0,
    spread: float = DEFAULT_SPREAD,
    n_strata: int | None = None,
    uniform_share: float = 0.2,
) -> pd.DataFrame:
    """The next ``budget`` test cases to evaluate a new agent on, most useful first.

    Parameters
    ----------
    test_cases : DataFrame or pyarrow.Table
        The frozen test-case ratings (``test_cases`` of :func:`rate`): ``test_case_id, mu`` and
        optionally ``sigma`` (without it the ratings count as exactly known).
    budget : int
        How many test cases to return (fewer when fewer are left).
    agent_rating : float or (float, float), optional
        The agent's current estimate: a rating, or a pair ``(mu, sigma)``. None: nothing known yet.
    agent_sigma : float, optional
        The estimate's σ, when ``agent_rating`` is a single number (the expected information is
        then integrated over N(mu, sigma²)).
    exclude : iterable of ids
        Test cases already evaluated (never returned).
    method : {"information", "stratified", "random"}
        ``stratified``: a random sample by difficulty stratum, Neyman-allocated at the estimate
        (:func:`neyman_shares`: more from the strata near the agent's rating, ``uniform_share`` of
        the sample proportional to the strata's sizes, at least one per stratum), counting the
        excluded test cases as already drawn; place the results with :func:`stratum_weights`.
        ``information``: greedy by the expected Fisher information at the estimate, spread in
        difficulty (see ``spread``); with no estimate, a difficulty-stratified start (the test
        cases at the quantiles (k + ½)/budget of μ, the median first); unweighted, it is biased
        when the model misfits the agent. ``random``: a uniform random sample (seeded), for comparison.
    seed : int
        Seed of the random sample and of tie-breaks between equally useful test cases.
    spread : float
        Elo scale of the batch's repulsion: a candidate within ``spread`` of an already chosen
        difficulty has its worth multiplied by 1 − exp(−½(Δμ/spread)²). 0 turns it off (pure
        information order).
    n_strata : int, optional
        Strata of the ``stratified`` design (default :func:`default_strata` of the excluded and
        chosen test cases together).
    uniform_share : float
        Share of the ``stratified`` sample allocated in proportion to the strata's sizes, in (0, 1].

    Returns
    -------
    pandas.DataFrame
        ``test_case_id, mu, sigma, information`` in the order to evaluate them; ``information`` is
        the expected Fisher information of one match at the agent's estimate (at the new-agent prior
        N(1500, 350²) when nothing is known).
    """
    n = _check_budget(budget)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not (isinstance(uniform_share, (int, float)) and 0.0 < uniform_share <= 1.0):
        raise ValueError(f"uniform_share must be in (0, 1], got {uniform_share!r}")
    if not (isinstance(spread, (int, float, np.floating)) and math.isfinite(spread) and spread >= 0):
        raise ValueError(f"spread must be a finite number >= 0, got {spread!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    estimate = _agent_estimate(agent_rating, agent_sigma)
    if method == "stratified":
        return _stratified_sample(test_cases, n, estimate, exclude, seed, n_strata, uniform_share)
    pool = _candidates(test_cases, exclude)
    n = min(n, len(pool))
    mu = pool["mu"].to_numpy()
    info = _information_at(pool, estimate)
    rng = np.random.default_rng(seed)
    if method == "random":
        chosen = rng.permutation(len(pool))[:n]
    else:
        tiebreak = rng.permutation(len(pool))
        if estimate is None:
            chosen = _stratified(mu, n, tiebreak)
        else:
            chosen = _spread_greedy(mu, info, n, float(spread), tiebreak)
    out = pool.iloc[chosen].assign(information=info[chosen])
    return out.reset_index(drop=True)
