"""One leaderboard across benchmarks: every agent and test case of every benchmark in one logistic model (ONEBench's pool).

The model is the default one (:mod:`.logistic`), with one prior per benchmark: test case t of benchmark g has the
difficulty β_t ~ N(c_g, τ_g²), and its scores are its benchmark's (each scored and directed by its own
benchmark.yaml), with its benchmark's dispersion φ_g (1 for binary scores). The centres c_g put the benchmarks on
one scale: they are fitted with the agents and the spreads, by Newton's method on (θ, c, log τ²). A centre moves
every match of its benchmark as an agent would, with the opposite sign, so the Hessian is the agents' one bordered
by an agents × benchmarks block for the centres and one for the spreads, and a 2 × 2 block per benchmark; those
are eliminated and θ's step solved by conjugate gradients, as in :func:`~.logistic.fit_logistic`. φ_g is the
Pearson estimate between the steps.

The level is fixed per set of benchmarks linked by shared agents: the first (largest) one's centre stays put
while fitting; at the end each set is shifted so that its test cases' mean centre is 1500 Elo.
Agents that share no test case (directly or through others) are in different components, ranked apart.

``weigh``: "test_case" (the default: the likelihood, each test case counts once) or "benchmark" (each
benchmark's log-likelihood weighed by (test cases per benchmark on average) / (its test cases), so that a
benchmark of 10,000 test cases counts as much as one of 100; intervals then are the sandwich's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse import csgraph

from . import _logistic_kernels as K
from .frames import Matches
from .graph import components_of
from .intervals import interval_ranks, ranks_among, z_of
from .logistic import (
    CENTRE,
    LAPLACE_UNTIL,
    LOGIT,
    MAX_STEP,
    NODES,
    PRIOR_SCALE,
    PRIOR_WEIGHT,
    TOLERANCE,
    _inverse,
    _jeffreys,
    _pcg,
    canonical_order,
)
from .settings import DEFAULT_LEVEL

__all__ = ["WEIGHINGS", "PoolFit", "PoolRatings", "rank_on", "rate_pool"]

WEIGHINGS = ("test_case", "benchmark")

MAX_ITERATIONS = 200
DENSE = 4096  # agents + benchmarks up to which the covariance is computed exactly (above: each agent's own curvature)


@dataclass(frozen=True)
class PoolFit:
    """The fit's state on the pool's scale (Elo), by id: where the next fit starts (a warm start)."""

    agents: dict[str, float]  # θ
    centres: dict[str, float]  # c_g
    spreads: dict[str, float]  # τ_g
    dispersions: dict[str, float]  # φ_g


@dataclass(frozen=True)
class PoolRatings:
    """The pooled leaderboard (``agents``), each benchmark on the pool's scale (``benchmarks``), each agent's pooled
    rating beside the benchmarks it played (``by_benchmark``), and the fit (``fit``, ``iterations``)."""

    agents: pd.DataFrame
    benchmarks: pd.DataFrame
    by_benchmark: pd.DataFrame
    fit: PoolFit
    iterations: int


@dataclass(frozen=True)
class _Pool:
    """Every benchmark's matches in one canonical order: by benchmark, then test case, then agent."""

    start: np.ndarray  # test case t's rows are start[t]:start[t + 1] (t over every benchmark's test cases)
    agent: np.ndarray  # codes of ``agent_ids``
    score: np.ndarray
    group: np.ndarray  # per test case its benchmark's code
    test_case: np.ndarray  # per match its test case (t over every benchmark's)
    agent_ids: np.ndarray
    names: list[str]
    binary: np.ndarray  # per benchmark

    @property
    def n_agents(self) -> int:
        return len(self.agent_ids)


