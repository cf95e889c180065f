"""Glicko-1 ratings of test cases and agents: the sequential update and :func:`rate`.

Every (agent, test case) result is a match. The agent scores S, the test case
1 − S. Each match is its own rating period: both players are updated from their
pre-match values with the standard Glicko-1 equations (Glickman 1999), with
q = ln 10 / 400 and g(σ) = 1 / √(1 + 3q²σ²/π²)::

    E   = 1 / (1 + 10^(−g(σ_j)(μ_i − μ_j)/400))
    σ'² = 1 / (1/σ² + q² g(σ_j)² E (1 − E))
    μ'  = μ + q σ'² g(σ_j) (S − E)

σ only shrinks (no rating-period inflation, no floor), as in the AGI-Elo paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import pandas as pd

from .frames import (
    Matches,
    MatchTableError,
    encode_matches,
    floats_of,
    ids_of,
    require_columns,
    to_flavour,
    to_pandas,
)
from .reliability import snapshot_reliability

__all__ = [
    "DEFAULT_SNAPSHOT_FRACTIONS",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS",
    "Q",
    "RatingResult",
    "g",
    "glicko_expected",
    "match_orders",
    "place_agents",
    "rate",
    "snapshot_ends",
    "update_match",
    "update_rating_period",
]

Q = math.log(10.0) / 400.0
DEFAULT_SNAPSHOT_FRACTIONS: tuple[float, ...] = tuple(round(k / 100, 2) for k in range(1, 101))
DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)


def g(sigma: Any) -> np.ndarray:
    """Glicko's attenuation g(σ) = 1 / √(1 + 3q²σ²/π²) of an opponent's rating deviation."""
    sigma = np.asarray(sigma, dtype=np.float64)
    return 1.0 / np.sqrt(1.0 + 3.0 * Q * Q * sigma * sigma / (math.pi * math.pi))


def glicko_expected(mu: Any, mu_opponent: Any, sigma_opponent: Any) -> np.ndarray:
    """Glicko's expected score E of a player rated ``mu`` against an opponent N(μ_j, σ_j²)."""
    diff = np.asarray(mu, dtype=np.float64) - np.asarray(mu_opponent, dtype=np.float64)
    return 1.0 / (1.0 + 10.0 ** (-g(sigma_opponent) * diff / 400.0))


def update_rating_period(mu: float, sigma: float, opponent_mu: Any, opponent_sigma: Any, scores: Any) -> tuple[float, float]:
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
    mu_agent: Any, sigma_agent: Any, mu_test_case: Any, sigma_test_case: Any, score: Any
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
        r = _match_update(*(float(a[idx]) for a in args))
        for o, v in zip(out, r, strict=True):
            o[idx] = v
    return tuple(o if o.ndim else o[()] for o in out)


@numba.njit(cache=True, error_model="numpy")
def _g(sigma):
    return 1.0 / math.sqrt(1.0 + 3.0 * Q * Q * sigma * sigma / (math.pi * math.pi))


@numba.njit(cache=True, error_model="numpy")
def _match_update(mu_a, sig_a, mu_t, sig_t, s):
    g_t = _g(sig_t)
    g_a = _g(sig_a)
    e_a = 1.0 / (1.0 + 10.0 ** (-g_t * (mu_a - mu_t) / 400.0))
    e_t = 1.0 / (1.0 + 10.0 ** (-g_a * (mu_t - mu_a) / 400.0))
    var_a = 1.0 / (1.0 / (sig_a * sig_a) + Q * Q * g_t * g_t * e_a * (1.0 - e_a))
    var_t = 1.0 / (1.0 / (sig_t * sig_t) + Q * Q * g_a * g_a * e_t * (1.0 - e_t))
    return (
        mu_a + Q * var_a * g_t * (s - e_a),
        math.sqrt(var_a),
        mu_t + Q * var_t * g_a * ((1.0 - s) - e_t),
        math.sqrt(var_t),
    )


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _run_matches(agent, test_case, score, start, stop, a_mu, a_sig, t_mu, t_sig, update_test_cases):
    """Apply matches ``start:stop`` (arrays already in processing order), updating the state in place."""
    for i in range(start, stop):
        a = agent[i]
        t = test_case[i]
        mu_a, sig_a, mu_t, sig_t = _match_update(a_mu[a], a_sig[a], t_mu[t], t_sig[t], score[i])
        a_mu[a] = mu_a
        a_sig[a] = sig_a
        if update_test_cases:
            t_mu[t] = mu_t
            t_sig[t] = sig_t


