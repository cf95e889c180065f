"""The uploads_accepted check's latest result is every benchmark's state: evaluated in every ledger run, even one
with nothing to do, and failing while any benchmark still has a rejected upload (issue 24, item 5)."""

import dagster as dg
import pandas as pd

from .conftest import write_benchmark, write_log

CHECK = dg.AssetCheckKey(dg.AssetKey("upload_ledger"), "uploads_accepted")


def run_of(runs, benchmark):
    return [r for r in runs if r.dagster_run.tags.get("dagster/partition") == benchmark][-1]


def evaluation(run):
    (found,) = [e for e in run.get_asset_check_evaluations() if e.check_name == CHECK.name]
    return found


def test_a_later_clean_run_of_another_benchmark_still_shows_the_rejection(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    write_benchmark(root, "other", [1400, 1600])
    daemon.settle()
    bad = pd.read_csv(root / "raw/quiz/agent_1.csv")
    bad.loc[5, "correct"] = 7.0  # outside identity's [0, 1]
    write_log(root, "quiz", "agent_1", bad)
    run = run_of(daemon.settle(), "quiz")
    first = evaluation(run)
    assert not first.passed and first.severity == dg.AssetCheckSeverity.WARN
    assert first.metadata["benchmark"].value == "quiz" and first.metadata["first_rule"].value == "metric_in_range"

    # a later run of the other benchmark, with nothing to do: evaluated (never skipped), and still failing
    job = daemon.defs.resolve_job_def(run.dagster_run.job_name)
    later = job.execute_in_process(instance=daemon.instance, partition_key="other", raise_on_error=False)
    assert later.success
    result = evaluation(later)
    assert not result.passed, "a clean run of another benchmark hid quiz's rejection"
    assert result.metadata["benchmark"].value == "other" and result.metadata["rejected_or_refused"].value == 0
    assert "1 of 2 benchmark(s)" in result.description and "quiz" in result.description
    outcomes = {r.data["benchmark"]: r.data for r in result.metadata["benchmarks"].value.records}
    assert outcomes["quiz"]["outcome"] == "failed" and outcomes["quiz"]["rejected"] == 1
    assert outcomes["other"]["outcome"] == "passed" and outcomes["other"]["accepted"] == 2
    (problem,) = result.metadata["problems"].value.records
    assert problem.data["benchmark"] == "quiz" and problem.data["path"] == "raw/quiz/agent_1.csv"
    assert problem.data["rule"] == "metric_in_range"
    # the instance's latest record of the check (the UI's headline) is that failure
    latest = daemon.instance.event_log_storage.get_latest_asset_check_execution_by_key([CHECK])[CHECK]
    assert latest.run_id == later.run_id and latest.status.value == "FAILED"

    # the fix: the upload made good again, every benchmark passes
    write_log(root, "quiz", "agent_1", bad.assign(correct=bad["correct"].clip(0, 1)))
    fixed = run_of(daemon.settle(), "quiz")
    assert evaluation(fixed).passed and "every upload of 2 benchmark(s) accepted" in evaluation(fixed).description
