"""Calibrated ratings on an unbiased Elo scale: a joint refinement of the Glicko ratings.

Sequential Glicko compresses the scale when agents are spread widely (on simulated agents of
sd 600 Elo the slope of estimate on truth is 0.86–0.91), and intervals centred on compressed
ratings miss the extremes. :func:`refine_ratings` re-estimates every rating from all the matches
at once, starting from the Glicko ratings:

1. **Agents, by pairwise comparison on shared test cases.** On a test case t, agent a "beats"
   agent b with weight w_ab = S_a(1 − S_b) and loses with weight w_ba = S_b(1 − S_a). Under
   the AGI-Elo model, E[w_ab] / E[w_ba] = 10^((μ_a − μ_b)/400) whatever the test case's rating,
   for binary and graded scores alike (S_a, S_b independent given the ratings, any
   distribution with mean E). So the Bradley-Terry equations Σ_t [w_ab − (w_ab + w_ba)E_ab] = 0
   are unbiased in every design: the test cases' ratings drop out (for binary scores this is
   the Rasch model's pairwise conditional likelihood), so few agents per test case (sparse
   designs) bias nothing, and a test case every agent solves (or none does) simply carries no
   comparison. The equations use only the n_a × n_a sums W_ab = Σ_t w_ab, solved by Newton
   with Firth's bias correction (the maximum-likelihood solution overshoots: slope of estimate on
   truth 1.14–1.22 with 10 % of pairs played), scaled by the dispersion of the scores (1 for
   binary; for graded scores the pairs' Pearson statistic per degree of freedom). Firth's
   correction also keeps an agent that beats every rival finite. Comparisons fix only
   differences. Where Firth's correction moves some agent by ``TRIGGER`` standard errors or more
   (binary scores: few agents a test case, spread widely, where it pulls the extremes in), the
   estimate is de-biased by a conditional bootstrap (:mod:`agielo_dagster.rating.debias`), and
   the intervals below stretched with it.
2. **Intervals from the sandwich.** The pairs of one test case share its outcomes, so the
   variance is the robust one clustered by test case: H⁻¹ B H⁻¹ with H the equations' Jacobian
   and B = Σ_t G_t G_tᵀ, G_t = U_t + H_t H⁻¹ U_t (U_t: test case t's contribution to every
   agent's equation, H_t its block of H): the delete-one-test-case jackknife, to first order,
   which the plain sandwich (G_t = U_t) underestimates where a test case weighs much in few
   agents' ratings. It holds for graded scores (no likelihood is assumed) and gives each agent's
   rating relative to the mean of its component, which is what Elo ratings mean. The interval
   is μ ∓ z·se, reaching farther on a side where the agent's penalized likelihood is flat
   (:func:`profile_reach`): an agent that beats almost every test case it plays.
3. **The common level, from the Glicko scale.** Each component's refined agents are shifted so
   that the median of (Glicko − refined) over them is 0: the scale's level is the Glicko (paper)
   scale's at its median agent, which an agent added or removed at the edge barely moves. On
   breast_cancer, dropping adaboost (the weakest, probabilities near 0.5) moves the other agents'
   refined level by 19 Elo (Glicko's own level moves by 17 there); the level fitted jointly with
   the test cases under their prior moved by 46, as a mean anchor would by 25: the test cases every
   agent solves take their level from the prior, and the weakest agent's results decide where.
4. **Test cases, given the agents (MAP).** Each test case's rating maximizes the
   (quasi-)likelihood Σ S log E + (1 − S) log(1 − E) with the Glicko prior N(init_mu,
   init_sigma²): a test case every agent solves (or none does) has no finite maximum-likelihood
   rating, and the prior gives it one, as Glicko's own start does. ``sigma`` of a test case is its
   posterior sd, 1/√(q²ΣE(1 − E) + 1/init_sigma²).

Cost: two passes over every (agent, agent) pair sharing a test case (Σ_t n_t² work, n_t the
agents of test case t; the jackknife's pass visits each pair three times) in compiled loops, a
Newton solve on n_a × n_a matrices, a one-dimensional search per agent over its rivals (n_a²
per step), and a few O(n) passes for the test cases. Benchmarks of more than ``MAX_AGENTS`` agents or ``MAX_PAIRS`` pairs keep
the Glicko ratings (``refined`` False, with a :class:`RefinementSkippedWarning`): the matrices would
not fit comfortably, or the pairs would cost more than the Glicko orders themselves.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from ._kernels import Q, group_by
from .intervals import z_of

__all__ = [
    "MAX_AGENTS",
    "MAX_PAIRS",
    "RefinedRatings",
    "RefinementSkippedWarning",
    "refine_ratings",
]


class RefinementSkippedWarning(UserWarning):
    """``refine=True`` was asked for a benchmark too wide for it: the Glicko ratings are kept."""


MAX_AGENTS = 2048
"""Above this many agents the refinement is skipped (n_a × n_a matrices of 32 MiB each)."""
MAX_PAIRS = 1_000_000_000
"""Above this many (agent, agent) pairs sharing a test case, Σ_t n_t², the refinement is skipped (its cost)."""
_TOL = 1e-6  # Elo: Newton stops when no rating moves more than this
_DRAW_TOL = 0.01  # Elo: the same for the de-bias's refits of its draws (their mean's noise is about se/√20)
_MAX_ITER = 100
_MAX_STEP = 400.0  # Elo: a Newton step is clipped to this (the equations are concave, steps only shrink)
TRIGGER = 1.0
"""Binary scores are de-biased where Firth's correction moves some agent by this many of its standard errors or more."""
_MAX_DOUBLINGS = 8  # an interval reaches at most 2⁸ × z·se from its agent (where even the penalty does not bound it)


