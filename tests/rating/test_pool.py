"""The pooled leaderboard (issue 41): one model over every benchmark, on benchmarks split from the demo's digits."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from agielo_dagster.rating.frames import Matches, encode_matches
from agielo_dagster.rating.logistic import LOGIT
from agielo_dagster.rating.pool import PoolFit, rate_pool

ONE_HALF = "knn_5"  # evaluated on the first half only
HALF_OF_HALF = "gaussian_nb"  # on the first half and half of the second


@pytest.fixture(scope="module")
def split(demo_digits):
    """Two halves of digits, an agent missing from one, one on half of a half; and an unrelated benchmark."""
    m = demo_digits.assign(agent_id=demo_digits["agent_id"].astype(str), test_case_id=demo_digits["test_case_id"].astype(str))
    ids = np.sort(m["test_case_id"].unique())
    first, second = ids[::2], ids[1::2]
    a = m[m["test_case_id"].isin(first)]
    b = m[m["test_case_id"].isin(second) & (m["agent_id"] != ONE_HALF)]
    b = b[(b["agent_id"] != HALF_OF_HALF) | b["test_case_id"].isin(second[::2])]
    # lower is better on the second half: its metric is the error, its score (what the pool reads) the same p_true
    b = b.assign(metric=1.0 - b["score"])
    other = m[m["test_case_id"].isin(ids[:300]) & m["agent_id"].isin(["mlp", "svc_rbf", "random_forest"])]
    other = other.assign(agent_id="other-" + other["agent_id"], test_case_id="o-" + other["test_case_id"])
    tables = {"digits_a": a, "digits_b": b, "unrelated": other}
    return m, tables, {name: encode_matches(t) for name, t in tables.items()}


def test_every_agent_once_the_unrelated_apart_the_order_of_the_mean_score(split):
    m, tables, encoded = split
    pool = rate_pool(encoded)
    agents = pool.agents.set_index("agent_id")
    assert not agents.index.duplicated().any()
    assert set(agents.index) == set().union(*(set(t["agent_id"]) for t in tables.values()))
    other = agents.index.str.startswith("other-")
    assert (agents.loc[other, "component"] == 1).all() and (agents.loc[~other, "component"] == 0).all()
    assert (agents.loc[other, "status"] == "disconnected").all() and (agents.loc[~other, "status"] == "rated").all()
    assert sorted(agents.loc[other, "rank"].tolist()) == [1, 2, 3]  # ranked among themselves only
    everywhere = [a for a in agents.index[~other] if a not in (ONE_HALF, HALF_OF_HALF)]
    mean_score = m.groupby("agent_id")["score"].mean()
    rho = spearmanr(agents.loc[everywhere, "mu"], mean_score[everywhere]).statistic
    assert rho >= 0.9, rho
    assert agents.loc[ONE_HALF, "benchmarks"] == 1 and agents.loc[HALF_OF_HALF, "benchmarks"] == 2
    both = dict(
        encoded,
        digits_b=encode_matches(
            pd.concat(
                [tables["digits_b"], m[(m["agent_id"] == ONE_HALF) & ~m["test_case_id"].isin(tables["digits_a"]["test_case_id"])]]
            )
        ),
    )
    assert agents.loc[ONE_HALF, "sigma"] > 1.2 * rate_pool(both).agents.set_index("agent_id").loc[ONE_HALF, "sigma"]
    assert set(pool.benchmarks["benchmark"]) == set(tables)
    assert pool.benchmarks.set_index("benchmark").loc["unrelated", "component"] == 1
    played = pool.by_benchmark.groupby("agent_id")["benchmark"].nunique()
    assert (played == agents["benchmarks"].reindex(played.index)).all()


def test_halves_of_one_benchmark_land_on_one_scale(split):
    _, _, encoded = split
    scales = rate_pool(encoded).benchmarks.set_index("benchmark")
    # the halves are one benchmark's test cases dealt alternately: their centres and spreads agree
    assert abs(scales.loc["digits_a", "centre"] - scales.loc["digits_b", "centre"]) < 25.0
    assert abs(scales.loc["digits_a", "spread"] - scales.loc["digits_b", "spread"]) < 0.15 * scales.loc["digits_a", "spread"]
    assert 0.0 < scales.loc["digits_a", "saturation"] <= 1.0


def test_a_warm_start_gives_the_same_tables_in_fewer_passes(split):
    """Within 0.01 Elo (both fits stop at steps of 1e-6 logits): a leaderboard fitted after an upload, or healed after
    a kill, from its last fit, equals a clean run's from scratch."""
    m, tables, encoded = split
    grown = dict(encoded, digits_b=encode_matches(tables["digits_b"].iloc[: len(tables["digits_b"]) // 2]))
    cold = rate_pool(encoded)
    warm = rate_pool(encoded, start=rate_pool(grown).fit)  # from another pool's fit, as after an upload
    assert warm.iterations < cold.iterations
    pd.testing.assert_frame_equal(warm.agents, cold.agents, check_exact=False, atol=0.01)
    pd.testing.assert_frame_equal(warm.benchmarks, cold.benchmarks, check_exact=False, atol=0.01, rtol=0)


def test_a_spread_started_where_its_likelihood_is_not_concave_climbs_out_in_a_few_passes():
    """Issue 41's crawl: one graded benchmark of two like agents, hard for both (a test case's scores say little of
    its difficulty). From a small spread the marginal likelihood is convex in log τ²; steps by the Fisher information
    there, far above the curvature's size, crept up a few per cent a pass."""
    rng = np.random.default_rng(0)
    n_t = 10_000
    difficulty = rng.normal(500.0, 300.0, n_t)
    agent, case = np.tile(np.arange(2, dtype=np.int32), n_t), np.repeat(np.arange(n_t, dtype=np.int32), 2)
    p = 1.0 / (1.0 + 10.0 ** (difficulty[case] / 400.0))
    score = rng.beta(6 * p + 0.2, 6 * (1 - p) + 0.2)
    ids = np.array([f"t{i}" for i in range(n_t)], dtype=object)
    benchmark = {"hard": Matches(agent, case, score, score, np.array(["a", "b"], dtype=object), ids, "pandas")}
    fits = []
    for tau2 in (0.02, 0.085):
        start = PoolFit({"a": 1500.0, "b": 1500.0}, {"hard": 2000.0}, {"hard": LOGIT * np.sqrt(tau2)}, {"hard": 0.24})
        fits.append(rate_pool(benchmark, start=start))
        assert fits[-1].iterations <= 20, (tau2, fits[-1].iterations)
    assert fits[0].fit.spreads["hard"] == pytest.approx(fits[1].fit.spreads["hard"], abs=0.01)
    assert fits[0].fit.dispersions["hard"] == pytest.approx(fits[1].fit.dispersions["hard"], rel=1e-4)


def test_row_order_and_names_do_not_move_the_ratings(split):
    _, tables, encoded = split
    shuffled = {name: encode_matches(t.sample(frac=1.0, random_state=3)) for name, t in tables.items()}
    a, b = rate_pool(encoded).agents, rate_pool(shuffled).agents
    pd.testing.assert_frame_equal(a, b)


def test_provisional_agents_are_in_without_a_rank(split):
    _, _, encoded = split
    agents = rate_pool(encoded, provisional={HALF_OF_HALF}).agents.set_index("agent_id")
    row = agents.loc[HALF_OF_HALF]
    assert row["status"] == "provisional" and pd.isna(row["rank"])
    assert 1 <= row["rank_lo"] <= row["rank_hi"] <= (agents["status"] == "rated").sum() + 1
    rated = agents[agents["status"] == "rated"]
    assert rated["rank"].min() == 1


def test_weighing_each_benchmark_alike_is_an_option_and_bad_options_are_named(split):
    _, _, encoded = split
    alike = rate_pool(encoded, weigh="benchmark").agents
    assert alike["mu"].notna().all()
    with pytest.raises(ValueError, match="weigh="):
        rate_pool(encoded, weigh="agent")
    with pytest.raises(ValueError, match="at least one benchmark"):
        rate_pool({})


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_benchmarks_that_share_no_agent_are_each_the_default_model_intervals_and_all(graded):
    """Pooled, benchmarks that share no agent are fitted apart (one set each, each its own centre and spread): the
    same ratings as :func:`rate` of each, and the same intervals, each spread's own uncertainty in them (the model's
    variance for binary scores, the sandwich for graded ones)."""
    from agielo_dagster.rating import rate, simulate_matches

    rng = np.random.default_rng(7)
    tables = {}
    for name, sd, n_a, n_t in (("b", 300, 12, 30), ("c", 600, 9, 20)):
        matches = simulate_matches(rng.normal(1500, 500, n_a), rng.normal(1500, sd, n_t), seed=7, coverage=0.8)
        if graded:
            matches = matches.assign(score=np.round(0.5 * rng.uniform(0, 1, len(matches)) + 0.5 * matches["score"], 2))
            matches["metric"] = matches["score"]
        tables[name] = matches.assign(agent_id=name + "-" + matches["agent_id"])
    pooled = rate_pool({name: encode_matches(t) for name, t in tables.items()}).agents.set_index("agent_id")
    for matches in tables.values():
        alone = rate(matches).agents.set_index("agent_id")
        # within the fits' tolerance: the pool stops when both benchmarks' steps are short
        np.testing.assert_allclose(pooled.loc[alone.index, "mu"], alone["mu"], atol=0.01)
        np.testing.assert_allclose(pooled.loc[alone.index, "sigma"], alone["sigma"], rtol=1e-4)


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_a_pool_of_one_benchmark_is_the_default_model_intervals_and_all(graded):
    """One benchmark pooled: the same ratings as :func:`rate`, and the same intervals, its spread's own uncertainty
    in both (the model's variance for binary scores, the sandwich for graded ones)."""
    from agielo_dagster.rating import rate, simulate_matches

    rng = np.random.default_rng(7)
    matches = simulate_matches(rng.normal(1500, 500, 30), rng.normal(1500, 300, 12), seed=7, coverage=0.8)
    if graded:
        matches = matches.assign(score=np.round(0.5 * rng.uniform(0, 1, len(matches)) + 0.5 * matches["score"], 2))
        matches["metric"] = matches["score"]
    alone = rate(matches).agents.set_index("agent_id")
    pooled = rate_pool({"b": encode_matches(matches)}).agents.set_index("agent_id").loc[alone.index]
    np.testing.assert_allclose(pooled["mu"], alone["mu"], atol=1e-6)
    np.testing.assert_allclose(pooled["sigma"], alone["sigma"], rtol=1e-6)
