"""Do the 95 % rating intervals cover agents' true ratings when agents are spread widely, in dense and sparse designs?

Simulated benchmarks (30 agents × 400 test cases, true agent and test-case ratings N(1500, sd²),
Elo-logistic outcomes): see :mod:`agielo_dagster.rating.coverage` and ``benchmarks/coverage.py``
for the full grid. The margins are statistical: with 8 replications a regime scores 240 agent
intervals (binomial sd of a 95 % coverage about 1.4 points) and 16 extremes (sd about 5 points);
the thresholds sit about 2 sd below the targets' measured values, and above what sequential
Glicko alone gives (measured in the last test).
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import rate, simulate_matches
from agielo_dagster.rating.coverage import joint_mle_se, replicate
from agielo_dagster.rating.frames import encode_matches


def _study(sd, share, outcome, replications, **rate_kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reps = [replicate(sd, share, outcome, 1000 * r + 7, orders=4, **rate_kwargs) for r in range(replications)]
    return dict(
        cover=np.concatenate([r.covered for r in reps]).mean(),
        extremes=np.concatenate([r.covered[r.extreme] for r in reps]).mean(),
        rank=np.concatenate([r.rank_covered for r in reps]).mean(),
        width=np.median(np.concatenate([r.width_ratio for r in reps])),
        slope=np.mean([r.slope for r in reps]),
    )


@pytest.mark.parametrize(
    "sd, share, outcome",
    [
        pytest.param(600, 1.0, "binary", marks=pytest.mark.slow),
        (400, 0.1, "binary"),
        (800, 0.3, "graded"),
        (800, 0.1, "graded"),
    ],
)
def test_intervals_cover_widely_spread_agents(sd, share, outcome):
    """The issue's regime (sd 600, dense) and three harder ones: coverage ≥ 0.90 overall, extremes ≥ 0.85."""
    f = _study(sd, share, outcome, 8)
    assert f["cover"] >= 0.88, f  # target 0.90; measured 0.90–0.96 in these regimes
    assert f["extremes"] >= 0.80, f  # target 0.85; measured 0.88–1.00
    assert f["rank"] >= 0.99, f
    assert f["width"] <= 1.3, f  # against the joint MLE's standard error
    assert f["slope"] == pytest.approx(1.0, abs=0.06), f  # the scale: Glicko alone gives 0.67–0.87 here


def test_glicko_alone_undercovers_where_the_refinement_covers():
    """The problem the refinement solves, measured side by side on the same benchmarks (sd 600, dense)."""
    glicko = _study(600, 1.0, "binary", 3, refine=False)
    refined = _study(600, 1.0, "binary", 3, refine=True)
    assert glicko["cover"] < 0.6 and glicko["slope"] < 0.8
    assert refined["cover"] > 0.85 and abs(refined["slope"] - 1.0) < 0.06


@pytest.mark.parametrize("sd", [600, 800])
def test_near_separated_agents_are_covered_on_an_unbiased_scale(sd):
    """10 % of pairs, binary: the best agent beats almost every test case it plays (40 an agent).

    Firth's estimate pulls it in (slope 0.81–0.88 over 24 benchmarks); the conditional bootstrap
    de-biases it (rating/debias.py). Measured with 8 benchmarks at 4 orders (sd 600/800): cover 0.94/0.93,
    extremes 0.94/1.00, width 1.22/1.20, slope 0.98/1.04.
    """
    f = _study(sd, 0.1, "binary", 8)
    assert f["cover"] >= 0.88 and f["extremes"] >= 0.80 and f["rank"] >= 0.99, f
    assert f["width"] <= 1.3, f
    assert f["slope"] == pytest.approx(1.0, abs=0.06), f