@dataclass(frozen=True)
class RefinedRatings:
    """What :func:`refine_ratings` returns.

    Attributes
    ----------
    agent_mu, agent_se : ndarray
        Refined agent ratings and the standard error of each relative to its component's mean
        (NaN where not refined).
    agent_lo, agent_hi : ndarray
        The ``level`` interval: μ ∓ z·se, reaching farther on the side where the agent's likelihood
        is flat (see :func:`profile_reach`; NaN where not refined).
    test_case_mu, test_case_sigma : ndarray
        Test-case MAP ratings and posterior sd (the Glicko ones where not refined).
    refined : ndarray of bool
        Agents that were refined: those with at least one comparison with another agent.
    iterations : int
        Newton iterations of the agents' solve.
    skipped : bool
        The benchmark was too wide to refine (see ``MAX_AGENTS``, ``MAX_PAIRS``): every rating is Glicko's.
    correction : ndarray or None
        What the de-bias added to each agent's Firth rating (None where it did not run): a re-rating of
        a subset of the matches can reuse it (``refine_ratings``' ``correction``) rather than draw again.
    """

    agent_mu: np.ndarray
    agent_se: np.ndarray
    agent_lo: np.ndarray
    agent_hi: np.ndarray
    test_case_mu: np.ndarray
    test_case_sigma: np.ndarray
    refined: np.ndarray
    iterations: int
    skipped: bool = False
    correction: np.ndarray | None = None


@numba.njit(cache=True, nogil=True)
def pair_wins(start, agent, score, n_agents):
    """W[a, b] = Σ over test cases both played of S_a(1 − S_b); rows of a test case are ``start[t]:start[t+1]``."""
    w = np.zeros((n_agents, n_agents))
    for t in range(len(start) - 1):
        lo, hi = start[t], start[t + 1]
        for i in range(lo, hi):
            a = agent[i]
            sa = score[i]
            if sa == 0.0:
                continue
            for j in range(lo, hi):
                if j != i:
                    w[a, agent[j]] += sa * (1.0 - score[j])
    return w


@numba.njit(cache=True, nogil=True)
def _most(start):
    most = 0
    for t in range(len(start) - 1):
        most = max(most, start[t + 1] - start[t])
    return most


