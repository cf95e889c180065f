"""The logistic rating model, fitted to every match at once (the default of :func:`~agielo_dagster.rating.rate`).

P(agent a succeeds on test case t) = σ(q (θ_a − β_t)), q = ln 10 / 400: the AGI-Elo expected score,
E = 1 / (1 + 10^(−(θ_a − β_t)/400)). Graded scores in [0, 1] are fractional outcomes: the likelihood
is the quasi-likelihood Π p^(s/φ) (1 − p)^((1−s)/φ), with φ = 1 for binary scores and the Pearson
dispersion for graded ones.

- **Test cases are a sample of their benchmark**: β_t ~ N(1500, τ²), integrated out of the likelihood
  by adaptive Gauss-Hermite quadrature (each test case's own posterior places the nodes). A test case
  every agent solves, or none does, is then a finite, wide posterior, and it does not bend the agents'
  scale the way a plugged-in estimate does. Its rating is its posterior mean, ``sigma`` its posterior sd.
- **Agents are the players being rated**: θ maximizes the marginal likelihood plus Jeffreys' term
  ½ log I_a(θ_a) (I_a: the agent's information, Σ E[p(1 − p)]/φ over its matches), which keeps a
  perfect or zero score finite and takes the first-order bias out of a rating from few test cases.
- **τ** maximizes the marginal likelihood too (with a weak inverse-gamma prior: one test case's worth
  at 400 Elo), jointly with θ: Newton's method on (θ, log τ²), its linear system solved by conjugate
  gradients on the matrix-free Hessian. No random orders, no bootstrap, no threshold on size.

An agent's interval is θ ± z·√v with v the variance of θ_a minus the mean of its component's agents
(Elo has no absolute origin) from the inverse Hessian; ranks follow from the intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _logistic_kernels as K
from .frames import Matches

__all__ = ["LOGIT", "LogisticFit", "by_test_case", "fit_logistic"]

LOGIT = 400.0 / math.log(10.0)  # Elo per logit
CENTRE = 1500.0  # the test cases' prior mean: a test case of the benchmark's typical difficulty is rated 1500
NODES = 9  # Gauss-Hermite nodes per test case
PRIOR_WEIGHT = 1.0  # the inverse-gamma prior on τ²: as much as PRIOR_WEIGHT test cases at PRIOR_SCALE
PRIOR_SCALE = 400.0 / LOGIT
TOLERANCE = 1e-6
LAPLACE_UNTIL = 0.05  # logits: Laplace's approximation until the steps are this short, or for LAPLACE_PASSES passes
LAPLACE_PASSES = 8  # logits: the largest step of θ (and of log τ²) at convergence
MAX_STEP = 2.0  # logits: a longer Newton step is shortened to this
MAX_ITERATIONS = 200
HALVINGS = 6  # of a step that lowers the objective, before it is taken anyway (Jeffreys' term is projected)


@dataclass(frozen=True)
class ByTestCase:
    """The matches in the canonical order: by test case, then agent (codes of sorted ids)."""

    start: np.ndarray  # test case t's rows are start[t]:start[t + 1]
    agent: np.ndarray
    score: np.ndarray
    n_agents: int

    @property
    def n_test_cases(self) -> int:
        return len(self.start) - 1


def by_test_case(m: Matches) -> ByTestCase:
    """The encoded matches sorted by (test case, agent): every sum of the fit is taken in this order."""
    order = np.lexsort((m.agent, m.test_case))
    counts = np.bincount(m.test_case, minlength=m.n_test_cases)
    start = np.zeros(m.n_test_cases + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return ByTestCase(start, m.agent[order].astype(np.int64), np.ascontiguousarray(m.score[order], dtype=np.float64), m.n_agents)


@dataclass(frozen=True)
class LogisticFit:
    """What :func:`fit_logistic` found, in logits (θ and β relative to the test cases' prior mean)."""

    theta: np.ndarray
    beta_mean: np.ndarray  # each test case's posterior mean and variance
    beta_var: np.ndarray
    tau2: float
    phi: float
    iterations: int
    info: np.ndarray  # per agent Σ E[w]/φ: the negative Hessian is diag(info) − Σ_t w_t w_tᵀ / curvature_t
    match_info: np.ndarray  # w, per match (canonical order)
    match_score: np.ndarray  # E[s − p]/φ per match: the score's parts, clustered by test case
    curvature: np.ndarray  # per test case Σ w + 1/τ²
    mode: np.ndarray  # each test case's posterior mode (where the next fit's quadrature starts)


def _pcg(matvec, precond: np.ndarray, rhs: np.ndarray, tol: float = 1e-10, max_iter: int = 1000) -> np.ndarray:
    """Preconditioned conjugate gradients on a symmetric positive definite operator."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = r / precond
    p = z.copy()
    rz = r @ z
    if rz <= 0.0:
        return x
    stop = tol * math.sqrt(rz)
    y = np.empty_like(rhs)
    for _ in range(max_iter):
        matvec(p, y)
        curv = p @ y
        if curv <= 0.0:
            break
        alpha = rz / curv
        x += alpha * p
        r -= alpha * y
        z = r / precond
        rz_next = r @ z
        if math.sqrt(max(rz_next, 0.0)) <= stop:
            break
        p = z + (rz_next / rz) * p
        rz = rz_next
    return x


def fit_logistic(
    data: ByTestCase,
    component: np.ndarray,
    *,
    binary: bool,
    theta: np.ndarray | None = None,
    tau2: float | None = None,
    phi: float | None = None,
    mode: np.ndarray | None = None,
    quadrature: bool = True,
    tolerance: float = TOLERANCE,
    max_iterations: int = MAX_ITERATIONS,
) -> LogisticFit:
    """θ and τ² maximizing the marginal likelihood plus Jeffreys' term (``component``: each agent's, see the module).

    ``theta``, ``tau2``, ``phi`` and ``mode`` (a previous fit's) start it: a warm start converges in a few passes.
    ``quadrature=False`` stays with Laplace's approximation (a test case's posterior as the normal at its
    mode: a third of the cost, for the snapshots); ``tolerance`` (logits) is the longest step at convergence,
    ``max_iterations`` the most passes.
    """
    start, agent, score, n_a = data.start, data.agent, data.score, data.n_agents
    n_t, n = data.n_test_cases, len(data.score)
    # Laplace's approximation (one node at each test case's mode) until the steps are short, then the quadrature
    laplace = (np.zeros(1), np.zeros(1))
    nodes, weights = np.polynomial.hermite.hermgauss(NODES)
    exact = (nodes, np.log(weights))
    rule = exact if theta is not None and quadrature else laplace
    theta = np.zeros(n_a) if theta is None else np.array(theta, dtype=np.float64)
    tau2 = PRIOR_SCALE**2 if tau2 is None else float(tau2)
    phi = 1.0 if binary or phi is None else float(phi)
    mode = np.zeros(n_t) if mode is None else np.array(mode, dtype=np.float64)
    agent_var = np.zeros(n_a)
    match_score = np.empty(n)
    match_info = np.empty(n)
    n_components = int(component.max(initial=-1)) + 1
    row_test_case = np.repeat(np.arange(n_t), np.diff(start))  # each row's test case
    a0, b0 = PRIOR_WEIGHT / 2.0, PRIOR_WEIGHT * PRIOR_SCALE**2 / 2.0
    # the equations' Newton decrement (½ gᵀH⁻¹g) decides whether a step is taken: a step that raises it is halved
    # (Jeffreys' term, projected, is an adjusted score rather than a gradient: the equations, not a likelihood, are solved)
    before = None  # (decrement, θ, τ², the step from there, halvings so far): where the last step started
    iteration = 0
    while iteration < max_iterations:
        iteration += 1
        g, info, slope, bend, cross, mean, var, second, second_var, pearson = K.posterior_pass(
            start, agent, score, theta, mode, tau2, phi, *rule, n_a, agent_var, match_score, match_info
        )
        unplayed = info <= 0.0  # an agent without a match (a fold or a removal left it none) keeps its rating
        info = np.where(unplayed, 1.0, info)
        # Jeffreys' term moves agents against each other, never their common level (the test cases' prior sets that):
        # its push along a common shift is taken back in proportion to each agent's information, as a shift moves them
        jeffreys = np.where(unplayed, 0.0, 0.5 * slope / info)
        played_info = np.where(unplayed, 0.0, info)
        level = np.bincount(component, jeffreys, n_components) / np.maximum(
            np.bincount(component, played_info, n_components), 1e-300
        )
        grad = np.where(unplayed, 0.0, g + jeffreys - played_info * level[component])
        # Jeffreys' curvature (as large as the likelihood's for an agent of one match, whose step it would halve),
        # but for its part along a common shift, which it must not stiffen: diag(j) − j jᵀ / Σ j in each component
        bent = np.where(unplayed, 0.0, np.clip(-0.5 * (bend / info - (slope / info) ** 2), 0.0, info))
        bent_total = np.maximum(np.bincount(component, bent, n_components), 1e-300)
        lam = 1.0 / tau2
        curvature = np.bincount(row_test_case, match_info, n_t) + lam
        precond = K.hessian_diagonal(start, agent, match_info, curvature, info + bent)

        def matvec(x, out, curvature=curvature, info=info, bent=bent, bent_total=bent_total):
            K.hessian_matvec(start, agent, match_info, curvature, info, x, out)
            out += bent * x - bent * (np.bincount(component, bent * x, n_components) / bent_total)[component]

        # Newton on (θ, u = log τ²): the u row and column bordered onto the θ system
        step = _pcg(matvec, precond, grad)
        grad_u = 0.5 * (lam * second.sum() - n_t) - a0 + b0 * lam
        curv_u = 0.5 * lam * second.sum() - 0.25 * lam * lam * second_var.sum() + b0 * lam
        border = _pcg(matvec, precond, cross)
        schur = curv_u - cross @ border
        step_u = (grad_u + cross @ step) / schur if schur > 0.0 else 0.0  # not concave in log τ² here: held
        step += border * step_u
        decrement = 0.5 * (grad @ step + grad_u * step_u)
        if before is not None and decrement > before[0] * (1.0 + 1e-9) + 1e-12 and before[4] < HALVINGS:
            _, theta_0, tau2_0, (step_0, step_u0), halvings = before
            step_0, step_u0 = 0.5 * step_0, 0.5 * step_u0
            before = (before[0], theta_0, tau2_0, (step_0, step_u0), halvings + 1)
            theta, tau2 = theta_0 + step_0, tau2_0 * math.exp(step_u0)
            continue
        agent_var = 1.0 / info  # the next pass's leverages
        longest = max(np.abs(step).max(initial=0.0), abs(step_u))
        if longest > MAX_STEP:
            step *= MAX_STEP / longest
            step_u *= MAX_STEP / longest
        before = (decrement, theta, tau2, (step, step_u), 0)
        theta = theta + step
        tau2 = tau2 * math.exp(step_u)
        moved = 0.0
        if not binary and n:
            phi_next = max(pearson / n, 1e-6)
            moved = abs(math.log(phi_next / phi))
            phi = phi_next
            before = None if moved > tolerance else before  # another φ, other equations
        if rule is laplace and quadrature and (max(longest, moved) < LAPLACE_UNTIL or iteration >= LAPLACE_PASSES):
            rule, before = exact, None  # the quadrature's equations from here
        elif (rule is exact or not quadrature) and max(longest, moved) < tolerance:
            break
    return LogisticFit(theta, mean, var, tau2, phi, iteration, info, match_info, match_score, curvature, mode)


DENSE = 4096  # the smaller side up to which the inverse Hessian is computed exactly (O(side³)); above, its diagonal


def relative_variance(fit: LogisticFit, data: ByTestCase, component: np.ndarray, *, sandwich: bool) -> np.ndarray:
    """Each agent's variance of θ_a − (the mean θ of its component's agents), in logits².

    ``sandwich``: H⁻¹ (Σ_t u_t u_tᵀ) H⁻¹, the test cases as clusters (u_t: their parts of the score),
    robust to a misspecified variance (graded scores); else the model's H⁻¹. H⁻¹ is exact on the smaller
    side of the benchmark (agents, or test cases by Woodbury's identity) up to ``DENSE``; beyond both,
    the diagonal of H⁻¹ is taken as 1 / the diagonal of H (each agent against hundreds of others:
    the rest is of the order of 1 / their number) while its row sums, the part the mean takes, stay exact.
    """
    from scipy import sparse

    n_a, n_t = data.n_agents, data.n_test_cases
    test_case = np.repeat(np.arange(n_t), np.diff(data.start))
    w = sparse.csr_array((fit.match_info, (data.agent, test_case)), shape=(n_a, n_t))
    u = sparse.csr_array((fit.match_score, (data.agent, test_case)), shape=(n_a, n_t)) if sandwich else None
    ones = np.ones(n_a)
    if n_a <= DENSE and (n_a <= n_t or n_t > DENSE):  # the agents' side: H itself, dense
        scaled = w @ sparse.diags_array(1.0 / np.sqrt(fit.curvature))
        h = np.diag(fit.info) - (scaled @ scaled.T).toarray()
        inverse = _inverse(h)
        if sandwich:
            au = (u.T @ inverse).T  # H⁻¹ U, n_a × n_t
            diag, row_sums = np.einsum("ij,ij->i", au, au), au @ (au.T @ ones)
        else:
            diag, row_sums = np.diag(inverse).copy(), inverse @ ones
    elif n_t <= DENSE:  # the test cases' side: H⁻¹ = D⁻¹ + D⁻¹ W T⁻¹ Wᵀ D⁻¹, T = C − Wᵀ D⁻¹ W
        d_inv = 1.0 / fit.info
        dw = sparse.diags_array(d_inv) @ w
        t_inv = _inverse(np.diag(fit.curvature) - (w.T @ dw).toarray())

        def solve(x):  # H⁻¹ x for an n_a × k matrix x
            return d_inv[:, None] * x + dw @ (t_inv @ (dw.T @ x))

        if sandwich:
            au = solve(u.toarray()) if n_a * n_t <= 50_000_000 else None
            if au is None:
                raise MemoryError("the sandwich's H⁻¹ U would not fit: use the model's variance")
            diag, row_sums = np.einsum("ij,ij->i", au, au), au @ (au.T @ ones)
        else:
            diag = d_inv + np.einsum("ij,jk,ik->i", dw.toarray(), t_inv, dw.toarray())
            row_sums = solve(ones[:, None])[:, 0]
    else:
        precond = K.hessian_diagonal(data.start, data.agent, fit.match_info, fit.curvature, fit.info)

        def matvec(x, out):
            K.hessian_matvec(data.start, data.agent, fit.match_info, fit.curvature, fit.info, x, out)

        row_sums = _pcg(matvec, precond, ones)
        diag = 1.0 / precond
        if sandwich:
            meat = np.bincount(data.agent, fit.match_score**2, n_a)
            diag = meat / precond**2
            row_sums = _pcg(matvec, precond, (u @ (u.T @ row_sums)))
    n_c = np.bincount(component)[component]
    total = np.bincount(component, row_sums)[component]
    return np.maximum(diag - 2.0 * row_sums / n_c + total / n_c**2, 0.0)


def _inverse(h: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric positive (semi-)definite matrix: Cholesky's, or the pseudo-inverse where it fails."""
    from scipy import linalg

    try:
        return linalg.cho_solve(linalg.cho_factor(h, lower=True), np.eye(len(h)))
    except linalg.LinAlgError:
        return linalg.pinvh(h)


def solve_hessian(fit: LogisticFit, data: ByTestCase, rhs: np.ndarray) -> np.ndarray:
    """H⁻¹ ``rhs`` for the agents' Hessian of ``fit`` (conjugate gradients)."""
    precond = K.hessian_diagonal(data.start, data.agent, fit.match_info, fit.curvature, fit.info)

    def matvec(x, out):
        K.hessian_matvec(data.start, data.agent, fit.match_info, fit.curvature, fit.info, x, out)

    return _pcg(matvec, np.maximum(precond, 1e-12), rhs)


def place_one(
    score: np.ndarray, mu: np.ndarray, sigma: np.ndarray, *, binary: bool, design: np.ndarray | None = None
) -> tuple[float, float]:
    """(θ, se), in Elo, of a new agent against frozen test cases: its results ``score`` on test cases whose
    difficulties have the posteriors N(``mu``, ``sigma``²) (the rated benchmark's), under the same model.

    Each result's probability is its expectation over the test case's posterior (Gauss-Hermite), the rating
    solves the likelihood's equation plus Jeffreys' term, as the joint fit's agents do. ``design`` weighs each
    result's term (a stratified sample's N_h/n_h: the estimate then answers to the whole benchmark's equation
    even where the model does not fit). se is the larger of the model's and the sandwich of the terms (the
    results' own spread: a graded score's, or a misfit's).
    """
    nodes, weights = np.polynomial.hermite.hermgauss(NODES)
    weights = weights / math.sqrt(math.pi)
    d = np.ones(len(score)) if design is None else np.asarray(design, dtype=np.float64)
    at = (np.asarray(mu, dtype=np.float64) - CENTRE)[:, None] / LOGIT + math.sqrt(2.0) * (np.asarray(sigma) / LOGIT)[
        :, None
    ] * nodes

    def terms(theta: float):
        p_k = 0.5 * (1.0 + np.tanh(0.5 * (theta - at)))  # σ(θ − β) at each node
        p = np.clip(p_k @ weights, 1e-300, 1.0 - 1e-16)
        dp = (p_k * (1.0 - p_k)) @ weights
        d2p = (p_k * (1.0 - p_k) * (1.0 - 2.0 * p_k)) @ weights
        info_i = dp * dp / (p * (1.0 - p))
        info = np.sum(d * info_i)
        parts = d * (score - p) * dp / (p * (1.0 - p))
        # Jeffreys' ½ log I: I' from each term's derivative, by the same nodes
        d_info = np.sum(d * (2.0 * dp * d2p / (p * (1.0 - p)) - info_i * dp * (1.0 - 2.0 * p) / (p * (1.0 - p))))
        return parts.sum() + 0.5 * d_info / info, info, parts, np.sum(d * d * info_i)

    theta = 0.0
    for _ in range(MAX_ITERATIONS):
        grad, info, _, _ = terms(theta)
        step = max(-MAX_STEP, min(MAX_STEP, grad / info))
        theta += step
        if abs(step) < TOLERANCE:
            break
    _, info, parts, model = terms(theta)
    n = len(score)
    sandwich = float(np.sum(parts**2)) * n / max(n - 1, 1)
    var = max(model, 0.0 if binary and design is None else sandwich) / info**2
    return CENTRE + LOGIT * theta, LOGIT * math.sqrt(var)
