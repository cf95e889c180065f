"""Adaptive test-case selection and sequential placement: unit tests, then the 5%-of-a-benchmark study."""

import numpy as np
import pandas as pd
import polars as pl
import pytest

from agielo_dagster.rating import (
    MatchTableError,
    place_on_subset,
    place_provisional_agents,
    place_sequentially,
    rate,
    select_test_cases,
    simulate_matches,
    stratum_weights,
)
from agielo_dagster.rating.selection import (
    difficulty_strata,
    expected_information,
    neyman_shares,
    placement_study,
    study_summary,
)


@pytest.fixture(scope="module")
def rated():
    """A simulated benchmark of 1,500 test cases and 10 agents, and its joint rating without agent_5."""
    rng = np.random.default_rng(11)
    matches = simulate_matches(rng.normal(1500, 300, 1500), np.linspace(1200, 2000, 10), seed=5)
    rest = rate(matches[matches.agent_id != "agent_5"], seed=1, with_reliability=False)
    return matches, rest.test_cases


def table(mu, sigma=None):
    frame = pd.DataFrame({"test_case_id": [f"t{i}" for i in range(len(mu))], "mu": np.asarray(mu, dtype=float)})
    if sigma is not None:
        frame["sigma"] = sigma
    return frame


# ---------------------------------------------------------------------------------------------
# select_test_cases


def test_the_budget_is_respected_and_the_columns_are_the_plan(rated):
    _, tc = rated
    plan = select_test_cases(tc, 25, agent_rating=(1700, 80))
    assert list(plan.columns) == ["test_case_id", "mu", "sigma", "information"]
    assert len(plan) == 25 and plan["test_case_id"].is_unique
    assert len(select_test_cases(tc, 10_000, agent_rating=1700)) == len(tc)  # no more than there are
    assert len(select_test_cases(tc, 7, method="random")) == 7
    assert len(select_test_cases(tc, 9)) == 9


def test_excluded_test_cases_are_never_chosen(rated):
    _, tc = rated
    first = select_test_cases(tc, 30, agent_rating=(1600, 50))
    second = select_test_cases(tc, 30, agent_rating=(1600, 50), exclude=first["test_case_id"])
    assert not set(first["test_case_id"]) & set(second["test_case_id"])
    assert second["information"].iloc[0] <= first["information"].iloc[0]
    everything = select_test_cases(tc, 5, agent_rating=1600, exclude=tc["test_case_id"])
    assert len(everything) == 0 and list(everything.columns) == ["test_case_id", "mu", "sigma", "information"]
    # ids given as integers match their decimal text
    ints = table([1400, 1500, 1600]).assign(test_case_id=[1, 2, 3])
    assert sorted(select_test_cases(ints, 3, agent_rating=1500, exclude=[2])["test_case_id"]) == ["1", "3"]


def test_the_most_informative_come_first():
    tc = table(np.linspace(1000, 2000, 201), np.full(201, 30.0))
    plan = select_test_cases(tc, 20, agent_rating=1620, spread=0)
    info = plan["information"].to_numpy()
    assert plan["mu"].iloc[0] == pytest.approx(1620)
    assert (np.diff(info) <= 1e-15).all()  # pure information order
    spread = select_test_cases(tc, 20, agent_rating=1620)
    assert spread["mu"].iloc[0] == pytest.approx(1620)  # the best first, then spread in difficulty
    assert np.min(np.diff(np.sort(spread["mu"]))) >= 10.0  # no two near-duplicates
    assert np.ptp(spread["mu"]) > np.ptp(plan["mu"])
    # a wide estimate integrates the information over the agent's uncertainty
    assert expected_information(1620, 30, 1620, 300) < expected_information(1620, 30, 1620, 0)
    assert expected_information(2200, 30, 1620, 300) > expected_information(2200, 30, 1620, 0)


def test_an_uncertain_test_case_is_worth_less():
    tc = table([1500, 1500.5], [300.0, 20.0])
    plan = select_test_cases(tc, 2, agent_rating=1500, spread=0)
    assert plan["test_case_id"].tolist() == ["t1", "t0"]


