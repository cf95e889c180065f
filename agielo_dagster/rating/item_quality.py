"""Which test cases look broken: each test case's discrimination, with its interval, and a flag a person can check.

A test case's **discrimination** α says how sharply it separates stronger agents from weaker ones: the slope of
P(success) = σ(α (θ_a − β)) (in logits) in the agent's rating, 1 for the benchmark's typical test case, 0 for one
whose results do not depend on the agent, negative for one that stronger agents fail more often than weaker ones:
a wrong reference answer or a scoring bug (a difficulty alone cannot show it: such a case just looks hard).

Under ``model="2pl"`` it is the model's own. Under every other model each test case's (β, α) is the posterior mode
of that logistic in its own results with the agents' fitted ratings held fixed, priors β ~ N(0, τ²) and
α ~ N(1, ω²) (normal, so that α can be negative): a few Newton steps per test case, O(matches), against 7.5 times
the rasch's cost for the full 2PL. Its interval is the mode ± z sd, the sd from the posterior's curvature (binary
scores) or the sandwich over the test case's matches (graded scores, whose variance is not the model's).

Flags, the first that applies:

- ``saturated``: every agent scores 1; ``unsolved``: every agent scores 0 (S = 1 is the best, whatever the metric's
  direction);
- ``likely_mislabeled``: the discrimination is below 0 with a posterior probability above the run's level (one-sided:
  the question is only whether it is negative; the two-sided interval missed a tenth of the planted errors on the
  demo's digits, see docs/capabilities.md). Binary scores: the probability from the posterior on a grid wherever the
  mode has α < 0 (within a budget of likelihood terms, the most negative first); graded ones: from the sandwich's
  normal approximation;
- ``uninformative``: the interval includes 0 although the test case's agents would tell a typical test case's
  from 0: a discrimination of 1 at its difficulty would have an sd ≤ 1 / (2 z), so that its interval would clear 0
  with probability 1 − (1 − level) / 2 (97.5 % at 95 %); or every agent scores the same;
- '' otherwise. A test case that cannot be judged (one agent, agents too alike or too far from its difficulty)
  is not flagged, and its ``flag_reason`` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numba
import numpy as np
import pandas as pd
from scipy.special import ndtr

from ._logistic_kernels import _log_lik
from ._twopl_kernels import _mode
from .frames import Matches
from .intervals import z_of
from .logistic import CENTRE, LOGIT, ByTestCase, by_test_case

__all__ = ["FLAGS", "QUALITY_COLUMNS", "ItemQuality", "glicko_item_quality", "item_quality"]

FLAGS = ("likely_mislabeled", "saturated", "unsolved", "uninformative")
QUALITY_COLUMNS = ("discrimination", "discrimination_lo", "discrimination_hi", "flag", "flag_reason")
DISCRIMINATION_SD = 2.0  # ω: the prior sd of α (see docs/capabilities.md for what it gives on planted errors)


@dataclass(frozen=True)
class ItemQuality:
    """Per test case (in their codes' order): its discrimination, the interval's ends, its flag and why."""

    discrimination: np.ndarray
    discrimination_lo: np.ndarray
    discrimination_hi: np.ndarray
    flag: np.ndarray  # object: one of FLAGS or ''
    flag_reason: pd.Categorical  # '' for a test case that is fine


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _log_posterior(lo, hi, agent, score, theta, b, a, tau2, omega2, inv):
    lp = -0.5 * b * b / tau2 - 0.5 * (a - 1.0) ** 2 / omega2
    for i in range(lo, hi):
        lp += _log_lik(a * (theta[agent[i]] - b), score[i])[0] * inv
    return lp


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _modes(start, agent, score, theta, beta, tau2, omega2, inv):
    """Each test case's posterior mode (β, α) and its curvature (n_t × 3: bb, ba, aa).

    The posterior can have two modes: a rising curve at the difficulty ``beta`` and a falling one at its mirror
    image about the agents' mean rating (a reversed test case: its few successes are the weakest agents'). Newton's
    method from (``beta``, 1) finds the first alone, so where the scores fall with the ratings (a negative
    covariance) it also starts from the mirror with α = −1, and the higher mode wins."""
    n_t = len(start) - 1
    mode = np.empty((n_t, 2))
    curvature = np.empty((n_t, 3))
    for t in range(n_t):
        lo, hi = start[t], start[t + 1]
        centre = 0.0
        for i in range(lo, hi):
            centre += theta[agent[i]]
        centre /= max(hi - lo, 1)
        covariance = 0.0
        for i in range(lo, hi):
            covariance += score[i] * (theta[agent[i]] - centre)
        best = -math.inf
        for b0, a0 in ((beta[t], 1.0), (2.0 * centre - beta[t], -1.0)):
            if a0 < 0.0 and covariance >= 0.0:
                break
            b, a, cbb, cba, caa = _mode(lo, hi, agent, score, theta, b0, a0, tau2, omega2, inv)
            lp = _log_posterior(lo, hi, agent, score, theta, b, a, tau2, omega2, inv)
            if lp > best:
                best = lp
                mode[t, 0], mode[t, 1] = b, a
                curvature[t, 0], curvature[t, 1], curvature[t, 2] = cbb, cba, caa
    return mode, curvature


GRID = 32  # points per axis of the posterior's grid (binary scores, test cases whose mode has α < 0)
GRID_SDS = 8.0  # its half-width, in the normal approximation's sds: a reversed test case's posterior is skewed
GRID_BUDGET = 200_000_000  # likelihood terms on grids per rating (about 1 CPU-s); past it, the most negative first
BLOCK = 1 << 18  # test cases judged at a time


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _negative_shares(start, agent, score, theta, mode, curvature, candidates, tau2, omega2, inv):
    """P(α < 0) of each candidate test case from its posterior on a grid (``GRID``² points over ± ``GRID_SDS`` sds of
    its normal approximation about the mode): where few agents decide it, the posterior is skewed and the normal
    approximation's tail understates how surely α < 0 (the demo's digits: 62 of 66 planted errors against 65)."""
    out = np.empty(len(candidates))
    lp = np.empty((GRID, GRID))
    for c in range(len(candidates)):
        t = candidates[c]
        lo, hi = start[t], start[t + 1]
        cbb, cba, caa = curvature[t, 0], curvature[t, 1], curvature[t, 2]
        det = cbb * caa - cba * cba
        sb, sa = math.sqrt(caa / det), math.sqrt(cbb / det)
        top = -math.inf
        for i in range(GRID):
            b = mode[t, 0] + sb * GRID_SDS * (2.0 * i / (GRID - 1) - 1.0)
            for j in range(GRID):
                a = mode[t, 1] + sa * GRID_SDS * (2.0 * j / (GRID - 1) - 1.0)
                lp[i, j] = _log_posterior(lo, hi, agent, score, theta, b, a, tau2, omega2, inv)
                top = max(top, lp[i, j])
        total = negative = 0.0
        for i in range(GRID):
            for j in range(GRID):
                w = math.exp(lp[i, j] - top)
                total += w
                if mode[t, 1] + sa * GRID_SDS * (2.0 * j / (GRID - 1) - 1.0) < 0.0:
                    negative += w
        out[c] = negative / total
    return out


def _alpha_variance(data: ByTestCase, test_case, theta, mode, curvature, binary: bool, inv: float) -> np.ndarray:
    """Var(α) of each test case: [C⁻¹]_αα, or the sandwich [C⁻¹ J C⁻¹]_αα, J = Σ u uᵀ over its matches' scores u."""
    cbb, cba, caa = curvature.T
    det = cbb * caa - cba * cba
    if binary:
        return cbb / det
    d = theta[data.agent] - mode[test_case, 0]
    a = mode[test_case, 1]
    e = (data.score - 1.0 / (1.0 + np.exp(-a * d))) * inv
    ub, ua = -a * e, d * e  # a match's part of the gradient in (β, α)
    n_t = data.n_test_cases
    jbb, jba, jaa = (np.bincount(test_case, x, n_t) for x in (ub * ub, ub * ua, ua * ua))
    # row α of C⁻¹ is (−cba, cbb) / det
    return (cba * cba * jbb - 2.0 * cba * cbb * jba + cbb * cbb * jaa) / (det * det)


