"""Fragility of #1 (issue 22, item 6): the fewest test cases whose removal changes who is rated first."""

import itertools

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import MatchTableError, rate, simulate_matches
from agielo_dagster.rating.fragility import Fragility, fragility_of_first

ORDERS = 4  # the tests' orders: fewer than the default, for speed; the search uses the same


def _small(seed: int, agents: int = 3, test_cases: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return simulate_matches(rng.normal(1500.0, 200.0, test_cases), 1500.0 + rng.normal(0.0, 40.0, agents), seed=seed)


def _first_without(matches: pd.DataFrame, removed) -> str:
    """Who `rate` itself puts first once ``removed`` are gone: an independent check of the search."""
    kept = matches[~matches["test_case_id"].isin(set(removed))]
    agents = rate(kept, seed=42, orders=ORDERS, with_reliability=False, refine=False).agents  # the search's μ: Glicko's
    return agents.sort_values(["mu", "agent_id"], ascending=[False, True])["agent_id"].iloc[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_exact_answer_is_the_smallest_set_that_changes_the_leader(seed):
    matches = _small(seed)
    f = fragility_of_first(matches, orders=ORDERS, max_subsets=10**6, max_exact_matches=10**9)
    assert isinstance(f, Fragility) and f.method == "exact"
    assert f.leader == _first_without(matches, ())
    assert f.removals is not None and len(f.removed) == f.removals
    assert _first_without(matches, f.removed) == f.new_leader != f.leader
    ids = sorted(matches["test_case_id"].unique())
    for smaller in itertools.combinations(ids, f.removals - 1):  # no smaller set does it
        assert _first_without(matches, smaller) == f.leader


def test_the_approximation_is_verified_and_matches_the_exact_search_on_small_benchmarks():
    """Measured at 4 orders on 6 near-tied 4 × 12 benchmarks: the approximation answers all 6, equals the
    exact answer in 4, overshoots by 1 (seed 5) and by 3 (seed 3, the one-at-a-time fallback), with 2–9
    re-ratings. At the default 16 orders, 20 benchmarks: equal in 17 of 19 (benchmarks/fragility.py)."""
    agree, found = 0, 0
    for seed in range(6):
        matches = _small(seed, agents=4, test_cases=12)
        exact = fragility_of_first(matches, orders=ORDERS, max_subsets=10**6, max_exact_matches=10**9)
        approx = fragility_of_first(matches, orders=ORDERS, max_subsets=0)
        assert exact.method == "exact"
        # one test case is the least there is: a verified answer of 1 is exact without a search
        assert approx.method == ("exact" if approx.removals == 1 else "approx")
        if approx.removals is None:
            continue
        found += 1
        assert _first_without(matches, approx.removed) == approx.new_leader != approx.leader  # verified by re-rating
        assert approx.removals >= exact.removals  # an upper bound
        agree += approx.removals == exact.removals
    assert found >= 5 and agree >= found - 2


def test_the_tier_names_the_challengers_and_metadata_is_plain(demo_breast_cancer):
    agents = rate(demo_breast_cancer, orders=ORDERS, with_reliability=False).agents
    tier = agents.loc[agents["rank"] == 1, "agent_id"].tolist()
    f = fragility_of_first(demo_breast_cancer, tier=tier, orders=ORDERS)
    assert f.tier[0] == f.leader == agents.sort_values("mu", ascending=False)["agent_id"].iloc[0]
    assert set(f.tier) == set(tier) and f.method == "approx"
    assert f.removals is not None and 1 <= f.removals < 0.05 * f.test_cases  # a handful of 569 tumours decide #1
    assert _first_without(demo_breast_cancer, f.removed) == f.new_leader
    meta = f.as_metadata()
    assert meta["fragility_of_first"] == f.removals and meta["fragility_flips_to"] == f.new_leader
    assert meta["fragility_method"] == "approx" and all(isinstance(v, (int, str)) for v in meta.values())
    assert fragility_of_first(demo_breast_cancer, max_removals=0, orders=ORDERS).as_metadata()["fragility_of_first"] is None


def test_bad_arguments_are_named():
    matches = _small(0)
    with pytest.raises(MatchTableError, match="agent_known"):
        fragility_of_first(matches, tier=["nobody"], orders=ORDERS)
    with pytest.raises(MatchTableError, match="two_agents"):
        fragility_of_first(matches, candidates=["agent_0"], orders=ORDERS)
    with pytest.raises(ValueError, match="max_subsets"):
        fragility_of_first(matches, max_subsets=-1)