def test_the_start_is_stratified_by_difficulty(rated):
    _, tc = rated
    plan = select_test_cases(tc, 9)
    quantiles = np.quantile(tc["mu"], (np.arange(9) + 0.5) / 9)
    np.testing.assert_allclose(np.sort(plan["mu"]), quantiles, atol=15)
    assert plan["mu"].iloc[0] == pytest.approx(np.median(tc["mu"]), abs=15)  # the median first


def test_selection_is_deterministic_by_seed_and_accepts_arrow_and_polars(rated):
    _, tc = rated
    a = select_test_cases(tc, 40, method="random", seed=3)
    b = select_test_cases(pl.from_pandas(tc), 40, method="random", seed=3)
    c = select_test_cases(tc, 40, method="random", seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert set(a["test_case_id"]) != set(c["test_case_id"])
    d = select_test_cases(pl.from_pandas(tc).to_arrow(), 40, agent_rating=(1800, 40), seed=9)
    pd.testing.assert_frame_equal(d, select_test_cases(tc, 40, agent_rating=(1800, 40), seed=9))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(budget=0), "budget"),
        (dict(budget=2.5), "budget"),
        (dict(budget=True), "budget"),
        (dict(budget=3, method="bandit"), "method"),
        (dict(budget=3, agent_rating=float("nan")), "finite"),
        (dict(budget=3, agent_rating=(1500, -1)), "sigma"),
        (dict(budget=3, agent_rating=(1500,)), "pair"),
        (dict(budget=3, agent_rating=(1500, 20), agent_sigma=20), "not both"),
        (dict(budget=3, agent_sigma=20), "agent_rating"),
        (dict(budget=3, agent_rating="strong"), "numbers"),
        (dict(budget=3, spread=-1), "spread"),
        (dict(budget=3, seed="x"), "seed"),
        (dict(budget=3, exclude="t1"), "collection"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        select_test_cases(table([1400, 1500, 1600]), **kwargs)


def test_bad_tables_are_errors():
    with pytest.raises(MatchTableError, match="mu"):
        select_test_cases(pd.DataFrame({"test_case_id": ["a"]}), 1)
    with pytest.raises(MatchTableError, match="more than once"):
        select_test_cases(pd.DataFrame({"test_case_id": ["a", "a"], "mu": [1.0, 2.0]}), 1)
    with pytest.raises(MatchTableError):
        select_test_cases(pd.DataFrame({"test_case_id": ["a", "b"], "mu": [1.0, np.nan]}), 1)


# ---------------------------------------------------------------------------------------------
# place_on_subset and place_sequentially


def test_sequential_placement_spends_its_budget_and_no_more(rated):
    matches, tc = rated
    mine = matches[matches.agent_id == "agent_5"]
    run = place_sequentially(mine, tc, budget=75, batch_size=10, first_batch=5, seed=1)
    assert run.stopped == "budget" and len(run.test_case_ids) == 75 and len(set(run.test_case_ids)) == 75
    assert run.history["evaluated"].tolist() == [5, 15, 25, 35, 45, 55, 65, 75]
    assert run.placement["matches"].iloc[0] == 75
    again = place_sequentially(mine, tc, budget=75, batch_size=10, first_batch=5, seed=1)
    assert again.test_case_ids == run.test_case_ids
    pd.testing.assert_frame_equal(again.placement, run.placement)
    share = place_sequentially(mine, tc, budget=0.05, batch_size=25, seed=1)
    assert len(share.test_case_ids) == 75  # 5% of 1,500


def test_sequential_placement_stops_when_the_interval_is_narrow(rated):
    matches, tc = rated
    mine = matches[matches.agent_id == "agent_5"]
    run = place_sequentially(mine, tc, budget=600, batch_size=10, max_width=150, seed=1)
    assert run.stopped == "max_width" and len(run.test_case_ids) < 600
    last = run.placement.iloc[0]
    assert last["mu_hi"] - last["mu_lo"] <= 150 < run.history["width"].iloc[-2]


def test_results_can_be_revealed_by_a_callable(rated):
    matches, tc = rated
    mine = matches[matches.agent_id == "agent_5"].set_index("test_case_id")
    asked = []

    def run_model(ids):
        asked.append(list(ids))
        return mine.loc[ids].reset_index()

    run = place_sequentially(run_model, tc, budget=30, batch_size=10, seed=2)
    assert [len(a) for a in asked] == [10, 10, 10] and sum(asked, []) == run.test_case_ids
    same = place_sequentially(mine.reset_index(), tc, budget=30, batch_size=10, seed=2)
    pd.testing.assert_frame_equal(run.placement, same.placement)


def test_sequential_placement_refuses_bad_input(rated):
    matches, tc = rated
    with pytest.raises(ValueError, match="one agent"):
        place_sequentially(matches, tc, budget=10)
    mine = matches[matches.agent_id == "agent_5"]
    for kwargs in (dict(budget=0), dict(budget=1.5), dict(budget=10, batch_size=0), dict(budget=10, max_width=-5)):
        with pytest.raises(ValueError):
            place_sequentially(mine, tc, **kwargs)
    with pytest.raises(ValueError, match="nothing to place"):
        place_sequentially(lambda ids: mine.iloc[:0], tc, budget=10)


def test_placement_on_the_whole_benchmark_agrees_with_the_joint_rating(rated):
    matches, tc = rated
    joint = rate(matches, seed=1, with_reliability=False).agents.set_index("agent_id")
    placed = place_on_subset(matches[matches.agent_id == "agent_5"], tc).iloc[0]
    assert placed["mu"] == pytest.approx(joint.loc["agent_5", "mu"], abs=15)
    assert placed["mu_lo"] < joint.loc["agent_5", "mu"] < placed["mu_hi"]
    assert placed["mu_lo"] < placed["mu"] < placed["mu_hi"]
    with pytest.raises(MatchTableError) as err:
        place_on_subset(matches[matches.agent_id == "agent_5"].iloc[:1].assign(test_case_id="nowhere"), tc)
    assert err.value.rule == "test_case_known"


# ---------------------------------------------------------------------------------------------
# the stratified design


def test_strata_are_equal_sized_groups_by_difficulty():
    strata = difficulty_strata([5.0, 1.0, 4.0, 2.0, 3.0, 0.0], 3)
    assert strata.tolist() == [2, 0, 2, 1, 1, 0]


def test_stratum_weights_share_each_stratum_among_its_evaluated_test_cases():
    tc = table(np.arange(12.0))  # strata of 3 (n_strata=4): t0-t2, t3-t5, t6-t8, t9-t11
    w = stratum_weights(tc, ["t0", "t1", "t4", "t9", "t9", "unknown"], n_strata=4)
    # stratum 0: 3 test cases, 2 evaluated -> 1.5 each; stratum 1: 3/1; stratum 3: 3/1; stratum 2: none evaluated
    assert w.to_dict() == {"t0": 1.5, "t1": 1.5, "t4": 3.0, "t9": 3.0}
    assert stratum_weights(tc, [f"t{i}" for i in range(12)]).sum() == 12  # everything evaluated: weight 1 each


def test_neyman_allocation_favours_the_strata_near_the_agent():
    mu = np.linspace(800, 2200, 100)
    strata = difficulty_strata(mu, 10)
    shares = neyman_shares(expected_information(mu, np.zeros(100), 2000.0, 30.0), strata, 10, uniform_share=0.2)
    assert shares.sum() == pytest.approx(1.0)
    assert np.argmax(shares) == 8  # μ 1926-2059: the agent's own difficulty
    assert 0.02 < shares[0] < 0.04 < 0.1 < shares[8]  # the sure wins keep at least their floor, 0.2 x 1/10


def test_a_stratified_sample_covers_every_stratum_then_follows_the_estimate(rated):
    _, tc = rated
    mu = tc.set_index("test_case_id")["mu"]
    plan = select_test_cases(tc, 30, agent_rating=(1900.0, 40.0), method="stratified", seed=3)
    assert len(plan) == 30 and plan["test_case_id"].is_unique
    strata = pd.Series(difficulty_strata(tc["mu"].to_numpy(), 10), index=tc["test_case_id"])
    counts = strata[plan["test_case_id"]].value_counts()
    assert set(counts.index) == set(range(10))  # one at least in every stratum: each weight has a result
    assert counts[counts.index >= 5].sum() > counts[counts.index < 5].sum() and counts[9] > counts[0]  # more near 1900
    again = select_test_cases(tc, 10, agent_rating=(1900.0, 40.0), method="stratified", seed=3, exclude=plan["test_case_id"])
    assert not set(again["test_case_id"]) & set(plan["test_case_id"])
    assert mu[again["test_case_id"]].median() > mu.median()


# ---------------------------------------------------------------------------------------------
# the study: each agent left out, placed from 5% of the benchmark, against its joint rating

SHARE = 0.05
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def study(demo_digits, demo_breast_cancer):
    """Leave-one-agent-out placements on the demo's two benchmarks and a simulated one (≈ 60 s on 2 cores)."""
    rng = np.random.default_rng(3)
    simulated = simulate_matches(rng.normal(1500, 300, 1200), np.linspace(1200, 2100, 10), seed=3)
    methods = ("stratified", "random", "full")
    return pd.concat(
        [
            placement_study(demo_digits, benchmark="digits", methods=methods, seeds=SEEDS, share=SHARE),
            placement_study(demo_breast_cancer, benchmark="breast_cancer", methods=methods, seeds=SEEDS, share=SHARE),
            placement_study(simulated, benchmark="simulated", methods=methods, seeds=SEEDS, share=SHARE),
        ],
        ignore_index=True,
    )


@pytest.mark.slow
def test_five_percent_covers_the_joint_rating_at_the_stated_level(study):
    figures = study_summary(study)
    print(study_summary(study, ("benchmark", "method")).round(3).to_string())
    assert figures.loc["stratified", "coverage"] >= 0.85  # 90% intervals
    assert figures.loc["random", "coverage"] >= 0.85
    assert figures.loc["full", "coverage"] >= 0.95 and figures.loc["full", "median_abs_error"] < 5
    used = study[study["method"] == "stratified"].groupby("benchmark")["used"].first()
    assert used.to_dict() == {"digits": 90, "breast_cancer": 28, "simulated": 60}  # 5% of 1,797, 569 and 1,200


@pytest.mark.slow
def test_five_percent_ranks_the_agents_like_the_joint_rating(study):
    by = study_summary(study, ("benchmark", "method"))
    # 20 classifiers spread over 1,400 Elo, and 10 simulated agents 100 Elo apart
    assert by.loc[("digits", "stratified"), "spearman"] >= 0.95
    assert by.loc[("simulated", "stratified"), "spearman"] >= 0.95


@pytest.mark.slow
def test_adaptive_beats_random_on_mean_error(study):
    """The stratified design, Neyman-allocated at the estimate, against a uniform random 5%, on the same agents and seeds.

    Placed on the refined scale (the default joint, the study's yardstick): mean |error| 55.9 against 80.4 Elo.
    """
    figures = study_summary(study)
    print(figures.round(3).to_string())
    assert figures.loc["stratified", "mean_abs_error"] < figures.loc["random", "mean_abs_error"]


@pytest.mark.slow
def test_adaptive_beats_random_on_median_error(study):
    figures = study_summary(study)
    assert figures.loc["stratified", "median_abs_error"] < figures.loc["random", "median_abs_error"]


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,
    reason="measured, target kept and not met: breast_cancer has 28 test cases at 5% and five classifiers within "
    "15 Elo of each other; Spearman of the stratified 5% against the joint rating is about 0.76-0.82 (random 0.68-0.78)",
)
def test_five_percent_ranks_breast_cancer_too(study):
    assert study_summary(study, ("benchmark", "method")).loc[("breast_cancer", "stratified"), "spearman"] >= 0.95