@numba.njit(cache=True, nogil=True)
def _running_means(agent, test_case, metric, start, stop, a_count, a_sum, t_count, t_sum):
    for i in range(start, stop):
        a_count[agent[i]] += 1.0
        a_sum[agent[i]] += metric[i]
        t_count[test_case[i]] += 1.0
        t_sum[test_case[i]] += metric[i]


def snapshot_ends(fractions: Any, n_matches: int) -> np.ndarray:
    """How many matches have been played at each snapshot fraction.

    Follows the authors' milestones: the state after match ``int(f·(n − 1))``
    (0-based), i.e. ``int(f·(n − 1)) + 1`` matches; 1.0 is every match.
    """
    f = np.asarray(fractions, dtype=np.float64)
    return np.floor(f * (n_matches - 1) + 1e-9).astype(np.int64) + 1


def match_orders(n_matches: int, *, seed: int | None, shuffle: bool, shuffles: int = 1) -> list[np.ndarray]:
    """The processing order(s) of the matches.

    ``shuffle=False`` is row order (only one order exists, so ``shuffles`` must be 1).
    Otherwise ``shuffles`` permutations drawn in turn from ``numpy.random.default_rng(seed)``:
    the first is the same whatever ``shuffles`` is.
    """
    if shuffles < 1:
        raise ValueError(f"shuffles must be >= 1, got {shuffles}")
    if not shuffle:
        if shuffles != 1:
            raise ValueError("shuffles > 1 needs shuffle=True: row order is a single order")
        return [np.arange(n_matches, dtype=np.int64)]
    rng = np.random.default_rng(seed)
    return [rng.permutation(n_matches).astype(np.int64) for _ in range(shuffles)]


def _check_fractions(fractions: Any, name: str) -> np.ndarray:
    f = np.asarray(tuple(fractions), dtype=np.float64)
    if f.ndim != 1 or len(f) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of fractions")
    if not (np.all(f > 0) and np.all(f <= 1) and np.all(np.diff(f) > 0)):
        raise ValueError(f"{name} must increase strictly within (0, 1], got {f.tolist()}")
    return f


@dataclass(frozen=True)
class RatingResult:
    """What :func:`rate` returns.

    Attributes
    ----------
    test_cases : DataFrame
        ``test_case_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd``;
        ``mean_score`` is the test case's own score (1 − S), ``mean_metric`` the
        agents' mean metric on it, ``mu_order_sd`` the spread of μ across
        ``shuffles`` orders (NaN with a single order).
    agents : DataFrame
        ``agent_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd``.
    snapshots : DataFrame
        ``fraction, kind, id, mu, sigma``: the state after that share of the matches.
    reliability : DataFrame | None
        ``fraction, rho_test_cases, rho_agents, mae, mse`` (see :func:`reliability`).
    settings : dict
        The arguments of :func:`rate`, to reproduce the result.
    n_matches : int
    """

    test_cases: Any
    agents: Any
    snapshots: Any
    reliability: Any
    settings: dict = field(repr=False)
    n_matches: int = 0


