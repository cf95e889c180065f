"""Placement from a chosen subset: :func:`place_on_subset` and :func:`place_provisional_agents`.

A logistic model (the default) places a new agent under the model itself, against the frozen test cases'
posteriors (:func:`~agielo_dagster.rating.logistic.place_one`): its rating is on the benchmark's scale as it
stands, whichever test cases it played. Glicko's ratings (``model="glicko"``) are placed against the frozen
final ratings and mapped to the joint rating's scale by :func:`joint_scale` (the test cases' histories replayed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._kernels import Q
from .frames import (
    Table,
    encode_matches,
    flavour_of,
    floats_of,
    ids_of,
    row_positions,
    to_flavour,
    to_pandas,
)
from .glicko import g
from .intervals import z_of
from .logistic import place_one
from .placement import place_agents, refuse_unknown_test_cases
from .settings import DEFAULT_MODEL, DEFAULT_ORDERS
from .strata import _candidates, default_strata

DISPERSION_PRIOR = 10.0
"""Pseudo-matches of dispersion 1 (Bernoulli) blended into the measured dispersion of few results."""


def _map_estimate(score, mu_t, g_t, design, prior_mu: float, prior_sigma: float) -> float:
    """The agent's rating against frozen test cases: the root of the (design-weighted) score equation with the prior."""
    theta = prior_mu
    for _ in range(100):
        e = 1.0 / (1.0 + 10.0 ** (-g_t * (theta - mu_t) / 400.0))
        grad = Q * np.sum(design * g_t * (score - e)) - (theta - prior_mu) / prior_sigma**2
        info = Q * Q * np.sum(design * g_t * g_t * e * (1.0 - e)) + 1.0 / prior_sigma**2
        step = float(np.clip(grad / info, -200.0, 200.0))
        theta += step
        if abs(step) < 1e-7:
            break
    return theta


def _frozen_fit(score, mu_t, sig_t, design, prior_mu, prior_sigma) -> tuple[float, float]:
    """(θ, se of θ) of one agent against frozen test cases: the mode, and a variance for its results and their ratings.

    ``design`` weighs each test case's term of the score equation Σ d_j g_j (S_j − E_j(θ)) (1: the
    agent's own likelihood; 1/(n·p_j) for test cases drawn with probabilities p: the Hansen–Hurwitz
    estimate of the whole benchmark's equation). The variance is the sandwich of that equation,
    Σ (d g (S − E))² over the squared slope, with the squared residuals blended with their model
    expectation d²g²E(1 − E) over ``DISPERSION_PRIOR`` pseudo-matches (few results alone understate
    it), plus the test cases' own rating uncertainty σ_j through dθ/dμ_j.
    """
    g_t = g(sig_t)
    theta = _map_estimate(score, mu_t, g_t, design, prior_mu, prior_sigma)
    e = 1.0 / (1.0 + 10.0 ** (-g_t * (theta - mu_t) / 400.0))
    w = g_t * g_t * e * (1.0 - e)
    model = design * design * w  # each squared residual's expectation under the model
    n = len(score)
    resid = np.sum((design * g_t * (score - e)) ** 2) * n / max(n - 1, 1)
    dispersion = (resid + DISPERSION_PRIOR * np.mean(model)) / (np.sum(model) + DISPERSION_PRIOR * np.mean(model))
    prior_prec = 1.0 / prior_sigma**2
    slope = Q * Q * np.sum(design * w) + prior_prec
    var = (dispersion * Q * Q * np.sum(model) + prior_prec) / slope**2
    var += float(np.sum((Q * Q * design * w / slope) ** 2 * sig_t**2))
    return float(theta), float(math.sqrt(var))


