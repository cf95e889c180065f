"""Each test case's discrimination and flag (issue 40): every flag on a small constructed benchmark, every model,
and the benchmarks where a flag cannot be given say why."""

import importlib

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import DisconnectedMatchesWarning, minmax, rate
from agielo_dagster.rating.simulate import simulate_matches

QUICK = dict(with_reliability=False, snapshot_fractions=(1.0,), test_case_snapshot_fractions=(1.0,))


def _benchmark(n_agents=30, n_test_cases=40, *, outcome="binary", reversed_=(), noise=(), seed=0) -> pd.DataFrame:
    """Agents 400 Elo apart on average; the test cases ``reversed_`` score 1 − S for every agent (a wrong reference
    answer), those in ``noise`` a coin flip whatever the agent."""
    rng = np.random.default_rng(seed)
    agents = np.linspace(900, 2100, n_agents)
    test_cases = rng.uniform(1200, 1800, n_test_cases)
    m = simulate_matches(test_cases, agents, seed=seed + 1, outcome=outcome)
    names = m["test_case_id"].str.slice(3).astype(int)
    flip = names.isin(reversed_)
    m.loc[flip, "score"] = 1.0 - m.loc[flip, "score"]
    coin = names.isin(noise)
    m.loc[coin, "score"] = rng.integers(0, 2, coin.sum()).astype(float)
    m["metric"] = m["score"]
    return m


def _cases(matches, **settings) -> pd.DataFrame:
    return rate(matches, **QUICK, **settings).test_cases.set_index("test_case_id")


@pytest.mark.parametrize("model", ["rasch", "2pl", "glicko"])
def test_a_reversed_test_case_is_likely_mislabeled_under_every_model(model):
    cases = _cases(_benchmark(60, reversed_=(7,)), model=model)
    assert list(cases.index[cases["flag"] == "likely_mislabeled"]) == ["tc_07"]
    row = cases.loc["tc_07"]
    assert row["discrimination_hi"] < 0.0 and row["discrimination_lo"] < row["discrimination"]
    assert "strongest agents pass" in row["flag_reason"] and "reference answer or the scoring" in row["flag_reason"]
    # the others are typical: their discriminations near 1
    assert cases.drop("tc_07")["discrimination"].median() == pytest.approx(1.0, abs=0.35)


def test_a_test_case_every_agent_solves_is_saturated_and_one_none_solves_unsolved():
    m = _benchmark()
    m.loc[m["test_case_id"] == "tc_01", "score"] = 1.0
    m.loc[m["test_case_id"] == "tc_02", "score"] = 0.0
    cases = _cases(m)
    assert cases.loc["tc_01", "flag"] == "saturated" and "all 30 agents succeed" in cases.loc["tc_01", "flag_reason"]
    assert cases.loc["tc_02", "flag"] == "unsolved" and "none of its 30 agents" in cases.loc["tc_02", "flag_reason"]
    assert np.isfinite(cases.loc[["tc_01", "tc_02"], "discrimination"]).all()


def test_results_that_do_not_follow_the_ratings_are_uninformative_where_enough_agents_tell():
    # 200 agents: a typical test case's discrimination would clear 0; a coin flip's does not
    cases = _cases(_benchmark(200, 20, noise=(3,)))
    assert cases.loc["tc_03", "flag"] == "uninformative"
    assert "do not follow the agents' ratings" in cases.loc["tc_03", "flag_reason"]
    assert (cases.drop("tc_03")["flag"] == "").all()
    # 30 agents cannot tell a coin flip from a typical test case: not flagged, and the reason says so
    few = _cases(_benchmark(30, 20, noise=(3,)))
    assert few.loc["tc_03", "flag"] == "" and "not enough information" in few.loc["tc_03", "flag_reason"]


def test_one_agent_rates_and_says_why_its_test_cases_cannot_be_judged():
    m = _benchmark(1, 6)
    m["score"] = [1.0, 0.0, 1.0, 0.0, 0.5, 1.0]
    cases = _cases(m)
    assert list(cases["flag"]) == ["saturated", "unsolved", "saturated", "unsolved", "", "saturated"]
    graded = _cases(m.assign(score=[0.2, 0.4, 0.3, 0.9, 0.5, 0.7]))
    assert (graded["flag"] == "").all()
    assert graded["flag_reason"].str.contains("only 1 agent played it").all()


def test_all_equal_results_rate_and_flag_every_test_case():
    m = _benchmark(10, 8)
    assert (_cases(m.assign(score=1.0, metric=1.0))["flag"] == "saturated").all()
    half = _cases(m.assign(score=0.5, metric=0.5))
    assert (half["flag"] == "uninformative").all()
    assert half["flag_reason"].str.contains("all 10 agents score 0.5 on it").all()


def test_a_lower_is_better_graded_metric_flags_the_reversed_test_case():
    m = _benchmark(outcome="graded", reversed_=(5,))
    m["metric"] = 10.0 * (1.0 - m["score"])  # an error: lower is better
    m["score"] = minmax(0.0, 10.0, higher_is_better=False).scores(m["metric"].to_numpy())
    cases = _cases(m)
    assert list(cases.index[cases["flag"] == "likely_mislabeled"]) == ["tc_05"]
    assert "strongest agents score" in cases.loc["tc_05", "flag_reason"]  # graded: mean scores, not passes


def test_a_disconnected_benchmark_judges_each_component_on_its_own_ratings():
    a = _benchmark(30, 20, reversed_=(4,))
    b = _benchmark(2, 3, seed=5)
    b["agent_id"] = "other_" + b["agent_id"]
    b["test_case_id"] = "other_" + b["test_case_id"]
    with pytest.warns(DisconnectedMatchesWarning):
        cases = _cases(pd.concat([a, b], ignore_index=True))
    assert list(cases.index[cases["flag"] == "likely_mislabeled"]) == ["tc_04"]
    other = cases.loc[cases.index.str.startswith("other_")]
    assert other["flag_reason"].ne("").all()  # 2 agents: flagged as saturated/unsolved, or why not judged


def test_the_flags_do_not_depend_on_the_row_order():
    m = _benchmark(reversed_=(7,), outcome="graded")
    first = _cases(m)
    again = _cases(m.sample(frac=1.0, random_state=3))
    pd.testing.assert_frame_equal(first, again.loc[first.index])


@pytest.mark.parametrize("outcome", ["binary", "graded"])
def test_a_wide_benchmark_judged_in_blocks_gets_the_verdicts_of_one_pass(monkeypatch, outcome):
    quality = importlib.import_module("agielo_dagster.rating.item_quality")
    m = _benchmark(60, 40, outcome=outcome, reversed_=(7,), noise=(3,))
    m.loc[m["test_case_id"] == "tc_01", "score"] = 1.0
    whole = _cases(m)
    blocks, judge = [], quality._block
    monkeypatch.setattr(quality, "BLOCK", 7)
    monkeypatch.setattr(quality, "_block", lambda data, *rest: blocks.append(data.n_test_cases) or judge(data, *rest))
    pd.testing.assert_frame_equal(_cases(m), whole)
    assert blocks == [7, 7, 7, 7, 7, 5]
