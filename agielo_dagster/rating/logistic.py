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

An agent's standard error is √v with v the variance of θ_a minus the mean of its component's agents (Elo has no
absolute origin) from the inverse Hessian in (θ, log τ²), so that τ's own error is in it; its interval keeps the
shape of its likelihood (:mod:`.likelihood_interval`) at that scale, and ranks follow from the intervals.

The fit serves any :class:`LogisticModel`: what sets one apart is its test cases' parameters and the pass that
integrates them out (:data:`RASCH` here; the 2PL's, with a discrimination per test case, in :mod:`.twopl`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from . import _logistic_kernels as K
from .frames import Matches

__all__ = [
    "LOGIT",
    "RASCH",
    "LogisticFit",
    "LogisticModel",
    "DERIVED_TOLERANCE",
    "Posterior",
    "by_test_case",
    "canonical_order",
    "fit_logistic",
    "place_one",
    "relative_variance",
    "solve_hessian",
]

LOGIT = 400.0 / math.log(10.0)  # Elo per logit
CENTRE = 1500.0  # the test cases' prior mean: a test case of the benchmark's typical difficulty is rated 1500
NODES = 9  # Gauss-Hermite nodes per test case
PRIOR_WEIGHT = 1.0  # the inverse-gamma prior on τ²: as much as PRIOR_WEIGHT test cases at PRIOR_SCALE
PRIOR_SCALE = 400.0 / LOGIT
TOLERANCE = 1e-5  # standard errors: the longest step at convergence, each agent's in its own (1e-7 logits at 10⁴ matches)
DERIVED_TOLERANCE = 0.01  # standard errors: a fit from another's (a snapshot, a fold, a removal) reports no finer
LAPLACE_UNTIL = 0.05  # logits: the coarse rule until the steps are this short, or for LAPLACE_PASSES passes
LAPLACE_PASSES = 8
MAX_STEP = 2.0  # logits: a longer Newton step is shortened to this
MAX_ITERATIONS = 200


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


def canonical_order(m: Matches) -> np.ndarray:
    """The rows of ``m`` by (test case, agent): one key, sorted stably (a table already grouped by test case, as
    most are, sorts in linear time; ``np.lexsort`` of the two took 9× as long on 400 × 400, measured 2026-11-29)."""
    return np.argsort(m.test_case.astype(np.int64) * m.n_agents + m.agent, kind="stable")


def by_test_case(m: Matches) -> ByTestCase:
    """The encoded matches sorted by (test case, agent): every sum of the fit is taken in this order."""
    order = canonical_order(m)
    counts = np.bincount(m.test_case, minlength=m.n_test_cases)
    start = np.zeros(m.n_test_cases + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return ByTestCase(start, m.agent[order].astype(np.int64), np.ascontiguousarray(m.score[order], dtype=np.float64), m.n_agents)


@dataclass(frozen=True)
class Posterior:
    """One pass over the matches at the agents' θ: each test case's posterior and what a Newton step needs.

    A test case has k parameters ψ (the rasch: its difficulty β; the 2PL: β and its discrimination α), with
    independent normal priors of variances ``variances`` (τ², and ω² for α − 1). η is a match's logit, w = p(1 − p).
    """

    score: np.ndarray  # per agent Σ E[∂η/∂θ_a (s − p)]/φ: the marginal likelihood's gradient
    info: np.ndarray  # per agent Σ E[w (∂η/∂θ_a)²]/φ
    slope: np.ndarray  # per agent ∂info/∂θ_a
    bend: np.ndarray  # per agent ∂²info/∂θ_a²
    cross: np.ndarray  # k × n_a: Σ_t Cov(agent's part of the score, ψ_j²)
    second: np.ndarray  # n_t × k: each test case's E[ψ_j²]
    second_cov: np.ndarray  # k × k: Σ_t Cov(ψ_j², ψ_l²)
    factor: (
        np.ndarray
    )  # n × k: the negative Hessian in θ is diag(info) − F Fᵀ, F's rows in the matches' order (see hessian_matvec)
    match_score: np.ndarray  # n: each match's part of ``score`` (the sandwich's clusters are the test cases)
    pearson: float  # the leverage-corrected Pearson dispersion (graded scores' φ)
    mean: np.ndarray  # n_t × k: each test case's posterior means
    var: np.ndarray  # n_t × k: and variances


@dataclass(frozen=True)
class LogisticModel:
    """What sets one logistic model apart: its test cases' parameters and the pass that integrates them out."""

    name: str
    scales: tuple[float, ...]  # the prior sds of the test cases' parameters: where the fit starts, and each one's weak prior
    mode: tuple[float, ...]  # where each test case's posterior mode is first looked for
    coarse: tuple[np.ndarray, np.ndarray]  # the quadrature rule (nodes, log weights) until the steps are short
    fine: tuple[np.ndarray, np.ndarray]  # the rule at convergence
    posterior: Callable[..., Posterior]  # (data, θ, variances, φ, mode, rule, agent variances, match_score, factor)
    scaled: bool = False  # whether the test cases' prior sets the agents' scale too (the 2PL's α ~ N(1, ω²))
    extends: LogisticModel | None = None  # a model whose parameters are this one's first ones: a cold fit starts from its


ZERO, ONE = np.zeros(1), np.ones(1)


def _rasch_posterior(data, theta, variances, phi, mode, rule, agent_var, match_score, factor) -> Posterior:
    g, info, slope, bend, cross, mean, var, second, second_var, pearson, _ = K.posterior_pass(
        data.start,
        data.agent,
        data.score,
        theta,
        mode[:, 0],
        np.zeros(data.n_test_cases, dtype=np.int64),  # one benchmark: one prior (a pool's are in .pool)
        ZERO,
        np.array([variances[0]]),
        np.array([1.0 / phi]),
        ONE,
        *rule,
        data.n_agents,
        agent_var,
        match_score,
        factor,
        K.NOT_PLACED,
    )
    return Posterior(
        g,
        info,
        slope,
        bend,
        cross.T,
        second[:, None],
        np.array([[second_var.sum()]]),
        factor,
        match_score,
        float(pearson[0]),
        mean[:, None],
        var[:, None],
    )


def _hermite(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite.hermgauss(nodes)
    return x, np.log(w)


RASCH = LogisticModel("rasch", (PRIOR_SCALE,), (0.0,), (np.zeros(1), np.zeros(1)), _hermite(NODES), _rasch_posterior)
"""P(success) = σ(θ_a − β_t) (in logits): the test cases' difficulties are their only parameters."""


@dataclass(frozen=True)
class Spread:
    """The prior variances' side of the fit's last Hessian in (θ, log variances), for the agents' intervals."""

    cross: np.ndarray  # k × n_a: how their score moves with each θ_a (the Hessian's border, negated)
    curvature: np.ndarray  # k × k: their negative Hessian
    parts: np.ndarray  # n_t × k: each test case's part of their score (the sandwich's clusters)


@dataclass(frozen=True)
class LogisticFit:
    """What :func:`fit_logistic` found, in logits (θ and β relative to the test cases' prior mean)."""

    model: str
    theta: np.ndarray
    mean: np.ndarray  # n_t × k: each test case's posterior means (β; the 2PL's α) given θ
    var: np.ndarray  # and variances
    variances: np.ndarray  # the test cases' prior variances (τ²; the 2PL's ω²)
    phi: float
    iterations: int
    info: np.ndarray  # per agent Σ E[w (∂η/∂θ_a)²]/φ: the negative Hessian is diag(info) − F Fᵀ
    factor: np.ndarray  # F, per match (canonical order): see :class:`Posterior`
    match_score: np.ndarray  # per match its part of the score, clustered by test case
    mode: np.ndarray  # n_t × k: each test case's posterior mode (where the next fit's quadrature starts)
    spread: Spread | None  # None where the prior variances were kept (``fit_spread=False``): known, not estimated

    @property
    def beta_mean(self) -> np.ndarray:
        return self.mean[:, 0]

    @property
    def beta_var(self) -> np.ndarray:
        return self.var[:, 0]

    @property
    def tau2(self) -> float:
        return float(self.variances[0])


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


def _matvec(start, agent, factor, diag, x):
    out = np.empty_like(x)
    K.hessian_matvec(start, agent, factor, diag, x, out)
    return out


def _newton_step(schur: np.ndarray, grad: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """schur⁻¹ grad, or a step along the gradient scaled by ``fallback`` (positive) where schur is not positive definite."""
    try:
        return linalg.cho_solve(linalg.cho_factor(schur), grad)
    except linalg.LinAlgError:
        return grad / fallback


def _solve_per_component(a: list, b: list, ok: np.ndarray) -> list:
    """x with a x = b in each component (k ≤ 2: a k × k of arrays over the components), 0 where not ``ok``."""
    if len(b) == 1:
        return [np.divide(b[0], a[0][0], out=np.zeros(len(ok)), where=ok & (a[0][0] > 0.0))]
    det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
    ok = ok & (np.abs(det) > 1e-12 * np.abs(a[0][0] * a[1][1]))
    det = np.where(ok, det, 1.0)
    x0 = np.where(ok, (a[1][1] * b[0] - a[0][1] * b[1]) / det, 0.0)
    x1 = np.where(ok, (a[0][0] * b[1] - a[1][0] * b[0]) / det, 0.0)
    return [x0, x1]


def _jeffreys(post: Posterior, info, played, component, n_components: int, theta=None, h_of=None):
    """Jeffreys' gradient and its curvature (x ↦ B x), off the agents' common level and, given ``h_of`` (x ↦ H x:
    a model whose test cases' prior sets the scale too), off their common scale.

    Its push along a common shift (and stretch) is taken back in proportion to each agent's information, as a
    shift moves them (along H d for the scale, d = θ − its mean, the stretch weighed by information too): an agent
    the test cases barely inform keeps its own pull. The 2PL's scale is set by its discriminations' prior mean,
    against n_t test cases only: Jeffreys' term pulls every agent towards the test cases (−log c each for a scale
    c), and on 100 agents × 24 test cases it shrank the scale to nothing (ω in the thousands) even from the true
    ratings; weighed by d alone, a perfect scorer's own pull far out read as a shrinking scale and stretched the
    others without end. Its curvature (as large as the likelihood's for an agent of one match, whose step it would
    halve) is diag(j) less its part along those directions, which it must not stiffen. A component with no more
    played agents than directions keeps the whole term: its level is those agents (an only agent, a snapshot's first).
    """
    pull = np.where(played, 0.5 * post.slope / info, 0.0)
    bent = np.where(played, np.clip(-0.5 * (post.bend / info - (post.slope / info) ** 2), 0.0, info), 0.0)
    weight = np.where(played, info, 0.0)
    ones = played.astype(np.float64)
    directions, steps, against = [ones], [weight], [ones]
    if h_of is not None:
        d = np.where(
            played,
            theta
            - (
                np.bincount(component, weight * theta, n_components)
                / np.maximum(np.bincount(component, weight, n_components), 1e-300)
            )[component],
            0.0,
        )
        directions.append(d)
        steps.append(np.where(played, h_of(d), 0.0))
        against.append(weight * d)

    if n_components == 1:  # the usual case: dot products (bincount's scatter was a third of a tall benchmark's solve)

        def sums(x, y):
            return np.array([x @ y])

        def spread(k):
            return k[0]
    else:

        def sums(x, y):
            return np.bincount(component, x * y, n_components)

        def spread(k):
            return k[component]

    ok = np.bincount(component, played, n_components) > len(directions)
    kappa = _solve_per_component([[sums(v, u) for u in steps] for v in against], [sums(v, pull) for v in against], ok)
    grad = pull - sum(spread(k) * u for k, u in zip(kappa, steps, strict=True))
    curved = [bent * d for d in directions]
    gram = [[sums(c, d) for d in directions] for c in curved]

    def curvature(x: np.ndarray) -> np.ndarray:
        back = _solve_per_component(gram, [sums(c, x) for c in curved], ok)
        return bent * x - sum(spread(k) * c for k, c in zip(back, curved, strict=True))

    return grad, curvature, bent


def fit_logistic(
    data: ByTestCase,
    component: np.ndarray,
    *,
    binary: bool,
    model: LogisticModel = RASCH,
    theta: np.ndarray | None = None,
    variances: np.ndarray | None = None,
    phi: float | None = None,
    mode: np.ndarray | None = None,
    quadrature: bool = True,
    fit_spread: bool = True,
    tolerance: float = TOLERANCE,
    max_iterations: int = MAX_ITERATIONS,
) -> LogisticFit:
    """θ and the prior variances maximizing the marginal likelihood plus Jeffreys' term (``component``: each agent's).

    ``theta``, ``variances``, ``phi`` and ``mode`` (a previous fit's) start it: a warm start converges in a few passes.
    ``quadrature=False`` stays with the coarse rule (for the rasch Laplace's approximation, a normal posterior at
    each test case's mode: a third of the cost, for the snapshots); ``fit_spread=False`` keeps the prior variances
    ``variances`` (a snapshot's: the spread its benchmark's matches give); ``tolerance`` is the longest step at
    convergence, each agent's in its own standard errors (1/√I_a; the prior variances' in log units), ``max_iterations``
    the most passes.
    An agent without a match (a snapshot's) keeps its ``theta``.
    """
    start, agent, n_a = data.start, data.agent, data.n_agents
    n_t, n = data.n_test_cases, len(data.score)
    # the coarse rule until the steps are short, then the fine one
    rule = model.fine if theta is not None and quadrature else model.coarse
    scales = np.asarray(model.scales)
    if theta is None and model.extends is not None:
        # from the simpler model's fit: from θ = 0 the 2PL's discriminations are unidentified, and its first steps
        # could wander off to a collapsed scale (ω in the thousands, θ all but equal) and not return
        first = fit_logistic(data, component, binary=binary, model=model.extends, quadrature=False, tolerance=LAPLACE_UNTIL)
        theta, phi = first.theta, first.phi
        variances = np.concatenate([first.variances, scales[len(first.variances) :] ** 2])
        mode = np.tile(model.mode, (n_t, 1))
        mode[:, : first.mode.shape[1]] = first.mode
    theta = np.zeros(n_a) if theta is None else np.array(theta, dtype=np.float64)
    variances = scales**2 if variances is None else np.array(variances, dtype=np.float64)
    phi = 1.0 if binary or phi is None else float(phi)
    mode = np.tile(model.mode, (n_t, 1)) if mode is None else np.array(mode, dtype=np.float64)
    agent_var = np.zeros(n_a)
    match_score = np.empty(n)
    factor = np.empty((n, len(model.scales)))
    a0, b0 = PRIOR_WEIGHT / 2.0, PRIOR_WEIGHT * scales**2 / 2.0
    n_components = int(component.max(initial=-1)) + 1
    iteration, last, spread = 0, None, None
    while iteration < max_iterations:
        iteration += 1
        post = model.posterior(data, theta, variances, phi, mode, rule, agent_var, match_score, factor)
        played = post.info > 0.0  # an agent without a match (a snapshot's, a fold's) keeps its rating
        info = np.where(played, post.info, 1.0)
        h_of = (lambda x, info=info: _matvec(start, agent, factor, info, x)) if model.scaled else None
        jeffreys, curvature, bent = _jeffreys(post, info, played, component, n_components, theta, h_of)
        grad = np.where(played, post.score + jeffreys, 0.0)
        lam = 1.0 / variances
        second = post.second.sum(axis=0)
        grad_v = 0.5 * (lam * second - n_t) - a0 + b0 * lam if fit_spread else np.zeros(len(variances))
        if last is not None and (extend := _secant_extension(last, grad, grad_v)):
            # the last step went the right way but fell far short: the curvature used (Jeffreys' clipped at 0)
            # overstates the true one along it (an extreme agent, a wide prior); go on along it to the secant's minimum
            step, step_v = extend * last[0], extend * last[1]
            last = None
            theta, variances = theta + step, variances * np.exp(step_v)
            continue
        precond = K.hessian_diagonal(start, agent, factor, info) + bent

        def matvec(x, out, info=info, curvature=curvature):
            K.hessian_matvec(start, agent, factor, info, x, out)
            out += curvature(x)

        # Newton on (θ, log variances): the variances' rows and columns bordered onto the θ system
        step, step_v = _pcg(matvec, precond, grad), np.zeros(len(variances))
        if fit_spread:
            fisher_v = 0.5 * lam * second + b0 * lam
            curv_v = np.diag(fisher_v) - 0.25 * np.outer(lam, lam) * post.second_cov
            cross = 0.5 * lam[:, None] * post.cross
            spread = Spread(cross, curv_v, 0.5 * (lam * post.second - 1.0))
            border = np.array([_pcg(matvec, precond, c) for c in cross])
            step_v = _newton_step(curv_v - cross @ border.T, grad_v + cross @ step, fisher_v)
            step += step_v @ border
        agent_var = 1.0 / info  # the next pass's leverages
        longest = max(np.abs(step).max(initial=0.0), np.abs(step_v).max())
        # the convergence test: each agent's step in its own standard errors (an agent of a few matches, whose steps
        # shrink slowly where Jeffreys' term is convex, need not be pinned closer than one of hundreds)
        in_sd = max(np.abs(step * np.sqrt(info)).max(initial=0.0), np.abs(step_v).max())
        if longest > MAX_STEP:
            step *= MAX_STEP / longest
            step_v *= MAX_STEP / longest
        theta = theta + step
        variances = variances * np.exp(step_v)
        moved = 0.0
        if not binary and n:
            phi_next = max(post.pearson, 1e-6)
            moved = abs(math.log(phi_next / phi))
            phi = phi_next
        # the secant compares two passes' gradients: of one objective only where no dispersion moves between them
        # (on graded scores it was slower as often as faster, measured 2026-11-29) and the rule stays the same
        last = (step, step_v, float(grad @ step + grad_v @ step_v)) if binary else None
        coarse = rule is model.coarse and model.coarse is not model.fine
        if coarse and quadrature and (max(longest, moved) < LAPLACE_UNTIL or iteration >= LAPLACE_PASSES):
            rule, last = model.fine, None
        elif (not coarse or not quadrature) and max(in_sd, moved) < tolerance:
            break
    return LogisticFit(model.name, theta, post.mean, post.var, variances, phi, iteration, info, factor, match_score, mode, spread)


DENSE = 4096  # the smaller side up to which the inverse Hessian is computed exactly (O(side³)); above, its diagonal


SLOW = 0.5  # a step whose directional derivative kept more than this share of itself fell short
MAX_EXTENSION = 50.0


def _secant_extension(last, grad: np.ndarray, grad_v: np.ndarray) -> float:
    """How many more of the last step reach the minimum along it, by the secant of the directional derivative
    (0: the step was about right, or the objective is not concave along it)."""
    step, step_v, before = last
    if before <= 0.0:
        return 0.0
    kept = float(grad @ step + grad_v @ step_v) / before
    if not SLOW < kept < 1.0:
        return 0.0
    longest = max(np.abs(step).max(initial=0.0), np.abs(step_v).max())
    return min(kept / (1.0 - kept), MAX_EXTENSION, MAX_STEP / max(longest, 1e-300))


def relative_variance(fit: LogisticFit, data: ByTestCase, component: np.ndarray, *, sandwich: bool) -> np.ndarray:
    """Each agent's variance of θ_a − (the mean θ of its component's agents), in logits².

    The θ block of A⁻¹, A the negative Hessian in (θ, log prior variances) where the fit estimated the variances
    (``fit.spread``): H⁻¹ + W S⁻¹ Wᵀ, W = H⁻¹ Cᵀ, S = V − C W (C: the border, V: the variances' block), so that the
    spread's own error is in the intervals; with the variances kept (known), H⁻¹. ``sandwich``: the larger of the model's and
    A⁻¹ (Σ_t g_t g_tᵀ) A⁻¹, the test cases as clusters (g_t: their parts of the score, θ's and the variances'), robust
    to a misspecified variance (graded scores) where its residuals are many enough to see it (an agent scoring near 0
    or 1 has small ones whatever the variance); else the model's. H = D − F Fᵀ (D = diag(info), F: k columns per test case,
    :class:`Posterior`). H⁻¹ is exact on the smaller side of the benchmark (agents, or the test cases' k·n_t columns
    by Woodbury's identity) up to ``DENSE``; beyond both, the diagonal of H⁻¹ is taken as 1 / the diagonal of H (each
    agent against hundreds of others: the rest is of the order of 1 / their number) while its row sums, the part the
    mean takes, stay exact. The variances' part is exact on every side: rank k, one solve H⁻¹ Cᵀ (and H⁻¹ U Zᵀ).
    """
    from scipy import sparse

    n_a, n_t = data.n_agents, data.n_test_cases
    k = fit.factor.shape[1]
    test_case = np.repeat(np.arange(n_t), np.diff(data.start))
    u = sparse.csr_array((fit.match_score, (data.agent, test_case)), shape=(n_a, n_t)) if sandwich else None
    ones, au = np.ones(n_a), None  # au: H⁻¹ U where a dense side gives it
    # H⁻¹ [1, Cᵀ]: the row sums, and W
    rhs = np.column_stack([ones, np.zeros((n_a, 0)) if fit.spread is None else fit.spread.cross.T])
    if n_a <= DENSE and (n_a <= k * n_t or k * n_t > DENSE):  # the agents' side: H itself, dense
        h = np.negative(_gram(data, fit.factor))  # H = diag(info) − F Fᵀ, in place: n_a² doubles once
        h.flat[:: n_a + 1] += fit.info
        if sandwich:
            inverse = _inverse(h)
            au, solved, diag = (u.T @ inverse).T, inverse @ rhs, np.diag(inverse).copy()  # au: H⁻¹ U, n_a × n_t
        else:
            diag, solved = _inverse_diagonal(h, rhs)
    elif k * n_t <= DENSE:  # the test cases' side: H⁻¹ = D⁻¹ + D⁻¹ F T⁻¹ Fᵀ D⁻¹, T = I − Fᵀ D⁻¹ F
        column = (test_case[:, None] * k + np.arange(k)).ravel()
        f = sparse.csr_array((fit.factor.ravel(), (np.repeat(data.agent, k), column)), shape=(n_a, k * n_t))
        d_inv = 1.0 / fit.info
        df = sparse.diags_array(d_inv) @ f
        t_inv = _inverse(np.eye(k * n_t) - (f.T @ df).toarray())

        def solve(x):  # H⁻¹ x for an n_a × j matrix x
            return d_inv[:, None] * x + df @ (t_inv @ (df.T @ x))

        solved = solve(rhs)
        diag = d_inv + np.einsum("ij,jk,ik->i", df.toarray(), t_inv, df.toarray())
        if sandwich:
            if n_a * n_t > 50_000_000:
                raise MemoryError("the sandwich's H⁻¹ U would not fit: use the model's variance")
            au = solve(u.toarray())
    else:
        precond = K.hessian_diagonal(data.start, data.agent, fit.factor, fit.info)

        def matvec(x, out):
            K.hessian_matvec(data.start, data.agent, fit.factor, fit.info, x, out)

        def solve(x):
            return np.column_stack([_pcg(matvec, precond, column) for column in x.T])

        solved = solve(rhs)
        diag = 1.0 / precond
    row_sums, w = solved[:, 0], solved[:, 1:]
    variance = _relative(diag, row_sums, component)
    if fit.spread is not None:
        variance += _spread_part(fit.spread, w, None, None, component)
    if sandwich:  # the larger of the two: an agent scoring near 0 or 1 leaves the sandwich too few residuals
        if au is not None:
            robust = _relative(np.einsum("ij,ij->i", au, au), au @ (au.T @ ones), component)
        else:
            meat = np.bincount(data.agent, fit.match_score**2, n_a) / precond**2
            robust = _relative(meat, _pcg(matvec, precond, u @ (u.T @ row_sums)), component)
        if fit.spread is not None:
            times_u = (lambda x: au @ x) if au is not None else (lambda x: solve(u @ x))  # x ↦ H⁻¹ U x
            robust += _spread_part(fit.spread, w, u, times_u, component)
        variance = np.maximum(variance, robust)
    return np.maximum(variance, 0.0)


def _relative(diag: np.ndarray, row_sums: np.ndarray, component: np.ndarray) -> np.ndarray:
    """Var(θ_a − its component's mean θ) from the diagonal and the row sums of the covariance."""
    n_c = np.bincount(component)[component]
    total = np.bincount(component, row_sums)[component]
    return diag - 2.0 * row_sums / n_c + total / n_c**2


def _spread_part(spread: Spread, w: np.ndarray, u, times_u, component: np.ndarray) -> np.ndarray:
    """What the prior variances' own error adds to each agent's relative variance, W = H⁻¹ Cᵀ given. The model's:
    the diagonal of W̃ S⁻¹ W̃ᵀ (W̃: each row less its component's mean; the border ties the components together, through
    the spread they share). The sandwich's θ rows of A⁻¹ G are H⁻¹ U + W Z, Z = S⁻¹ (Wᵀ U + the variances' parts):
    it adds the diagonal of W̃ Z Zᵀ W̃ᵀ + 2 Ỹ W̃ᵀ, Y = H⁻¹ U Zᵀ (``times_u``, x ↦ H⁻¹ U x; ``u`` None: the model's)."""
    try:
        schur = linalg.cho_factor(spread.curvature - spread.cross @ w)
    except linalg.LinAlgError:  # not a maximum in the variances: no curvature to take their error from
        return 0.0
    w_rel = _centred(w, component)
    if u is None:
        return np.einsum("ij,ji->i", w_rel, linalg.cho_solve(schur, w_rel.T))
    z = linalg.cho_solve(schur, (u.T @ w).T + spread.parts.T)  # k × n_t
    y_rel = _centred(times_u(z.T), component)
    return np.einsum("ij,ij->i", w_rel @ (z @ z.T), w_rel) + 2.0 * np.einsum("ij,ij->i", y_rel, w_rel)


def _centred(x: np.ndarray, component: np.ndarray) -> np.ndarray:
    """Each row of x (n_a × j) less the mean of its component's rows."""
    counts = np.bincount(component)
    means = np.stack([np.bincount(component, column, len(counts)) / counts for column in x.T], axis=1)
    return x - means[component]


DENSE_GRAM = 1 << 24  # entries: F Fᵀ by a dense product (BLAS) up to 128 MB of F, where the design is dense enough
BLOCK = 256  # agents: the gram's tiles (256² entries: half a megabyte, the cache's)


def _gram(data: ByTestCase, factor: np.ndarray) -> np.ndarray:
    """The lower triangle of F Fᵀ (agents × agents; zero above the diagonal).

    BLAS's product of the dense F takes n_a² · k·n_t products at some 20 a nanosecond; summing each test case's
    pairs of matches, Σ_t (its rows)² · k / 2, at one a nanosecond or so (measured 2026-11-29: 0.03 s against 0.33 on
    1,000 × 1,000, 0.6 against 0.15 on 2,000 × 5,000 at 10 %). The cheaper one is taken.
    """
    n_a, n_t, k = data.n_agents, data.n_test_cases, factor.shape[1]
    rows = np.diff(data.start).astype(np.float64)
    if n_a * k * n_t <= DENSE_GRAM and n_a * n_a * n_t <= 25.0 * (rows @ rows):
        dense = np.zeros((k * n_t, n_a))  # Fᵀ, the layout BLAS takes without a copy
        test_case = np.repeat(np.arange(n_t), np.diff(data.start))
        for j in range(k):
            dense[test_case * k + j, data.agent] = factor[:, j]
        return linalg.blas.dsyrk(1.0, dense.T, lower=1)
    return K.gram(data.start, data.agent, factor, n_a, BLOCK)


def _inverse(h: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric positive (semi-)definite matrix (its lower triangle read): Cholesky's, or the
    pseudo-inverse where it fails."""
    try:
        return linalg.cho_solve(linalg.cho_factor(h, lower=True), np.eye(len(h)))
    except linalg.LinAlgError:
        return linalg.pinvh(h, lower=True)


def _inverse_diagonal(h: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The diagonal of h⁻¹ and h⁻¹ ``rhs`` (h as :func:`_inverse` takes it): from L⁻¹, L Lᵀ = h, a third of
    what the whole inverse costs (diag h⁻¹ = the columns' sums of squares of L⁻¹, h⁻¹ x = L⁻ᵀ L⁻¹ x)."""
    factor, info = linalg.lapack.dpotrf(h, lower=1, clean=1)
    if info == 0:
        l_inv, info = linalg.lapack.dtrtri(factor, lower=1, overwrite_c=1)
    if info != 0:
        inverse = _inverse(h)
        return np.diag(inverse).copy(), inverse @ rhs
    return np.einsum("ij,ij->j", l_inv, l_inv), l_inv.T @ (l_inv @ rhs)


def solve_hessian(fit: LogisticFit, data: ByTestCase, rhs: np.ndarray) -> np.ndarray:
    """H⁻¹ ``rhs`` for the agents' Hessian of ``fit`` (conjugate gradients)."""
    precond = K.hessian_diagonal(data.start, data.agent, fit.factor, fit.info)

    def matvec(x, out):
        K.hessian_matvec(data.start, data.agent, fit.factor, fit.info, x, out)

    return _pcg(matvec, np.maximum(precond, 1e-12), rhs)


_GAUSS_HERMITE = np.polynomial.hermite.hermgauss(NODES)  # place_one's nodes and weights, once (not per agent)


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
    nodes, weights = _GAUSS_HERMITE[0], _GAUSS_HERMITE[1] / math.sqrt(math.pi)
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
        if abs(step) * math.sqrt(info) < TOLERANCE:  # in its standard errors, as the joint fit
            break
    _, info, parts, model = terms(theta)
    n = len(score)
    sandwich = float(np.sum(parts**2)) * n / max(n - 1, 1)
    var = max(model, 0.0 if binary and design is None else sandwich) / info**2
    return CENTRE + LOGIT * theta, LOGIT * math.sqrt(var)