def joint_scale(
    test_cases: Table,
    theta: ArrayLike,
    *,
    orders: int = DEFAULT_ORDERS,
    seed: int | None = 42,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
) -> np.ndarray:
    """Where a joint rating puts agents of rating ``theta`` on the scale of the frozen final test-case ratings.

    Each θ becomes a synthetic agent scoring its expected score E_j(θ) (with g(σ_j)) on every test
    case of the table, placed by :func:`place_agents` (the test cases' histories replayed). Any
    estimate against the final ratings (ours, a CAT library's) is brought to the joint scale this way.

    Parameters
    ----------
    test_cases : DataFrame or pyarrow.Table
        The frozen ``test_cases`` of :func:`rate`.
    theta : array_like
        Ratings on the final ratings' scale (Elo).
    orders, seed, init_mu, init_sigma
        As for :func:`place_agents`.

    Returns
    -------
    numpy.ndarray
        The joint-scale rating of each θ.
    """
    tc = to_pandas(test_cases)
    pool = _candidates(tc, ())
    points = np.atleast_1d(np.asarray(theta, dtype=np.float64))
    if not np.isfinite(points).all():
        raise ValueError("theta must be finite")
    mu_all, g_all = pool["mu"].to_numpy(), g(pool["sigma"].to_numpy())
    expected = 1.0 / (1.0 + 10.0 ** (-g_all[None, :] * (points[:, None] - mu_all[None, :]) / 400.0))
    names = np.array([f"point_{k:06d}" for k in range(len(points))], dtype=object)
    synthetic = pd.DataFrame(
        {
            "test_case_id": np.tile(pool["test_case_id"].to_numpy(), len(points)),
            "agent_id": np.repeat(names, len(mu_all)),
            "metric": expected.ravel(),
            "score": expected.ravel(),
        }
    )
    placed = to_pandas(place_agents(synthetic, tc, orders=orders, seed=seed, init_mu=init_mu, init_sigma=init_sigma))
    return placed.set_index("agent_id").loc[names, "mu"].to_numpy()


def place_on_subset(
    new_matches: Table,
    test_cases: Table,
    *,
    level: float = 0.9,
    orders: int = DEFAULT_ORDERS,
    seed: int | None = 42,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
    design: Mapping[str, float] | pd.Series | None = None,
    model: str = DEFAULT_MODEL,
) -> Table:
    """Place new agents from any chosen subset of the test cases (an adaptive one too), where a joint re-rating would put them.

    A logistic ``model`` places each agent under the model against the test cases' posteriors
    (:func:`~agielo_dagster.rating.logistic.place_one`; ``theta, theta_se`` are then ``mu, sigma``, and
    ``design`` and the Glicko parameters do not apply). For ``model="glicko"``:

    :func:`place_agents` replays the agent's matches against the test cases' rating histories:
    right for a representative sample of the benchmark, but biased when the subset was chosen by
    difficulty (a test case picked because its final rating is near the agent's was rated much
    lower during most of its history). Here the two steps are separated:

    1. the agent's rating θ on the scale of the frozen final ratings, from its results alone
       (posterior mode under N(init_mu, init_sigma²), the Glicko expected score with g(σ_j)): valid
       whichever test cases were chosen, adaptively or not, since the choice depends only on
       results already seen;
    2. the map f(θ) to the joint rating's scale: where :func:`place_agents` would put an agent that
       scores its expected score E_j(θ) on every test case of the table.

    ``mu = f(θ)``; ``mu_lo, mu_hi = f(θ ∓ z·se)`` (f is increasing), where se accounts for the results'
    dispersion and for the test cases' rating uncertainty (their σ).

    Parameters
    ----------
    new_matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score`` of the new agent(s), on any test cases of the table.
    test_cases : DataFrame or pyarrow.Table
        The frozen ``test_cases`` of :func:`rate` (``test_case_id, mu``; ``sigma`` and the history
        columns when present).
    level : float
        Confidence level of ``mu_lo, mu_hi``.
    orders, seed : int
        Replays of :func:`place_agents` behind the map f, and their seed.
    init_mu, init_sigma : float
        The new agent's prior (and :func:`place_agents`' start).
    design : mapping or Series, optional
        Design weight of each test case's term (test-case id → weight), when the test cases were
        drawn at random with unequal probabilities: 1/(n·p) summed over the n draws that hit it (what
        :func:`place_sequentially` with ``method="importance"`` passes). The estimate then answers to
        the whole benchmark's score equation, whatever the model gets wrong. None: every term weighs 1.
    model : str
        The rating model the test cases were rated by (``rasch``, ``2pl`` or ``glicko``).

    Returns
    -------
    DataFrame or pyarrow.Table
        ``agent_id, mu, sigma, mu_lo, mu_hi, matches, mean_score, mean_metric, theta, theta_se``:
        as :func:`place_agents`, with ``sigma = (mu_hi − mu_lo) / 2z`` and ``theta, theta_se`` the
        estimate on the frozen scale (what :func:`select_test_cases` takes).
    """
    z = z_of(level)
    from .checks import check_start

    check_start(init_mu, init_sigma)
    m = encode_matches(new_matches, "new match table")
    tc = to_pandas(test_cases)
    pool = _candidates(tc, ())
    pos = pd.Index(pool["test_case_id"]).get_indexer(pd.Index(np.asarray(m.test_case_ids).astype(str)))
    refuse_unknown_test_cases(m, pos)
    mu_all, sig_all = pool["mu"].to_numpy(), pool["sigma"].to_numpy()
    t_of = pos[m.test_case]
    if design is None:
        d_of = np.ones(len(pool))
    else:
        d_of = pd.Series(design, dtype=np.float64).reindex(pool["test_case_id"].to_numpy()).fillna(0.0).to_numpy()
        if not (np.isfinite(d_of).all() and (d_of >= 0).all()):
            raise ValueError("design weights must be finite and >= 0")
    if model != "glicko":
        weights = None if design is None else (lambda rows: d_of[t_of[rows]])
        return to_flavour(_placed_by_model(m, mu_all[t_of], sig_all[t_of], z, weights), m.flavour)
    fits = []
    for a in range(m.n_agents):
        rows = np.flatnonzero(m.agent == a)
        t = t_of[rows]
        fits.append(_frozen_fit(m.score[rows], mu_all[t], sig_all[t], d_of[t], float(init_mu), float(init_sigma)))
    theta = np.array([f[0] for f in fits])
    theta_se = np.array([f[1] for f in fits])
    # the map f to the joint scale (increasing; the replays' noise guarded)
    points = np.column_stack([theta - z * theta_se, theta, theta + z * theta_se]).ravel()
    f = np.maximum.accumulate(
        joint_scale(tc, points, orders=orders, seed=seed, init_mu=init_mu, init_sigma=init_sigma).reshape(-1, 3), axis=1
    )
    return to_flavour(_placed(m, f, theta, theta_se, z), m.flavour)