def _typical_sd(data: ByTestCase, test_case, theta, beta, inv: float) -> np.ndarray:
    """The sd a discrimination of 1 at difficulty ``beta`` would have from these matches (β profiled out)."""
    d = theta[data.agent] - beta[test_case]
    p = 1.0 / (1.0 + np.exp(-d))
    w = p * (1.0 - p) * inv
    n_t = data.n_test_cases
    ibb, iba, iaa = (np.bincount(test_case, x, n_t) for x in (w, -w * d, w * d * d))
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(np.maximum(iaa - iba * iba / ibb, 0.0))


def _halves(data: ByTestCase, theta: np.ndarray, t: int) -> tuple[int, float, float]:
    """k (half the test case's agents, rounded down), and the k strongest and the k weakest agents' mean scores."""
    rows = slice(data.start[t], data.start[t + 1])
    score = data.score[rows][np.argsort(theta[data.agent[rows]], kind="stable")]
    k = len(score) // 2
    return k, float(score[len(score) - k :].mean()), float(score[:k].mean())


def item_quality(
    data: ByTestCase,
    theta: np.ndarray,
    beta: np.ndarray,
    *,
    tau2: float,
    phi: float,
    binary: bool,
    level: float,
    model: tuple[np.ndarray, np.ndarray] | None = None,
) -> ItemQuality:
    """Each test case's discrimination and flag given the agents' ratings ``theta`` and the test cases' ``beta``
    (logits from the centre; β's prior variance ``tau2``), graded scores' dispersion ``phi``, the interval's ``level``;
    ``model``: the model's own discrimination (mean, sd), used as it is.

    Taken ``BLOCK`` test cases at a time: the per-match temporaries of a wide benchmark stay those of a block."""
    n_t, n = data.n_test_cases, len(data.score)
    if n_t <= BLOCK:
        return _words_once(_block(data, theta, beta, tau2, phi, binary, level, model, GRID_BUDGET))
    parts = []
    for a in range(0, n_t, BLOCK):
        b = min(a + BLOCK, n_t)
        rows = slice(data.start[a], data.start[b])
        block = ByTestCase(data.start[a : b + 1] - data.start[a], data.agent[rows], data.score[rows], data.n_agents)
        own = None if model is None else (model[0][a:b], model[1][a:b])
        budget = GRID_BUDGET * (rows.stop - rows.start) // max(n, 1)  # the rating's budget, shared by the blocks
        parts.append(_block(block, theta, beta[a:b], tau2, phi, binary, level, own, budget))
    return _words_once(ItemQuality(*(np.concatenate([getattr(q, c) for q in parts]) for c in ItemQuality.__dataclass_fields__)))