# ---------------------------------------------------------------------------------------------
# place_provisional_agents: many partial uploads against a wide benchmark


def partial_uploads(matches, agents, size, seed):
    """``size`` random results of each of ``agents`` (what a benchmark's partial uploads hold)."""
    rng = np.random.default_rng(seed)
    parts = [matches[matches.agent_id == a] for a in agents]
    return pd.concat([p.iloc[rng.choice(len(p), size, replace=False)] for p in parts], ignore_index=True)


def test_provisional_placement_is_place_on_subset_with_stratum_weights(rated):
    """Below the sample size: the same numbers as the per-agent calls it replaces, from pandas and pyarrow alike."""
    import pyarrow as pa

    matches, tc = rated
    new = partial_uploads(matches, ["agent_5", "agent_2", "agent_9"], 40, seed=3)
    expected = []
    for _, results in new.groupby("agent_id", sort=True):
        design = stratum_weights(tc, results["test_case_id"].astype(str))
        expected.append(place_on_subset(results, tc, level=0.95, design=design))
    expected = pd.concat(expected, ignore_index=True)
    for flavour in (tc, pa.Table.from_pandas(tc, preserve_index=False)):
        got = place_provisional_agents(new, flavour, level=0.95)
        pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-12, atol=1e-9)


def test_provisional_placement_on_a_sample_of_a_wide_benchmark_stays_within_an_elo():
    """A wide benchmark (2 agents × 40,000 test cases): the map on an even sample of 4,000 matches the whole table's."""
    rng = np.random.default_rng(4)
    matches = simulate_matches(rng.normal(1500, 300, 40_000), [1400.0, 1700.0, 1300.0, 1600.0, 1900.0], seed=2)
    joint = matches.agent_id.isin(["agent_0", "agent_1"])
    tc = rate(matches[joint], seed=1, orders=2, with_reliability=False).test_cases
    new = partial_uploads(matches[~joint], ["agent_2", "agent_3", "agent_4"], 30, seed=5)
    whole = place_provisional_agents(new, tc, orders=4, scale_test_cases=len(tc))
    sample = place_provisional_agents(new, tc, orders=4, scale_test_cases=4_000)
    assert (whole[["theta", "theta_se"]] == sample[["theta", "theta_se"]]).all().all()  # the fit reads every test case it played
    assert np.abs(whole["mu"] - sample["mu"]).max() < 1.0, (whole, sample)
    # the interval's ends, 400-700 Elo apart, within 1% of its width (the far tail rests on fewer test cases)
    width = whole["mu_hi"] - whole["mu_lo"]
    assert (np.abs(whole["mu_lo"] - sample["mu_lo"]) < 0.01 * width).all() and (
        np.abs(whole["mu_hi"] - sample["mu_hi"]) < 0.01 * width
    ).all()


