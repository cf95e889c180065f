"""The refined agents' remaining bias where comparisons are few: an iterated conditional parametric bootstrap.

Firth's correction removes the first-order bias of the pairwise equations
(:mod:`agielo_dagster.rating.refine`), but where few agents share each test case and the agents
are spread widely it pulls the extremes in: with 10 % of the pairs played (3 agents a test case,
40 test cases an agent) and agents of sd 600–800 Elo, the slope of estimate on truth is
0.88–0.81, and the best agent, which beats almost every test case, lands far below its rating.

:func:`debias` finds the ratings θ under which the estimator's mean is what was observed,
E_θ[θ̂*] = θ̂, by the fixed-point iteration θ ← θ + (θ̂ − E_θ[θ̂*]) (an iterated bootstrap bias
correction; the mean over :data:`DRAWS` draws, the same draws in every round, so the iteration is
deterministic and contracts). A draw keeps every test case's number of successes r_t and
redraws which of its agents succeed, with probability ∝ Π 10^(θ_a/400) over the successful
subset: the Rasch model's distribution given r_t, which depends on the agents' ratings alone,
not on the test case's (so the draws need no test-case rating, whose prior would compress the
very spread being corrected). Binary scores only: graded scores have no such distribution (and
their pairs carry more information: their slopes are 0.99–1.04 in every regime measured).

The corrected estimator undoes the shrink 1 − (correction / distance from the mean), and spreads
its error by the same factor: ``stretch`` (per agent, 1 to 2) widens the agent's interval by
1/shrink. The distance is at least the agents' sd, so that the middle agents, whose corrections
are mostly the draws' noise, are not stretched by it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["DRAWS", "MAX_AGENTS", "ROUNDS", "DebiasSkippedWarning", "Debiased", "conditional_scores", "debias"]


class DebiasSkippedWarning(UserWarning):
    """The de-bias was due but the benchmark has more than ``MAX_AGENTS`` agents: Firth's estimates are kept."""


DRAWS = 20
"""Bootstrap draws a round: the mean's noise is about se/√20 an agent."""
MAX_AGENTS = 128
"""Above this many compared agents the de-bias is skipped (with a warning): each round refits 20 draws, each refit
a Newton solve on n_a × n_a matrices (300 agents: about 20 s against the refinement's 1.4)."""
ROUNDS = 16
"""Rounds of the fixed-point iteration at most (each contracts the remaining error by about 1 − slope)."""
_STOP = 0.02  # a round moving no agent by more than this many of its standard errors is the last
_MAX_STEP = 400.0  # Elo a round moves an agent at most
_REACH = 1.5  # standard errors the correction moves an agent at most: an agent beating every rival has no finite
# fixed point, and a correction beyond the estimate's own error is not one the data can tell from noise


@dataclass(frozen=True)
class Debiased:
    """What :func:`debias` returns: the corrected ratings, the intervals' stretch per agent, and the rounds run."""

    mu: np.ndarray
    stretch: np.ndarray
    rounds: int


