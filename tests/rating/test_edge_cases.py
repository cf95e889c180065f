"""Edge cases: repeated matches, disconnected match graphs, shares beaten below the easiest case, σ-aware predictions."""

import warnings

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import (
    DisconnectedMatchesWarning,
    MatchTableError,
    binned_calibration,
    bootstrap,
    combined_sigma,
    competency_gaps,
    expected_metric,
    expected_score,
    g,
    hard_cases,
    heldout_check,
    pairwise_wins,
    place_agents,
    plackett_luce,
    rate,
    robustness,
    share_beaten,
    simulate_matches,
)


def _with_repeat():
    rng = np.random.default_rng(0)
    matches = simulate_matches(rng.normal(1500, 200, 30), [1400.0, 1600.0, 1800.0], seed=2)
    repeat = matches.iloc[[7]].assign(metric=0.0, score=0.0)  # the same (agent, test case) again, another result
    return pd.concat([matches.iloc[:40], repeat, matches.iloc[40:]], ignore_index=True)


ESTIMATORS = {
    "rate": lambda m: rate(m),
    "rate_glicko": lambda m: rate(m, model="glicko"),
    "plackett_luce": lambda m: plackett_luce(m, alpha=0.5),
    "pairwise_wins": lambda m: pairwise_wins(m),
    "bootstrap": lambda m: bootstrap(m, n_resamples=3),
    "robustness": lambda m: robustness(m, methods="mean_metric", fractions=(0.0,), repeats=1),
    "heldout_check": lambda m: heldout_check(m, folds=2),
    "binned_calibration": lambda m: binned_calibration(
        m, pd.DataFrame({"test_case_id": [], "mu": []}), pd.DataFrame({"agent_id": [], "mu": []})
    ),
    "place_agents": lambda m: place_agents(m, pd.DataFrame({"test_case_id": m["test_case_id"].unique(), "mu": 1500.0})),
}


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_a_repeated_match_is_an_error_naming_both_rows_in_every_estimator(estimator):
    matches = _with_repeat()
    with pytest.raises(MatchTableError) as err:
        ESTIMATORS[estimator](matches)
    assert err.value.rule == "match_unique"
    assert err.value.rows == (7, 40) and err.value.row == 40
    assert "rows 7 and 40" in str(err.value) and "1 repeated row" in str(err.value)
    assert f"{matches.loc[7, 'agent_id']!r}" in str(err.value) and f"{matches.loc[7, 'test_case_id']!r}" in str(err.value)


def test_repeats_are_counted_and_the_earliest_is_named():
    matches = _with_repeat()
    more = pd.concat([matches, matches.iloc[[3, 3]]], ignore_index=True)  # rows 91 and 92 repeat row 3
    with pytest.raises(MatchTableError, match=r"rows 7 and 40: .*\(3 repeated row"):
        rate(more)
    with pytest.raises(MatchTableError, match=r"rows 3 and 90: .*\(2 repeated row"):
        rate(more.drop(index=40).reset_index(drop=True))  # rows are positions: row 91 is now row 90


def _two_groups():
    """Two benchmarks in one table: agents a*, test cases p* and agents b*, test cases q*, nothing shared."""
    rng = np.random.default_rng(5)
    left = simulate_matches(rng.normal(1500, 200, 60), [1300.0, 1700.0, 1900.0], seed=1)
    right = simulate_matches(rng.normal(1500, 200, 40), [1200.0, 1500.0], seed=2)
    left = left.assign(test_case_id="p_" + left["test_case_id"], agent_id="a_" + left["agent_id"])
    right = right.assign(test_case_id="q_" + right["test_case_id"], agent_id="b_" + right["agent_id"])
    return pd.concat([left, right], ignore_index=True)


def test_disconnected_matches_are_found_reported_and_ranked_apart():
    matches = _two_groups()
    with pytest.warns(DisconnectedMatchesWarning, match="2 groups that share no test case"):
        result = rate(matches, seed=1)
    assert result.n_components == 2
    agents = result.agents.set_index("agent_id")
    assert agents.loc[["a_agent_0", "a_agent_1", "a_agent_2"], "component"].eq(0).all()  # the larger group is 0
    assert agents.loc[["b_agent_0", "b_agent_1"], "component"].eq(1).all()
    assert result.component_of("test_case").loc["q_tc_00"] == 1
    # ranks compare within a group: each group has its own first
    assert agents.loc["a_agent_2", "rank"] == 1 and agents.loc["b_agent_1", "rank"] == 1
    assert agents.groupby("component")["rank_hi"].max().tolist() == [3, 2]