def _placed(m, f: np.ndarray, theta: np.ndarray, theta_se: np.ndarray, z: float) -> pd.DataFrame:
    """The placed agents' table from the map's values ``f`` (one row (lo, mid, hi) per agent)."""
    a_n = np.bincount(m.agent, minlength=m.n_agents)
    return pd.DataFrame(
        {
            "agent_id": m.agent_ids,
            "mu": f[:, 1],
            "sigma": (f[:, 2] - f[:, 0]) / (2.0 * z),
            "mu_lo": f[:, 0],
            "mu_hi": f[:, 2],
            "matches": a_n,
            "mean_score": np.bincount(m.agent, m.score, m.n_agents) / a_n,
            "mean_metric": np.bincount(m.agent, m.metric, m.n_agents) / a_n,
            "theta": theta,
            "theta_se": theta_se,
        }
    )


def _placed_by_model(m, mu_t: np.ndarray, sig_t: np.ndarray, z: float, design=None) -> pd.DataFrame:
    """Each agent of ``m`` placed under the logistic model; ``mu_t, sig_t`` are its matches' test cases' posteriors,
    ``design`` its matches' design weights (a function of the agent's rows; None: every result weighs 1)."""
    binary = bool(np.all((m.score == 0.0) | (m.score == 1.0)))
    placed, fits = {}, []
    for rows in _rows_by_agent(m):
        rows = rows[np.argsort(m.test_case[rows], kind="stable")]  # in test-case order: equal results, equal sums
        key = (m.test_case[rows].tobytes(), m.score[rows].tobytes())  # placed once (a tall benchmark's are few)
        if key not in placed:
            weights = None if design is None else design(rows)
            placed[key] = place_one(m.score[rows], mu_t[rows], sig_t[rows], binary=binary, design=weights)
        fits.append(placed[key])
    fits = np.array(fits, dtype=np.float64).reshape(-1, 2)
    mu, se = fits[:, 0], fits[:, 1]
    return _placed(m, np.column_stack([mu - z * se, mu, mu + z * se]), mu, se, z)


