"""Players with known true ratings: the engine must recover them."""

import numpy as np
import pytest
from scipy.stats import linregress, spearmanr

from agielo_dagster.rating import competency_gaps, rate, simulate_matches


@pytest.fixture(scope="module")
def study():
    rng = np.random.default_rng(2024)
    true_tc = rng.normal(1500, 300, 4000)
    true_agents = np.linspace(1200, 2000, 12)
    matches = simulate_matches(true_tc, true_agents, seed=7)
    return true_tc, true_agents, matches, rate(matches)


def test_agent_ranks_are_recovered(study):
    _, true_agents, _, result = study
    assert spearmanr(result.agents["mu"], true_agents)[0] >= 0.99


def test_rating_scale_is_recovered(study):
    true_tc, true_agents, _, result = study
    assert linregress(true_agents, result.agents["mu"]).slope == pytest.approx(1.0, abs=0.1)
    # 12 binary matches per test case: noisy but clearly ordered
    assert spearmanr(result.test_cases["mu"], true_tc)[0] >= 0.85


def test_predicted_performance_matches_empirical(study):
    *_, result = study
    final = result.reliability.iloc[-1]
    assert final["fraction"] == 1.0
    assert final["mae"] <= 0.05
    assert final["rho_agents"] == pytest.approx(1.0)


def test_gap_of_the_best_agent_reflects_the_true_hardest_case(study):
    true_tc, true_agents, _, result = study
    best = competency_gaps(result.test_cases, result.agents).iloc[0]
    # the rated hardest case overshoots the true one (few matches, extreme outcomes), but the order is right
    assert best["gap_50"] > 0
    assert best["rating"] == pytest.approx(true_agents.max(), abs=60)
