"""Capability slices and capability queries: a slice that is truly harder for one agent shows as such."""

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import MatchTableError, query_ranking, rate, slice_ratings
from agielo_dagster.rating.slices import SLICE_COLUMNS, slice_test_cases

AGENTS = np.array([1300.0, 1450.0, 1600.0, 1750.0, 1900.0])
WEAK_AGENT, WEAK_SUBJECT, PENALTY = "agent_3", "math", 500.0


@pytest.fixture(scope="module")
def benchmark():
    """600 test cases in three subjects; agent_3 is 500 points weaker on math only."""
    rng = np.random.default_rng(0)
    n = 600
    ids = np.array([f"tc{i:03d}" for i in range(n)], dtype=object)
    subject = rng.choice(["math", "code", "text"], n)
    difficulty = rng.normal(1500, 250, n)
    frames = []
    for j, strength in enumerate(AGENTS):
        agent = f"agent_{j}"
        effective = strength - np.where((agent == WEAK_AGENT) & (subject == WEAK_SUBJECT), PENALTY, 0.0)
        p = 1.0 / (1.0 + 10.0 ** ((difficulty - effective) / 400.0))
        score = (rng.random(n) < p).astype(float)
        frames.append(pd.DataFrame({"test_case_id": ids, "agent_id": agent, "metric": score, "score": score}))
    matches = pd.concat(frames, ignore_index=True)
    result = rate(matches, orders=4)
    abilities = [["algebra", "geometry"] if i % 3 == 0 else ["algebra"] if i % 3 == 1 else None for i in range(n)]
    tags = pd.DataFrame({"test_case_id": ids, "subject": subject, "abilities": abilities, "id_like": ids})
    return matches, result, tags


@pytest.fixture(scope="module")
def slices(benchmark):
    matches, result, tags = benchmark
    return slice_ratings(matches, result.test_cases, tags, orders=4)


def test_a_slice_truly_harder_for_one_agent_is_recovered(slices):
    subject = slices[slices["tag"] == "subject"].set_index(["value", "agent_id"])
    weak = subject.loc[(WEAK_SUBJECT, WEAK_AGENT)]
    # the agent's math rating sits far below its own rating, and below its other subjects, beyond the intervals
    assert weak["delta"] < -0.6 * PENALTY
    for other in ("code", "text"):
        assert weak["mu_hi"] < subject.loc[(other, WEAK_AGENT), "mu_lo"]
    # on math it is the agent whose rating falls most; no other agent loses half as much anywhere
    math = subject.loc[WEAK_SUBJECT]
    assert math["delta"].idxmin() == WEAK_AGENT
    others = slices[(slices["tag"] == "subject") & (slices["agent_id"] != WEAK_AGENT)]
    assert others["delta"].min() > -PENALTY / 4
    # on math the weak agent now ranks below agents it beats overall
    assert (math["mu"] > weak["mu"]).sum() >= 2


def test_columns_sizes_and_profiles(benchmark, slices):
    matches, result, tags = benchmark
    assert tuple(slices.columns) == SLICE_COLUMNS
    sizes = slices.groupby(["tag", "value"])["test_cases"].first()
    assert sizes[("subject", "math")] == (tags["subject"] == "math").sum()
    assert sizes[("abilities", "algebra")] == 400 and sizes[("abilities", "geometry")] == 200
    assert "id_like" not in set(slices["tag"])  # one test case per value: no slice reaches min_test_cases
    rating = result.test_cases.set_index("test_case_id")["mu"]
    math_ids = tags.loc[tags["subject"] == "math", "test_case_id"]
    row = slices[(slices["tag"] == "subject") & (slices["value"] == "math")].iloc[0]
    assert row["slice_mean_difficulty"] == pytest.approx(rating[math_ids].mean())
    assert row["slice_difficulty_p10"] < row["slice_difficulty_p50"] < row["slice_difficulty_p90"]
    assert (slices["mu_lo"] < slices["mu"]).all() and (slices["mu"] < slices["mu_hi"]).all()
    assert (slices["matches"] == slices["test_cases"]).all()  # every agent met every test case
    assert np.allclose(slices["delta"], slices["mu"] - slices["overall_mu"])


def test_a_slice_of_every_test_case_is_the_overall_placement(benchmark):
    matches, result, tags = benchmark
    everything = tags.assign(all="yes")[["test_case_id", "all"]]
    out = slice_ratings(matches, result.test_cases, everything, orders=2)
    assert np.allclose(out["delta"], 0.0)