def _words_once(quality: ItemQuality) -> ItemQuality:
    """Reasons as categories: a few distinct texts, each stored once (a benchmark of one agent has the same reason
    for each of its millions of test cases), in the table and in its parquet (a dictionary)."""
    reason = pd.Categorical(quality.flag_reason)
    return ItemQuality(quality.discrimination, quality.discrimination_lo, quality.discrimination_hi, quality.flag, reason)


def _block(data: ByTestCase, theta, beta, tau2: float, phi: float, binary: bool, level: float, model, budget: int):
    test_case = np.repeat(np.arange(data.n_test_cases), np.diff(data.start))
    inv = 1.0 / phi
    if model is None:
        omega2 = DISCRIMINATION_SD**2
        mode, curvature = _modes(data.start, data.agent, data.score, theta, beta, tau2, omega2, inv)
        alpha, beta = mode[:, 1], mode[:, 0]
        sd = np.sqrt(_alpha_variance(data, test_case, theta, mode, curvature, binary, inv))
    else:
        alpha, sd = model
    z = z_of(level)
    lo, hi = alpha - z * sd, alpha + z * sd
    with np.errstate(divide="ignore", invalid="ignore"):
        negative = ndtr(-alpha / sd)  # P(α < 0) under the normal approximation
    if model is None and binary:  # where it may matter, from the posterior itself (graded: the sandwich's, as it is)
        candidates = np.flatnonzero((alpha < 0.0) & (np.diff(data.start) >= 2))
        candidates = candidates[np.argsort(-negative[candidates], kind="stable")]  # a noisy benchmark's: bounded
        cost = np.cumsum(np.diff(data.start)[candidates]) * GRID * GRID
        candidates = candidates[cost <= budget]
        negative[candidates] = _negative_shares(
            data.start, data.agent, data.score, theta, mode, curvature, candidates, tau2, omega2, inv
        )
    counts = np.diff(data.start)
    low, high = (np.bincount(test_case, data.score == s, data.n_test_cases) for s in (0.0, 1.0))
    lowest = np.minimum.reduceat(data.score, data.start[:-1]) if len(data.score) else np.zeros(0)
    highest = np.maximum.reduceat(data.score, data.start[:-1]) if len(data.score) else np.zeros(0)
    typical = _typical_sd(data, test_case, theta, beta, inv)
    flag = np.full(data.n_test_cases, "", dtype=object)
    reason = np.full(data.n_test_cases, "", dtype=object)
    # verdicts that need no ratings are shared by every test case of the same counts: a wide benchmark's millions
    # of test cases of one agent hold one string, not one each
    # (and one whose discrimination no typical test case's could be told from 0, unless it is likely mislabeled)
    thin = ~(negative > level) & ~(typical <= 1.0 / (2.0 * z))
    plain = np.select([high == counts, low == counts, counts < 2, lowest == highest, thin], [0, 1, 2, 3, 4], -1)
    plain = plain.astype(np.int8)
    for kind in range(5):
        where = np.flatnonzero(plain == kind)
        keys = np.column_stack([counts[where], lowest[where]]) if kind == 3 else counts[where]
        if len(where):
            keys, inverse = np.unique(keys, axis=0, return_inverse=True)
            verdicts = np.array([_plain(kind, *np.atleast_1d(key).tolist()) for key in keys], dtype=object)
            flag[where], reason[where] = verdicts[inverse.ravel(), 0], verdicts[inverse.ravel(), 1]
    # a test case that is fine needs no words: only the others go through _judge
    judged = np.flatnonzero((plain < 0) & ~((typical <= 1.0 / (2.0 * z)) & (lo > 0.0)))
    rows = np.column_stack([lo[judged], alpha[judged], hi[judged], negative[judged]])
    for t, row in zip(judged.tolist(), rows.tolist(), strict=True):
        # its agents are sorted by rating only where the reason needs them
        flag[t], reason[t] = _judge(*row, partial(_halves, data, theta, t), level=level, binary=binary)
    return ItemQuality(alpha, lo, hi, flag, reason)


