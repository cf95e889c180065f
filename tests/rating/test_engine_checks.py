"""Engine input checks (issue 22, item 7): the starting rating, disconnected groups, and scores against the scoring."""

import warnings

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import (
    DisconnectedMatchesWarning,
    MatchTableError,
    bootstrap,
    check_scores,
    hodge_rank,
    minmax,
    place_agents,
    place_on_subset,
    plackett_luce,
    query_ranking,
    rate,
    robustness,
    simulate_matches,
)


@pytest.fixture(scope="module")
def two_groups():
    """Two groups of three agents each, on test cases the other group never meets."""
    first = simulate_matches(np.linspace(1300, 1700, 40), np.array([1400.0, 1500.0, 1600.0]), seed=0)
    second = simulate_matches(np.linspace(1300, 1700, 40), np.array([1400.0, 1500.0, 1600.0]), seed=1)
    second = second.assign(test_case_id="other_" + second["test_case_id"], agent_id="other_" + second["agent_id"])
    return pd.concat([first, second], ignore_index=True)


ESTIMATORS = {
    "plackett_luce": lambda m: plackett_luce(m, alpha=0.5),
    "bootstrap": lambda m: bootstrap(m, n_resamples=2, plackett_luce=True),
    "robustness": lambda m: robustness(m, fractions=(0.0,), repeats=1),
    "query_ranking": lambda m: query_ranking(m, resamples=0),
    "rate": lambda m: rate(m, orders=2, with_reliability=False),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_warns_that_disconnected_groups_share_no_scale(two_groups, name):
    with pytest.warns(DisconnectedMatchesWarning, match="2 groups that share no test case") as caught:
        ESTIMATORS[name](two_groups)
    assert name in str(caught[0].message)  # the warning names the estimator
    assert caught[0].filename == __file__  # and points at the caller's line
    connected = two_groups[~two_groups["agent_id"].str.startswith("other_")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DisconnectedMatchesWarning)
        ESTIMATORS[name](connected)


def test_hodge_rank_warns_when_the_judgments_fall_apart():
    judgments = pd.DataFrame({"item_a": ["a", "c"], "item_b": ["b", "d"], "winner": ["a", "b"]})
    with pytest.warns(DisconnectedMatchesWarning, match="share no judgment"):
        hodge_rank(judgments)


@pytest.mark.parametrize(
    ("init_mu", "init_sigma", "message"),
    [
        (1500.0, 1e6, "init_sigma 1e\\+06 is outside \\(0, 1000\\]"),
        (1500.0, 0.0, "init_sigma 0 is outside"),
        (1500.0, float("nan"), "init_sigma nan is outside"),
        (1e7, 350.0, "init_mu 1e\\+07 is outside \\[-10000, 10000\\]"),
        (float("inf"), 350.0, "init_mu inf is outside"),
    ],
)
def test_the_starting_rating_is_bounded_everywhere(two_groups, init_mu, init_sigma, message):
    # init_sigma = 1e6 used to give ratings near 250,000 on a graded benchmark
    matches = two_groups[~two_groups["agent_id"].str.startswith("other_")]
    with pytest.raises(ValueError, match=message):
        rate(matches, init_mu=init_mu, init_sigma=init_sigma)
    test_cases = rate(matches, orders=2, with_reliability=False).test_cases
    with pytest.raises(ValueError, match=message):
        place_agents(matches, test_cases, init_mu=init_mu, init_sigma=init_sigma)
    with pytest.raises(ValueError, match=message):
        place_on_subset(matches, test_cases, init_mu=init_mu, init_sigma=init_sigma)


def test_the_widest_allowed_start_keeps_ratings_on_the_elo_scale(two_groups):
    matches = two_groups[~two_groups["agent_id"].str.startswith("other_")]
    agents = rate(matches, init_sigma=1000.0, init_mu=0.0, orders=2, with_reliability=False).agents
    assert agents["mu"].abs().max() < 2000


def test_check_scores_names_the_row_whose_score_is_not_f_of_metric(diabetes_benchmark):
    scoring = minmax(0.0, 350.0, higher_is_better=False)
    check_scores(diabetes_benchmark, scoring)  # the real benchmark is consistent
    bad = diabetes_benchmark.copy()
    bad.loc[7, "score"] = 1.0 - bad.loc[7, "score"]  # scored as if higher were better
    bad.loc[9, "score"] = 0.5
    with pytest.raises(MatchTableError) as info:
        check_scores(bad, scoring)
    assert info.value.rule == "score_is_f_of_metric" and info.value.row == 7 and info.value.column == "score"
    message = str(info.value)
    assert "row 7" in message and "2 row(s)" in message and "minmax" in message
    with pytest.raises(MatchTableError, match="metric_in_range"):
        check_scores(bad.assign(metric=bad["metric"] + 400.0), scoring)