def _pooled(benchmarks: Mapping[str, Matches]) -> _Pool:
    names = sorted(benchmarks)
    agent_ids = np.unique(np.concatenate([np.asarray(benchmarks[b].agent_ids, dtype=object) for b in names]))
    starts, agents, scores, groups, binary, offset = [np.zeros(1, dtype=np.int64)], [], [], [], [], 0
    for g, name in enumerate(names):
        m = benchmarks[name]
        order = canonical_order(m)
        counts = np.bincount(m.test_case, minlength=m.n_test_cases)
        played = counts > 0
        starts.append(offset + np.cumsum(counts[played]))
        offset += len(m)
        agents.append(np.searchsorted(agent_ids, np.asarray(m.agent_ids, dtype=object))[m.agent[order]])
        scores.append(m.score[order])
        groups.append(np.full(int(played.sum()), g, dtype=np.int64))
        binary.append(bool(np.all((m.score == 0.0) | (m.score == 1.0))))
    start = np.concatenate(starts)
    return _Pool(
        start,
        np.concatenate(agents).astype(np.int64),
        np.ascontiguousarray(np.concatenate(scores), dtype=np.float64),
        np.concatenate(groups),
        np.repeat(np.arange(len(start) - 1), np.diff(start)),
        agent_ids,
        names,
        np.array(binary),
    )


def _linked(pool: _Pool) -> tuple[np.ndarray, np.ndarray]:
    """Each benchmark's set of benchmarks linked by shared agents, and one anchor per set (its most test cases)."""
    n_g = len(pool.names)
    group = pool.group[pool.test_case]
    played = sparse.coo_array((np.ones(len(group)), (pool.agent, group)), shape=(pool.n_agents, n_g)).tocsr()
    link = (played.T @ played).tocsr()
    _, label = csgraph.connected_components(link, directed=False)
    size = np.bincount(pool.group, minlength=n_g)
    anchor = np.zeros(n_g, dtype=bool)
    for s in np.unique(label):
        members = np.flatnonzero(label == s)
        anchor[members[np.argmax(size[members])]] = True
    return label, anchor


