"""Do the default model's 95 % rating intervals cover agents' true ratings?

Simulated benchmarks (:mod:`agielo_dagster.rating.coverage`; the whole grid is ``benchmarks/coverage_grid.py``).
The margins are statistical: 8 replications of 30 agents score 240 intervals; the intervals of one
benchmark share its test cases, so they are taken as worth half as many independent ones (a design
effect of 2), and a coverage may fall 3 of its standard errors below the level: 0.95 − 3·√(2·0.95·0.05/240)
≈ 0.89. The slope's and the width's margins are 3 of their sds over 8 replications, measured.
"""

import math
import warnings

import numpy as np
import pytest

from agielo_dagster.rating import rate, simulate_matches
from agielo_dagster.rating.coverage import Regime, draw, joint_mle_se, replicate

LEVEL = 0.95


def _study(regime: Regime, replications: int, **rate_kwargs) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reps = [replicate(regime, 1000 * r + 7, level=LEVEL, **rate_kwargs) for r in range(replications)]
    covered = np.concatenate([r.covered for r in reps])
    return dict(
        n=len(covered),
        cover=covered.mean(),
        extremes=np.concatenate([r.covered[r.extreme] for r in reps]).mean(),
        rank=np.concatenate([r.rank_covered for r in reps]).mean(),
        width=np.median(np.concatenate([r.width_ratio for r in reps])),
        slope=np.mean([r.slope for r in reps]),
    )


def _lowest_coverage(n: int, design_effect: float = 2.0) -> float:
    return LEVEL - 3.0 * math.sqrt(design_effect * LEVEL * (1.0 - LEVEL) / n)


@pytest.mark.parametrize(
    "regime",
    [Regime(sd=400), Regime(sd=400, share=0.1), Regime(sd=600, share=0.3, outcome="graded")],
    ids=["dense binary", "10% binary", "30% graded"],
)
def test_intervals_cover_at_their_level(regime):
    """Measured with 20 replications: cover 0.97/0.95/0.94, width 1.00/0.87/0.97, slope 1.00/1.00/1.01."""
    f = _study(regime, 8)
    assert f["cover"] >= _lowest_coverage(f["n"]), f
    assert f["rank"] >= 0.99, f
    assert 0.8 <= f["width"] <= 1.15, f  # against a correctly specified joint MLE: as efficient, not wider
    assert f["slope"] == pytest.approx(1.0, abs=0.05), f


@pytest.mark.slow
@pytest.mark.parametrize(
    "regime",
    [
        Regime(n_agents=100, n_test_cases=24),
        Regime(share=0.05, n_agents=100, n_test_cases=2000),
        Regime(sd=400, outcome="ceiling", truth="pseudo"),
        Regime(discrimination=0.5, truth="pseudo"),
    ],
    ids=["few test cases", "5% of pairs", "ceiling, pseudo-truth", "2PL data, pseudo-truth"],
)
def test_intervals_cover_beyond_the_tuned_grid(regime):
    """Few test cases, a sparse design, and two misspecified outcomes judged against what the model estimates."""
    f = _study(regime, 8)
    assert f["cover"] >= _lowest_coverage(f["n"]), f
    assert f["width"] <= 1.3 and f["slope"] == pytest.approx(1.0, abs=0.05), f


def test_glicko_undercovers_where_the_model_covers():
    """Why the default is a joint model: the same benchmarks (sd 600, dense), side by side."""
    regime = Regime(sd=600)
    glicko = _study(regime, 3, model="glicko", orders=4, workers=1)
    model = _study(regime, 3)
    assert glicko["cover"] < 0.6 and glicko["slope"] < 0.8, glicko
    assert model["cover"] >= _lowest_coverage(model["n"]) and abs(model["slope"] - 1.0) < 0.05, model


