"""Likelihood-shaped intervals of the rasch model's agents: where the curvature cannot place them.

An agent's rating is placed by its own test cases. Where those sit far on one side of it (the best and the worst
agents of a wide benchmark, a perfect or zero score) its likelihood is far from quadratic: flat outwards, steep
inwards, and an interval from the curvature at the fit, μ ± zσ, is too short outwards and too long inwards.

Agent a's objective with every other agent, τ and φ held at the fit, is its marginal penalized likelihood
ℓ_a(θ) = Σ over its matches of log E[L_i(θ) / L_i(θ̂)] + ½ log I_a(θ) (the expectation over the test case's
posterior at the fit: the change of the log marginal likelihood, exactly; Jeffreys' term as the fit takes it).
The interval's sides are where ℓ_a falls by z²/2 from its maximum, each multiplied by the full variance's share
over the conditional one, σ √H_aa (the other agents' and the test cases' uncertainty, and for graded scores the
sandwich, which the conditional likelihood does not see): where ℓ_a is quadratic this is μ ± zσ.
"""

from __future__ import annotations

import numpy as np

from . import _logistic_kernels as K
from .logistic import RASCH, ByTestCase, LogisticFit

__all__ = ["likelihood_sides", "stretch"]

TOP = 1e-3  # standard errors: how closely the maximum is found (its height then errs by some 1e-6 of the fall)
SIDE = 1e-4  # standard errors: the last step on a side (Newton's: the side itself errs by some 1e-9)
MAX_STEPS = 60


def likelihood_sides(fit: LogisticFit, data: ByTestCase, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Per agent (logits) the distances below and above the maximum of its objective (the module's ℓ_a) at which it
    has fallen by z²/2; 0 for an agent without a match. Every agent at once: each evaluation is one pass over the
    matches, and safeguarded Newton's steps on the objective's own derivative take a dozen or two in all."""
    # each test case's posterior at the fit, as the fit's pass places its nodes
    n, rule = len(data.agent), RASCH.fine
    placed = np.empty((2, data.n_test_cases, len(rule[0])))
    K.posterior_pass(
        data.start, data.agent, data.score, fit.theta, fit.mode[:, 0].copy(), np.zeros(data.n_test_cases, dtype=np.int64),
        np.zeros(1), np.array([fit.tau2]), np.array([1.0 / fit.phi]), np.ones(1), *rule, data.n_agents,
        np.zeros(data.n_agents), np.empty(n), np.empty((n, 1)), placed,
    )  # fmt: skip
    at, weight = placed
    played = np.bincount(data.agent, minlength=data.n_agents) > 0

    def objective(trial: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ℓ_a, its derivative and the information at each trial point ``trial[a, j]`` with an ``active[a, j]``
        (one pass over the matches for every column)."""
        log_ratio, gradient, info, slope = K.conditional_pass(
            data.start, data.agent, data.score, fit.theta, trial, at, weight, 1.0 / fit.phi, active
        )
        info = np.maximum(info, 1e-300)
        return log_ratio + 0.5 * np.log(info), gradient + 0.5 * slope / info, info, slope

    def column(trial: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        value, gradient, info, slope = objective(trial[:, None], active[:, None])
        return value[:, 0], gradient[:, 0], info[:, 0], slope[:, 0]

    # the maximum: secant steps on the derivative from a Fisher step (the fit's Jeffreys' term is taken off the
    # common level: its θ is close to this maximum, not at it); an agent leaves the passes once placed
    active = played.copy()
    x0 = fit.theta.copy()
    _, g0, info, slope = column(x0, active)
    x1 = x0 + np.where(active, np.clip(g0 / info, -1.0, 1.0), 0.0)
    height = np.zeros(data.n_agents)
    for _ in range(MAX_STEPS):
        value, g1, info_at, slope_at = column(x1, active)
        height, info = np.where(active, value, height), np.where(active, info_at, info)
        slope = np.where(active, slope_at, slope)
        active &= np.abs(x1 - x0) * np.sqrt(info) >= TOP
        if not active.any():
            break
        curv = np.where(x1 != x0, (g0 - g1) / np.where(x1 != x0, x1 - x0, 1.0), info)
        curv = np.where(curv > 0.0, curv, info)  # not concave between the two: the information's step
        x0, g0 = x1, g1
        x1 = x1 + np.where(active, np.clip(g1 / np.where(active, curv, 1.0), -1.0, 1.0), 0.0)
    top = x1[:, None]
    sign = np.array([-1.0, 1.0])
    fall = z * z / 2.0
    # both sides at once (a pass evaluates the two trial points of a match together), column 0 below the
    # maximum and 1 above: Newton on the fall m(d) = height − ℓ(top ± d) − z²/2 within its bracket [near, far]
    # (far: inf until known), the bracket's secant where Newton's step leaves it (m is convex outwards of a
    # perfect score: Newton from below overshoots)
    shape = (data.n_agents, 2)
    near, far = np.zeros(shape), np.full(shape, np.inf)
    miss_near, miss_far = np.full(shape, -fall), np.full(shape, np.inf)
    scale = np.sqrt(info)[:, None]
    # the first trial: where the expansion at the maximum ½ I d² ± I′ d³ / 6 reaches the fall (one Newton step
    # from the quadratic's z / √I, kept within a factor 2 of it: a pass fewer than from z / √I)
    d = np.where(played, z / np.sqrt(info), 0.0)[:, None] * np.ones(2)
    cubic = sign * slope[:, None] / 6.0
    with np.errstate(invalid="ignore", divide="ignore"):
        step = d - (0.5 * info[:, None] * d * d + cubic * d**3 - fall) / (info[:, None] * d + 3.0 * cubic * d * d)
    d = np.where(np.isfinite(step), np.clip(step, 0.5 * d, 2.0 * d), d)
    height = height[:, None]
    active = played[:, None] & np.ones(2, dtype=bool)
    for _ in range(MAX_STEPS):
        value, gradient, _, _ = objective(top + sign * d, active)
        miss = height - value - fall
        below = miss < 0.0
        near, miss_near = np.where(below, d, near), np.where(below, miss, miss_near)
        far, miss_far = np.where(below, far, d), np.where(below, miss_far, miss)
        rate = -sign * gradient  # m'(d): Jeffreys' term falls without end outwards, every side is finite
        with np.errstate(invalid="ignore", divide="ignore"):
            nxt = d - miss / np.where(rate > 0.0, rate, np.nan)
            secant = near - miss_near * (far - near) / (miss_far - miss_near)
        inside = (nxt > near) & (nxt < far)
        nxt = np.where(inside, nxt, np.where(np.isfinite(far), secant, 2.0 * np.maximum(d, near)))
        done = np.abs(nxt - d) * scale < SIDE
        d = np.where(active, nxt, d)
        active &= ~done
        if not active.any():
            break
    return d[:, 0], d[:, 1]


def stretch(fit: LogisticFit, data: ByTestCase, sd: np.ndarray) -> np.ndarray:
    """σ √H_aa: each agent's full standard error (logits) over its conditional one, the others held."""
    diagonal = K.hessian_diagonal(data.start, data.agent, fit.factor, fit.info)
    return sd * np.sqrt(np.maximum(diagonal, 0.0))