@numba.njit(cache=True, nogil=True)
def conditional_scores(start, agent, score, log_strength, seed):
    """One draw of binary scores keeping each test case's number of successes (rows of test case t: ``start[t]:start[t+1]``).

    Given r_t successes among n_t agents, a subset S succeeds with probability ∝ Π_{a∈S} x_a
    (x_a = exp(``log_strength[a]``)). Sampled agent by agent from the tilted Poisson-binomial
    table f[i, k] = P(k successes among agents i..n−1) under independent p_a = x_a e^c/(1 + x_a e^c),
    c chosen so that Σ p_a = r_t: the same conditional distribution for any c, and every entry a
    probability (no overflow however wide the ratings).
    """
    np.random.seed(seed)
    out = score.copy()
    most = 0
    for t in range(len(start) - 1):
        most = max(most, start[t + 1] - start[t])
    f = np.zeros((most + 1, most + 1))
    p = np.empty(most)
    for t in range(len(start) - 1):
        lo, hi = start[t], start[t + 1]
        n = hi - lo
        r = 0
        for i in range(lo, hi):
            r += int(score[i])
        if r == 0 or r == n:
            continue
        # the tilt c: Σ σ(λ_a + c) = r, by Newton from the logit of r/n (the sum is increasing in c)
        mean = 0.0
        for i in range(n):
            mean += log_strength[agent[lo + i]]
        c = np.log(r / (n - r)) - mean / n
        for _ in range(100):
            total = 0.0
            slope = 0.0
            for i in range(n):
                q = 1.0 / (1.0 + np.exp(-(log_strength[agent[lo + i]] + c)))
                total += q
                slope += q * (1.0 - q)
            step = (r - total) / max(slope, 1e-12)
            step = min(max(step, -5.0), 5.0)
            c += step
            if abs(step) < 1e-10:
                break
        for i in range(n):
            p[i] = 1.0 / (1.0 + np.exp(-(log_strength[agent[lo + i]] + c)))
        for k in range(r + 1):
            f[n, k] = 0.0
        f[n, 0] = 1.0
        for i in range(n - 1, -1, -1):
            f[i, 0] = (1.0 - p[i]) * f[i + 1, 0]
            for k in range(1, r + 1):
                f[i, k] = (1.0 - p[i]) * f[i + 1, k] + p[i] * f[i + 1, k - 1]
        k = r
        for i in range(n):
            if k == 0:
                out[lo + i] = 0.0
            elif np.random.random() * f[i, k] < p[i] * f[i + 1, k - 1]:
                out[lo + i] = 1.0
                k -= 1
            else:
                out[lo + i] = 0.0
    return out


def debias(
    estimate: np.ndarray,
    refit: Callable[[np.ndarray, np.ndarray], np.ndarray],
    start: np.ndarray,
    agent: np.ndarray,
    score: np.ndarray,
    se: np.ndarray,
    compared: np.ndarray,
    component: np.ndarray,
    seed: int,
) -> Debiased:
    """θ with E_θ[θ̂*] = ``estimate`` (see the module's notes).

    ``refit(scores, from_mu)`` is the estimator on redrawn ``scores`` (rows as ``start``, ``agent``:
    the matches grouped by test case); ``se`` the estimate's standard errors (the stopping rule's
    unit). Agents not ``compared`` stay where they are; each component's mean is kept.
    """
    seeds = np.random.SeedSequence(seed).generate_state(DRAWS)
    log10 = np.log(10.0) / 400.0
    theta = estimate.copy()
    unit = np.where(compared & (se > 0), se, np.inf)
    reach = _REACH * np.where(compared, se, 0.0)
    rounds, fits, moved = 0, [estimate] * DRAWS, np.zeros(len(theta))
    for rounds in range(1, ROUNDS + 1):  # noqa: B007 - the count is returned
        log_strength = log10 * (theta - theta[compared].mean())
        # each draw's refit starts from its own last solution, moved as θ moved: a few Newton steps, not a fit from afar
        fits = [
            refit(conditional_scores(start, agent, score, log_strength, int(s)), fit + moved)
            for s, fit in zip(seeds, fits, strict=True)
        ]
        step = np.where(compared, np.clip(estimate - np.mean(fits, axis=0), -_MAX_STEP, _MAX_STEP), 0.0)
        moved = np.clip(theta + step, estimate - reach, estimate + reach) - theta
        theta = theta + moved
        relative = np.abs(moved[compared]) / unit[compared]
        # settled, or all but a few agents settled: with many agents some keep flipping between draws' discrete outcomes
        if relative.max(initial=0.0) < _STOP or np.sqrt(np.mean(relative**2)) < _STOP / 2:
            break
    stretch = np.ones(len(theta))
    for comp in np.unique(component[compared]):
        members = compared & (component == comp)
        if members.sum() >= 3:
            # the agent's own shrink: its correction over its distance from the mean (at least one sd, for the middle)
            distance = np.maximum(np.abs(theta[members] - theta[members].mean()), theta[members].std())
            shrink = 1.0 - np.abs(theta[members] - estimate[members]) / np.maximum(distance, 1e-9)
            stretch[members] = 1.0 / np.clip(shrink, 0.5, 1.0)
    for comp in np.unique(component[compared]):  # each component's mean where the estimate had it, exactly
        members = compared & (component == comp)
        theta[members] += estimate[members].mean() - theta[members].mean()
    return Debiased(theta, stretch, rounds)
