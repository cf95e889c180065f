"""Components are a visible fact, and no accepted upload vanishes (issue 21, part B).

One benchmark, run by the daemon's own sensor and job, with the unusual uploads a user makes:

- ``typo``: a full upload whose test-case ids carry a typo'd prefix (``TC_…`` where the others use
  ``tc_…``) and that solved them all: before, it was rated in a component of its own, ranked first in
  the explorer and named "best" by ``agielo run`` with a negative gap;
- ``ghost``: a partial upload of 10 test cases the benchmark never rated: before, accepted by the
  ledger and then absent from every output;
- ``half``: a partial upload of 6 rated and 4 unknown test cases: placed, saying nothing of the 4;
- ``aside``: a partial upload of 2 test cases of the main component and 5 of typo's: placed in the
  main component from its 2, naming the 5 left out; ``island``: a partial upload of typo's test
  cases only: placed there, so disconnected too.

The two strongest regular agents are 10 Elo apart, so no interval separates them: the headline is
their top tier, never a single "best".
"""

import io
import json
import re

import pandas as pd
import pytest

from agielo_dagster.cli import RunSummary, print_summary
from agielo_dagster.domain.standing import headline

from .conftest import QUIET, write_benchmark, write_log

BENCHMARK = "quiz"


def read(root, asset):
    return pd.read_parquet(root / "warehouse" / asset / f"{BENCHMARK}.parquet")


def test_disconnected_and_unknown_uploads_are_named_everywhere_and_ties_share_the_top(daemon, root, storage):
    matches = write_benchmark(root, BENCHMARK, [1300, 1500, 1890, 1900])
    rows = matches[matches["agent_id"] == "agent_0"].rename(columns={"metric": "correct"})[["test_case_id", "correct"]]
    write_log(root, BENCHMARK, "typo", rows.assign(test_case_id=rows["test_case_id"].str.upper(), correct=1.0))
    write_log(root, BENCHMARK, "ghost", pd.DataFrame({"test_case_id": [f"zz_{i}" for i in range(10)], "correct": [1.0, 0.0] * 5}))
    unknown = pd.DataFrame({"test_case_id": [f"yy_{i}" for i in range(4)], "correct": 1.0})
    write_log(root, BENCHMARK, "half", pd.concat([rows.head(6), unknown], ignore_index=True))
    upper = rows.assign(test_case_id=rows["test_case_id"].str.upper())
    write_log(root, BENCHMARK, "aside", pd.concat([rows.iloc[10:12], upper.iloc[20:25]], ignore_index=True))
    write_log(root, BENCHMARK, "island", upper.iloc[30:36])
    runs = daemon.settle()
    assert runs and all(r.success for r in runs)

    # every accepted upload's agent has a row, with its status and reason
    ledger = read(root, "upload_ledger")
    accepted = set(ledger.loc[ledger["status"] == "accepted", "agent"])
    assert accepted == {"agent_0", "agent_1", "agent_2", "agent_3", "typo", "ghost", "half", "aside", "island"}
    agents = read(root, "agent_ratings").set_index("agent_id")
    assert set(agents.index) == accepted
    status = agents["status"].to_dict()
    assert status == {
        **{f"agent_{i}": "rated" for i in range(4)},
        "typo": "disconnected",
        "ghost": "unplaced",
        "half": "provisional",
        "aside": "provisional",
        "island": "disconnected",
    }
    assert agents.loc["typo", ["rank", "rank_lo", "rank_hi"]].isna().all() and agents.loc["typo", "component"] == 1
    assert agents.loc["typo", "status_reason"].startswith("shares no test case with the main component (4 agents)")
    assert agents.loc["ghost", ["mu", "sigma", "rank"]].isna().all()
    assert agents.loc["ghost", "status_reason"] == "none of its 10 test cases is rated in this benchmark"
    assert agents.loc["half", "status_reason"] == (
        "placed from a partial upload: 6 of its 10 test cases; 4 are not rated in this benchmark"
    )
    assert agents.loc["half", "matches"] == 6
    assert agents.loc["aside", "status_reason"] == (
        "placed from a partial upload: 2 of its 7 test cases; 5 lie outside the component it was placed in"
    )
    assert agents.loc["aside", "matches"] == 2 and agents.loc["aside", "component"] == 0
    assert agents.loc["island", "status_reason"] == (
        "a partial upload whose rated test cases share none with the main component (4 agents): 6 of its 6 test cases; "
        "rated only with 1 agent of its own"
    )
    assert agents.loc["island", ["rank", "rank_lo", "rank_hi"]].isna().all() and agents.loc["island", "component"] == 1
    assert (agents.loc[[f"agent_{i}" for i in range(4)], "status_reason"] == "").all()
    # the two strongest are tied by their intervals; nobody outside the main component shares first place
    tier = ["agent_3", "agent_2"] if agents.loc["agent_3", "mu"] > agents.loc["agent_2", "mu"] else ["agent_2", "agent_3"]
    assert sorted(agents.index[(agents["rank_lo"] == 1) & (agents["status"] == "rated")]) == ["agent_2", "agent_3"]
    top = f"top tier (2 tied: their intervals overlap): {tier[0]}, {tier[1]}"

    # test cases outside the main component: flagged, and out of the main component's R_t,max
    cases = read(root, "test_case_ratings")
    assert set(cases.loc[cases["test_case_id"].str.startswith("TC_"), "component"]) == {1}
    gaps = read(root, "competency_gap_tables")
    # the main component first, then the disconnected agents, then the unplaced one
    assert set(gaps["agent_id"].iloc[-3:-1]) == {"island", "typo"} and gaps["agent_id"].iloc[-1] == "ghost"
    assert set(gaps["agent_id"]) == accepted and headline(gaps) == top
    main = gaps[gaps["status"].isin(["rated", "provisional"])]
    assert (main["hardest_test_case_rating"] == cases.loc[cases["component"] == 0, "mu"].max()).all()
    assert gaps.set_index("agent_id").loc["ghost", ["rating", "gap_50", "gap_99"]].isna().all()
    assert gaps.set_index("agent_id")["status"].to_dict() == status

    # the command line: the top tier, and every unusual agent by name with its reason
    out = io.StringIO()
    print_summary(storage.store, RunSummary(), out)
    text = out.getvalue()
    assert f"{BENCHMARK}: 9 agents (4 rated, 2 provisional, 2 disconnected, 1 unplaced); {top}; rated " in text
    assert "best " not in text
    assert "    provisional: half — placed from a partial upload: 6 of its 10 test cases; 4 are not rated" in text
    assert "    disconnected: typo — shares no test case with the main component (4 agents)" in text
    assert "    unplaced: ghost — none of its 10 test cases is rated in this benchmark" in text

    # the report and the explorer say the same
    report = (root / "warehouse" / "reports" / f"{BENCHMARK}.html").read_text()
    assert f'<p id="headline">{top}</p>' in report
    for line in ("unplaced: ghost — none of its 10 test cases", "disconnected: typo — shares no test case"):
        assert f"<li>{line}" in report
    hardest = re.search(r'<div id="hardest">(.*?)</div>', report, flags=re.S).group(1)
    assert "tc_" in hardest and "TC_" not in hardest  # the main component's hardest test cases
    page = (root / "warehouse" / "explorer" / f"{BENCHMARK}.html").read_text()
    (block,) = re.findall(r'<script type="application/json" id="explorer-data">(.*?)</script>', page, flags=re.S)
    data = json.loads(block)
    assert data["headline"] == top
    assert any(line.startswith("disconnected: typo") for line in data["unusual"])
    shown = dict(zip(data["agents"]["agent_id"], data["agents"]["status"], strict=True))
    assert shown == status
    rank_lo = dict(zip(data["agents"]["agent_id"], data["agents"]["rank_lo"], strict=True))
    assert rank_lo["typo"] is None and rank_lo["ghost"] is None
    assert data["testCases"]["total"] == (cases["component"] == 0).sum()  # the difficulty axis: the main component


