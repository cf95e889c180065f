"""Coverage studies: do the rating intervals cover agents' true ratings? For tests and ``benchmarks/coverage.py``.

A regime is a spread of true agent ratings (sd), a design (the share of (agent, test case) pairs
played) and an outcome (binary, or graded in quarters: Binomial(4, E)/4). True agent ratings and
true test-case ratings are both N(1500, sd²). Each replication draws new players and outcomes,
rates them, and compares every agent's interval with its true rating up to Elo's common shift
(the truth shifted to the estimated agents' mean, as the intervals are relative to it).

The yardstick for the widths is the standard error of a correctly specified joint
maximum-likelihood fit of the same design: the inverse Fisher information of every agent and
test-case rating at the true ratings (binomial information, 4 trials for graded outcomes),
with the test cases profiled out (the Schur complement) and each agent taken relative to the
agents' mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from ._kernels import Q
from .simulate import simulate_matches

__all__ = ["Replication", "joint_mle_se", "replicate"]


@dataclass(frozen=True)
class Replication:
    """One simulated benchmark, rated: per agent whether its interval covered the truth, and more."""

    covered: np.ndarray
    extreme: np.ndarray  # the best and the worst true agent
    width_ratio: np.ndarray  # interval half-width / (z × the joint MLE's standard error)
    rank_covered: np.ndarray
    slope: float  # of estimated rating on true rating


def joint_mle_se(matches, true_test_cases: np.ndarray, true_agents: np.ndarray, trials: int = 1) -> np.ndarray:
    """Standard error of each agent's rating (relative to the agents' mean) in the joint MLE, at the true ratings."""
    a = matches["agent_id"].str.slice(6).astype(int).to_numpy()
    t = matches["test_case_id"].str.slice(3).astype(int).to_numpy()
    n_a = len(true_agents)
    p = 1.0 / (1.0 + 10.0 ** ((true_test_cases[t] - true_agents[a]) / 400.0))
    w = trials * Q * Q * p * (1.0 - p)
    info_t = np.bincount(t, w, len(true_test_cases))
    played = info_t > 0
    # Schur complement: I_aa − I_at I_tt⁻¹ I_ta, I_tt diagonal
    wa_t = np.zeros((n_a, len(true_test_cases)))
    np.add.at(wa_t, (a, t), w)
    schur = np.diag(wa_t.sum(axis=1)) - (wa_t[:, played] / info_t[played]) @ wa_t[:, played].T
    cov = np.linalg.pinv(schur)  # the agents' contrasts (the common shift is not identified)
    centre = np.eye(n_a) - 1.0 / n_a
    return np.sqrt(np.diag(centre @ cov @ centre))


def replicate(
    sd: float,
    coverage: float,
    outcome: str,
    seed: int,
    *,
    n_agents: int = 30,
    n_test_cases: int = 400,
    level: float = 0.95,
    **rate_kwargs,
) -> Replication:
    """Draw one benchmark of the regime, rate it with :func:`rate` (``rate_kwargs``), and score its intervals."""
    from .intervals import z_of
    from .ratings import rate

    rng = np.random.default_rng(seed)
    true_agents = rng.normal(1500.0, sd, n_agents)
    true_test_cases = rng.normal(1500.0, sd, n_test_cases)
    matches = simulate_matches(true_test_cases, true_agents, seed=seed + 1, outcome=outcome, coverage=coverage)
    agents = rate(matches, seed=seed, with_reliability=False, level=level, **rate_kwargs).agents
    idx = agents["agent_id"].str.slice(6).astype(int).to_numpy()
    truth = true_agents[idx]
    mu, lo, hi = (agents[c].to_numpy() for c in ("mu", "mu_lo", "mu_hi"))
    shifted = truth + (mu.mean() - truth.mean())
    true_rank = rankdata(-truth, method="min")
    se = joint_mle_se(matches, true_test_cases, true_agents, 4 if outcome == "graded" else 1)[idx]
    return Replication(
        covered=(lo <= shifted) & (shifted <= hi),
        extreme=(truth == truth.max()) | (truth == truth.min()),
        width_ratio=(hi - lo) / (2.0 * z_of(level) * se),
        rank_covered=(agents["rank_lo"].to_numpy() <= true_rank) & (true_rank <= agents["rank_hi"].to_numpy()),
        slope=float(np.polyfit(truth, mu, 1)[0]),
    )