@numba.njit(cache=True, nogil=True, error_model="numpy")
def pair_meat(start, agent, score, strength, h_inv, n_agents):
    """B = Σ_t G_t G_tᵀ, G_t = U_t + H_t H⁻¹ U_t: the delete-one-test-case jackknife's meat, to first order.

    U_t[a] = q Σ_b [w_ab − (w_ab + w_ba) E_ab] over the agents b of test case t, H_t its block of the
    equations' Jacobian and ``h_inv`` the Jacobian's inverse: dropping t moves the ratings by
    (H − H_t)⁻¹ U_t ≈ H⁻¹ (U_t + H_t H⁻¹ U_t). The plain sandwich (G_t = U_t) sees each test case's
    residuals after the fit has absorbed them: with 40 test cases an agent and sd 800 it gave 118 Elo
    where the ratings erred by 202 (rms); the jackknife inflates it where a test case weighs much.
    ``strength`` is 10^(μ/400) up to a common factor (see :func:`_strengths`): E_ab = x_a / (x_a + x_b),
    no exp per pair. A test case's agents are copied into small local arrays first, and the pair
    b = a is left in (it adds s(1 − s) − 2s(1 − s)/2 = 0): loops without branches.
    """
    b_mat = np.zeros((n_agents, n_agents))
    most = _most(start)
    la = np.empty(most, dtype=np.int64)
    ls = np.empty(most)
    lx = np.empty(most)
    u = np.empty(most)
    y = np.empty(most)
    g = np.empty(most)
    for t in range(len(start) - 1):
        lo = start[t]
        n = start[t + 1] - lo
        for k in range(n):
            la[k] = agent[lo + k]
            ls[k] = score[lo + k]
            lx[k] = strength[la[k]]
        for k in range(n):
            sa = ls[k]
            xa = lx[k]
            acc = 0.0
            for j in range(n):
                sb = ls[j]
                w_ab = sa * (1.0 - sb)
                acc += w_ab - (w_ab + sb * (1.0 - sa)) * xa / (xa + lx[j])
            u[k] = Q * acc
        for k in range(n):
            acc = 0.0
            for j in range(n):
                acc += h_inv[la[k], la[j]] * u[j]
            y[k] = acc
        for k in range(n):
            sa = ls[k]
            xa = lx[k]
            acc = 0.0
            for j in range(n):
                sb = ls[j]
                e = xa / (xa + lx[j])
                acc += (sa * (1.0 - sb) + sb * (1.0 - sa)) * e * (1.0 - e) * (y[k] - y[j])
            g[k] = u[k] + Q * Q * acc
        for k in range(n):
            row = la[k]
            gk = g[k]
            for j in range(n):
                b_mat[row, la[j]] += gk * g[j]
    return b_mat


@numba.njit(cache=True, nogil=True, error_model="numpy")
def pair_projection(start, agent, score, strength, c):
    """Per test case t, Σ_a c_a U_t[a] with U_t[a] = Σ_b [w_ab − (w_ab + w_ba) E_ab] (as :func:`pair_meat`, without q)."""
    out = np.zeros(len(start) - 1)
    for t in range(len(start) - 1):
        lo, hi = start[t], start[t + 1]
        total = 0.0
        for i in range(lo, hi):
            ca = c[agent[i]]
            if ca == 0.0:
                continue
            sa = score[i]
            xa = strength[agent[i]]
            acc = 0.0
            for j in range(lo, hi):
                sb = score[j]
                w_ab = sa * (1.0 - sb)
                acc += w_ab - (w_ab + sb * (1.0 - sa)) * xa / (xa + strength[agent[j]])
            total += ca * acc
        out[t] = total
    return out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def profiled_information(start, agent, a_strength, t_strength, n_agents):
    """The agents' information with the test cases profiled out: Σ_t [diag(v_t) − v_t v_tᵀ / Σ v_t], v = q²E(1 − E)."""
    info = np.zeros((n_agents, n_agents))
    most = _most(start)
    la = np.empty(most, dtype=np.int64)
    v = np.empty(most)
    for t in range(len(start) - 1):
        lo = start[t]
        n = start[t + 1] - lo
        xt = t_strength[t]
        total = 0.0
        for k in range(n):
            la[k] = agent[lo + k]
            xa = a_strength[la[k]]
            v[k] = Q * Q * xa * xt / ((xa + xt) * (xa + xt))
            total += v[k]
        if total <= 0.0:
            continue
        for k in range(n):
            row = la[k]
            info[row, row] += v[k]
            f = v[k] / total
            for j in range(n):
                info[row, la[j]] -= f * v[j]
    return info