def rate_pool(
    benchmarks: Mapping[str, Matches],
    *,
    weigh: str = "test_case",
    level: float = DEFAULT_LEVEL,
    start: PoolFit | None = None,
    provisional: frozenset[str] | set[str] = frozenset(),
    tolerance: float = TOLERANCE,
) -> PoolRatings:
    """The pooled ratings of ``benchmarks`` (name → its encoded matches, scores as its benchmark scored them).

    ``start`` (a previous :class:`PoolFit`) starts the fit where that one ended: a new upload to one benchmark
    then takes a few passes. Agents' intervals are at ``level``, against the mean of their component.
    ``provisional`` agents (evaluated on part of a benchmark only, wherever they were evaluated) are fitted with
    the others but take no rank: their ``rank_lo``..``rank_hi`` are the ranks their interval allows among the rest.
    """
    if weigh not in WEIGHINGS:
        raise ValueError(f"weigh={weigh!r}: expected one of {WEIGHINGS}")
    if not benchmarks:
        raise ValueError("rate_pool needs at least one benchmark")
    pool = _pooled(benchmarks)
    n_a, n_g, n_t = pool.n_agents, len(pool.names), len(pool.group)
    sets, anchor = _linked(pool)
    size = np.bincount(pool.group, minlength=n_g).astype(np.float64)
    share = np.ones(n_g) if weigh == "test_case" else (n_t / n_g) / size
    a_comp = _components(pool)
    n_comp = int(a_comp.max(initial=-1)) + 1
    theta, centre, tau2, phi = _start(pool, start)
    mode = centre[pool.group].copy()
    fine = np.polynomial.hermite.hermgauss(NODES)
    fine = (fine[0], np.log(fine[1]))
    coarse = (np.zeros(1), np.zeros(1))
    rule = coarse if start is None else fine  # a warm start is near: the fine rule at once
    free = ~anchor
    n = len(pool.score)
    match_score, factor = np.empty(n), np.empty((n, 1))
    agent_var = np.zeros(n_a)
    test_case = pool.test_case
    match_group = pool.group[test_case]
    iteration, last = 0, np.zeros((2, n_g))  # last: each benchmark's last move of (log τ², log φ)
    while iteration < MAX_ITERATIONS:
        iteration += 1
        inv_phi = 1.0 / phi
        score, info, slope, bend, cross, mean, var, second, second_var, pearson, root = K.posterior_pass(
            pool.start, pool.agent, pool.score, theta, mode, pool.group, centre, tau2, inv_phi, share,
            *rule, n_a, agent_var, match_score, factor, K.NOT_PLACED,
        )  # fmt: skip
        played = info > 0.0
        info = np.where(played, info, 1.0)
        post = _Pass(score, info, slope, bend)
        jeffreys, curvature, bent = _jeffreys(post, info, played, a_comp, n_comp)
        grad = np.where(played, score + jeffreys, 0.0)
        border_c, d_c = _border(pool, factor[:, 0], root, share, test_case, match_group)
        grad_c = np.where(free, -np.bincount(match_group, match_score, n_g), 0.0)
        lam, total = 1.0 / tau2, np.bincount(pool.group, second, n_g)
        grad_v = 0.5 * (lam * total - size) - PRIOR_WEIGHT / 2.0 + PRIOR_WEIGHT * PRIOR_SCALE**2 / 2.0 * lam
        fisher = 0.5 * lam * total + PRIOR_WEIGHT * PRIOR_SCALE**2 / 2.0 * lam
        curv_v = fisher - 0.25 * lam**2 * np.bincount(pool.group, second_var, n_g)
        x_v = 0.5 * lam * cross  # H_θ,logτ² = −x_v (per agent and benchmark)
        # where the likelihood is not concave in log τ² (a small spread on a benchmark whose test cases each say
        # little) there is no Newton step: uphill as far as a step may go (by the Fisher information, τ² crept)
        d_v = np.where(curv_v > 0.0, curv_v, np.maximum(np.abs(grad_v), 1e-9) / MAX_STEP)
        hyper_solve = _hyper_block(free, d_c, d_v, x_v.sum(axis=0))

        def schur(x, out, info=info, curvature=curvature, border_c=border_c, x_v=x_v, hyper_solve=hyper_solve):
            K.hessian_matvec(pool.start, pool.agent, factor, info, x, out)
            w_c, w_v = hyper_solve(border_c.T @ x, x_v.T @ x)
            out += curvature(x) - border_c @ w_c - x_v @ w_v

        diag_a = K.hessian_diagonal(pool.start, pool.agent, factor, info) + bent
        p_c, p_v = hyper_solve(np.ones(n_g), np.zeros(n_g))
        q_c, q_v = hyper_solve(np.zeros(n_g), np.ones(n_g))
        precond = diag_a - (border_c**2) @ p_c - 2.0 * (border_c * x_v) @ q_c - (x_v**2) @ q_v
        g_c, g_v = hyper_solve(grad_c, grad_v)
        step = _pcg(schur, np.maximum(precond, 1e-12), grad + border_c @ g_c + x_v @ g_v)
        step_c, step_v = hyper_solve(grad_c + border_c.T @ step, grad_v + x_v.T @ step)
        step_h = np.concatenate([step_c, step_v])
        longest = max(np.abs(step).max(initial=0.0), np.abs(step_h).max(initial=0.0))
        in_sd = max(np.abs(step * np.sqrt(info)).max(initial=0.0), np.abs(step_h).max(initial=0.0))  # as fit_logistic's
        if longest > MAX_STEP:
            step, step_h = step * (MAX_STEP / longest), step_h * (MAX_STEP / longest)
        step_c, step_v = step_h[:n_g], step_h[n_g:]
        theta, centre = theta + step, centre + step_c
        mode += step_c[pool.group]
        agent_var = 1.0 / info
        move = np.stack([step_v, np.log(np.where(pool.binary, 1.0, np.maximum(pearson, 1e-6)) / phi)])
        # φ is Pearson's between the passes, so near the end (τ², φ) approach their fixed point linearly, each move
        # a share of the last along it: where it is, go the rest of the way at once (Aitken's extrapolation)
        along, before = (move * last).sum(axis=0), (last**2).sum(axis=0)
        ratio = np.divide(along, before, out=np.zeros(n_g), where=along > 0.0)
        linear = (along**2 > 0.8 * (move**2).sum(axis=0) * before) & (ratio < 0.9) & (np.abs(move).max(axis=0) < LAPLACE_UNTIL)
        last = move * np.where(linear & (rule is fine), 1.0 / (1.0 - ratio), 1.0)
        tau2, phi = tau2 * np.exp(last[0]), phi * np.exp(last[1])
        moved = np.abs(last).max()
        if rule is coarse and (max(longest, moved) < LAPLACE_UNTIL or iteration >= 8):
            rule = fine
        elif rule is fine and max(in_sd, moved) < tolerance:
            break
    shift = _level(sets, centre, size)
    theta -= _agent_shift(pool, sets, shift)
    centre -= shift
    mean -= shift[pool.group]
    spread = (x_v, np.where(curv_v > 0.0, curv_v, fisher), 0.5 * (lam[pool.group] * second - 1.0))  # the last pass's
    variance = _relative_variance(
        pool, factor[:, 0], match_score, root, share, info, a_comp, test_case, match_group, free, weigh, spread
    )
    fit = PoolFit(
        dict(zip(map(str, pool.agent_ids), CENTRE + LOGIT * theta, strict=True)),
        dict(zip(pool.names, CENTRE + LOGIT * centre, strict=True)),
        dict(zip(pool.names, LOGIT * np.sqrt(tau2), strict=True)),
        dict(zip(pool.names, phi, strict=True)),
    )
    agents = _agent_table(pool, theta, variance, a_comp, level, frozenset(map(str, provisional)))
    return PoolRatings(
        agents, _benchmark_table(pool, agents, a_comp, centre, tau2, mean, var), _by_benchmark(pool, agents), fit, iteration
    )