@pytest.mark.slow
def test_the_nightly_job_and_a_plan_take_unplaced_and_provisional_agents_in_their_stride(daemon, root):
    """An unplaced agent (no rating) and a provisional one (not in the match table) leave the nightly comparison alone;
    a plan for the unplaced one starts from the prior."""
    matches = write_benchmark(root, BENCHMARK, [1300, 1600, 1900])
    rows = matches[matches["agent_id"] == "agent_0"].rename(columns={"metric": "correct"})[["test_case_id", "correct"]]
    write_log(root, BENCHMARK, "ghost", pd.DataFrame({"test_case_id": [f"zz_{i}" for i in range(10)], "correct": 1.0}))
    write_log(root, BENCHMARK, "half", rows.head(10))
    assert all(r.success for r in daemon.settle())
    config = {
        **QUIET,
        "ops": {
            "rating_uncertainty": {"config": {"resamples": 10}},
        },
    }
    job = daemon.defs.resolve_job_def("rate_benchmarks_nightly")
    result = job.execute_in_process(run_config=config, instance=daemon.instance, partition_key=BENCHMARK, raise_on_error=False)
    failures = [e.step_failure_data.error.message.splitlines()[0] for e in result.all_events if e.is_step_failure]
    assert result.success, failures
    ranks = result.asset_materializations_for_node("estimator_comparison")[0].metadata["ranks_by_method"].value
    assert sorted(r.data["agent_id"] for r in ranks.records) == ["agent_0", "agent_1", "agent_2"]
    # a plan for the unplaced agent starts from the new-agent prior, not from a rating it does not have
    plan = daemon.defs.resolve_job_def("plan_placement").execute_in_process(
        run_config={**QUIET, "ops": {"placement_plans": {"config": {"agent": "ghost", "budget": 5}}}},
        instance=daemon.instance,
        partition_key=BENCHMARK,
    )
    meta = plan.asset_materializations_for_node("placement_plans")[0].metadata
    assert meta["current_rating"].value == "none yet" and meta["planned"].value == 5