def _rows_by_agent(m) -> list[np.ndarray]:
    order = np.argsort(m.agent, kind="stable")
    return np.split(order, np.cumsum(np.bincount(m.agent, minlength=m.n_agents))[:-1])


SCALE_TEST_CASES = 20_000
"""At most this many test cases (an even sample by difficulty) carry the map to the joint scale in
:func:`place_provisional_agents`: the map is a mean over test cases, which 20,000 of them give within
about an Elo, and its cost then stays the same however wide the benchmark is."""


def _positions(test_cases: Table, ids: np.ndarray) -> np.ndarray:
    """Row of each id (strings) in the test-case table; -1 where it has none. A pyarrow table is never converted."""
    if flavour_of(test_cases) == "arrow":
        return row_positions(test_cases.column("test_case_id"), ids)
    tc = to_pandas(test_cases, ("test_case_id",))
    return pd.Index(ids_of(tc, "test_case_id", "test-case table").astype(str)).get_indexer(pd.Index(ids)).astype(np.int64)


TIED_VALUES = 64
"""Distinct tied difficulties :func:`difficulty_ranks` looks up one by one before it sorts the whole table instead."""


def difficulty_ranks(mu: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The difficulty rank of the test cases at ``positions``: their places in a stable sort of ``mu`` (ties by
    position, NaN last; as ``np.argsort(mu, kind="stable")`` ranks them, and so :func:`difficulty_strata`).

    A sorted copy of ``mu`` and a search per test case, not every test case's rank: a wide benchmark's argsort and
    rank arrays were 16 bytes a test case for a partial upload of a few dozen (issue 25). A tie's place among its
    equals is counted from the positions of that value, looked up for at most ``TIED_VALUES`` distinct values.
    """
    positions = np.asarray(positions, dtype=np.int64)
    ordered = np.sort(mu, kind="stable")
    x = mu[positions]
    below = np.searchsorted(ordered, x, "left")
    tied = np.searchsorted(ordered, x, "right") - below > 1
    tied |= np.isnan(x) & (len(ordered) - below > 1)  # searchsorted places NaN after the numbers, as the sort does
    del ordered
    values = np.unique(x[tied])  # NaN once at most: np.unique collapses NaNs
    if len(values) > TIED_VALUES:
        order = np.argsort(mu, kind="stable")
        rank = np.empty(len(mu), dtype=np.int64)
        rank[order] = np.arange(len(mu))
        return rank[positions]
    ranks = below.astype(np.int64)
    for v in values:
        equal = np.flatnonzero(np.isnan(mu) if np.isnan(v) else mu == v)
        at = np.flatnonzero(tied & ((x == v) | (np.isnan(x) & np.isnan(v))))
        ranks[at] += np.searchsorted(equal, positions[at])
    return ranks


def _rows(test_cases: Table, positions: np.ndarray) -> pd.DataFrame:
    """These rows of the test-case table (every column), as pandas: only they are converted."""
    if flavour_of(test_cases) == "arrow":
        return test_cases.take(positions).to_pandas()
    return to_pandas(test_cases).iloc[positions].reset_index(drop=True)


def place_provisional_agents(
    new_matches: Table,
    test_cases: Table,
    *,
    level: float = 0.9,
    orders: int = DEFAULT_ORDERS,
    seed: int | None = 42,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
    scale_test_cases: int = SCALE_TEST_CASES,
    model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """Place each agent of ``new_matches`` from its own results: what a benchmark does with partial uploads.

    **Logistic models** (the default): each agent under the model against its test cases' posteriors
    (:func:`~agielo_dagster.rating.logistic.place_one`), on the benchmark's own scale; every result
    counts once (under the model, which test cases were chosen biases nothing).

    **Glicko benchmarks** (``model="glicko"``): weighted by difficulty stratum. Per agent this is :func:`place_on_subset` with ``design=stratum_weights(test_cases, its test
    cases)``, with the same numbers while the table has at most ``scale_test_cases`` test cases. It
    costs in proportion to the agents' own matches, not to the benchmark's test cases: the table is
    indexed and ranked by difficulty once for all agents (a pyarrow table is never converted whole),
    each agent reads only its own test cases' ratings, and the map to the joint scale
    (:func:`joint_scale`) is computed on at most ``scale_test_cases`` of them (an even sample by
    difficulty rank) instead of on every one.

    Parameters
    ----------
    new_matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``; every test case must be in the table.
    test_cases : DataFrame or pyarrow.Table
        The frozen ``test_cases`` of :func:`rate` (unique ids, ``mu``, ``sigma`` and the history columns).
    level, orders, seed, init_mu, init_sigma
        As for :func:`place_on_subset`.
    scale_test_cases : int
        Most test cases the map to the joint scale is computed on (Glicko).
    model : str
        The rating model the test cases were rated by.

    Returns
    -------
    pandas.DataFrame
        As :func:`place_on_subset`, one row per agent, sorted by agent id.
    """
    z = z_of(level)
    if not (math.isfinite(init_mu) and math.isfinite(init_sigma) and init_sigma > 0):
        raise ValueError(f"init_mu must be finite and init_sigma > 0, got {init_mu}, {init_sigma}")
    if isinstance(scale_test_cases, bool) or not isinstance(scale_test_cases, (int, np.integer)) or scale_test_cases < 1:
        raise ValueError(f"scale_test_cases must be an integer >= 1, got {scale_test_cases!r}")
    size = int(scale_test_cases)
    m = encode_matches(new_matches, "new match table")
    pos = _positions(test_cases, np.asarray(m.test_case_ids).astype(str))
    refuse_unknown_test_cases(m, pos)
    mu_all = floats_of(to_pandas(test_cases, ("mu",)), "mu", "test-case table")
    n = len(mu_all)
    mine = _rows(test_cases, pos)  # the agents' own test cases
    mu_t = floats_of(mine, "mu", "test-case table")
    sig_t = floats_of(mine, "sigma", "test-case table", 0.0) if "sigma" in mine.columns else np.zeros(len(mine))
    t_of, r_of = m.test_case, difficulty_ranks(mu_all, pos)

    def design(rows: np.ndarray) -> np.ndarray:  # stratum weights N_h / n_h of the agent's own results
        h = default_strata(len(rows), n)
        strata = r_of[t_of[rows]] * h // n  # as difficulty_strata over the whole table
        edges = -(-np.arange(h + 1) * n // h)  # the first rank of each stratum
        n_h = np.bincount(strata, minlength=h)
        return np.diff(edges)[strata] / n_h[strata]

    if model != "glicko":
        return _placed_by_model(m, mu_t[m.test_case], sig_t[m.test_case], z, design)
    fits = []
    for a in range(m.n_agents):
        rows = np.flatnonzero(m.agent == a)
        t = t_of[rows]
        fits.append(_frozen_fit(m.score[rows], mu_t[t], sig_t[t], design(rows), float(init_mu), float(init_sigma)))
    theta = np.array([f[0] for f in fits])
    theta_se = np.array([f[1] for f in fits])
    f = np.full((m.n_agents, 3), np.nan)
    # the frozen scale's reference sample: evenly spaced difficulty ranks
    order = np.argsort(mu_all, kind="stable")
    reference = _rows(test_cases, order[((np.arange(size) + 0.5) * n / size).astype(np.int64)] if n > size else np.arange(n))
    del order, mu_all
    for a in range(m.n_agents):  # one map per agent, as place_on_subset called per agent
        points = np.array([theta[a] - z * theta_se[a], theta[a], theta[a] + z * theta_se[a]])
        f[a] = np.maximum.accumulate(
            joint_scale(reference, points, orders=orders, seed=seed, init_mu=init_mu, init_sigma=init_sigma)
        )
    return _placed(m, f, theta, theta_se, z)
