"""Where agents stand: the main component, disconnected and unplaced agents, and the top tier (rating.standing)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import DisconnectedMatchesWarning, competency_gaps, rate, simulate_matches
from agielo_dagster.rating.standing import STATUSES, agent_standings, top_tier


def _rate(matches, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DisconnectedMatchesWarning)
        return rate(matches, seed=1, orders=2, with_reliability=False, **kw)


@pytest.fixture(scope="module")
def typo():
    """Four agents on tc_*; a fifth uploaded the same test cases as TC_* (a typo'd prefix) and solved them all."""
    truth = np.random.default_rng(0).normal(1500, 300, 60)
    matches = simulate_matches(truth, [1300, 1500, 1700, 1900], seed=0)
    mine = matches[matches["agent_id"] == "agent_0"].assign(
        agent_id="typo", test_case_id=lambda f: f["test_case_id"].str.upper(), metric=1.0, score=1.0
    )
    return _rate(pd.concat([matches, mine], ignore_index=True))


def test_a_disconnected_agent_gets_no_rank_and_is_never_first(typo):
    raw = typo.agents.set_index("agent_id")
    # the seam: the engine ranks it first of its own component, and it has the highest rating of the table
    assert raw.loc["typo", "rank"] == 1 and raw["mu"].idxmax() == "typo" and raw.loc["typo", "component"] == 1
    agents = agent_standings(typo.agents).set_index("agent_id")
    assert agents.loc["typo", "status"] == "disconnected"
    assert agents.loc["typo", ["rank", "rank_lo", "rank_hi"]].isna().all()
    assert agents.loc["typo", "status_reason"] == (
        "shares no test case with the main component (4 agents); rated only against its own test cases"
    )
    rated = agents.drop(index="typo")
    assert (rated["status"] == "rated").all() and (rated["status_reason"] == "").all()
    assert rated["rank"].notna().all() and rated["rank"].min() == 1
    assert "typo" not in top_tier(agents.reset_index()) and top_tier(agents.reset_index())[0] == "agent_3"
    assert set(agents["status"]) <= set(STATUSES)


def test_test_cases_outside_the_main_component_are_out_of_its_gaps(typo):
    cases = typo.test_cases
    assert set(cases.loc[cases["test_case_id"].str.startswith("TC_"), "component"]) == {1}
    main_hardest = cases.loc[cases["component"] == 0, "mu"].max()
    gaps = competency_gaps(cases, typo.agents).set_index("agent_id")
    assert (gaps.drop(index="typo")["hardest_test_case_rating"] == main_hardest).all()  # R_t,max of the main component
    assert gaps.loc["typo", "hardest_test_case_rating"] == cases.loc[cases["component"] == 1, "mu"].max()


def _groups(a_agents: int, a_cases: int, b_agents: int, b_cases: int, *, a_prefix: str, b_prefix: str) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    left = simulate_matches(rng.normal(1500, 200, a_cases), np.linspace(1300, 1700, a_agents), seed=1)
    right = simulate_matches(rng.normal(1500, 200, b_cases), np.linspace(1300, 1700, b_agents), seed=2)
    left = left.assign(test_case_id="p_" + left["test_case_id"], agent_id=a_prefix + left["agent_id"])
    right = right.assign(test_case_id="q_" + right["test_case_id"], agent_id=b_prefix + right["agent_id"])
    return pd.concat([left, right], ignore_index=True)


def test_the_main_component_is_the_one_with_the_most_matches_ties_by_first_agent_id():
    # 2 agents x 100 test cases (200 matches) outweigh 3 agents x 50 (150): matches decide, not agents
    result = _rate(_groups(2, 100, 3, 50, a_prefix="z_", b_prefix="a_"))
    agents = agent_standings(result.agents).set_index("agent_id")
    assert set(agents.index[agents["status"] == "rated"]) == {"z_agent_0", "z_agent_1"}
    assert (agents.loc[agents.index.str.startswith("a_"), "status"] == "disconnected").all()
    assert agents.loc["a_agent_0", "status_reason"].startswith("shares no test case with the main component (2 agents)")
    assert agents.loc["a_agent_0", "status_reason"].endswith("rated only with 2 agents of its own")
    # equal matches: the component holding the alphabetically first agent id, whatever the row order
    tied = _groups(2, 60, 2, 60, a_prefix="m_", b_prefix="b_")
    for frame in (tied, tied.iloc[::-1], tied.sample(frac=1, random_state=4)):
        agents = agent_standings(_rate(frame.reset_index(drop=True)).agents)
        assert set(agents.loc[agents["status"] == "rated", "agent_id"]) == {"b_agent_0", "b_agent_1"}


def test_partial_uploads_say_what_was_left_out_and_an_unplaced_one_is_kept(typo):
    agents = typo.agents.assign(provisional=False)
    placed = agents.iloc[[0]].assign(agent_id="half", provisional=True, rank=np.nan, rank_lo=2, rank_hi=5)
    aside = agents.iloc[[0]].assign(agent_id="aside", provisional=True, rank=np.nan, component=1)
    table = pd.concat([agents, placed, aside], ignore_index=True)
    uploads = pd.DataFrame(
        {
            "agent_id": ["half", "aside", "ghost", "one"],
            "test_cases": [10, 8, 10, 1],
            "unknown": [4, 0, 10, 1],
            "outside": [0, 0, 0, 0],
        }
    )
    out = agent_standings(table, uploads).set_index("agent_id")
    assert out.loc["half", "status"] == "provisional"
    assert out.loc["half", "status_reason"] == (
        "placed from a partial upload: 6 of its 10 test cases; 4 are not rated in this benchmark"
    )
    assert out.loc["half", ["rank_lo", "rank_hi"]].tolist() == [2, 5] and pd.isna(out.loc["half", "rank"])
    assert out.loc["aside", "status"] == "disconnected" and out.loc["aside", ["rank_lo", "rank_hi"]].isna().all()
    assert out.loc["aside", "status_reason"].startswith("a partial upload whose rated test cases share none with the main")
    # accepted, but none of its test cases is rated: one row, never silently absent
    assert out.loc["ghost", "status"] == "unplaced" and out.loc["one", "status"] == "unplaced"
    assert out.loc["ghost", "status_reason"] == "none of its 10 test cases is rated in this benchmark"
    assert out.loc["one", "status_reason"] == "its only test case is not rated in this benchmark"
    assert out.loc["ghost", ["mu", "sigma", "rank", "rank_lo", "rank_hi"]].isna().all()
    assert out.loc["ghost", "matches"] == 0 and out.loc["ghost", "component"] == -1 and bool(out.loc["ghost", "provisional"])
    assert list(out.index[-2:]) == ["ghost", "one"] and len(out) == len(table) + 2
    # the same through pyarrow: the flavour in is the flavour out
    import pyarrow as pa

    arrow = agent_standings(pa.Table.from_pandas(table, preserve_index=False), uploads)
    assert isinstance(arrow, pa.Table) and arrow.column("status").to_pylist()[-2:] == ["unplaced", "unplaced"]


def _tier_table(rows):
    return pd.DataFrame(rows, columns=["agent_id", "mu", "rank_lo", "status"])


def test_the_top_tier_is_every_rated_agent_no_interval_puts_second():
    clear = _tier_table([("a", 1900, 1, "rated"), ("b", 1700, 2, "rated"), ("p", 1950, 1, "provisional")])
    assert top_tier(clear) == ["a"]  # a provisional agent whose interval reaches first does not share first place
    tied = _tier_table([("a", 1900, 1, "rated"), ("c", 1899.8, 1, "rated"), ("b", 1898, 1, "rated"), ("d", 1500, 4, "rated")])
    assert top_tier(tied) == ["a", "c", "b"]  # highest rating first
    apart = _tier_table([("x", 2500, None, "disconnected"), ("u", None, None, "unplaced"), ("a", 1600, 1, "rated")])
    assert top_tier(apart) == ["a"]
    assert top_tier(_tier_table([("x", 2500, None, "disconnected")])) == []
    # without statuses (rate()'s own table): the main component's agents that are not provisional
    raw = pd.DataFrame({"agent_id": ["a", "b"], "mu": [1500.0, 1900.0], "rank_lo": [1, 1], "component": [0, 1]})
    assert top_tier(raw) == ["a"]
