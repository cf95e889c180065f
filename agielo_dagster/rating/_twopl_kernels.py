"""Compiled loop of the 2PL model (:mod:`.twopl`): one pass over the matches per Newton step.

As :mod:`._logistic_kernels` (the same canonical order, so identical inputs give identical bits), with two
parameters per test case: its difficulty β and discrimination α, P(success) = σ(α (θ_a − β)) in logits.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._logistic_kernels import _log_lik, _node_log_lik, _normalize


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _mode(lo, hi, agent, score, theta, b, a, tau2, omega2, inv):
    """The posterior mode of (β, α) from (``b``, ``a``): Newton's method on the observed curvature (Fisher's where
    that is not positive definite), a step that lowers the posterior halved. Returns the mode and its curvature."""
    best = -math.inf
    step_b = 0.0
    step_a = 0.0
    cbb = cba = caa = 1.0
    for _ in range(200):
        lp = -0.5 * b * b / tau2 - 0.5 * (a - 1.0) ** 2 / omega2
        gb = -b / tau2
        ga = -(a - 1.0) / omega2
        fbb = 1.0 / tau2
        fba = 0.0
        faa = 1.0 / omega2
        residual = 0.0
        for i in range(lo, hi):
            d = theta[agent[i]] - b
            ll, p = _log_lik(a * d, score[i])
            lp += ll * inv
            e = (score[i] - p) * inv
            w = p * (1.0 - p) * inv
            gb -= a * e
            ga += d * e
            fbb += w * a * a
            fba -= w * a * d
            faa += w * d * d
            residual += e
        if lp < best and max(abs(step_b), abs(step_a)) > 1e-9:  # too far: back half way
            step_b *= 0.5
            step_a *= 0.5
            b -= step_b
            a -= step_a
            continue
        best = lp
        # the observed curvature: Fisher's plus the residuals' share (∂²η/∂β∂α = −1)
        cbb, cba, caa = fbb, fba + residual, faa
        if cbb * caa - cba * cba <= 1e-12 * cbb * caa:
            cba = fba
        det = cbb * caa - cba * cba
        step_b = (caa * gb - cba * ga) / det
        step_a = (cbb * ga - cba * gb) / det
        longest = max(abs(step_b), abs(step_a))
        if longest > 1.0:
            step_b /= longest
            step_a /= longest
        b += step_b
        a += step_a
        if longest < 1e-8:
            break
    return b, a, cbb, cba, caa


@numba.njit(cache=True, nogil=True, error_model="numpy")
def posterior_pass(
    start,
    agent,
    score,
    theta,
    mode,
    tau2,
    omega2,
    phi,
    nodes,
    log_weights,
    rule_start,
    rule_from,
    n_agents,
    agent_var,
    match_score,
    factor,
):
    """Each test case's posterior of (β, α) given the agents' ``theta``, by adaptive Gauss-Hermite quadrature in 2-D.

    Priors β ~ N(0, tau2), α ~ N(1, omega2); the quasi-likelihood Π p^(s/φ) (1 − p)^((1−s)/φ), p = σ(α(θ_a − β)).
    ``nodes`` (m × 2) and ``log_weights`` hold rules for ∫ e^(−|x|²) f(x) dx with |x|² added to the log weights,
    rule r in rows ``rule_start[r]:rule_start[r + 1]``, for the test cases of at least ``rule_from[r]`` matches (the
    last that applies); each test case's posterior mode (``mode``, n_t × 2, updated in place) and the Cholesky
    factor of its curvature place them, and their normalized weights are the posterior.

    With g = ∂η/∂θ_a = α and w = p(1 − p), per match it writes E[α(s − p)]/φ (``match_score``) and its row of the
    Hessian's factor (``factor[i]``, 2 columns): W_i L⁻ᵀ, W_i = E[w α (−α, θ_a − β)]/φ its cross-information with
    (β, α) and L L ᵀ = C_t = Σ E[w ∇η ∇ηᵀ]/φ + the prior's, so that the agents' negative Hessian is diag(Σ E[w α²]/φ)
    − F Fᵀ, positive semi-definite. Returns per agent the sums of E[α(s − p)]/φ, E[w α²]/φ, E[w(1 − 2p) α³]/φ,
    E[w(1 − 6w) α⁴]/φ (the information and its first two derivatives in θ_a) and Cov(α(s − p), ψ_j²)/φ (2 × n_a, ψ =
    (β, α − 1)); per test case E[ψ_j²] (n_t × 2); Σ_t Cov(ψ_j², ψ_l²); per test case the posterior means and variances
    (n_t × 2); and the Pearson dispersion Σ (s − E p)² / Σ E p (1 − E p) (1 − h), h = E[w]/φ · (Var η + E[α²]
    ``agent_var``) the leverage (as the rasch's pass).
    """
    n_t = len(start) - 1
    m = 0
    for r in range(len(rule_from)):
        m = max(m, rule_start[r + 1] - rule_start[r])
    widest = 0
    for t in range(n_t):
        widest = max(widest, start[t + 1] - start[t])
    at_node = np.empty((widest, m))
    score_sum = np.zeros(n_agents)
    info = np.zeros(n_agents)
    slope = np.zeros(n_agents)
    bend = np.zeros(n_agents)
    cross = np.zeros((2, n_agents))
    mean = np.empty((n_t, 2))
    var = np.empty((n_t, 2))
    second = np.empty((n_t, 2))
    second_cov = np.zeros((2, 2))
    bk = np.empty(m)
    ak = np.empty(m)
    weight = np.empty(m)
    inv = 1.0 / phi
    root2 = math.sqrt(2.0)
    pearson = 0.0
    expected = 0.0
    for t in range(n_t):
        lo = start[t]
        hi = start[t + 1]
        rule = 0  # the test case's rule: the last whose rule_from its matches reach
        while rule + 1 < len(rule_from) and hi - lo >= rule_from[rule + 1]:
            rule += 1
        first = rule_start[rule]
        m = rule_start[rule + 1] - first
        b, a, cbb, cba, caa = _mode(lo, hi, agent, score, theta, mode[t, 0], mode[t, 1], tau2, omega2, inv)
        mode[t, 0] = b
        mode[t, 1] = a
        # nodes at mode + √2 L⁻ᵀ x, L Lᵀ the curvature: the normal approximation's own Gauss-Hermite nodes
        l11 = math.sqrt(cbb)
        l21 = cba / l11
        l22 = math.sqrt(max(caa - l21 * l21, 1e-300))
        for k in range(m):
            x0, x1 = nodes[first + k, 0], nodes[first + k, 1]
            beta = b + root2 * (x0 / l11 - l21 * x1 / (l11 * l22))
            alpha = a + root2 * x1 / l22
            bk[k] = beta
            ak[k] = alpha
            v = log_weights[first + k] - 0.5 * beta * beta / tau2 - 0.5 * (alpha - 1.0) ** 2 / omega2
            weight[k] = v + _node_log_lik(lo, hi, agent, score, theta, beta, alpha, inv, at_node, k)
        _normalize(weight, m)
        mb = ma = 0.0
        for k in range(m):
            mb += weight[k] * bk[k]
            ma += weight[k] * ak[k]
        vb = va = qb = qa = 0.0
        for k in range(m):
            vb += weight[k] * (bk[k] - mb) ** 2
            va += weight[k] * (ak[k] - ma) ** 2
            qb += weight[k] * bk[k] ** 2
            qa += weight[k] * (ak[k] - 1.0) ** 2
        sbb = saa = sba = 0.0
        for k in range(m):
            db = bk[k] ** 2 - qb
            da = (ak[k] - 1.0) ** 2 - qa
            sbb += weight[k] * db * db
            saa += weight[k] * da * da
            sba += weight[k] * db * da
        mean[t, 0] = mb
        mean[t, 1] = ma
        var[t, 0] = vb
        var[t, 1] = va
        second[t, 0] = qb
        second[t, 1] = qa
        second_cov[0, 0] += sbb
        second_cov[1, 1] += saa
        second_cov[0, 1] += sba
        second_cov[1, 0] += sba
        fbb = 1.0 / tau2
        fba = 0.0
        faa = 1.0 / omega2
        for i in range(lo, hi):
            s = score[i]
            th = theta[agent[i]]
            ep = ew = esc = eg2 = eslope = ebend = ewad = ewdd = cb = ca = eeta = eeta2 = ea2 = 0.0
            for k in range(m):
                p = at_node[i - lo, k]
                wk = weight[k]
                al = ak[k]
                d = th - bk[k]
                w = p * (1.0 - p)
                ep += wk * p
                ew += wk * w
                e = wk * al * (s - p)
                esc += e
                cb += e * (bk[k] ** 2 - qb)
                ca += e * ((al - 1.0) ** 2 - qa)
                wa2 = wk * w * al * al
                eg2 += wa2
                eslope += wa2 * al * (1.0 - 2.0 * p)
                ebend += wa2 * al * al * (1.0 - 6.0 * w)
                ewad += wk * w * al * d
                ewdd += wk * w * d * d
                eta = al * d
                eeta += wk * eta
                eeta2 += wk * eta * eta
                ea2 += wk * al * al
            j = agent[i]
            match_score[i] = esc * inv
            score_sum[j] += esc * inv
            info[j] += eg2 * inv
            slope[j] += eslope * inv
            bend[j] += ebend * inv
            cross[0, j] += cb * inv
            cross[1, j] += ca * inv
            factor[i, 0] = -eg2 * inv
            factor[i, 1] = ewad * inv
            fbb += eg2 * inv
            fba -= ewad * inv
            faa += ewdd * inv
            if 0.0 < ep < 1.0:
                leverage = min(ew * inv * (max(eeta2 - eeta * eeta, 0.0) + ea2 * agent_var[j]), 0.9)
                pearson += (s - ep) ** 2
                expected += ep * (1.0 - ep) * (1.0 - leverage)
        f11 = math.sqrt(fbb)
        f21 = fba / f11
        f22 = math.sqrt(max(faa - f21 * f21, 1e-300))
        for i in range(lo, hi):
            wb = factor[i, 0]
            factor[i, 0] = wb / f11
            factor[i, 1] = (factor[i, 1] - f21 * wb / f11) / f22
    pearson = pearson / expected if expected > 0.0 else 0.0
    return score_sum, info, slope, bend, cross, second, second_cov, mean, var, pearson