def test_gaps_never_cross_components():
    matches = _two_groups()
    with pytest.warns(DisconnectedMatchesWarning):
        result = rate(matches, seed=1)
    gaps = competency_gaps(result.test_cases, result.agents).set_index("agent_id")
    tc = result.test_cases
    hardest = tc.groupby("component")["mu"].max()
    assert gaps.loc["b_agent_0", "hardest_test_case_rating"] == hardest[1]
    assert gaps.loc["a_agent_0", "hardest_test_case_rating"] == hardest[0]
    assert gaps.loc["b_agent_1", "pct_beaten_50"] == pytest.approx(
        share_beaten(gaps.loc["b_agent_1", "rating"], tc[tc.component == 1]["mu"])
    )
    assert set(gaps["component"]) == {0, 1}
    # an agent whose group has no test case in the table is refused
    with pytest.raises(MatchTableError, match="component_known"):
        competency_gaps(tc[tc.component == 0], result.agents)


def test_a_connected_table_does_not_warn(demo_breast_cancer):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DisconnectedMatchesWarning)
        result = rate(demo_breast_cancer, seed=1, with_reliability=False)
    assert result.n_components == 1 and result.agents["component"].eq(0).all()


def test_share_beaten_is_zero_below_the_easiest_test_case():
    ratings = [1200.0, 1500.0, 1800.0, 2100.0]
    assert share_beaten(1199.0, ratings) == 0.0
    assert share_beaten(1200.0, ratings) == 25.0  # beats the easiest one
    assert share_beaten(5000.0, ratings) == 100.0
    assert share_beaten(900.0, [1000.0]) == 0.0  # one test case: 0, not 100
    np.testing.assert_allclose(share_beaten([1000.0, 1350.0], ratings), [0.0, 37.5])
    agents = pd.DataFrame({"agent_id": ["weak"], "mu": [1000.0]})
    gaps = competency_gaps(pd.DataFrame({"test_case_id": list("abcd"), "mu": ratings}), agents)
    assert gaps["pct_beaten_50"].iloc[0] == 0.0 and gaps["pct_beaten_91"].iloc[0] == 0.0


def test_sigma_aware_expected_score():
    # positional calls keep working, and σ = 0 is the plain prediction
    assert expected_score(1700, 1500) == expected_score(1700, 1500, sigma=0.0)
    diff, sigma = 200.0, 150.0
    assert expected_score(1500 + diff, 1500, sigma=sigma) == pytest.approx(1 / (1 + 10 ** (-g(sigma) * diff / 400)))
    # uncertainty pulls predictions towards ½, symmetrically
    plain, aware = expected_score(1900, 1500), expected_score(1900, 1500, sigma=300.0)
    assert 0.5 < aware < plain
    assert expected_score(1500, 1900, sigma=300.0) == pytest.approx(1 - aware)
    assert combined_sigma(30.0, 40.0) == pytest.approx(50.0)
    from agielo_dagster.rating import minmax

    s = minmax(0.0, 10.0, higher_is_better=False)
    assert expected_metric(1900, 1500, s, sigma=300.0) == pytest.approx(10 - 10 * aware)
    tc = pd.DataFrame({"test_case_id": ["x", "y"], "mu": [1500.0, 1900.0], "sigma": [10.0, 400.0]})
    out = hard_cases(tc, 1700.0, 0.45, agent_sigma=50.0)
    assert out["expected_score"].iloc[0] == pytest.approx(expected_score(1700.0, 1900.0, sigma=combined_sigma(50.0, 400.0)))
    with pytest.raises(MatchTableError, match="sigma"):
        hard_cases(tc.drop(columns="sigma"), 1700.0, 0.45, agent_sigma=50.0)


def test_a_test_case_table_listing_an_id_twice_is_refused_by_selection_and_placement():
    from agielo_dagster.rating import MatchTableError, place_agents, select_test_cases

    frozen = pd.DataFrame({"test_case_id": ["t1", "t2", "t1"], "mu": [1400.0, 1500.0, 1600.0], "sigma": [50.0, 50.0, 50.0]})
    new = pd.DataFrame({"test_case_id": ["t1", "t2"], "agent_id": ["x", "x"], "metric": [1.0, 0.0], "score": [1.0, 0.0]})
    for call in (lambda: select_test_cases(frozen, 2), lambda: place_agents(new, frozen)):
        with pytest.raises(MatchTableError, match=r"lists 't1' more than once \(rule: test_case_unique\)") as caught:
            call()
        assert caught.value.rule == "test_case_unique"
