"""Placement of new agents against frozen test-case ratings: :func:`place_agents`, without re-rating anyone."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import _kernels as K
from ._kernels import Q
from .checks import check_start
from .frames import (
    Matches,
    MatchTableError,
    Table,
    encode_matches,
    floats_of,
    require_columns,
    test_case_index,
    to_flavour,
    to_pandas,
)
from .glicko import g
from .intervals import order_variance, z_of
from .orders import _pairs
from .settings import DEFAULT_ORDERS

__all__ = ["place_agents", "refuse_unknown_test_cases"]


def _mixture_sigma(mu_k: np.ndarray, sig_k: np.ndarray) -> np.ndarray:
    """σ of the mixture of the orders' posteriors N(μ_k, σ_k²): √(mean σ² + population variance of μ)."""
    if mu_k.shape[0] == 1:
        return sig_k[0].copy()
    return np.sqrt((sig_k * sig_k).mean(axis=0) + mu_k.var(axis=0))


def _histories(tc: pd.DataFrame, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(matches, μ and precision after match 1, 2, 4, …, final μ, final precision) of the known test cases."""
    final_mu = floats_of(tc, "mu", "test-case table")[pos]
    if "sigma" not in tc.columns:  # opponents count as exactly known
        final_prec = np.full(len(pos), np.inf)
    else:
        with np.errstate(divide="ignore"):
            final_prec = 1.0 / floats_of(tc, "sigma", "test-case table", 0.0)[pos] ** 2
    levels = []
    while f"mu_after_{1 << len(levels)}" in tc.columns and f"sigma_after_{1 << len(levels)}" in tc.columns:
        j = 1 << len(levels)
        levels.append(
            (tc[f"mu_after_{j}"].to_numpy(dtype=np.float64)[pos], tc[f"sigma_after_{j}"].to_numpy(dtype=np.float64)[pos])
        )
    if not levels or "matches" not in tc.columns:  # no history: the final ratings throughout
        played = np.zeros(len(pos), dtype=np.int64)
        return played, np.full((1, len(pos)), np.nan), np.full((1, len(pos)), np.nan), final_mu, final_prec
    played = tc["matches"].to_numpy(dtype=np.int64)[pos]
    level_mu = np.vstack([mu for mu, _ in levels])
    with np.errstate(divide="ignore", invalid="ignore"):
        level_prec = np.vstack([1.0 / sig**2 for _, sig in levels])
    return played, level_mu, level_prec, final_mu, final_prec


def place_agents(
    new_matches: Table,
    test_cases: Table,
    *,
    level: float = 0.9,
    orders: int = DEFAULT_ORDERS,
    seed: int | None = 42,
    row_order: bool = False,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
) -> Table:
    """Rate new agents against frozen test-case ratings, where a joint re-rating would put them.

    No existing rating changes: the cheap path when one new model lands. In a joint rating a
    newcomer meets each test case at a random moment of the pass, in the state the test case
    had then (early on still near 1500 with a wide σ, later near its final rating); that,
    not the final ratings, is what its own rating answers to. So each new agent replays its
    matches at uniformly random times u, in time order; at time u the test case has played
    j ~ Binomial(n_t, u) of its n_t matches, and its state after j matches is read from the
    history the test-case table carries (``mu_after_<j>, sigma_after_<j>`` from :func:`rate`,
    interpolated in j between 0, 1, 2, 4, …, n_t). ``orders`` replays (antithetic pairs:
    u and 1 − u, j and n_t − j) are averaged, as :func:`rate` averages orders.

    On the demo's benchmarks, each classifier left out and placed lands within 2–3 Elo of its
    joint rating on average, at every level of strength, where against the final ratings alone
    it lands 30–40 Elo too low (``tests/rating/test_place_agents.py``).

    Parameters
    ----------
    new_matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score`` of the new agent(s); any subset of the
        test cases (an adaptive placement may choose them).
    test_cases : DataFrame or pyarrow.Table
        The ``test_cases`` of :func:`rate`: ``test_case_id, mu`` and optionally ``sigma``,
        ``matches`` and the history columns. Without the history the final ratings are used
        throughout (the estimator of earlier versions); without ``sigma`` opponents count as
        exactly known (g = 1).
    level : float
        Confidence level of ``mu_lo, mu_hi``.
    orders, seed, row_order : int, int, bool
        Replays averaged, the seed of their times and slots; ``row_order=True`` plays each
        agent's matches in row order, evenly spread in time (one replay).
    init_mu, init_sigma : float
        The newcomer's (and every test case's) starting rating.

    Returns
    -------
    DataFrame or pyarrow.Table
        ``agent_id, mu, sigma, mu_lo, mu_hi, matches, mean_score, mean_metric``. ``sigma``
        is the replays' mixture σ; ``mu_lo, mu_hi`` account for the replays' spread and for
        the sampling of the agent's test cases (sandwich variance against the final ratings).
    """
    z = z_of(level)
    check_start(init_mu, init_sigma)
    m = encode_matches(new_matches, "new match table")
    tc = to_pandas(test_cases)
    require_columns(tc, ("test_case_id", "mu"), "test-case table")
    lookup = test_case_index(tc)
    pos = lookup.get_indexer(m.test_case_ids)
    refuse_unknown_test_cases(m, pos)
    played, level_mu, level_prec, final_mu, final_prec = _histories(tc, pos)
    n_a = m.n_agents
    n_t_of = played[m.test_case]
    if row_order:
        if orders != 1:
            raise ValueError("orders > 1 needs row_order=False: row order is a single order")
        times, slots = np.zeros(len(m)), np.zeros(len(m), dtype=np.int64)
        for a in range(n_a):
            rows = np.flatnonzero(m.agent == a)
            times[rows] = (np.arange(len(rows)) + 0.5) / len(rows)
            slots[rows] = np.floor(times[rows] * (n_t_of[rows] + 1)).astype(np.int64)
        replays = [(times, slots)]
    else:
        rng = np.random.default_rng(np.random.SeedSequence(seed))
        replays = []
        for pair in _pairs(len(m), seed, False, orders):
            u = rng.random(len(m))
            j = rng.binomial(n_t_of, u)  # the test case's matches before the newcomer's, at time u
            replays.append((u, j))
            if pair.with_reverse:
                replays.append((1.0 - u, n_t_of - j))  # the antithetic twin: time 1 − u, slot n − j
    mu_k = np.empty((len(replays), n_a))
    sig_k = np.empty((len(replays), n_a))
    by_agent = [np.flatnonzero(m.agent == a) for a in range(n_a)]
    for k, (times, slots) in enumerate(replays):
        for a, rows in enumerate(by_agent):
            rows = rows[np.argsort(times[rows], kind="stable")]
            mu_k[k, a], sig_k[k, a] = K.replay_agent(
                slots[rows],
                m.test_case[rows],
                m.score[rows],
                played,
                level_mu,
                level_prec,
                final_mu,
                final_prec,
                float(init_mu),
                float(init_sigma),
            )
    mu = mu_k.mean(axis=0)
    sigma = _mixture_sigma(mu_k, sig_k)
    # sampling of the agent's test cases: sandwich variance against the final (frozen) ratings
    num, info = _frozen_sandwich(m, mu, final_mu, np.sqrt(1.0 / final_prec))
    with np.errstate(divide="ignore", invalid="ignore"):
        sampling = np.where(info > 0, num / (Q * info) ** 2, np.inf)
    se = np.sqrt(sampling + order_variance(mu_k))
    a_n = np.bincount(m.agent, minlength=n_a)
    agents = pd.DataFrame(
        {
            "agent_id": m.agent_ids,
            "mu": mu,
            "sigma": sigma,
            "mu_lo": mu - z * se,
            "mu_hi": mu + z * se,
            "matches": a_n,
            "mean_score": np.bincount(m.agent, m.score, n_a) / a_n,
            "mean_metric": np.bincount(m.agent, m.metric, n_a) / a_n,
        }
    )
    return to_flavour(agents, m.flavour)


def refuse_unknown_test_cases(m: Matches, pos: np.ndarray) -> None:
    """Refuse new matches on test cases the frozen table has no rating for (``pos`` < 0), naming the first row."""
    if (pos < 0).any():
        unknown = np.asarray(m.test_case_ids)[pos < 0]
        rows = np.flatnonzero(np.isin(m.test_case, np.flatnonzero(pos < 0)))
        raise MatchTableError(
            f"new match table row {rows[0]}: test case {unknown[0]!r} has no frozen rating "
            f"({len(unknown)} unknown test case(s); rule: test_case_known)",
            rule="test_case_known",
            row=int(rows[0]),
            column="test_case_id",
        )


def _frozen_sandwich(m: Matches, a_mu, t_mu, t_sig) -> tuple[np.ndarray, np.ndarray]:
    gt = g(t_sig[m.test_case])
    e = 1.0 / (1.0 + 10.0 ** (-gt * (a_mu[m.agent] - t_mu[m.test_case]) / 400.0))
    num = np.bincount(m.agent, (gt * (m.score - e)) ** 2, m.n_agents)
    info = np.bincount(m.agent, gt * gt * e * (1.0 - e), m.n_agents)
    return num, info