def test_min_test_cases_and_max_values(benchmark):
    matches, result, tags = benchmark
    out = slice_ratings(matches, result.test_cases, tags[["test_case_id", "subject"]], min_test_cases=1000, orders=2)
    assert len(out) == 0 and tuple(out.columns) == SLICE_COLUMNS
    out = slice_ratings(matches, result.test_cases, tags[["test_case_id", "subject"]], max_values_per_tag=1, orders=2)
    assert out["value"].nunique() == 1 and out["test_cases"].iloc[0] == tags["subject"].value_counts().max()
    with pytest.raises(ValueError, match="min_test_cases"):
        slice_ratings(matches, result.test_cases, tags, min_test_cases=0)


def test_slice_members_explode_multi_valued_tags():
    tags = pd.DataFrame({"test_case_id": ["a", "b", "c"], "abilities": [["x", "y"], None, ["x"]], "kind": ["k", None, "k"]})
    members = slice_test_cases(tags, known=["a", "b"])
    assert sorted(map(tuple, members.to_numpy())) == [("abilities", "x", "a"), ("abilities", "y", "a"), ("kind", "k", "a")]


def test_tags_of_unknown_test_cases_make_no_slices(benchmark):
    matches, result, _ = benchmark
    unknown = pd.DataFrame({"test_case_id": ["X1", "X2"], "subject": ["math", "code"], "abilities": [["x"], ["y"]]})
    members = slice_test_cases(unknown, known=["tc000"])
    assert members.empty and list(members.columns) == ["tag", "value", "test_case_id"]
    assert slice_ratings(matches, result.test_cases, unknown, orders=1).empty


def test_query_ranking_orders_the_agents_with_intervals(benchmark):
    matches, _, tags = benchmark
    math_ids = tags.loc[tags["subject"] == "math", "test_case_id"]
    ranking = query_ranking(matches[matches["test_case_id"].isin(math_ids)], resamples=60, seed=1)
    interval_columns = ["agent_id", "rating", "rating_lo", "rating_hi", "rating_sd", "rank", "rank_lo", "rank_hi"]
    assert list(ranking.columns[:8]) == interval_columns
    assert ranking["agent_id"].iloc[-1] == WEAK_AGENT  # on math the weak agent is last
    assert ranking["agent_id"].iloc[0] == "agent_4"
    assert (ranking["rating_lo"] <= ranking["rating"]).all() and (ranking["rating"] <= ranking["rating_hi"]).all()
    assert ranking["rating"].mean() == pytest.approx(1500.0)
    assert (ranking["test_cases"] == len(math_ids)).all()
    overall = query_ranking(matches, resamples=0)
    assert overall["agent_id"].iloc[-1] == "agent_0"  # on everything it is not


def test_query_ranking_across_benchmarks_keeps_test_cases_apart(benchmark):
    """Two benchmarks with the same test-case ids: a benchmark column keeps them distinct test cases."""
    matches, _, _ = benchmark
    first = matches[matches["test_case_id"] < "tc100"]
    both = pd.concat([first.assign(benchmark="one"), first.assign(benchmark="two")], ignore_index=True)
    ranking = query_ranking(both, resamples=0)
    assert (ranking["test_cases"] == 200).all()
    with pytest.raises(MatchTableError) as info:
        query_ranking(both.drop(columns="benchmark"), resamples=0)
    assert info.value.rule == "match_unique"
    with pytest.raises(MatchTableError) as info:
        query_ranking(first[first["agent_id"] == "agent_0"], resamples=0)
    assert info.value.rule == "query_agents"


def test_query_ranking_by_score_respects_lower_is_better():
    matches = pd.DataFrame(
        {
            "test_case_id": ["t1", "t1", "t2", "t2", "t3", "t3"],
            "agent_id": ["good", "bad"] * 3,
            "metric": [1.0, 9.0, 2.0, 8.0, 1.5, 3.0],  # an error: lower is better
            "score": [0.9, 0.1, 0.8, 0.2, 0.85, 0.7],
        }
    )
    assert query_ranking(matches, resamples=0)["agent_id"].iloc[0] == "good"
    assert query_ranking(matches, resamples=0, by="metric")["agent_id"].iloc[0] == "bad"
