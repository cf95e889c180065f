"""Compiled loops of the logistic model (:mod:`.logistic`): one pass over the matches per Newton step.

The matches are held by test case (``start[t]:start[t + 1]`` are test case t's rows) in the canonical
order of :func:`.logistic.by_test_case`, so every sum is taken in one order whatever the table's row
order: identical inputs give identical bits. Ratings are in logits here; :mod:`.logistic` converts.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _log_lik(eta, s):
    """(s log p + (1 − s) log(1 − p), p) at the logit ``eta``, without overflow at either end."""
    if eta >= 0.0:
        e = math.exp(-eta)
        soft = math.log1p(e)
        return -s * soft - (1.0 - s) * (eta + soft), 1.0 / (1.0 + e)
    e = math.exp(eta)
    soft = math.log1p(e)
    return s * (eta - soft) - (1.0 - s) * soft, e / (1.0 + e)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _node_log_lik(lo, hi, agent, score, theta, beta, alpha, inv, at_node, k):
    """Σ of rows lo:hi's quasi-log-likelihood at a node (β, α), each row's p stored in ``at_node[row, k]``."""
    v = 0.0
    for i in range(lo, hi):
        ll, p = _log_lik(alpha * (theta[agent[i]] - beta), score[i])
        v += ll * inv
        at_node[i - lo, k] = p
    return v


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _normalize(log_weight, m):
    """The first ``m`` log weights made into weights that sum to 1, in place."""
    top = -math.inf
    for k in range(m):
        top = max(top, log_weight[k])
    total = 0.0
    for k in range(m):
        log_weight[k] = math.exp(log_weight[k] - top)
        total += log_weight[k]
    for k in range(m):
        log_weight[k] /= total


ODDS_LO, ODDS_HI = math.exp(-700.0), math.exp(700.0)  # odds kept finite and non-zero: p is 0 or 1 to the bit beyond
NOT_PLACED = np.empty((2, 0, 0))  # posterior_pass's ``placed`` where the nodes are not wanted
CHUNK = 512  # rows whose factors max(p, 1 − p) ∈ [½, 1] are multiplied before one log: 2⁻⁵¹² stays a normal number


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _exp(eta):
    return math.exp(min(max(eta, -700.0), 700.0))


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _p_of_odds(odds):
    """σ(η) from the odds e^η, exact to the last bits at both ends."""
    if odds <= 1.0:
        return odds / (1.0 + odds)
    return 1.0 / (1.0 + 1.0 / odds)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _node_log_liks(lo, hi, agent, score, theta, odds, at, shift, inv, at_node, total, linear, product):
    """Adds to ``total[k]`` the quasi-log-likelihood of rows lo:hi at each node β_k = ``at[k]``, each row's p in
    ``at_node[row, k]``, from the rows' ``odds`` e^(θ − b) at the mode b and ``shift[k]`` = e^(b − β_k): one
    exponential a row instead of two transcendentals a row and node (a third of the pass's time).
    s log p + (1 − s) log(1 − p) = s η − max(η, 0) + log max(p, 1 − p), the last summed as the log of a product
    (its factors in [½, 1]) every ``CHUNK`` rows."""
    m = len(at)
    for k in range(m):
        linear[k] = 0.0
        product[k] = 1.0
    for i in range(lo, hi):
        s = score[i]
        th = theta[agent[i]]
        o = odds[i - lo]
        for k in range(m):
            eta = th - at[k]
            ok = o * shift[k]
            if ok <= 1.0:
                q = 1.0 / (1.0 + ok)
                p = ok * q
                product[k] *= q
            else:
                p = 1.0 / (1.0 + 1.0 / ok)
                product[k] *= p
            at_node[i - lo, k] = p
            linear[k] += s * eta - max(eta, 0.0)
        if (i - lo) % CHUNK == CHUNK - 1:
            for k in range(m):
                linear[k] += math.log(product[k])
                product[k] = 1.0
    for k in range(m):
        total[k] += (linear[k] + math.log(product[k])) * inv


@numba.njit(cache=True, nogil=True, error_model="numpy")
def posterior_pass(
    start,
    agent,
    score,
    theta,
    mode,
    group,
    centre,
    tau2,
    inv_phi,
    share,
    nodes,
    log_weights,
    n_agents,
    agent_var,
    match_score,
    factor,
    placed,
):
    """Each test case's posterior given the agents' ``theta``, by adaptive Gauss-Hermite quadrature.

    Test case t belongs to ``group[t]`` (a benchmark of a pool; 0 for every test case of one benchmark): its
    difficulty β has the prior N(centre[g], tau2[g]) and its matches' quasi-likelihood is
    Π p^(s/φ) (1 − p)^((1−s)/φ), p = σ(θ_a − β), with ``inv_phi[g]`` = 1/φ. The posterior's mode (``mode``,
    updated in place: the start of the next pass) and curvature place the nodes; their normalized weights are the
    posterior. The agents' objective counts test case t's log marginal likelihood ``share[g]`` times (a pool that
    weighs each benchmark alike; 1 otherwise): every sum over its matches below is weighed by it, its posterior is not.

    Per match it writes E[s − p]/φ (``match_score``: its part of the score) and its entry of the
    Hessian's factor (``factor[i, 0]`` = w_i / √c_t, w_i = E[p(1 − p)]/φ its information, c_t = Σ w + 1/tau2[g]
    (``root[t]`` = √c_t): the agents' negative Hessian is diag(Σ w) − F Fᵀ). Returns per agent the sums of E[s − p]/φ, of w,
    of E[w(1 − 2p)]/φ and E[w(1 − 6w)]/φ (the information's first and second derivatives in θ_a), and
    Cov(s − p, (β − centre)²)/φ (how the agent's score moves with tau2); per test case its posterior mean and
    variance, E[(β − centre)²] and Var((β − centre)²); and per group the Pearson dispersion
    Σ (s − E p)² / Σ E p (1 − E p) (1 − h), each residual's expected square φ E p (1 − E p) (1 − h) less the share
    h = E[w]/φ · (Var β + ``agent_var``) that the two ratings have already absorbed. A ratio of sums, not a mean of
    per-match ratios: where E p is near 0 or 1 those are rare and huge, and a posterior's E p keeps them small.
    Where ``placed`` has a row a test case (2 × n_t × K; none to skip), each test case's nodes β and their
    normalized weights go there (:mod:`.likelihood_interval` integrates over them).
    """
    n_t = len(start) - 1
    widest = 0
    for t in range(n_t):
        widest = max(widest, start[t + 1] - start[t])
    at_node = np.empty((widest, len(nodes)))
    score_sum = np.zeros(n_agents)
    info = np.zeros(n_agents)
    slope = np.zeros(n_agents)
    bend = np.zeros(n_agents)
    cross = np.zeros((n_agents, len(centre)))
    post_mean = np.empty(n_t)
    post_var = np.empty(n_t)
    second = np.empty(n_t)
    second_var = np.empty(n_t)
    weight = np.empty(len(nodes))
    at = np.empty(len(nodes))
    shift = np.empty(len(nodes))
    linear = np.empty(len(nodes))
    product = np.empty(len(nodes))
    odds = np.empty(widest)
    pearson = np.zeros(len(centre))
    expected = np.zeros(len(centre))
    root = np.empty(n_t)
    for t in range(n_t):
        lo = start[t]
        hi = start[t + 1]
        g = group[t]
        c = centre[g]
        t2 = tau2[g]
        inv = inv_phi[g]
        part = share[g]
        b = mode[t]
        curv = 1.0 / t2
        for i in range(lo, hi):
            odds[i - lo] = _exp(theta[agent[i]] - b)
        moved = 0.0  # the odds are e^(θ − b − moved): each Newton step taken in the next loop over the rows
        for _ in range(100):
            grad = -(b - c) / t2
            curv = 1.0 / t2
            along = math.exp(-moved)
            for i in range(lo, hi):
                o = min(max(odds[i - lo] * along, ODDS_LO), ODDS_HI)
                odds[i - lo] = o
                p = _p_of_odds(o)
                grad -= (score[i] - p) * inv
                curv += p * (1.0 - p) * inv
            step = max(-2.0, min(2.0, grad / curv))
            b += step
            moved = step
            if abs(step) < 1e-7:
                break
        mode[t] = b
        scale = math.sqrt(2.0 / curv)
        K = len(nodes)
        for k in range(K):
            beta = b + scale * nodes[k]
            at[k] = beta
            shift[k] = math.exp(-moved - scale * nodes[k])
            weight[k] = log_weights[k] + nodes[k] * nodes[k] - 0.5 * (beta - c) * (beta - c) / t2
        _node_log_liks(lo, hi, agent, score, theta, odds, at, shift, inv, at_node, weight, linear, product)
        _normalize(weight, K)
        if placed.shape[1]:
            placed[0, t] = at
            placed[1, t] = weight
        for k in range(K):  # from here on β is measured from its prior mean
            at[k] -= c
        m1 = 0.0
        m2 = 0.0
        for k in range(K):
            m1 += weight[k] * at[k]
            m2 += weight[k] * at[k] * at[k]
        var = 0.0
        sq_var = 0.0
        for k in range(K):
            var += weight[k] * (at[k] - m1) ** 2
            sq_var += weight[k] * (at[k] * at[k] - m2) ** 2
        if K == 1:  # Laplace's approximation: the posterior as the normal at the mode
            var = 1.0 / curv
            m2 = m1 * m1 + var
            sq_var = 2.0 * var * var + 4.0 * m1 * m1 * var
        post_mean[t] = m1 + c
        post_var[t] = var
        second[t] = m2
        second_var[t] = sq_var
        information = 0.0
        for i in range(lo, hi):
            s = score[i]
            ep = 0.0
            ew = 0.0
            ed = 0.0
            ee = 0.0
            cov = 0.0
            for k in range(K):
                p = at_node[i - lo, k]
                w = p * (1.0 - p)
                ep += weight[k] * p
                ew += weight[k] * w
                ed += weight[k] * w * (1.0 - 2.0 * p)
                ee += weight[k] * w * (1.0 - 6.0 * w)
                cov -= weight[k] * p * (at[k] * at[k] - m2)
            if K == 1:  # the normal's: Cov(s − p, β²) ≈ w Cov(β, β²)
                cov = 2.0 * m1 * var * ew
            a = agent[i]
            match_score[i] = (s - ep) * inv * part
            factor[i, 0] = ew * inv
            information += ew * inv
            score_sum[a] += (s - ep) * inv * part
            info[a] += ew * inv * part
            slope[a] += ed * inv * part
            bend[a] += ee * inv * part
            cross[a, g] += cov * inv * part
            if 0.0 < ep < 1.0:
                leverage = min(ew * inv * (var + agent_var[a]), 0.9)
                pearson[g] += (s - ep) ** 2
                expected[g] += ep * (1.0 - ep) * (1.0 - leverage)
        root[t] = math.sqrt(information + 1.0 / t2)
        scaled = math.sqrt(part) / root[t]
        for i in range(lo, hi):
            factor[i, 0] *= scaled
    for g in range(len(centre)):
        pearson[g] = pearson[g] / expected[g] if expected[g] > 0.0 else 0.0
    return score_sum, info, slope, bend, cross, post_mean, post_var, second, second_var, pearson, root


@numba.njit(cache=True, nogil=True)
def hessian_matvec(start, agent, factor, diag, x, out):
    """out = (diag(diag) − F Fᵀ) x: the agents' negative Hessian with each test case's posterior taken as
    normal. F has one or two columns per test case; ``factor[i]`` holds match i's (its agent's) entries in its
    test case's (the loops spelled out per width: a loop over the columns took 4 times as long)."""
    for a in range(len(x)):
        out[a] = diag[a] * x[a]
    if factor.shape[1] == 1:
        for t in range(len(start) - 1):
            u = 0.0
            for i in range(start[t], start[t + 1]):
                u += factor[i, 0] * x[agent[i]]
            for i in range(start[t], start[t + 1]):
                out[agent[i]] -= factor[i, 0] * u
        return
    for t in range(len(start) - 1):
        u0 = 0.0
        u1 = 0.0
        for i in range(start[t], start[t + 1]):
            xa = x[agent[i]]
            u0 += factor[i, 0] * xa
            u1 += factor[i, 1] * xa
        for i in range(start[t], start[t + 1]):
            out[agent[i]] -= factor[i, 0] * u0 + factor[i, 1] * u1


@numba.njit(cache=True, nogil=True)
def hessian_diagonal(start, agent, factor, diag):
    """The diagonal of :func:`hessian_matvec`'s matrix (the preconditioner)."""
    out = diag.copy()
    for i in range(len(agent)):
        for j in range(factor.shape[1]):
            out[agent[i]] -= factor[i, j] * factor[i, j]
    return out


@numba.njit(cache=True, nogil=True)
def gram(start, agent, factor, n_agents, block):
    """The lower triangle of F Fᵀ (n_agents², zero above the diagonal), summed test case by test case over each
    pair of matches: Σ_t (rows of t)² products, not n_agents² · n_t as a dense product takes on a sparse design.
    The agents are taken ``block`` at a time on each side, so that the entries being summed stay in the cache
    (scattered over the whole matrix, each update was a cache miss: 2.4 times as long)."""
    n_t = len(start) - 1
    n_b = (n_agents + block - 1) // block
    # test case t's rows of block b: start[t] + cut[t, b] to start[t] + cut[t, b + 1] (4 bytes an entry: at most
    # 17 a test case of the ≤ 4,096 agents this matrix is built for)
    cut = np.empty((n_t, n_b + 1), dtype=np.int32)
    for t in range(n_t):
        i = start[t]
        for b in range(n_b + 1):
            while i < start[t + 1] and agent[i] < b * block:
                i += 1
            cut[t, b] = i - start[t]
    out = np.zeros((n_agents, n_agents))
    two = factor.shape[1] == 2
    for bi in range(n_b):
        for bj in range(bi + 1):
            for t in range(n_t):
                first = start[t]
                for i in range(first + cut[t, bi], first + cut[t, bi + 1]):
                    row = out[agent[i]]
                    f0 = factor[i, 0]
                    f1 = factor[i, 1] if two else 0.0
                    for j in range(first + cut[t, bj], min(first + cut[t, bj + 1], i + 1)):
                        if two:
                            row[agent[j]] += f0 * factor[j, 0] + f1 * factor[j, 1]
                        else:
                            row[agent[j]] += f0 * factor[j, 0]
    return out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def conditional_pass(start, agent, score, theta, trial, at, weight, inv_phi, active):
    """Per agent, with every other agent at ``theta`` and itself at each of its trial points ``trial[a, j]``: Σ over
    its matches of log E[L(trial) / L(theta)] (the expectation over its test case's posterior at ``theta``: the log
    marginal likelihood's change, exactly), its derivative Σ E'[s − p]/φ, the information I = Σ E'[p(1 − p)]/φ and
    its derivative, E' the expectation over the posterior at the trial point (the nodes' weights tilted by the
    ratio); each n_agents × J. Only the matches of agents with an ``active[a, j]`` are visited (the others' sums
    are 0): the trial points of a match share its node weights and its ratio's numerator.

    At node β, with e = e^(β − θ) = A u (A = e^(b − θ) once a match, u = e^(β − b) once a test case and node), the
    ratio is e^(−(1 − s)(trial − θ)/φ) · ((1 + e_θ) / (1 + e_trial))^(1/φ): no transcendental a node for binary
    scores, and the node's factor lies between 1 and e^(trial − θ), so the sum cannot overflow."""
    n_agents, J = trial.shape
    log_ratio = np.zeros((n_agents, J))
    gradient = np.zeros((n_agents, J))
    info = np.zeros((n_agents, J))
    slope = np.zeros((n_agents, J))
    visit = np.zeros(n_agents, dtype=np.bool_)
    for a in range(n_agents):
        for j in range(J):
            visit[a] |= active[a, j]
    K = at.shape[1]
    u = np.empty(K)
    held = np.empty(K)
    r = np.empty(K)
    q = np.empty(K)
    binary = inv_phi == 1.0
    for t in range(len(start) - 1):
        b = at[t, K // 2]
        for k in range(K):
            u[k] = math.exp(at[t, k] - b)
        for i in range(start[t], start[t + 1]):
            a = agent[i]
            if not visit[a]:
                continue
            s = score[i]
            at_theta = _exp(b - theta[a])
            for k in range(K):
                held[k] = 1.0 + min(at_theta * u[k], 1e300)
                if binary:
                    held[k] *= weight[t, k]
            for j in range(J):
                if not active[a, j]:
                    continue
                moved = _exp(b - trial[a, j])
                total = 0.0
                for k in range(K):
                    e1 = 1.0 + min(moved * u[k], 1e300)
                    if binary:
                        r[k] = held[k] / e1
                    else:
                        r[k] = weight[t, k] * (held[k] / e1) ** inv_phi
                    q[k] = 1.0 / e1
                    total += r[k]
                mean_p = 0.0
                w = 0.0
                for k in range(K):
                    r[k] /= total
                    mean_p += r[k] * q[k]
                    w += r[k] * q[k] * (1.0 - q[k])
                bend = 0.0  # d/dθ E'[p(1 − p)]: each node's own, and the tilt's, Cov'(p(1 − p), (s − p)/φ)
                for k in range(K):
                    wk = q[k] * (1.0 - q[k])
                    bend += r[k] * (wk * (1.0 - 2.0 * q[k]) + (wk - w) * (mean_p - q[k]) * inv_phi)
                log_ratio[a, j] += math.log(total) - (1.0 - s) * (trial[a, j] - theta[a]) * inv_phi
                gradient[a, j] += (s - mean_p) * inv_phi
                info[a, j] += w * inv_phi
                slope[a, j] += bend * inv_phi
    return log_ratio, gradient, info, slope