def test_provisional_placement_refuses_unknown_test_cases(rated):
    matches, tc = rated
    new = partial_uploads(matches, ["agent_5"], 5, seed=1)
    new.loc[2, "test_case_id"] = "nowhere"
    with pytest.raises(MatchTableError, match="test case 'nowhere' has no frozen rating"):
        place_provisional_agents(new, tc)
    with pytest.raises(ValueError, match="scale_test_cases must be an integer >= 1"):
        place_provisional_agents(new.drop(index=2), tc, scale_test_cases=0)


@pytest.mark.parametrize("distinct", [3, 1_000, 5_000])  # heavy ties (a refined one-agent benchmark), a few, none
def test_difficulty_ranks_of_a_few_test_cases_are_the_stable_sorts(distinct):
    """Provisional placement ranks only the partial uploads' test cases (issue 25), as a stable argsort of the whole
    table would: ties by position, NaN last, whether it looks the tied values up or falls back to the sort."""
    from agielo_dagster.rating.subset_placement import difficulty_ranks

    rng = np.random.default_rng(distinct)
    mu = rng.integers(0, distinct, 20_000).astype(np.float64)
    mu[rng.choice(len(mu), 30, replace=False)] = np.nan
    rank = np.empty(len(mu), dtype=np.int64)
    rank[np.argsort(mu, kind="stable")] = np.arange(len(mu))
    positions = np.concatenate([rng.choice(len(mu), 200, replace=False), np.flatnonzero(np.isnan(mu))[:3]])
    np.testing.assert_array_equal(difficulty_ranks(mu, positions), rank[positions])