def _hyper_block(free: np.ndarray, d_c: np.ndarray, d_v: np.ndarray, h_cv: np.ndarray):
    """x ↦ the hyperparameters' block of the Hessian solved: per benchmark [[d_c, h], [h, d_v]] for its centre and
    log τ² (h: a centre's score moves with its spread, as much as the agents' scores do in all; without it the
    two drifted against each other, 164 passes where 24 do on barely linked benchmarks); an anchored centre stays."""
    h_cv = np.where(free & (d_c * d_v - h_cv**2 > 1e-9 * np.abs(d_c * d_v)), h_cv, 0.0)
    det = np.where(free, d_c * d_v - h_cv**2, 1.0)

    def solve(u_c: np.ndarray, u_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.where(free, (d_v * u_c - h_cv * u_v) / det, 0.0),
            np.where(free, (d_c * u_v - h_cv * u_c) / det, u_v / d_v),
        )

    return solve


@dataclass(frozen=True)
class _Pass:
    """What :func:`~.logistic._jeffreys` reads of a pass."""

    score: np.ndarray
    info: np.ndarray
    slope: np.ndarray
    bend: np.ndarray


def _components(pool: _Pool) -> np.ndarray:
    """Each agent's component (0: the most matches), through shared test cases."""
    return components_of(pool.agent.astype(np.int32), pool.test_case.astype(np.int32), pool.n_agents, len(pool.group))[1]


def _start(pool: _Pool, start: PoolFit | None):
    """θ, c, τ², φ in logits: a previous fit's where it has them, else the defaults."""
    n_g = len(pool.names)
    theta, centre = np.zeros(pool.n_agents), np.zeros(n_g)
    tau2, phi = np.full(n_g, PRIOR_SCALE**2), np.ones(n_g)
    if start is not None:
        for i, a in enumerate(pool.agent_ids):
            theta[i] = (start.agents.get(str(a), CENTRE) - CENTRE) / LOGIT
        for g, b in enumerate(pool.names):
            centre[g] = (start.centres.get(b, CENTRE) - CENTRE) / LOGIT
            tau2[g] = (start.spreads.get(b, PRIOR_SCALE * LOGIT) / LOGIT) ** 2
            phi[g] = start.dispersions.get(b, 1.0)
    return theta, centre, tau2, phi


