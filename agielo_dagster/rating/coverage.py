"""Coverage studies: do the rating intervals cover agents' true ratings? For tests and ``benchmarks/coverage_grid.py``.

A :class:`Regime` says how a simulated benchmark is drawn: the spread of true agent ratings (sd),
the share of (agent, test case) pairs played, the outcome, the benchmark's shape, the law of the
test cases' difficulties and discriminations. Each replication draws new players and outcomes
(:func:`draw`), rates them with :func:`~agielo_dagster.rating.rate`, and compares every agent's
interval with its true rating up to Elo's common shift (within each connected component, as the
intervals are relative to its agents' mean). Agents alone in their component are left out.

Outcomes, with E = 1 / (1 + 10^(−a(θ − β)/400)) (a: the test case's discrimination, 1 for Rasch data):

- ``binary``: S ~ Bernoulli(E);
- ``graded``: S = K/4, K ~ Binomial(4, E) (partial credit in quarters);
- ``ceiling``: S = min(K, 3)/3, the same K scored out of 3 (many scores at 1): E[S] is no longer the
  logistic curve, so no logistic model's rating equals θ. Such regimes are scored against the
  **pseudo-true** ratings (``truth="pseudo"``): what the same model gives the same agents on
  :data:`PSEUDO_TEST_CASES` test cases of the same population, every pair played, i.e. the value
  the estimator converges to.

The yardstick for the widths is the standard error of a correctly specified joint maximum-likelihood
fit of the same design: the inverse Fisher information of every agent and test-case rating at the
true ratings (discriminations known), the test cases profiled out (the Schur complement), each agent
taken relative to its component's mean (:func:`joint_mle_se`). Against pseudo-true ratings it is
carried onto their scale by the slope of pseudo-true on true ratings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import linalg, sparse
from scipy.sparse.csgraph import connected_components
from scipy.stats import rankdata

from ._kernels import Q

__all__ = ["PSEUDO_TEST_CASES", "Draw", "Regime", "Replication", "draw", "joint_mle_se", "replicate"]

OUTCOMES = ("binary", "graded", "ceiling")
DIFFICULTIES = ("normal", "t3")
PSEUDO_TEST_CASES = 20_000


@dataclass(frozen=True)
class Regime:
    """How a simulated benchmark is drawn (see the module)."""

    sd: float = 400.0  # of the true agent ratings, and of the test cases' difficulties
    share: float = 1.0  # of the (agent, test case) pairs played, at random
    outcome: str = "binary"
    n_agents: int = 30
    n_test_cases: int = 400
    difficulty: str = "normal"  # or "t3": Student's t with 3 degrees of freedom, scaled to sd
    discrimination: float = 0.0  # sd of log discrimination: 0 draws Rasch data, 0.5 the 2PL data
    truth: str = "latent"  # or "pseudo" (see the module)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, got {self.outcome!r}")
        if self.difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {', '.join(DIFFICULTIES)}, got {self.difficulty!r}")
        if self.truth not in ("latent", "pseudo"):
            raise ValueError(f"truth must be 'latent' or 'pseudo', got {self.truth!r}")
        if not 0.0 < self.share <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {self.share!r}")


@dataclass(frozen=True)
class Draw:
    """One simulated benchmark: the match table, its integer codes, the truth and each match's Fisher information."""

    matches: pd.DataFrame
    agent: np.ndarray  # per match
    test_case: np.ndarray
    true_agents: np.ndarray
    true_test_cases: np.ndarray
    discrimination: np.ndarray
    info: np.ndarray  # per match, about the agent's rating (Elo⁻²), at the truth


def _difficulties(regime: Regime, rng: np.random.Generator, n: int) -> np.ndarray:
    if regime.difficulty == "t3":
        return 1500.0 + regime.sd * rng.standard_t(3, n) / math.sqrt(3.0)  # t₃ has variance 3
    return rng.normal(1500.0, regime.sd, n)