def rate(
    matches: Any,
    *,
    seed: int | None = 42,
    shuffle: bool = True,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
    snapshot_fractions: Any = DEFAULT_SNAPSHOT_FRACTIONS,
    test_case_snapshot_fractions: Any = DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    shuffles: int = 1,
    with_reliability: bool = True,
) -> RatingResult:
    """Rate every test case and agent of a match table with sequential Glicko-1.

    Parameters
    ----------
    matches : pandas or polars DataFrame
        ``test_case_id, agent_id, metric, score``: one row per match.
    seed : int
        Seed of the match order(s); the same seed gives bit-identical results.
    shuffle : bool
        ``False`` processes matches in row order.
    init_mu, init_sigma : float
        Every player's starting rating.
    snapshot_fractions : sequence of float
        Shares of the matches after which agent ratings (and reliability) are recorded.
    test_case_snapshot_fractions : sequence of float
        Shares after which test-case ratings are recorded (fewer: there are many test cases).
    shuffles : int
        Rate this many independent orders; ratings, snapshots and reliability are
        their means, ``mu_order_sd`` their spread.
    with_reliability : bool
        Compute the reliability table during the pass (see :func:`reliability`).

    Returns
    -------
    RatingResult
        Frames in the flavour (pandas or polars) of ``matches``.
    """
    m = encode_matches(matches)
    fractions = _check_fractions(snapshot_fractions, "snapshot_fractions")
    tc_fractions = _check_fractions(test_case_snapshot_fractions, "test_case_snapshot_fractions")
    if not (init_sigma > 0 and math.isfinite(init_sigma) and math.isfinite(init_mu)):
        raise ValueError(f"init_mu must be finite and init_sigma > 0, got {init_mu}, {init_sigma}")
    n = len(m)
    ends = snapshot_ends(fractions, n)
    tc_ends = snapshot_ends(tc_fractions, n)
    runs = []
    for order in match_orders(n, seed=seed, shuffle=shuffle, shuffles=shuffles):
        # the hot loops read the matches sequentially: put them in processing order once
        runs.append(_rate_one_order(m.reordered(order), ends, tc_ends, init_mu, init_sigma, with_reliability=with_reliability))

    def mean(key):
        return np.mean([r[key] for r in runs], axis=0)

    def order_sd(key):
        if len(runs) == 1:
            return np.full(runs[0][key].shape, np.nan)
        return np.std([r[key] for r in runs], axis=0, ddof=1)

    a_n = np.bincount(m.agent, minlength=len(m.agent_ids))
    t_n = np.bincount(m.test_case, minlength=len(m.test_case_ids))
    agents = pd.DataFrame(
        {
            "agent_id": m.agent_ids,
            "mu": mean("a_mu"),
            "sigma": mean("a_sig"),
            "matches": a_n,
            "mean_score": np.bincount(m.agent, m.score, len(a_n)) / a_n,
            "mean_metric": np.bincount(m.agent, m.metric, len(a_n)) / a_n,
            "mu_order_sd": order_sd("a_mu"),
        }
    )
    test_cases = pd.DataFrame(
        {
            "test_case_id": m.test_case_ids,
            "mu": mean("t_mu"),
            "sigma": mean("t_sig"),
            "matches": t_n,
            "mean_score": np.bincount(m.test_case, 1.0 - m.score, len(t_n)) / t_n,
            "mean_metric": np.bincount(m.test_case, m.metric, len(t_n)) / t_n,
            "mu_order_sd": order_sd("t_mu"),
        }
    )
    snapshots = _snapshot_table(
        fractions,
        m.agent_ids,
        mean("a_mu_at"),
        mean("a_sig_at"),
        tc_fractions,
        m.test_case_ids,
        mean("t_mu_at"),
        mean("t_sig_at"),
    )
    reliability = None
    if with_reliability:
        rel = mean("reliability")
        reliability = pd.DataFrame(
            {"fraction": fractions, "rho_test_cases": rel[:, 0], "rho_agents": rel[:, 1], "mae": rel[:, 2], "mse": rel[:, 3]}
        )
    settings = dict(
        seed=seed,
        shuffle=shuffle,
        init_mu=init_mu,
        init_sigma=init_sigma,
        snapshot_fractions=tuple(fractions.tolist()),
        test_case_snapshot_fractions=tuple(tc_fractions.tolist()),
        shuffles=shuffles,
    )
    flav = m.flavour
    return RatingResult(
        test_cases=to_flavour(test_cases, flav),
        agents=to_flavour(agents, flav),
        snapshots=to_flavour(snapshots, flav),
        reliability=None if reliability is None else to_flavour(reliability, flav),
        settings=settings,
        n_matches=n,
    )


def _rate_one_order(ordered: Matches, ends, tc_ends, init_mu, init_sigma, *, with_reliability: bool) -> dict:
    n_a, n_t = len(ordered.agent_ids), len(ordered.test_case_ids)
    a_mu, a_sig = np.full(n_a, init_mu), np.full(n_a, init_sigma)
    t_mu, t_sig = np.full(n_t, init_mu), np.full(n_t, init_sigma)
    a_mu_at, a_sig_at = np.empty((len(ends), n_a)), np.empty((len(ends), n_a))
    t_mu_at, t_sig_at = np.empty((len(tc_ends), n_t)), np.empty((len(tc_ends), n_t))
    reliability = np.full((len(ends), 4), np.nan)
    a_count, a_sum, t_count, t_sum = np.zeros(n_a), np.zeros(n_a), np.zeros(n_t), np.zeros(n_t)
    done = 0
    for stop in np.unique(np.concatenate([ends, tc_ends])):
        _run_matches(ordered.agent, ordered.test_case, ordered.score, done, stop, a_mu, a_sig, t_mu, t_sig, True)
        if with_reliability:
            _running_means(ordered.agent, ordered.test_case, ordered.metric, done, stop, a_count, a_sum, t_count, t_sum)
        done = stop
        for k in np.flatnonzero(ends == stop):
            a_mu_at[k], a_sig_at[k] = a_mu, a_sig
        if with_reliability and (stop == ends).any():
            with np.errstate(invalid="ignore", divide="ignore"):
                rel = snapshot_reliability(ordered, stop, a_mu, t_mu, a_sum / a_count, t_sum / t_count)
            reliability[ends == stop] = rel
        for k in np.flatnonzero(tc_ends == stop):
            t_mu_at[k], t_sig_at[k] = t_mu, t_sig
    return dict(
        a_mu=a_mu,
        a_sig=a_sig,
        t_mu=t_mu,
        t_sig=t_sig,
        a_mu_at=a_mu_at,
        a_sig_at=a_sig_at,
        t_mu_at=t_mu_at,
        t_sig_at=t_sig_at,
        reliability=reliability,
    )