@pytest.mark.slow
@pytest.mark.parametrize(
    "sd, share, outcome",
    [(sd, share, outcome) for sd in (200, 400, 600, 800) for share in (1.0, 0.3, 0.1) for outcome in ("binary", "graded")],
)
def test_intervals_cover_in_the_full_grid(sd, share, outcome):
    """The grid of ``benchmarks/coverage.py``."""
    f = _study(sd, share, outcome, 16)
    assert f["cover"] >= 0.88 and f["extremes"] >= 0.80 and f["rank"] >= 0.99, f
    assert f["width"] <= 1.3 and f["slope"] == pytest.approx(1.0, abs=0.06), f


def test_joint_mle_standard_error_is_the_inverse_information():
    """The yardstick: for one agent against known test cases it is 1/√(q²ΣE(1 − E)) in the limit of many agents."""
    rng = np.random.default_rng(3)
    agents = rng.normal(1500, 200, 40)
    cases = rng.normal(1500, 200, 300)
    matches = simulate_matches(cases, agents, seed=1)
    se = joint_mle_se(matches, cases, agents)
    q = np.log(10) / 400
    p = 1 / (1 + 10 ** ((cases[None, :] - agents[:, None]) / 400))
    known = 1 / np.sqrt(q * q * (p * (1 - p)).sum(axis=1))
    # profiling the test cases out costs a little information: a bit wider than against known test cases
    assert np.all(se >= known * 0.97) and np.median(se / known) == pytest.approx(1.0, abs=0.1)


def test_a_test_case_every_agent_solves_gets_a_finite_rating_from_the_prior():
    rng = np.random.default_rng(0)
    matches = simulate_matches(rng.normal(1500, 300, 200), rng.normal(1500, 300, 8), seed=1)
    easy = matches["test_case_id"] == "tc_000"
    matches.loc[easy, ["metric", "score"]] = 1.0
    result = rate(matches, seed=1, with_reliability=False, refine=True)
    tc = result.test_cases.set_index("test_case_id").loc["tc_000"]
    # every agent beat it: below every agent, finite, and its σ is the prior's at most
    assert np.isfinite(tc["mu"]) and tc["mu"] < result.agents["mu"].min()
    assert 0 < tc["sigma"] <= 350.0
    assert result.settings["refine"] is True


def test_an_agent_that_beats_every_rival_stays_finite():
    rng = np.random.default_rng(1)
    cases = rng.normal(1500, 200, 100)
    matches = simulate_matches(cases, np.array([1400.0, 1500.0, 1600.0, 5000.0]), seed=2)
    agents = rate(matches, seed=1, with_reliability=False, refine=True).agents.set_index("agent_id")
    best = agents.loc["agent_3"]
    assert matches.loc[matches["agent_id"] == "agent_3", "score"].eq(1.0).all()
    assert np.isfinite(best["mu"]) and np.isfinite(best["mu_hi"]) and best["rank"] == 1


def test_components_keep_their_own_scales():
    """Two groups sharing no test case: each refined on its own, each keeps its own component number."""
    rng = np.random.default_rng(2)
    a = simulate_matches(rng.normal(1500, 300, 150), rng.normal(1500, 300, 5), seed=3)
    b = simulate_matches(rng.normal(1500, 300, 150), rng.normal(1500, 300, 4), seed=4)
    b = b.assign(test_case_id="b_" + b["test_case_id"], agent_id="b_" + b["agent_id"])
    both = pd.concat([a, b], ignore_index=True)
    with pytest.warns(UserWarning, match="groups that share no test case"):
        joint = rate(both, seed=1, with_reliability=False, refine=True).agents.set_index("agent_id")
    alone = rate(a, seed=1, with_reliability=False, refine=True).agents.set_index("agent_id")
    assert set(joint["component"]) == {0, 1}
    # the first group's differences do not depend on the other group being there
    diffs = joint.loc[alone.index, "mu"] - joint.loc[alone.index, "mu"].mean()
    np.testing.assert_allclose(diffs, alone["mu"] - alone["mu"].mean(), atol=0.5)
    assert joint.loc[alone.index, "rank"].min() == 1 and joint.loc[~joint.index.isin(alone.index), "rank"].min() == 1