def _outcomes(regime: Regime, p: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Scores drawn at success probabilities ``p``, and each match's Fisher information about its logit."""
    if regime.outcome == "binary":
        return (rng.random(len(p)) < p).astype(np.float64), p * (1.0 - p)
    k = rng.binomial(4, p)
    if regime.outcome == "graded":
        return k / 4.0, 4.0 * p * (1.0 - p)
    # Σ over the categories 0, 1, 2, ≥3 of (dP/dη)²/P, with dP_k/dη = P_k (k − 4p) for Binomial(4, p)
    pmf = np.stack([math.comb(4, j) * p**j * (1.0 - p) ** (4 - j) for j in range(5)])
    slope = pmf * (np.arange(5)[:, None] - 4.0 * p)
    with np.errstate(divide="ignore", invalid="ignore"):
        info = np.where(pmf[:3] > 0, slope[:3] ** 2 / pmf[:3], 0.0).sum(axis=0)
        top, top_slope = pmf[3] + pmf[4], slope[3] + slope[4]
        info += np.where(top > 0, top_slope**2 / top, 0.0)
    return np.minimum(k, 3) / 3.0, info


def draw(
    regime: Regime,
    seed: int,
    *,
    true_agents: np.ndarray | None = None,
    n_test_cases: int | None = None,
    share: float | None = None,
) -> Draw:
    """A benchmark of ``regime`` (``true_agents``, ``n_test_cases`` and ``share`` override it: the pseudo-truth's)."""
    rng = np.random.default_rng(seed)
    if true_agents is None:
        true_agents = rng.normal(1500.0, regime.sd, regime.n_agents)
    n_a, n_t = len(true_agents), regime.n_test_cases if n_test_cases is None else n_test_cases
    true_test_cases = _difficulties(regime, rng, n_t)
    discrimination = np.exp(rng.normal(0.0, regime.discrimination, n_t)) if regime.discrimination else np.ones(n_t)
    agent, test_case = np.tile(np.arange(n_a), n_t), np.repeat(np.arange(n_t), n_a)
    share = regime.share if share is None else share
    if share < 1.0:
        keep = rng.random(len(agent)) < share
        agent, test_case = agent[keep], test_case[keep]
    a = discrimination[test_case]
    p = 1.0 / (1.0 + 10.0 ** (-a * (true_agents[agent] - true_test_cases[test_case]) / 400.0))
    score, info_logit = _outcomes(regime, p, rng)
    t_names = np.array([f"tc_{i:06d}" for i in range(n_t)], dtype=object)
    a_names = np.array([f"agent_{j:05d}" for j in range(n_a)], dtype=object)
    matches = pd.DataFrame({"test_case_id": t_names[test_case], "agent_id": a_names[agent], "metric": score, "score": score})
    info = info_logit * (a * Q) ** 2
    return Draw(matches, agent, test_case, true_agents, true_test_cases, discrimination, info)


def _agent_components(agent: np.ndarray, test_case: np.ndarray, n_agents: int, n_test_cases: int) -> np.ndarray:
    graph = sparse.csr_array((np.ones(len(agent)), (agent, n_agents + test_case)), shape=(n_agents + n_test_cases,) * 2)
    return connected_components(graph, directed=False)[1][:n_agents]


def joint_mle_se(agent: np.ndarray, test_case: np.ndarray, info: np.ndarray, n_agents: int, n_test_cases: int) -> np.ndarray:
    """Standard error (Elo) of each agent's rating relative to its component's agents' mean, in the joint MLE.

    ``info``: each match's Fisher information about the agent's rating at the truth (that about the test
    case's is the same, the cross term its negative). The test cases are profiled out: the agents'
    information is the Schur complement S = D − W C⁻¹ Wᵀ (W: agents × test cases, C its column sums).
    S is singular along each component's common shift; adding that direction makes it invertible and
    leaves the contrasts' covariance unchanged.
    """
    w = sparse.csr_array((info, (agent, test_case)), shape=(n_agents, n_test_cases)).toarray()
    info_t = w.sum(axis=0)
    played = info_t > 0
    scaled = w[:, played] / np.sqrt(info_t[played])
    schur = np.diag(w.sum(axis=1)) - scaled @ scaled.T
    comp = _agent_components(agent, test_case, n_agents, n_test_cases)
    members = np.bincount(comp)
    indicator = (comp[:, None] == np.arange(len(members))[None, :]) / members  # each component's mean
    same = (comp[:, None] == comp[None, :]) / members[comp]  # i, j in one component: 1 / its size
    try:  # S⁺ itself: S + (the projector on its null space) inverts to S⁺ + the projector
        cov = linalg.cho_solve(linalg.cho_factor(schur + same, lower=True), np.eye(n_agents)) - same
    except linalg.LinAlgError:  # an agent without information (one it alone played): the pseudo-inverse
        cov = linalg.pinvh(schur)
    # Var(θ_i − mean of its component): the pseudo-inverse's rows need not sum to 0 where S has more null directions
    row_mean = (cov @ indicator)[np.arange(n_agents), comp]
    total = (np.bincount(comp, row_mean) / members)[comp]
    return np.sqrt(np.maximum(np.diag(cov) - 2.0 * row_mean + total, 0.0))


@dataclass(frozen=True)
class Replication:
    """One simulated benchmark, rated: per agent (those sharing a component with another) its interval against the truth."""

    covered: np.ndarray
    extreme: np.ndarray  # the best and the worst true agent of each component
    width_ratio: np.ndarray  # interval half-width / (z × the joint MLE's standard error)
    rank_covered: np.ndarray
    slope: float  # of estimated rating on true rating
    iterations: float  # of the fit (NaN: not asked, or a model without them)


def _per_component(values: np.ndarray, comp: np.ndarray, how) -> np.ndarray:
    out = np.empty_like(values, dtype=np.float64)
    for c in np.unique(comp):
        at = comp == c
        out[at] = how(values[at])
    return out


def _fit_settings(model: str, seed: int, level: float, rate_kwargs: dict) -> dict:
    return dict(
        model=model,
        seed=seed,
        level=level,
        with_reliability=False,
        snapshot_fractions=(1.0,),
        test_case_snapshot_fractions=(1.0,),
        **rate_kwargs,
    )


def replicate(
    regime: Regime,
    seed: int,
    *,
    model: str = "rasch",
    level: float = 0.95,
    iterations: bool = False,
    **rate_kwargs,
) -> Replication:
    """Draw one benchmark of ``regime``, rate it with ``rate(model=model, **rate_kwargs)`` and score its intervals.

    ``iterations``: also report the fit's iterations (a second fit of the same matches: the rating's own is not exposed).
    """
    from .frames import encode_matches
    from .intervals import z_of
    from .ratings import fitted_ratings, rate_encoded

    d = draw(regime, seed)
    settings = _fit_settings(model, seed, level, rate_kwargs)
    m = encode_matches(d.matches)
    agents = rate_encoded(m, settings, warn=False).agents
    idx = agents["agent_id"].str.slice(6).astype(int).to_numpy()
    truth = d.true_agents[idx]
    se = joint_mle_se(d.agent, d.test_case, d.info, regime.n_agents, regime.n_test_cases)[idx]
    if regime.truth == "pseudo":
        big = draw(regime, seed + 1, true_agents=d.true_agents, n_test_cases=PSEUDO_TEST_CASES, share=1.0)
        pseudo = fitted_ratings(encode_matches(big.matches), settings).agent_mu  # agents in code order: every one played
        se = se * np.polyfit(d.true_agents, pseudo, 1)[0]
        truth = pseudo[idx]
    fits = math.nan
    if iterations:
        fits = float(getattr(fitted_ratings(m, settings).state, "iterations", math.nan))
    comp = agents["component"].to_numpy()
    counted = np.bincount(comp)[comp] > 1
    mu, lo, hi = (agents[c].to_numpy()[counted] for c in ("mu", "mu_lo", "mu_hi"))
    truth, se, comp = truth[counted], se[counted], comp[counted]
    shifted = truth + _per_component(mu, comp, np.mean) - _per_component(truth, comp, np.mean)
    true_rank = _per_component(-truth, comp, lambda x: rankdata(x, method="min"))
    rank_lo, rank_hi = agents["rank_lo"].to_numpy()[counted], agents["rank_hi"].to_numpy()[counted]
    extreme = (truth == _per_component(truth, comp, np.max)) | (truth == _per_component(truth, comp, np.min))
    return Replication(
        covered=(lo <= shifted) & (shifted <= hi),
        extreme=extreme,
        width_ratio=(hi - lo) / (2.0 * z_of(level) * se),
        rank_covered=(rank_lo <= true_rank) & (true_rank <= rank_hi),
        slope=float(np.polyfit(truth, mu, 1)[0]),
        iterations=fits,
    )
