"""Test cases that look mislabeled, where people see them (issue 40): the check, the annotators' export, the summary."""

import io

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from agielo_dagster.cli import RunSummary, print_summary

from .conftest import QUIET, write_benchmark, write_log

CHECK = "few_mislabeled_test_cases"
AGENTS = np.linspace(900, 2100, 30)


def write_reversed(root, benchmark: str, reversed_: list[str], spec: str | None = None) -> None:
    """30 agents × 60 test cases, the ``reversed_`` ones scored 1 − S for every agent (a wrong reference answer)."""
    matches = write_benchmark(root, benchmark, AGENTS, test_cases=60, seed=3, spec=spec)
    flip = matches["test_case_id"].isin(reversed_)
    matches.loc[flip, "metric"] = 1.0 - matches.loc[flip, "metric"]
    for agent, rows in matches.groupby("agent_id"):
        write_log(root, benchmark, agent, rows.rename(columns={"metric": "correct"})[["test_case_id", "correct"]])


def evaluation(runs):
    found = [e for run in runs for e in run.get_asset_check_evaluations() if e.check_name == CHECK]
    return found[-1]


def test_mislabeled_test_cases_are_flagged_exported_checked_and_summarized(daemon, root):
    reversed_ = ["tc_05", "tc_17"]  # informative ones: 50-95 % of the agents solve them before the reversal
    write_reversed(root, "quiz", reversed_)
    result = evaluation(daemon.settle())
    cases = pd.read_parquet(root / "warehouse/test_case_ratings/quiz.parquet").set_index("test_case_id")
    flagged = sorted(cases.index[cases["flag"] == "likely_mislabeled"])
    assert flagged == reversed_
    # 2 of 60 (3.3 %) is above the 2 % the check allows: a warning, with every flag counted
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["likely_mislabeled"].value == 2 and result.metadata["test_cases"].value == 60
    assert "2 test cases look mislabeled: tc_05, tc_17" in result.description

    # the annotators' export: spreadsheet-safe, each suspect with every agent's score, strongest agent first
    export = pd.read_csv(root / "warehouse/exports/suspects/quiz.csv")
    mislabeled = export[export["flag"] == "likely_mislabeled"].set_index("test_case_id")
    assert sorted(mislabeled.index) == reversed_
    ratings = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet")
    ratings = ratings.sort_values(["mu", "agent_id"], ascending=[False, True])
    assert list(export.columns[7:]) == list(ratings["agent_id"])
    raw = pd.read_csv(root / "raw/quiz/agent_29.csv").set_index("test_case_id")["correct"]
    assert mislabeled.loc["tc_05", "agent_29"] == raw["tc_05"]
    assert (root / "warehouse/exports/suspects/quiz.jsonl").exists()
    report = (root / "warehouse/reports/quiz.html").read_text()
    assert "Suspect test cases" in report and "tc_17" in report and "reference answer or the scoring" in report

    out = io.StringIO()
    print_summary(daemon.storage.store, RunSummary(), out=out)
    assert "2 test cases look mislabeled: tc_05, tc_17 (their results by agent: " in out.getvalue()
    assert "exports/suspects/quiz.csv" in out.getvalue()


def test_a_clean_benchmark_passes_the_check_and_exports_nothing(daemon, root):
    write_reversed(root, "clean", [])
    result = evaluation(daemon.settle())
    assert result.passed and result.metadata["likely_mislabeled"].value == 0
    assert not (root / "warehouse/exports/suspects/clean.csv").exists()
    assert "Suspect test cases" not in (root / "warehouse/reports/clean.html").read_text()
    out = io.StringIO()
    print_summary(daemon.storage.store, RunSummary(), out=out)
    assert "mislabeled" not in out.getvalue()