def test_refinement_is_the_default_but_for_the_papers_single_order_and_does_not_depend_on_the_orders():
    rng = np.random.default_rng(4)
    matches = simulate_matches(rng.normal(1500, 300, 100), rng.normal(1500, 300, 6), seed=5)
    # the paper's single order stays Glicko alone (it reproduces the published ratings); several orders are refined
    assert rate(matches, row_order=True, orders=1, with_reliability=False).settings["refine"] is False
    assert rate(matches, seed=3, orders=2, with_reliability=False).settings["refine"] is True
    glicko = rate(matches, seed=3, orders=4, refine=False, with_reliability=False).agents
    refined = rate(matches, seed=3, orders=4, with_reliability=False).agents
    np.testing.assert_array_equal(
        refined["mu"], rate(matches, seed=3, orders=4, refine=True, with_reliability=False).agents["mu"]
    )
    assert not np.allclose(glicko["mu"], refined["mu"])
    # the level is the Glicko scale's at the median agent
    assert np.median(glicko["mu"] - refined["mu"]) == pytest.approx(0.0, abs=1e-6)
    # the refined differences do not depend on the orders (only the Glicko start, hence the level, does): two seeds agree
    other = rate(matches, seed=4, orders=4, with_reliability=False).agents
    np.testing.assert_allclose(np.diff(refined["mu"]), np.diff(other["mu"]), atol=0.01)
    # even the paper's single order, refined, lands on the same differences
    single = rate(matches, row_order=True, orders=1, refine=True, with_reliability=False).agents
    np.testing.assert_allclose(np.diff(refined["mu"]), np.diff(single["mu"]), atol=0.01)


def test_too_many_agents_keeps_glicko_and_says_so(monkeypatch):
    from agielo_dagster.rating import refine

    monkeypatch.setattr(refine, "MAX_AGENTS", 4)
    rng = np.random.default_rng(6)
    matches = simulate_matches(rng.normal(1500, 300, 50), rng.normal(1500, 300, 6), seed=1)
    with pytest.warns(refine.RefinementSkippedWarning, match="6 agents \\(limit 4"):
        kept = rate(matches, seed=1, orders=2, refine=True, with_reliability=False).agents
    glicko = rate(matches, seed=1, orders=2, refine=False, with_reliability=False).agents
    np.testing.assert_array_equal(kept["mu"], glicko["mu"])
    with pytest.warns(refine.RefinementSkippedWarning):
        said = rate(matches, seed=1, orders=2, refine=True, with_reliability=False).settings
    assert said["refine"] is False  # what was done (and what reproduces it): placement then stays on the Glicko scale
    np.testing.assert_array_equal(kept["mu_lo"], glicko["mu_lo"])


def test_too_many_pairs_keeps_glicko_and_says_so(monkeypatch):
    """The cost rule: Σ_t n_t² (agent pairs sharing a test case) above ``MAX_PAIRS`` keeps the Glicko ratings."""
    from agielo_dagster.rating import refine

    rng = np.random.default_rng(6)
    matches = simulate_matches(rng.normal(1500, 300, 50), rng.normal(1500, 300, 6), seed=1)
    assert refine.pair_count(encode_matches(matches)) == 50 * 6 * 6
    monkeypatch.setattr(refine, "MAX_PAIRS", 50 * 6 * 6)
    refined = rate(matches, seed=1, orders=2, with_reliability=False).agents  # at the limit: refined
    monkeypatch.setattr(refine, "MAX_PAIRS", 50 * 6 * 6 - 1)
    with pytest.warns(refine.RefinementSkippedWarning, match="1,800 agent pairs sharing a test case \\(limit 1,799"):
        kept = rate(matches, seed=1, orders=2, with_reliability=False).agents
    glicko = rate(matches, seed=1, orders=2, refine=False, with_reliability=False).agents
    np.testing.assert_array_equal(kept["mu_lo"], glicko["mu_lo"])
    assert not np.allclose(refined["mu_lo"], glicko["mu_lo"])
