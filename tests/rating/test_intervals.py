"""95% intervals and ranks by interval: their meaning and their coverage on players with known ratings."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from agielo_dagster.rating import rate, simulate_matches
from agielo_dagster.rating.intervals import interval_ranks, order_variance, ranks_among, z_of


def test_ranks_by_interval_tie_agents_no_interval_separates():
    lo = np.array([10.0, 8.0, 2.0, 1.0, 50.0])
    hi = np.array([12.0, 11.0, 9.0, 3.0, 60.0])
    rank, rank_lo, rank_hi = interval_ranks(lo, hi, np.zeros(5, dtype=int))
    # e (50–60) is clear first; a (10–12) and b (8–11) overlap: both rank 2; c (2–9) overlaps b but not a
    assert rank.tolist() == [2, 2, 3, 4, 1]
    np.testing.assert_array_equal(rank, rank_lo)
    assert rank_hi.tolist() == [3, 4, 5, 5, 1]  # c could fall below a, b, d and e: the worst rank is 5
    # ranks never cross components
    rank, _, rank_hi = interval_ranks(lo, hi, np.array([0, 0, 1, 1, 0]))
    assert rank.tolist() == [2, 2, 1, 1, 1] and rank_hi.tolist() == [3, 3, 2, 2, 1]


def test_ranks_among_rated_agents_leave_their_ranks_alone():
    # the rated agents of the test above: e 50–60, a 10–12, b 8–11, c 2–9, d 1–3
    ref_lo = np.array([10.0, 8.0, 2.0, 1.0, 50.0])
    ref_hi = np.array([12.0, 11.0, 9.0, 3.0, 60.0])
    lo = np.array([9.5, 70.0, -5.0, 1.0, 10.0])
    hi = np.array([10.5, 80.0, 0.0, 3.0, 12.0])
    best, worst = ranks_among(lo, hi, ref_lo, ref_hi)
    # 9.5–10.5 lies below e only and reaches a, b (c's 9 is below 9.5): 2nd to 4th
    assert best.tolist()[0] == 2 and worst.tolist()[0] == 4
    assert (best[1], worst[1]) == (1, 1)  # above everyone
    assert (best[2], worst[2]) == (6, 6)  # below everyone: last of six
    assert (best[3], worst[3]) == (4, 6)  # d's own interval: below e, a, b; c and d reach it
    # an agent's own interval among the others' gives interval_ranks's ranks, one place lower at worst
    rank, _, rank_hi = interval_ranks(ref_lo, ref_hi, np.zeros(5, dtype=int))
    best, worst = ranks_among(ref_lo, ref_hi, ref_lo, ref_hi)
    np.testing.assert_array_equal(best, rank)
    np.testing.assert_array_equal(worst - 1, rank_hi)


def test_z_and_order_variance():
    assert z_of(0.95) == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(ValueError):
        z_of(1.0)
    per_order = np.array([[1.0], [3.0], [2.0], [4.0]])  # pairs (1, 3) and (2, 4): means 2 and 3
    assert order_variance(per_order)[0] == pytest.approx(np.var([2.0, 3.0], ddof=1) / 2)
    assert order_variance(per_order[:1])[0] == 0.0  # one order cannot measure its own noise
    assert order_variance(per_order[:3])[0] == pytest.approx(np.var([1.0, 3.0, 2.0], ddof=1) / 3)


@pytest.mark.slow  # demo_digits: 20 classifiers cross-validated on 1,797 digits; breast_cancer stays quick
def test_interval_columns(demo_digits):
    agents = rate(demo_digits, seed=1, with_reliability=False).agents
    assert (agents["mu_lo"] < agents["mu"]).all() and (agents["mu"] < agents["mu_hi"]).all()
    assert (agents["rank_lo"] <= agents["rank_hi"]).all()
    assert agents["rank"].min() == 1 and agents["component"].eq(0).all()
    # the best classifier (knn_1) is rank 1 and its interval separates it from the 18 weakest
    best = agents.set_index("agent_id").loc["knn_1"]
    assert best["rank"] == 1 and best["rank_hi"] <= 2
    # a narrower level gives narrower intervals and more separated ranks
    narrow = rate(demo_digits, seed=1, with_reliability=False, level=0.5).agents
    assert ((narrow["mu_hi"] - narrow["mu_lo"]) < (agents["mu_hi"] - agents["mu_lo"])).all()
    assert (narrow["rank_hi"] - narrow["rank_lo"]).sum() <= (agents["rank_hi"] - agents["rank_lo"]).sum()


def _coverage(repeats: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    true_agents = rng.normal(1600, 150, 12)
    rank_hits, rating_hits = [], []
    for r in range(repeats):
        true_test_cases = rng.normal(1500, 300, 500)
        matches = simulate_matches(true_test_cases, true_agents, seed=seed * 1000 + r)
        agents = rate(matches, seed=r, with_reliability=False).agents
        true_rank = rankdata(-true_agents, method="min")
        rank_hits.append((agents["rank_lo"] <= true_rank) & (true_rank <= agents["rank_hi"]))
        # Elo has no origin: compare with the truth shifted to the agents' estimated mean
        shift = agents["mu"].mean() - true_agents.mean()
        rating_hits.append((agents["mu_lo"] <= true_agents + shift) & (true_agents + shift <= agents["mu_hi"]))
    return float(np.mean(rank_hits)), float(np.mean(rating_hits))


def test_95_percent_intervals_cover_known_ratings_and_ranks():
    """Simulated agents with known ratings, binary outcomes: the 95% intervals cover ≥ 90% of the time.

    40 benchmarks of 12 agents × 500 test cases (480 agent intervals). Measured with seeds 1, 2, 3:
    the rank intervals cover the true rank every time (they are conservative: an overlap is a tie),
    the rating intervals cover the true rating (up to Elo's common shift) 96–97% of the time.
    """
    rank_coverage, rating_coverage = _coverage(40, seed=1)
    assert rank_coverage >= 0.90
    assert rating_coverage >= 0.90


def test_intervals_shrink_with_more_test_cases():
    rng = np.random.default_rng(4)
    agents = np.linspace(1400, 1800, 5)
    width = {}
    for n in (300, 2400):
        matches = simulate_matches(rng.normal(1500, 300, n), agents, seed=n)
        a = rate(matches, seed=1, with_reliability=False).agents
        width[n] = (a["mu_hi"] - a["mu_lo"]).mean()
    assert width[2400] == pytest.approx(width[300] / np.sqrt(8), rel=0.3)


def test_intervals_are_in_the_flavour_of_the_input(demo_breast_cancer):
    import polars as pl

    agents = rate(pl.from_pandas(demo_breast_cancer), seed=2, with_reliability=False).agents
    assert isinstance(agents, pl.DataFrame)
    assert {"mu_lo", "mu_hi", "rank", "rank_lo", "rank_hi", "component"} <= set(agents.columns)
    pandas_agents = rate(demo_breast_cancer, seed=2, with_reliability=False).agents
    pd.testing.assert_frame_equal(agents.to_pandas(), pandas_agents, check_dtype=False)