@numba.njit(cache=True, nogil=True, error_model="numpy")
def pair_pearson(start, agent, score, strength):
    """(Σ (w_ab − N E_ab)² / (N E_ab(1 − E_ab)), pairs) over the pairs of agents sharing a test case, N = w_ab + w_ba > 0."""
    total = 0.0
    pairs = 0
    for t in range(len(start) - 1):
        lo, hi = start[t], start[t + 1]
        for i in range(lo, hi):
            sa = score[i]
            for j in range(i + 1, hi):
                sb = score[j]
                w_ab = sa * (1.0 - sb)
                n = w_ab + sb * (1.0 - sa)
                if n > 0.0:
                    xa = strength[agent[i]]
                    e = xa / (xa + strength[agent[j]])
                    v = n * e * (1.0 - e)
                    if v > 1e-12:
                        r = w_ab - n * e
                        total += r * r / v
                        pairs += 1
    return total, pairs


@numba.njit(cache=True, nogil=True, error_model="numpy")
def test_case_sums(agent, test_case, score, a_strength, t_strength, n_test_cases):
    """Per test case Σ(S − E) and ΣE(1 − E) (E: the agent's expected score)."""
    g_t = np.zeros(n_test_cases)
    v_t = np.zeros(n_test_cases)
    for i in range(len(agent)):
        t = test_case[i]
        xa = a_strength[agent[i]]
        e = xa / (xa + t_strength[t])
        g_t[t] += score[i] - e
        v_t[t] += e * (1.0 - e)
    return g_t, v_t


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _agent_pairs(j, mu_j, w, mu, firth):
    """Agent j's Firth-penalized pairwise log-likelihood ℓ at μ_j, the rivals' ratings fixed: (ℓ, ℓ', information, −ℓ'')."""
    ll = 0.0
    grad = 0.0
    info = 0.0
    s1 = 0.0
    s2 = 0.0
    for b in range(len(mu)):
        n_jb = w[j, b] + w[b, j]
        if b == j or n_jb <= 0.0:
            continue
        d = Q * (mu_j - mu[b])
        log_e = -math.log1p(math.exp(-d)) if d > 0.0 else d - math.log1p(math.exp(d))
        e = math.exp(log_e)
        v = n_jb * e * (1.0 - e)
        ll += w[j, b] * log_e + w[b, j] * (log_e - d)
        grad += w[j, b] - n_jb * e
        info += v
        s1 += v * (1.0 - 2.0 * e)
        s2 += v * ((1.0 - 2.0 * e) ** 2 - 2.0 * e * (1.0 - e))
    info = max(info, 1e-300)
    # the penalty ½ log I: its derivatives from I' = q s1, I'' = q² s2
    curvature = Q * Q * (info - 0.5 * firth * (s2 / info - (s1 / info) ** 2))
    return ll + 0.5 * firth * math.log(info), Q * grad + 0.5 * firth * Q * s1 / info, Q * Q * info, curvature