def test_joint_mle_standard_error_is_the_inverse_information():
    """The yardstick: for one agent against known test cases it is 1/√(q²ΣE(1 − E)) in the limit of many agents."""
    rng = np.random.default_rng(3)
    agents = rng.normal(1500, 200, 40)
    cases = rng.normal(1500, 200, 300)
    a, t = np.tile(np.arange(40), 300), np.repeat(np.arange(300), 40)
    q = np.log(10) / 400
    p = 1 / (1 + 10 ** ((cases[t] - agents[a]) / 400))
    se = joint_mle_se(a, t, q * q * p * (1 - p), 40, 300)
    p = 1 / (1 + 10 ** ((cases[None, :] - agents[:, None]) / 400))
    known = 1 / np.sqrt(q * q * (p * (1 - p)).sum(axis=1))
    # profiling the test cases out costs a little information: a bit wider than against known test cases
    assert np.all(se >= known * 0.97) and np.median(se / known) == pytest.approx(1.0, abs=0.1)


def test_joint_mle_standard_errors_are_per_component():
    """Two groups sharing no test case: each agent's error is relative to its own group's mean, as the intervals are."""
    one = draw(Regime(n_agents=6, n_test_cases=200), 1)
    a = np.concatenate([one.agent, one.agent + 6])
    t = np.concatenate([one.test_case, one.test_case + 200])
    info = np.concatenate([one.info, one.info])
    both = joint_mle_se(a, t, info, 12, 400)
    alone = joint_mle_se(one.agent, one.test_case, one.info, 6, 200)
    np.testing.assert_allclose(both, np.concatenate([alone, alone]), rtol=1e-9)


def test_a_ceiling_keeps_less_information_than_the_graded_score():
    """The yardstick's information for scores out of 3 of 4 trials: all of the graded score's where the ceiling is
    out of reach, next to none where nearly every score hits it (less than one binary trial's)."""
    binary, graded, ceiling = (draw(Regime(outcome=o), 2) for o in ("binary", "graded", "ceiling"))
    np.testing.assert_array_equal(binary.true_agents, ceiling.true_agents)
    np.testing.assert_allclose(graded.info, 4 * binary.info)
    p = 1 / (1 + 10 ** ((ceiling.true_test_cases[ceiling.test_case] - ceiling.true_agents[ceiling.agent]) / 400))
    assert np.all(ceiling.info <= graded.info * (1 + 1e-12))
    np.testing.assert_allclose(ceiling.info[p < 0.01], graded.info[p < 0.01], rtol=1e-3)
    assert np.all(ceiling.info[p > 0.98] < binary.info[p > 0.98])
    assert ceiling.matches["score"].isin([0, 1 / 3, 2 / 3, 1]).all() and (ceiling.matches["score"] == 1).mean() > 0.3


def test_regimes_are_checked():
    with pytest.raises(ValueError, match="outcome must be one of binary, graded, ceiling"):
        Regime(outcome="quarters")
    with pytest.raises(ValueError, match="share must be in"):
        Regime(share=0.0)


def test_a_test_case_every_agent_solves_gets_a_finite_rating_from_the_prior():
    rng = np.random.default_rng(0)
    matches = simulate_matches(rng.normal(1500, 300, 200), rng.normal(1500, 300, 8), seed=1)
    easy = matches["test_case_id"] == "tc_000"
    matches.loc[easy, ["metric", "score"]] = 1.0
    result = rate(matches, with_reliability=False)
    tc = result.test_cases.set_index("test_case_id").loc["tc_000"]
    # every agent beat it: below every agent, finite, with a finite σ
    assert np.isfinite(tc["mu"]) and tc["mu"] < result.agents["mu"].min()
    assert 0 < tc["sigma"] < 1000.0


def test_an_agent_that_beats_every_test_case_stays_finite():
    rng = np.random.default_rng(1)
    cases = rng.normal(1500, 200, 100)
    matches = simulate_matches(cases, np.array([1400.0, 1500.0, 1600.0, 5000.0]), seed=2)
    agents = rate(matches, with_reliability=False).agents.set_index("agent_id")
    best = agents.loc["agent_3"]
    assert matches.loc[matches["agent_id"] == "agent_3", "score"].eq(1.0).all()
    assert np.isfinite(best["mu"]) and np.isfinite(best["mu_hi"]) and best["rank"] == 1