def test_exclude_re_rates_without_the_flagged_and_named_test_cases(daemon, root):
    spec = "metric: correct\nscoring: identity\nexclude: [likely_mislabeled, tc_00]\n"
    write_reversed(root, "quiz", ["tc_05", "tc_17"], spec=spec)
    runs = daemon.settle()
    cases = pd.read_parquet(root / "warehouse/test_case_ratings/quiz.parquet")
    assert len(cases) == 57 and not {"tc_00", "tc_05", "tc_17"} & set(cases["test_case_id"])
    matches = pd.read_parquet(root / "warehouse/match_tables/quiz.parquet")
    assert len(matches) == 30 * 60  # the match table keeps them: only the ratings leave them out
    (event,) = [
        e.event_specific_data.materialization
        for run in runs
        for e in run.all_events
        if e.is_step_materialization and e.event_specific_data.materialization.asset_key == dg.AssetKey("agent_ratings")
    ][-1:]
    assert event.metadata["excluded_test_cases"].value == 3
    why = {r.data["test_case_id"]: r.data["why"] for r in event.metadata["excluded"].value.records}
    assert why == {"tc_00": "named in benchmark.yaml", "tc_05": "likely_mislabeled", "tc_17": "likely_mislabeled"}
    moved = {r.data["agent_id"]: r.data for r in event.metadata["moved_by_exclusion"].value.records}
    assert len(moved) == 20  # the first rows (of 30 agents)
    # each agent's gap to the oracle with and without them, the one without as in competency_gap_tables
    gaps = pd.read_parquet(root / "warehouse/competency_gap_tables/quiz.parquet").set_index("agent_id")
    for agent, row in moved.items():
        assert row["gap_90"] == pytest.approx(gaps.loc[agent, "gap_90"], abs=0.05)
        assert row["gap_moved"] == pytest.approx(row["gap_90"] - row["gap_90_with_them"], abs=0.2)
    assert any(abs(row["gap_moved"]) >= 1 for row in moved.values())
    report = (root / "warehouse/reports/quiz.html").read_text()
    assert "Excluded test cases" in report and "leaves out 3 test case(s)" in report and 'id="moved-by-exclusion"' in report
    assert 'data-column="gap_moved"' in report.split('id="moved-by-exclusion"')[1].split("</table>")[0]
    # the exclusion is part of the benchmark's inputs: dropping it re-rates with every test case
    (root / "raw/quiz/benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    daemon.settle()
    assert len(pd.read_parquet(root / "warehouse/test_case_ratings/quiz.parquet")) == 60
    assert "Excluded test cases" not in (root / "warehouse/reports/quiz.html").read_text()


def test_an_exclusion_and_a_tag_file_slice_the_rated_test_cases(daemon, root):
    """benchmark.yaml's exclude meets a tag file: the slices place the agents on the rated test cases. The match table
    keeps the excluded ones, which have no frozen rating, and the capabilities step failed on them."""
    write_reversed(root, "quiz", ["tc_05", "tc_17"], spec="metric: correct\nscoring: identity\nexclude: [tc_00]\n")
    ids = [f"tc_{i:02d}" for i in range(60)]
    pd.DataFrame({"test_case_id": ids, "subject": ["math" if i % 2 else "code" for i in range(60)]}).to_csv(
        root / "raw/quiz/test_cases.csv", index=False
    )
    runs = daemon.settle()
    assert runs and all(run.success for run in runs)
    slices = pd.read_parquet(root / "warehouse/slice_ratings/quiz.parquet")
    assert set(slices["value"]) == {"math", "code"}
    assert slices.groupby("value")["agent_id"].nunique().eq(len(AGENTS)).all()


def test_an_exclusion_holds_for_the_nightly_estimators_and_the_leaderboard(daemon, root):
    """Every reader of the benchmark's matches rates the test cases its ratings rate: the excluded ones stay in the
    match table, and the estimators and the leaderboard once rated them."""
    write_reversed(
        root, "quiz", ["tc_05", "tc_17"], spec="metric: correct\nscoring: identity\nexclude: [likely_mislabeled, tc_00]\n"
    )
    write_log(root, "quiz", "newcomer", pd.DataFrame({"test_case_id": ["tc_00", "tc_01", "tc_02"], "correct": [1.0, 0.0, 1.0]}))
    runs = daemon.settle()
    assert runs and all(run.success for run in runs)
    scales = pd.read_parquet(root / "warehouse/benchmark_scales/_all.parquet").set_index("benchmark")
    assert scales.loc["quiz", "test_cases"] == 57
    played = pd.read_parquet(root / "warehouse/agent_benchmark_ratings/_all.parquet").set_index("agent_id")["test_cases"]
    assert (played.drop("newcomer") == 57).all() and played["newcomer"] == 2  # its tc_00 is excluded too
    nightly = ["estimator_comparison", "rating_uncertainty", "reliability_heldout"]
    result = daemon.defs.resolve_job_def("rate_benchmarks_nightly").execute_in_process(
        run_config={**QUIET, "ops": {"rating_uncertainty": {"config": {"resamples": 5}}}},
        instance=daemon.instance,
        partition_key="quiz",
        asset_selection=[dg.AssetKey(name) for name in nightly],
    )
    assert result.success
    rated = 30 * 57
    for name in nightly[:2]:
        assert result.asset_materializations_for_node(name)[0].metadata["matches"].value == rated, name
    heldout = pd.read_parquet(root / "warehouse/reliability_heldout/quiz.parquet")
    assert (heldout["matches"] == rated).all()


def test_a_provisional_agent_and_a_tag_file_leave_the_flags_as_they_are(daemon, root):
    write_reversed(root, "quiz", ["tc_05", "tc_17"])
    ids = [f"tc_{i:02d}" for i in range(60)]
    pd.DataFrame({"test_case_id": ids, "subject": ["math" if i % 2 else "code" for i in range(60)]}).to_csv(
        root / "raw/quiz/test_cases.csv", index=False
    )
    write_log(root, "quiz", "newcomer", pd.DataFrame({"test_case_id": ids[:10], "correct": [1.0, 0.0] * 5}))
    daemon.settle()
    agents = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet").set_index("agent_id")
    assert agents.loc["newcomer", "status"] == "provisional"
    cases = pd.read_parquet(root / "warehouse/test_case_ratings/quiz.parquet").set_index("test_case_id")
    assert sorted(cases.index[cases["flag"] == "likely_mislabeled"]) == ["tc_05", "tc_17"]
    export = pd.read_csv(root / "warehouse/exports/suspects/quiz.csv")
    assert "newcomer" not in export.columns and len(export.columns) == 7 + 30  # the jointly rated agents' results
    explorer = (root / "warehouse/explorer/quiz.html").read_text()
    assert '"tags":["subject: math","subject: math"]' in explorer  # the suspects' tags, searchable