@numba.njit(cache=True, nogil=True, error_model="numpy")
def profile_reach(w, mu, se, compared, firth, z):
    """How far below and above each agent its interval reaches: z·se, or farther where its likelihood is flat.

    Agent j's Firth-penalized pairwise log-likelihood, the other ratings fixed, is scaled to the
    standard error: D(μ) = 2[ℓ(μ̃) − ℓ(μ)] / (c se²) with μ̃ its maximum and c its curvature there,
    so that D ≈ ((μ − μ̃)/se)² where ℓ is quadratic. Each side reaches where D = z², and never less
    than z·se: an agent that beats almost every rival has a flat likelihood above, and a Wald
    interval centred on its Firth rating (pulled in) missed it; the penalized profile (Heinze &
    Schemper 2002) reaches up to where the data and the penalty rule it out.
    """
    n = len(mu)
    down = z * se.copy()
    up = z * se.copy()
    for j in range(n):
        if not compared[j] or not se[j] > 0.0:
            continue
        m = mu[j]
        for _ in range(_MAX_ITER):
            _, g, i, _ = _agent_pairs(j, m, w, mu, firth)
            step = min(max(g / max(i, 1e-12), -_MAX_STEP), _MAX_STEP)
            m += step
            if abs(step) < _TOL:
                break
        l0, _, i0, c0 = _agent_pairs(j, m, w, mu, firth)
        target = 0.5 * z * z * max(c0, i0) * se[j] * se[j]
        for side in (-1.0, 1.0):
            lo = z * se[j]
            if l0 - _agent_pairs(j, m + side * lo, w, mu, firth)[0] >= target:
                continue
            hi = 2.0 * lo
            for _ in range(_MAX_DOUBLINGS):
                if l0 - _agent_pairs(j, m + side * hi, w, mu, firth)[0] >= target:
                    break
                lo, hi = hi, 2.0 * hi
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                if l0 - _agent_pairs(j, m + side * mid, w, mu, firth)[0] >= target:
                    hi = mid
                else:
                    lo = mid
            if side < 0.0:
                down[j] = hi
            else:
                up[j] = hi
    return down, up


def _strengths(mu: np.ndarray, centre: float) -> np.ndarray:
    """10^((μ − centre)/400), so that E = x_a / (x_a + x_b): the kernels divide where they would call exp."""
    return np.exp(np.clip(Q * (np.asarray(mu, dtype=np.float64) - centre), -300.0, 300.0))


def _agents(
    w: np.ndarray, start: np.ndarray, component: np.ndarray, firth: float, tol: float = _TOL
) -> tuple[np.ndarray, np.ndarray, int]:
    """Newton on the pairwise (Bradley-Terry) equations from ``start``; returns (μ, the equations' Jacobian H, iterations).

    The equations fix only differences within a component: each component's mean stays at its
    mean in ``start`` (a rank-one term per component conditions the solve, and the mean is
    restored exactly). ``firth`` > 0 adds Firth's bias correction scaled by the scores'
    dispersion: each pair's hat value h_ab as h_ab/2 extra wins and losses (Firth 1993; for
    Bradley-Terry, Kosmidis & Firth 2021), which also keeps an agent that beats every rival finite.
    An agent compared with nobody stays where it is.
    """
    pairs = w + w.T
    compared = pairs.sum(axis=1) > 0
    same = (component[:, None] == component[None, :]) & compared[:, None] & compared[None, :]
    size = np.maximum(same.sum(axis=1), 1)
    mu = start.copy()
    it = 0

    def jacobian(mu):
        e = 0.5 * (1.0 + np.tanh(0.5 * Q * (mu[:, None] - mu[None, :])))  # E_ab, logistic, overflow-free
        c = Q * Q * pairs * e * (1.0 - e)
        hess = -c
        np.fill_diagonal(hess, c.sum(axis=1) - np.diag(c))
        return e, c, hess

    for it in range(1, _MAX_ITER + 1):  # noqa: B007 - the count is returned
        e, c, hess = jacobian(mu)
        scale = max(float(np.diag(hess).max(initial=0.0)), 1e-12)
        solve = hess + scale * same / size[:, None] + np.diag(np.where(compared, 1e-9 * scale, 1.0))
        h_inv = np.linalg.inv(solve)
        excess = w - pairs * e
        if firth > 0.0:
            d_inv = np.diag(h_inv)
            excess = excess + firth * c * (d_inv[:, None] + d_inv[None, :] - 2.0 * h_inv) * (0.5 - e)
        step = np.clip(h_inv @ (Q * excess.sum(axis=1)), -_MAX_STEP, _MAX_STEP)
        mu = mu + np.where(compared, step, 0.0)
        if np.abs(step).max() < tol:
            break
    # each component's mean back where it started, exactly
    for comp in np.unique(component[compared]):
        members = compared & (component == comp)
        mu[members] += start[members].mean() - mu[members].mean()
    _, _, hess = jacobian(mu)
    return mu, hess + np.diag(np.where(compared, 0.0, 1.0)), it


