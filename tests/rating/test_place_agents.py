import numpy as np
import pandas as pd
import polars as pl
import pytest

from agielo_dagster.rating import MatchTableError, place_agents, rate, simulate_matches


@pytest.fixture(scope="module")
def benchmark():
    rng = np.random.default_rng(1)
    return simulate_matches(rng.normal(1500, 300, 3000), np.linspace(1250, 1950, 8), seed=4)


def test_a_new_agent_lands_where_a_full_re_rating_puts_it(benchmark):
    newcomer = "agent_5"
    old = rate(benchmark[benchmark.agent_id != newcomer])
    frozen = old.test_cases.copy()
    placed = place_agents(benchmark[benchmark.agent_id == newcomer], old.test_cases)
    full = rate(benchmark).agents.set_index("agent_id")
    assert list(placed.columns) == ["agent_id", "mu", "sigma", "matches", "mean_score", "mean_metric"]
    assert placed["mu"].iloc[0] == pytest.approx(full.loc[newcomer, "mu"], abs=25)
    # it ranks between its neighbours of the old table
    others = old.agents.set_index("agent_id")["mu"]
    assert others["agent_4"] < placed["mu"].iloc[0] < others["agent_6"]
    # nothing existing moved
    pd.testing.assert_frame_equal(old.test_cases, frozen, check_exact=True)


def test_placement_is_deterministic_and_accepts_polars(benchmark):
    new = benchmark[benchmark.agent_id.isin(["agent_0", "agent_7"])]
    old = rate(benchmark[~benchmark.agent_id.isin(["agent_0", "agent_7"])])
    a = place_agents(new, old.test_cases, seed=3)
    b = place_agents(pl.from_pandas(new), pl.from_pandas(old.test_cases), seed=3)
    assert isinstance(b, pl.DataFrame)
    np.testing.assert_array_equal(a["mu"].to_numpy(), b["mu"].to_numpy())
    assert a.set_index("agent_id")["mu"]["agent_7"] > a.set_index("agent_id")["mu"]["agent_0"]


def test_without_sigma_opponents_count_as_exact(benchmark):
    new = benchmark[benchmark.agent_id == "agent_3"]
    old = rate(benchmark[benchmark.agent_id != "agent_3"])
    placed = place_agents(new, old.test_cases[["test_case_id", "mu"]])
    assert np.isfinite(placed["mu"]).all() and placed["sigma"].iloc[0] < 350


def test_unknown_test_cases_are_an_error_naming_the_row(benchmark):
    new = benchmark[benchmark.agent_id == "agent_3"].reset_index(drop=True)
    new.loc[7, "test_case_id"] = "never_seen"
    old = rate(benchmark[benchmark.agent_id != "agent_3"])
    with pytest.raises(MatchTableError) as err:
        place_agents(new, old.test_cases)
    assert err.value.rule == "test_case_known" and err.value.row == 7
    assert "never_seen" in str(err.value)