def _plain(kind: int, n, lowest=None) -> tuple[str, str]:
    """(flag, reason) of a test case every agent succeeds on (``kind`` 0), none does (1), one agent played (2), its
    agents all score ``lowest`` (3), or its agents cannot tell a typical test case's discrimination from 0 (4)."""
    n = int(n)
    agents = f"{n} agent{'s' if n != 1 else ''}"
    if kind == 0:
        return "saturated", f"all {agents} succeed on it (score 1): it no longer tells agents apart"
    if kind == 1:
        return "unsolved", f"none of its {agents} succeeds (score 0): check that it can be solved"
    if kind == 2:
        return "", "only 1 agent played it: a discrimination needs agents of different ratings"
    if kind == 4:
        return "", (
            f"not enough information to judge: its {agents} are too alike or too far from its difficulty "
            f"to tell even a typical test case's discrimination from 0"
        )
    return "uninformative", f"all {agents} score {lowest:.3g} on it: it tells no agents apart"


def _judge(lo, alpha, hi, negative, halves, *, level, binary) -> tuple[str, str]:
    """(flag, reason) of a test case its agents score differently on and can tell a discrimination from 0 by (or likely
    mislabeled); ``halves()``: its k, and the k strongest and k weakest agents' mean scores."""
    mislabeled = negative > level
    if not mislabeled and not lo <= 0.0:
        return "", ""
    interval = f"discrimination {alpha:.2f}, interval {lo:.2f} to {hi:.2f}"
    k, strong, weak = halves()
    if binary:
        split = f"the {k} strongest agents pass {round(strong * k)} of {k} and the {k} weakest pass {round(weak * k)} of {k}"
    else:
        split = f"the {k} strongest agents score {strong:.2f} on average and the {k} weakest {weak:.2f}"
    if mislabeled:
        return "likely_mislabeled", (
            f"{split} ({interval}, below 0 with probability {negative:.3f}): the reference answer or the scoring is "
            f"probably wrong"
        )
    return "uninformative", f"{split} ({interval}): its results do not follow the agents' ratings"


def glicko_item_quality(m: Matches, agent_mu: np.ndarray, test_case_mu: np.ndarray, level: float) -> ItemQuality:
    """:func:`item_quality` at Glicko's ratings (Elo): β's prior is the spread of its test cases' ratings, and graded
    scores are weighed as binary ones (their interval is the sandwich's, whatever the dispersion)."""
    beta = (test_case_mu - CENTRE) / LOGIT
    binary = bool(np.all((m.score == 0.0) | (m.score == 1.0)))
    tau2 = max(float(np.var(beta)), 1e-2)
    return item_quality(by_test_case(m), (agent_mu - CENTRE) / LOGIT, beta, tau2=tau2, phi=1.0, binary=binary, level=level)