def _anchored(diffs: np.ndarray, glicko_mu: np.ndarray, component: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """Each component's refined agents shifted so that the median of (Glicko − refined) over them is 0.

    The comparisons fix only differences; the level comes from the Glicko scale through the median
    agent, which an agent added or removed at the edge barely moves (a mean, or the test cases'
    MAP level, moves with it: see the module's notes).
    """
    mu = diffs.copy()
    for comp in np.unique(component[compared]):
        members = compared & (component == comp)
        mu[members] += np.median(glicko_mu[members] - diffs[members])
    return mu


def _test_cases(m, a_mu, t_mu0, played, init_mu, init_sigma):
    """Test cases' MAP ratings given the agents' (Newton per test case, prior N(init_mu, init_sigma²)) and posterior sd."""
    prior_prec = 1.0 / (init_sigma * init_sigma)
    a_x = _strengths(a_mu, init_mu)
    t_mu = t_mu0.copy()
    for _ in range(_MAX_ITER):
        g_t, v_t = test_case_sums(m.agent, m.test_case, m.score, a_x, _strengths(t_mu, init_mu), m.n_test_cases)
        grad = -Q * g_t - prior_prec * (t_mu - init_mu)
        step = np.clip(np.where(played, grad / (Q * Q * v_t + prior_prec), 0.0), -_MAX_STEP, _MAX_STEP)
        t_mu += step
        if np.abs(step).max(initial=0.0) < _TOL:
            break
    _, v_t = test_case_sums(m.agent, m.test_case, m.score, a_x, _strengths(t_mu, init_mu), m.n_test_cases)
    return t_mu, 1.0 / np.sqrt(Q * Q * v_t + prior_prec)


def refine_ratings(
    m,
    agent_mu: np.ndarray,
    test_case_mu: np.ndarray,
    test_case_sigma: np.ndarray,
    agent_component: np.ndarray,
    test_case_component: np.ndarray,
    *,
    init_mu: float,
    init_sigma: float,
    level: float = 0.95,
    seed: int | None = 0,
    correction: np.ndarray | None = None,
) -> RefinedRatings:
    """Refine Glicko ratings (``agent_mu``, ``test_case_mu``) of the encoded matches ``m`` (see the module's notes).

    Components stay on their own scales: comparisons never cross them, each keeps its Glicko
    agents' mean up to its own common shift δ fitted with its test cases. ``seed``: the draws of
    the bias correction (:mod:`agielo_dagster.rating.debias`; None: fresh entropy). ``correction``: add this
    (a result's ``correction``, per agent) to Firth's ratings instead of drawing: the fragility search re-rates
    hundreds of subsets of one benchmark, each a few test cases short of it, with the benchmark's own correction.
    """
    n_a = m.n_agents
    n_pairs = pair_count(m)
    too_big = n_a > MAX_AGENTS or n_pairs > MAX_PAIRS
    if too_big:
        warnings.warn(
            f"refine: {n_a:,} agents (limit {MAX_AGENTS:,}: n_a x n_a matrices) and {n_pairs:,} agent pairs sharing a "
            f"test case (limit {MAX_PAIRS:,}: the cost): the Glicko ratings and intervals are kept, not refined",
            RefinementSkippedWarning,
            stacklevel=4,
        )
    if too_big or len(m) == 0:
        nan = np.full(n_a, np.nan)
        return RefinedRatings(
            agent_mu.copy(), nan, nan, nan, test_case_mu.copy(), test_case_sigma.copy(), np.zeros(n_a, bool), 0, too_big
        )
    csr_agent = np.empty(len(m), dtype=np.int64)
    csr_score = np.empty(len(m))
    start = group_by(m.test_case, m.n_test_cases, m.agent.astype(np.int64), m.score.astype(np.float64), csr_agent, csr_score)
    w = pair_wins(start, csr_agent, csr_score, n_a)
    compared = (w + w.T).sum(axis=1) > 0
    glicko_mu = np.asarray(agent_mu, dtype=np.float64)
    t_mu0 = np.asarray(test_case_mu, dtype=np.float64)
    played = test_case_component >= 0
    binary = _binary(m.score)

    # the pairwise equations with Firth's correction (binomial dispersion); graded scores: again at their own dispersion
    diffs, hess, iterations = _agents(w, glicko_mu, agent_component, 1.0)
    phi = 1.0
    if not binary:
        total, n_pairs = pair_pearson(start, csr_agent, csr_score, _strengths(diffs, init_mu))
        phi = min(total / max(n_pairs - int(compared.sum()), 1), 1.0)
        diffs, hess, more = _agents(w, diffs, agent_component, phi)
        iterations += more
    fitted, stretch = diffs, np.ones(n_a)
    h_inv = _inverse_on_differences(hess, agent_component, compared)
    if correction is not None:
        diffs = np.where(compared, fitted + correction, fitted)
    elif binary:
        diffs, stretch = _debiased(w, fitted, h_inv, start, csr_agent, csr_score, agent_component, compared, seed)
    mu = np.where(compared, _anchored(diffs, glicko_mu, agent_component, compared), glicko_mu)
    t_mu, t_sig = _test_cases(m, mu, t_mu0, played, init_mu, init_sigma)
    t_mu, t_sig = np.where(played, t_mu, test_case_mu), np.where(played, t_sig, test_case_sigma)
    # the sandwich of the pairwise equations, clustered by test case (the jackknife's, to first order)
    meat = pair_meat(start, csr_agent, csr_score, _strengths(fitted, init_mu), h_inv, n_a)
    sandwich = np.diag(h_inv @ meat @ h_inv)
    # the joint model's own standard errors (test cases profiled out), scaled by the scores' dispersion
    info = profiled_information(start, csr_agent, _strengths(mu, init_mu), _strengths(t_mu, init_mu), n_a)
    model = np.diag(_inverse_on_differences(info, agent_component, compared)) * phi
    # the de-biased estimate varies as the Firth one, stretched; the model's own error is at the ratings themselves
    se = np.where(compared, np.sqrt(np.maximum(np.maximum(model, sandwich * stretch**2), 0.0)), np.nan)
    down, up = profile_reach(w, fitted, np.nan_to_num(se / stretch), compared, phi, z_of(level))
    down, up = down * stretch, up * stretch
    lo, hi = np.where(compared, mu - down, np.nan), np.where(compared, mu + up, np.nan)
    drawn = correction is None and bool(np.any(diffs != fitted))
    return RefinedRatings(mu, se, lo, hi, t_mu, t_sig, compared, iterations, correction=diffs - fitted if drawn else correction)


def _debiased(w, fitted, h_inv, start, csr_agent, csr_score, component, compared, seed):
    """Binary scores: the Firth estimate de-biased (:func:`~agielo_dagster.rating.debias.debias`) where Firth's
    correction moves some agent by at least ``TRIGGER`` of its pairwise standard error; (ratings, stretch).

    Where it moves every agent by less, what bias it leaves is of second order, and the bootstrap's
    cost (``DRAWS`` refits a round) is spared: dense designs, and most with a third of the pairs played.
    """
    d_inv = np.diag(h_inv)  # h_inv: the pairwise equations' inverse on differences, as the sandwich uses it
    e = 0.5 * (1.0 + np.tanh(0.5 * Q * (fitted[:, None] - fitted[None, :])))
    c = Q * Q * (w + w.T) * e * (1.0 - e)
    shift = h_inv @ (Q * (c * (d_inv[:, None] + d_inv[None, :] - 2.0 * h_inv) * (0.5 - e)).sum(axis=1))
    sd = np.sqrt(np.maximum(d_inv, 0.0))
    if not np.any(compared & (np.abs(shift) >= TRIGGER * sd)):
        return fitted, np.ones(len(fitted))
    from . import debias as de

    if compared.sum() > de.MAX_AGENTS:
        warnings.warn(
            f"refine: Firth's correction moves some agent by {TRIGGER:g} standard error(s) or more, but the de-bias "
            f"is skipped for {int(compared.sum()):,} agents (limit {de.MAX_AGENTS:,}: its cost): the extremes' ratings "
            "may sit inside their true ones (docs/engine.md, 'Widely spread agents')",
            de.DebiasSkippedWarning,
            stacklevel=5,
        )
        return fitted, np.ones(len(fitted))

    def refit(scores, from_mu):
        return _agents(pair_wins(start, csr_agent, scores, len(fitted)), from_mu, component, 1.0, _DRAW_TOL)[0]

    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    d = de.debias(fitted, refit, start, csr_agent, csr_score, sd, compared, component, seed)
    return d.mu, d.stretch


def refined(
    m, a_mu, t_mu, t_sig, *, init_mu: float = 1500.0, init_sigma: float = 350.0, seed: int | None = 0, correction=None
) -> RefinedRatings:
    """:func:`refine_ratings` on encoded matches and the mean of their orders, components found, its warnings silenced."""
    from .debias import DebiasSkippedWarning
    from .graph import components

    _, a_comp, t_comp = components(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RefinementSkippedWarning)
        warnings.simplefilter("ignore", DebiasSkippedWarning)
        return refine_ratings(
            m, a_mu, t_mu, t_sig, a_comp, t_comp, init_mu=init_mu, init_sigma=init_sigma, seed=seed, correction=correction
        )


def refined_final(m, a_mu, a_sig, t_mu, t_sig, *, init_mu: float = 1500.0, init_sigma: float = 350.0, seed: int | None = 0):
    """:func:`rate`'s refinement step on the mean of its orders (``final_ratings``' four arrays): (a_mu, a_sig, t_mu, t_sig).

    An agent's σ is its refined standard error where it was refined (Glicko's elsewhere), as in
    ``rate``'s agents table; a benchmark too wide to refine (or to de-bias) keeps the Glicko (Firth) ratings, silently.
    """
    r = refined(m, a_mu, t_mu, t_sig, init_mu=init_mu, init_sigma=init_sigma, seed=seed)
    return r.agent_mu, np.where(r.refined, r.agent_se, a_sig), r.test_case_mu, r.test_case_sigma


def _inverse_on_differences(mat: np.ndarray, component: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """The pseudo-inverse of ``mat``, singular along each component's common shift u_c: (mat + s Σ u_c u_cᵀ)⁻¹ − Σ u_c u_cᵀ / s.

    Not ``pinv``: its cutoff is relative to the largest eigenvalue, and with thousands of test cases
    the rounding left on the null direction passed it (standard errors of 7·10⁷ Elo, 5 agents × 2,400).
    """
    shift = np.zeros_like(mat)
    for comp in np.unique(component[compared]):
        idx = np.flatnonzero(compared & (component == comp))
        shift[np.ix_(idx, idx)] = 1.0 / len(idx)
    s = max(float(np.abs(np.diag(mat)).max(initial=0.0)), 1e-12)
    return np.linalg.pinv(mat + s * shift + np.diag(np.where(compared, 0.0, s)), hermitian=True) - shift / s


def pair_count(m) -> int:
    """Σ_t n_t²: the (agent, agent) pairs sharing a test case that each pass of the refinement visits."""
    n_t = np.bincount(m.test_case, minlength=m.n_test_cases).astype(np.int64)
    return int((n_t * n_t).sum())


def _binary(score: np.ndarray) -> bool:
    return bool(np.all((score == 0.0) | (score == 1.0)))
