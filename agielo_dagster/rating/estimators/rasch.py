"""Rasch (1PL IRT) by joint maximum likelihood, on the Elo scale: an independent cross-check.

P(agent a succeeds on test case t) = σ(θ_a − b_t). Binary scores are Bernoulli outcomes; graded
scores in [0, 1] enter the same likelihood as fractional outcomes (quasi-likelihood). A test
case every agent solves, or none does, has an infinite JML difficulty, so a small ridge penalty
``ridge · (Σθ² + Σb²)`` keeps every estimate finite. Abilities and difficulties are reported as
ratings (logit · 400 / ln 10) with the test cases' mean at ``center``, directly comparable to
AGI-Elo: E[S] = 1 / (1 + 10^((R_t − R_a)/400)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..frames import Matches, Table, encode_matches, flavour_of, to_flavour
from ._scale import LOGIT_TO_ELO


def rasch(matches: Table, *, ridge: float = 0.01, center: float = 1500.0, tol: float = 1e-8) -> tuple[Table, Table]:
    """Agent abilities and test-case difficulties.

    Returns
    -------
    (agents, test_cases) : DataFrames
        ``agent_id, rating, logit`` and ``test_case_id, rating, logit``.
    """
    from ..graph import warn_disconnected

    m = encode_matches(matches)
    warn_disconnected(m, "rasch")
    agents, test_cases = rasch_encoded(m, ridge=ridge, center=center, tol=tol)
    flavour = flavour_of(matches)
    return to_flavour(agents, flavour), to_flavour(test_cases, flavour)


def rasch_encoded(
    m: Matches, *, ridge: float = 0.01, center: float = 1500.0, tol: float = 1e-8
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`rasch` on encoded matches, as pandas frames, without the connectivity warning."""
    n_a, n_t = len(m.agent_ids), len(m.test_case_ids)
    theta, b = _joint_ml(m.agent, m.test_case, m.score, n_a, n_t, ridge, tol)
    shift = center - b.mean() * LOGIT_TO_ELO
    agents = pd.DataFrame({"agent_id": m.agent_ids, "rating": theta * LOGIT_TO_ELO + shift, "logit": theta})
    test_cases = pd.DataFrame({"test_case_id": m.test_case_ids, "rating": b * LOGIT_TO_ELO + shift, "logit": b})
    return agents, test_cases


def _joint_ml(a, t, s, n_a, n_t, ridge, tol, max_sweeps=500):
    """Maximize the penalized likelihood by alternating exact Newton steps.

    Given the difficulties, the abilities' Hessian is diagonal (and vice versa), so each half
    step is a handful of vectorized passes over the matches; the penalized problem is strictly
    concave, so the alternation converges to its unique optimum.
    """
    theta, b = np.zeros(n_a), np.zeros(n_t)
    for _ in range(max_sweeps):
        p = 1.0 / (1.0 + np.exp(-(theta[a] - b[t])))
        step_theta = (np.bincount(a, p - s, n_a) + 2 * ridge * theta) / (np.bincount(a, p * (1 - p), n_a) + 2 * ridge)
        theta -= step_theta
        p = 1.0 / (1.0 + np.exp(-(theta[a] - b[t])))
        step_b = (-np.bincount(t, p - s, n_t) + 2 * ridge * b) / (np.bincount(t, p * (1 - p), n_t) + 2 * ridge)
        b -= step_b
        # the likelihood ignores a common shift of θ and b; only the ridge pins it: take its optimum
        # exactly instead of crawling along that nearly flat direction
        shift = (theta.sum() + b.sum()) / (n_a + n_t)
        theta -= shift
        b -= shift
        if max(np.abs(step_theta).max(), np.abs(step_b).max()) < tol:
            break
    return theta, b


def penalized_objective(m, ridge: float):
    """The minimized function of (θ, b) stacked, with its gradient: −log L + ridge·(Σθ² + Σb²)."""
    a, t, s = m.agent, m.test_case, m.score
    n_a, n_t = len(m.agent_ids), len(m.test_case_ids)

    def objective(x):
        z = x[:n_a][a] - x[n_a:][t]
        r = 1.0 / (1.0 + np.exp(-z)) - s
        g = 2.0 * ridge * x
        g[:n_a] += np.bincount(a, r, n_a)
        g[n_a:] -= np.bincount(t, r, n_t)
        return np.sum(np.logaddexp(0.0, z) - s * z) + ridge * (x @ x), g

    return objective