def _border(pool: _Pool, f, root, share, test_case, match_group):
    """The (θ, c) Hessian's border B (agents × benchmarks: H_θc = −B), its diagonal c block, and c's gradient.

    A match i of agent a on test case t of benchmark g has the logit θ_a − c_g − b_t: its direction is e_a − e_g.
    With F_t = Σ_i f_i (e_a − e_g) (f: the factor), the block is Σ λω_i z zᵀ − Σ_t F_t F_tᵀ (λω_i: the match's
    information as the agents' diagonal holds it, f_i √(λ_g) √c_t)."""
    n_g = len(pool.names)
    s_t = np.bincount(test_case, f, len(pool.group))
    lam_w = f * np.sqrt(share[match_group]) * root[test_case]
    key = pool.agent * n_g + match_group
    cells = pool.n_agents * n_g
    border = (np.bincount(key, lam_w, cells) - np.bincount(key, f * s_t[test_case], cells)).reshape(pool.n_agents, n_g)
    d_c = np.bincount(match_group, lam_w, n_g) - np.bincount(pool.group, s_t**2, n_g)
    return border, d_c


def _level(sets: np.ndarray, centre: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per benchmark the shift that puts its set's test-case-weighted mean centre at 0."""
    mean = np.bincount(sets, centre * size) / np.bincount(sets, size)
    return mean[sets]


def _agent_shift(pool: _Pool, sets: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Per agent its set's shift (an agent plays benchmarks of one set only: sets are linked by agents)."""
    group = pool.group[pool.test_case]
    out = np.zeros(pool.n_agents)
    out[pool.agent] = shift[group]
    return out


def _relative_variance(
    pool: _Pool, f, match_score, root, share, info, a_comp, test_case, match_group, free, weigh, spread
) -> np.ndarray:
    """Each agent's variance of θ_a − (the mean θ of its component's agents), in logits², from the (θ, c, log τ²)
    Hessian: the spreads' own error is in the intervals, as in :func:`~.logistic.relative_variance`.

    Binary benchmarks weighed as the likelihood: H⁻¹; otherwise the sandwich H⁻¹ (Σ_t u_t u_tᵀ) H⁻¹ with the test
    cases as clusters (graded scores' variance is not the model's; a weighed likelihood's curvature is not its
    variance), unweighed the larger of the two. ``spread``: (x_v, the log τ² block's diagonal, each test case's part
    of its log τ²'s score) of the last pass. Above ``DENSE`` parameters each agent's own curvature stands for its row
    of H (the spreads' part left out)."""
    n_a, n_g, n_t = pool.n_agents, len(pool.names), len(pool.group)
    border, d_c = _border(pool, f, root, share, test_case, match_group)
    cols = np.flatnonzero(free)
    x_v, curv_v, parts = spread
    n_h = n_a + len(cols)  # the spreads' rows follow the centres'
    n_x = n_h + n_g
    fmat = sparse.csr_array((f, (pool.agent, test_case)), shape=(n_a, n_t))
    if n_x > DENSE:
        precond = info - np.bincount(pool.agent, f * f, n_a) - (border[:, cols] ** 2) @ (1.0 / d_c[cols])
        return 1.0 / np.maximum(precond, 1e-12)
    dense = fmat.toarray() if n_a * n_t <= 1 << 24 else None
    gram = dense @ dense.T if dense is not None else (fmat @ fmat.T).toarray()
    h = np.zeros((n_x, n_x))
    h[:n_a, :n_a] = np.diag(info) - gram
    h[:n_a, n_a:n_h] = -border[:, cols]
    h[n_a:n_h, :n_a] = -border[:, cols].T
    h[n_a:n_h, n_a:n_h] = np.diag(d_c[cols])
    h[:n_a, n_h:] = -x_v  # a spread's score moves with each agent, and against its centre as all its agents do
    h[n_a:n_h, n_h:] = np.diag(x_v.sum(axis=0))[cols]
    h[n_h:, :n_h] = h[:n_h, n_h:].T
    h[n_h:, n_h:] = np.diag(curv_v)
    inverse = model = _inverse(h)
    if weigh != "test_case" or not pool.binary.all():
        at = np.full(n_g, -1)
        at[cols] = n_a + np.arange(len(cols))
        g_row = at[pool.group[test_case]]
        rows = np.concatenate([pool.agent, g_row[g_row >= 0], n_h + pool.group])
        where = np.concatenate([test_case, test_case[g_row >= 0], np.arange(n_t)])
        values = np.concatenate([match_score, -match_score[g_row >= 0], parts])
        u = sparse.csr_array((values, (rows, where)), shape=(n_x, n_t))
        meat = (u @ u.T).toarray()
        inverse = inverse @ meat @ inverse
    out = _centred_diagonal(inverse[:n_a, :n_a], a_comp)
    if weigh == "test_case" and inverse is not model:  # the larger, as rate()'s: near 0 or 1 the sandwich is small
        out = np.maximum(out, _centred_diagonal(model[:n_a, :n_a], a_comp))
    return np.maximum(out, 0.0)


def _centred_diagonal(v: np.ndarray, a_comp: np.ndarray) -> np.ndarray:
    """The diagonal of the covariance ``v`` of θ_a − its component's mean θ."""
    out = np.empty(len(v))
    for c in np.unique(a_comp):
        idx = np.flatnonzero(a_comp == c)
        block = v[np.ix_(idx, idx)]
        out[idx] = np.diag(block) - 2.0 * block.mean(axis=1) + block.mean()
    return out


def _agent_table(pool: _Pool, theta, variance, a_comp, level: float, provisional: frozenset[str]) -> pd.DataFrame:
    ids = np.array([str(a) for a in pool.agent_ids], dtype=object)
    sd = LOGIT * np.sqrt(variance)
    mu = np.round(CENTRE + LOGIT * theta, 6)
    z = z_of(level)
    lo, hi = mu - z * sd, mu + z * sd
    test_case = pool.test_case
    pairs = np.unique(pool.agent * len(pool.names) + pool.group[test_case])
    benchmarks = np.bincount(pairs // len(pool.names), minlength=pool.n_agents)
    is_provisional = np.isin(ids, list(provisional))
    rank = pd.array([pd.NA] * pool.n_agents, dtype="Int64")
    rank_lo, rank_hi = rank.copy(), rank.copy()
    joint = ~is_provisional
    r, r_lo, r_hi = interval_ranks(lo[joint], hi[joint], a_comp[joint])
    rank[joint], rank_lo[joint], rank_hi[joint] = r, r_lo, r_hi
    for c in np.unique(a_comp[is_provisional]):
        mine = is_provisional & (a_comp == c)
        ref = joint & (a_comp == c)
        best, worst = ranks_among(lo[mine], hi[mine], lo[ref], hi[ref])
        rank_lo[mine], rank_hi[mine] = best, worst
    status = np.where(is_provisional, "provisional", np.where(a_comp == 0, "rated", "disconnected"))
    agents = pd.DataFrame(
        {
            "agent_id": ids,
            "mu": mu,
            "sigma": sd,
            "mu_lo": lo,
            "mu_hi": hi,
            "rank": rank,
            "rank_lo": rank_lo,
            "rank_hi": rank_hi,
            "benchmarks": benchmarks,
            "test_cases": np.bincount(pool.agent, minlength=pool.n_agents),
            "component": a_comp,
            "status": status,
            "status_reason": [_reason(s, c) for s, c in zip(status, a_comp, strict=True)],
        }
    )
    order = np.lexsort((ids, -mu, is_provisional, a_comp))
    return agents.iloc[order].reset_index(drop=True)


def _reason(status: str, component: int) -> str:
    if status == "provisional":
        return "evaluated on part of a benchmark only: its interval places it, it takes no rank"
    if status == "disconnected":
        return f"shares no test case with the main component's agents, directly or through others: ranked within component {component}"
    return ""


def _benchmark_table(pool: _Pool, agents: pd.DataFrame, component, centre, tau2, mean, var) -> pd.DataFrame:
    """Each benchmark on the pool's scale: its difficulties, and the share of its test cases its component's best
    jointly rated agent is expected to pass (near 1: it no longer separates the agents)."""
    test_case = pool.test_case
    match_group = pool.group[test_case]
    rows = []
    for g, name in enumerate(pool.names):
        mine = pool.group == g
        difficulty = CENTRE + LOGIT * mean[mine]
        c = int(np.bincount(component[pool.agent[match_group == g]]).argmax())
        best = agents[(agents["component"] == c) & (agents["status"] != "provisional")].head(1)
        theta = (float(best["mu"].iloc[0]) - CENTRE) / LOGIT if len(best) else math.nan
        # E σ(θ − β) over β's posterior, by the logistic-normal approximation
        expected = 1.0 / (1.0 + np.exp(-(theta - mean[mine]) / np.sqrt(1.0 + math.pi * var[mine] / 8.0)))
        p10, p50, p90 = np.percentile(difficulty, [10, 50, 90])
        rows.append(
            {
                "benchmark": name,
                "test_cases": int(mine.sum()),
                "agents": len(np.unique(pool.agent[match_group == g])),
                "component": c,
                "centre": CENTRE + LOGIT * centre[g],
                "spread": LOGIT * math.sqrt(tau2[g]),
                "difficulty_p10": p10,
                "difficulty_p50": p50,
                "difficulty_p90": p90,
                "best_agent": str(best["agent_id"].iloc[0]) if len(best) else None,
                "saturation": float(expected.mean()),
            }
        )
    return pd.DataFrame(rows)


def _by_benchmark(pool: _Pool, agents: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, benchmark) played: its test cases there and its pooled rating."""
    test_case = pool.test_case
    frame = pd.DataFrame({"agent": pool.agent, "g": pool.group[test_case]})
    counts = frame.value_counts(["agent", "g"]).reset_index(name="test_cases").sort_values(["g", "agent"])
    pooled = agents.set_index("agent_id")["mu"]
    ids = np.array([str(a) for a in pool.agent_ids], dtype=object)[counts["agent"].to_numpy()]
    return pd.DataFrame(
        {
            "agent_id": ids,
            "benchmark": np.array(pool.names, dtype=object)[counts["g"].to_numpy()],
            "test_cases": counts["test_cases"].to_numpy(),
            "pool_mu": pooled.reindex(ids).to_numpy(),
        }
    )


def rank_on(results: pd.DataFrame, *, component: Mapping[str, int] | None = None, level: float = DEFAULT_LEVEL) -> pd.DataFrame:
    """Agents ranked on chosen test cases whose difficulties lie on one scale (a capability query on the leaderboard's).

    ``results``: one row per result, ``agent_id, score, mu, sigma`` (its test case's difficulty posterior, Elo) and
    ``benchmark``. Each agent is placed from its own results against those frozen test cases
    (:func:`~.logistic.place_one`), so an agent evaluated on part of the selection is placed from that part, with
    the wider interval it has. ``component`` (agent → the leaderboard's component) keeps agents of unlinked
    benchmarks, whose scales are not one, apart; agents it does not name are in component 0.
    Returns ``agent_id, rating, rating_lo, rating_hi, rating_sd, rank, rank_lo, rank_hi, test_cases, benchmarks,
    component``, best first.
    """
    from .logistic import place_one

    binary = bool(results["score"].isin([0.0, 1.0]).all())
    rows = []
    for agent, mine in results.groupby("agent_id", sort=True):
        mu, sd = place_one(
            mine["score"].to_numpy(float), mine["mu"].to_numpy(float), mine["sigma"].to_numpy(float), binary=binary
        )
        rows.append((str(agent), mu, sd, len(mine), mine["benchmark"].nunique(), (component or {}).get(str(agent), 0)))
    out = pd.DataFrame(rows, columns=["agent_id", "rating", "rating_sd", "test_cases", "benchmarks", "component"])
    z = z_of(level)
    out["rating_lo"], out["rating_hi"] = out["rating"] - z * out["rating_sd"], out["rating"] + z * out["rating_sd"]
    comp = out["component"].to_numpy()
    out["rank"], out["rank_lo"], out["rank_hi"] = interval_ranks(out["rating_lo"].to_numpy(), out["rating_hi"].to_numpy(), comp)
    columns = ["agent_id", "rating", "rating_lo", "rating_hi", "rating_sd", "rank", "rank_lo", "rank_hi", "test_cases"]
    return out.sort_values(["component", "rating", "agent_id"], ascending=[True, False, True])[
        [*columns, "benchmarks", "component"]
    ].reset_index(drop=True)