def _snapshot_table(fractions, agent_ids, a_mu_at, a_sig_at, tc_fractions, test_case_ids, t_mu_at, t_sig_at) -> pd.DataFrame:
    def block(fr, ids, mu, sig, kind):
        return pd.DataFrame(
            {
                "fraction": np.repeat(fr, len(ids)),
                "kind": kind,
                "id": np.tile(ids, len(fr)),
                "mu": mu.ravel(),
                "sigma": sig.ravel(),
            }
        )

    return pd.concat(
        [
            block(fractions, agent_ids, a_mu_at, a_sig_at, "agent"),
            block(tc_fractions, test_case_ids, t_mu_at, t_sig_at, "test_case"),
        ],
        ignore_index=True,
    )


def place_agents(
    new_matches: Any,
    test_cases: Any,
    *,
    seed: int | None = 42,
    shuffle: bool = True,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
) -> Any:
    """Rate new agents against frozen test-case ratings.

    Each new agent starts at N(init_mu, init_sigma²) and plays its matches (in
    one order drawn from ``seed``) against test cases whose ratings stay as they
    are: no existing rating changes. The cheap path when one new model lands.

    Parameters
    ----------
    new_matches : DataFrame
        ``test_case_id, agent_id, metric, score`` of the new agent(s).
    test_cases : DataFrame
        ``test_case_id, mu`` and optionally ``sigma`` (the ``test_cases`` of :func:`rate`);
        without ``sigma`` opponents count as exactly known (g = 1).

    Returns
    -------
    DataFrame
        ``agent_id, mu, sigma, matches, mean_score, mean_metric``.
    """
    m = encode_matches(new_matches, "new match table")
    tc = to_pandas(test_cases)
    require_columns(tc, ("test_case_id", "mu"), "test-case table")
    tc_ids = ids_of(tc, "test_case_id", "test-case table")
    lookup = pd.Index(tc_ids)
    if not lookup.is_unique:
        dup = lookup[lookup.duplicated()][0]
        raise MatchTableError(
            f"test-case table lists {dup!r} more than once (rule: test_case_unique)",
            rule="test_case_unique",
            column="test_case_id",
        )
    pos = lookup.get_indexer(m.test_case_ids)
    if (pos < 0).any():
        unknown = m.test_case_ids[pos < 0]
        rows = np.flatnonzero(np.isin(to_pandas(new_matches)["test_case_id"].astype(str).to_numpy(), unknown))
        raise MatchTableError(
            f"new match table row {rows[0]}: test case {unknown[0]!r} has no frozen rating "
            f"({len(unknown)} unknown test case(s); rule: test_case_known)",
            rule="test_case_known",
            row=int(rows[0]),
            column="test_case_id",
        )
    t_mu = floats_of(tc, "mu", "test-case table")[pos]
    t_sig = floats_of(tc, "sigma", "test-case table", 0.0)[pos] if "sigma" in tc.columns else np.zeros(len(pos))
    n_a = len(m.agent_ids)
    a_mu, a_sig = np.full(n_a, float(init_mu)), np.full(n_a, float(init_sigma))
    (order,) = match_orders(len(m), seed=seed, shuffle=shuffle)
    ordered = m.reordered(order)
    _run_matches(ordered.agent, ordered.test_case, ordered.score, 0, len(m), a_mu, a_sig, t_mu, t_sig, False)
    a_n = np.bincount(m.agent, minlength=n_a)
    agents = pd.DataFrame(
        {
            "agent_id": m.agent_ids,
            "mu": a_mu,
            "sigma": a_sig,
            "matches": a_n,
            "mean_score": np.bincount(m.agent, m.score, n_a) / a_n,
            "mean_metric": np.bincount(m.agent, m.metric, n_a) / a_n,
        }
    )
    return to_flavour(agents, m.flavour)
