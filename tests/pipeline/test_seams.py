"""Seams between features (issue 21): each one reproduced on a real Dagster instance and storage root."""

import dagster as dg
import numpy as np
import pandas as pd

from agielo_dagster.schedules import nightly_rerate

from .conftest import QUIET, failures, write_benchmark, write_log

NIGHTLY = {
    **QUIET,
    "ops": {
        "rating_uncertainty": {"config": {"resamples": 20}},
    },
}


def plan(daemon, benchmark: str, agent: str, budget: int) -> pd.DataFrame:
    """`agielo plan` in-process: the plan_placement job, then the plan file it wrote."""
    config = {**QUIET, "ops": {"placement_plans": {"config": {"agent": agent, "budget": budget}}}}
    job = daemon.defs.resolve_job_def("plan_placement")
    result = job.execute_in_process(run_config=config, instance=daemon.instance, partition_key=benchmark)
    assert result.success
    return pd.read_csv(f"{daemon.storage.root}/plans/{benchmark}/{agent}.csv")


def test_the_nightly_job_and_schedule_rate_a_benchmark_with_a_provisional_agent(daemon, root):
    matches = write_benchmark(root, "quiz", [1200, 1450, 1700, 1950], test_cases=80)
    daemon.settle()
    planned = plan(daemon, "quiz", "newcomer", 12)
    rows = matches[(matches["agent_id"] == "agent_2") & matches["test_case_id"].isin(planned["test_case_id"])]
    write_log(root, "quiz", "newcomer", rows.rename(columns={"metric": "correct"})[["test_case_id", "correct"]])
    daemon.settle()
    agents = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet").set_index("agent_id")
    assert bool(agents.loc["newcomer", "provisional"]) and pd.isna(agents.loc["newcomer", "rank"])

    job = daemon.defs.resolve_job_def("rate_benchmarks_nightly")
    result = job.execute_in_process(run_config=NIGHTLY, instance=daemon.instance, partition_key="quiz", raise_on_error=False)
    assert result.success, failures(result)
    comparison = pd.read_parquet(root / "warehouse/estimator_comparison/quiz.parquet")
    assert len(comparison) == 6 and comparison["kendall_tau"].notna().all()  # among the 4 jointly rated agents
    ranks = result.asset_materializations_for_node("estimator_comparison")[0].metadata["ranks_by_method"].value
    assert "newcomer" not in {r.data["agent_id"] for r in ranks.records}

    # the schedule's requests, as the daemon would run them
    context = dg.build_schedule_context(instance=daemon.instance, scheduled_execution_time=pd.Timestamp("2026-01-02T02:00Z"))
    requests = nightly_rerate(context)
    assert [r.partition_key for r in requests] == ["quiz"]
    for request in requests:
        run = job.execute_in_process(
            run_config=NIGHTLY,
            instance=daemon.instance,
            partition_key=request.partition_key,
            tags=request.tags,
            raise_on_error=False,
        )
        assert run.success, failures(run)


def test_a_tag_file_of_unknown_test_cases_is_named_and_the_run_completes(daemon, root):
    write_benchmark(root, "quiz", [1200, 1500, 1800], test_cases=40)
    pd.DataFrame({"test_case_id": [f"Q{i}" for i in range(30)], "subject": ["math"] * 30}).to_csv(
        root / "raw/quiz/test_cases.csv", index=False
    )
    runs = daemon.settle()
    assert runs and all(r.success for r in runs), [failures(r) for r in runs]
    assert (root / "warehouse/benchmark_reports/quiz.parquet").exists()
    assert (root / "warehouse/explorer/quiz.html").exists()
    assert pd.read_parquet(root / "warehouse/slice_ratings/quiz.parquet").empty
    tags = daemon.instance.fetch_materializations(dg.AssetKey("test_case_tags"), limit=1).records[0].asset_materialization
    warning = tags.metadata["tag_warning"].value
    assert (
        "raw/quiz/test_cases.csv" in warning and "none of its 30 test-case ids" in warning and "tags_known_test_cases" in warning
    )
    assert tags.metadata["tagged_test_cases_rated"].value == 0


def test_figures_of_extreme_graded_values_one_full_and_several_partial_uploads(daemon, root):
    """The full upload scores the top of a 0..1e300 range everywhere: its rating runs so far above the test cases'
    that every match falls outside the calibration bins (an empty calibration table)."""
    folder = root / "raw/huge"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: value\nscoring: minmax\nparams: {lo: 0, hi: 1.0e+300}\n")
    rng = np.random.default_rng(3)
    ids = [f"t{i:04d}" for i in range(1500)]
    pd.DataFrame({"test_case_id": ids, "value": 1.0e300}).to_csv(folder / "full.csv", index=False)
    for k in range(3):
        chosen = rng.choice(ids, 20, replace=False)
        pd.DataFrame({"test_case_id": chosen, "value": rng.random(20) * 1e300}).to_csv(folder / f"part_{k}.csv", index=False)
    runs = daemon.settle()
    assert runs and all(r.success for r in runs), [failures(r) for r in runs]
    assert (root / "warehouse/benchmark_reports/huge.parquet").exists() and (root / "warehouse/explorer/huge.html").exists()
    agents = pd.read_parquet(root / "warehouse/agent_ratings/huge.parquet")
    assert set(agents["agent_id"]) == {"full", "part_0", "part_1", "part_2"}
