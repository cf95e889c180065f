"""The 2PL model: the rasch (:mod:`.logistic`) with a discrimination per test case (``rate(matches, model="2pl")``).

P(agent a succeeds on test case t) = σ(q α_t (θ_a − β_t)), q = ln 10 / 400, on the rasch's Elo scale.

- **The discrimination α_t** says how sharply the test case separates stronger agents from weaker ones: 1 is
  the benchmark's typical test case, 0 one whose results do not depend on the agent, and a negative α one that
  stronger agents fail more often than weaker ones (a wrong reference answer, a scoring bug). Its prior is
  normal, N(1, ω²), so that it can be negative; its mean 1 fixes the scale (θ × c with α / c fits alike).
- (β_t, α_t) are integrated out of the likelihood as β_t is in the rasch, by adaptive Gauss-Hermite
  quadrature on a product grid (each test case's posterior mode and the Cholesky factor of its curvature
  place the nodes; fewer nodes where a test case has many matches and its posterior is all but normal);
  τ and ω maximize the marginal likelihood with θ, each with a weak inverse-gamma prior. Jeffreys' term is kept
  off the agents' common scale as off their level (:func:`~.logistic.fit_logistic`), and a fit starts from
  the rasch's (from θ = 0 the discriminations are unidentified).
- A test case's ``discrimination`` is its posterior mean given the agents, ``discrimination_lo, _hi`` the mean
  ± z sd of that posterior: its marginal from the quadrature is a few dozen weighted nodes, whose quantiles
  would step from node to node.
"""

from __future__ import annotations

import numpy as np

from . import _twopl_kernels as K
from .logistic import PRIOR_SCALE, RASCH, LogisticModel, Posterior

__all__ = ["TWOPL"]

NODES = ((0, 9), (200, 7), (800, 5))  # Gauss-Hermite nodes per dimension from that many matches of a test case on
COARSE_NODES = ((0, 3),)  # until the steps are short
DISCRIMINATION_SCALE = 0.5  # ω's prior: as much as one test case at this sd (the rasch's τ: PRIOR_SCALE)


def _grid(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The product Gauss-Hermite rule for ∫ e^(−|x|²) f(x) dx in 2-D, as (nodes m × 2, log weights + |x|²).

    Not pruned: dropping the product's smallest weights cuts the posterior's tails, which are heavier than the
    normal's (the marginal likelihood's gradients 2-10 % off on 12 agents × 40 test cases)."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    grid = np.stack(np.meshgrid(x, x, indexing="ij"), axis=-1).reshape(-1, 2)
    return grid, np.log(np.outer(w, w).ravel()) + (grid**2).sum(axis=1)


def _rules(tiers) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(nodes, log weights, each rule's first row and the end, the matches from which each applies) of ``tiers``."""
    grids = [_grid(nodes) for _, nodes in tiers]
    start = np.cumsum([0] + [len(w) for _, w in grids])
    return (
        np.concatenate([g for g, _ in grids]),
        np.concatenate([w for _, w in grids]),
        start.astype(np.int64),
        np.array([least for least, _ in tiers], dtype=np.int64),
    )


def _posterior(data, theta, variances, phi, mode, rule, agent_var, match_score, factor) -> Posterior:
    g, info, slope, bend, cross, second, second_cov, mean, var, pearson = K.posterior_pass(
        data.start,
        data.agent,
        data.score,
        theta,
        mode,
        variances[0],
        variances[1],
        phi,
        *rule,
        data.n_agents,
        agent_var,
        match_score,
        factor,
    )
    return Posterior(g, info, slope, bend, cross, second, second_cov, factor, match_score, pearson, mean, var)


TWOPL = LogisticModel(
    "2pl",
    (PRIOR_SCALE, DISCRIMINATION_SCALE),
    (0.0, 1.0),
    _rules(COARSE_NODES),
    _rules(NODES),
    _posterior,
    scaled=True,
    extends=RASCH,
)
"""P(success) = σ(α_t (θ_a − β_t)) in logits: each test case has a difficulty β_t and a discrimination α_t."""
