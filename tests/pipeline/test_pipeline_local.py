"""The incremental pipeline on a local storage root: sensor → partitions → runs → automation."""

import datetime as dt
import io
import os

import dagster as dg
import pandas as pd
import pytest
from agielo_dagster.assets.partitions import upload_key

from agielo_dagster.domain.lineage import CODE_VERSION
from agielo_dagster.jobs import BENCHMARK_OUTPUTS
from agielo_dagster.schedules import nightly_rerate

from .conftest import write_benchmark, write_log


def read(root, asset, benchmark):
    return pd.read_parquet(root / "warehouse" / asset / f"{benchmark}.parquet")


def output_bytes(root, benchmark):
    return {a: (root / "warehouse" / a / f"{benchmark}.parquet").read_bytes() for a in BENCHMARK_OUTPUTS}


def materialization_count(instance, asset, partition):
    return len(
        instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1000
        ).records
    )


def test_new_uploads_become_partitions_runs_and_ratings(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700, 1900])
    result = daemon.sensor_tick()
    # one benchmark, four contiguous new agents: one run over a partition range, not four runs
    assert len(result.run_requests) == 1
    assert result.run_requests[0].tags["dagster/asset_partition_range_start"] == str(upload_key("quiz", "agent_0"))
    assert result.run_requests[0].tags["dagster/asset_partition_range_end"] == str(upload_key("quiz", "agent_3"))
    assert daemon.instance.get_dynamic_partitions("benchmarks") == ["quiz"]
    assert daemon.instance.get_dynamic_partitions("agents") == ["agent_0", "agent_1", "agent_2", "agent_3"]
    assert daemon.runs[-1].success
    for agent in ("agent_0", "agent_3"):
        assert materialization_count(daemon.instance, "raw_benchmark_logs", upload_key("quiz", agent)) == 1

    requested = daemon.automation_tick()
    assert requested["match_tables"] == {"quiz"}
    assert requested["competency_gap_tables"] == {"quiz"}
    assert all(r.success for r in daemon.runs)
    gaps = read(root, "competency_gap_tables", "quiz")
    assert list(gaps["agent_id"]) == ["agent_3", "agent_2", "agent_1", "agent_0"]  # true order recovered
    # lineage: each row reaches its input file, version, the benchmark's input set and the code version
    assert set(gaps["source_path"]) == {f"raw/quiz/agent_{i}.csv" for i in range(4)}
    assert gaps["source_version"].str.startswith("sha256:").all()
    assert (gaps["code_version"] == CODE_VERSION).all() and gaps["inputs_digest"].nunique() == 1
    matches = read(root, "match_tables", "quiz")
    assert list(matches.columns) == ["test_case_id", "agent_id", "metric", "score", "source_path", "source_version"]
    assert len(matches) == 4 * 60
    rel = read(root, "reliability_reports", "quiz")
    assert len(rel) == 100 and rel["rho_test_cases"].iloc[-1] < -0.8
    # nothing changed: the next ticks do nothing
    assert daemon.sensor_tick().run_requests in (None, [])
    assert daemon.automation_tick() == {}


def test_a_changed_upload_re_rates_only_its_benchmark(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    write_benchmark(root, "vision", [1400, 1800], seed=3)
    daemon.settle()
    before_quiz = read(root, "agent_ratings", "quiz").set_index("agent_id")["mu"]
    before_vision = output_bytes(root, "vision")
    vision_count = materialization_count(daemon.instance, "match_tables", "vision")

    # agent_0 re-submits: now it solves everything
    log = pd.read_csv(root / "raw/quiz/agent_0.csv").assign(correct=1)
    write_log(root, "quiz", "agent_0", log)
    result = daemon.sensor_tick()
    assert [r.partition_key for r in result.run_requests] == [upload_key("quiz", "agent_0")]
    requested = daemon.automation_tick()
    assert requested["match_tables"] == {"quiz"}
    after_quiz = read(root, "agent_ratings", "quiz").set_index("agent_id")["mu"]
    assert after_quiz["agent_0"] > before_quiz["agent_0"] + 200
    assert after_quiz.idxmax() == "agent_0"
    # the other benchmark: no new materialization, byte-identical files
    assert materialization_count(daemon.instance, "match_tables", "vision") == vision_count
    assert output_bytes(root, "vision") == before_vision


def test_two_uploads_in_the_same_second_are_both_seen(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500])
    daemon.settle()
    a = root / "raw/quiz/agent_0.csv"
    b = root / "raw/quiz/agent_1.csv"
    stamp = os.stat(a).st_mtime_ns
    for path, value in ((a, 0), (b, 1)):
        write_log(root, "quiz", path.stem, pd.read_csv(path).assign(correct=value))
        os.utime(path, ns=(stamp, stamp))  # same modification time as before the change
    result = daemon.sensor_tick()
    assert len(result.run_requests) == 1  # both changed agents, one contiguous range
    assert result.run_requests[0].tags["agielo/uploads"] == "2"


def test_a_rejected_upload_is_quarantined_and_leaves_previous_outputs_intact(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    daemon.settle()
    accepted = (root / "warehouse/accepted/quiz/agent_1.parquet").read_bytes()
    before = output_bytes(root, "quiz")

    bad = pd.read_csv(root / "raw/quiz/agent_1.csv")
    bad.loc[5, "correct"] = 7.0  # outside identity's [0, 1]
    write_log(root, "quiz", "agent_1", bad)
    raw_before = (root / "raw/quiz/agent_1.csv").read_bytes()
    daemon.sensor_tick()
    run = daemon.runs[-1]
    assert not run.success  # the blocking check stops the run
    (evaluation,) = run.get_asset_check_evaluations()
    assert not evaluation.passed
    error = evaluation.metadata["error"].value
    assert "raw/quiz/agent_1.csv" in error and "data row 6" in error and "metric_in_range" in error
    daemon.automation_tick()
    assert (root / "warehouse/accepted/quiz/agent_1.parquet").read_bytes() == accepted
    assert output_bytes(root, "quiz") == before  # re-rated on the good uploads: same bytes
    assert (root / "raw/quiz/agent_1.csv").read_bytes() == raw_before  # raw files are never touched
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    assert list(report["file"]) == ["raw/quiz/agent_1.csv"] and list(report["rule"]) == ["metric_in_range"]

    # the user fixes the file: accepted again, gone from the quarantine report
    bad.loc[5, "correct"] = 1.0
    write_log(root, "quiz", "agent_1", bad)
    daemon.settle()
    assert pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet").empty
    assert read(root, "match_tables", "quiz").query("agent_id == 'agent_1'")["metric"].iloc[5] == 1.0


def test_one_broken_upload_does_not_stall_its_benchmark(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500])
    (root / "raw/quiz/broken.csv").write_text("test_case_id,correct\n")  # header only
    requested = daemon.settle()
    assert requested["competency_gap_tables"] == {"quiz"}
    assert set(read(root, "agent_ratings", "quiz")["agent_id"]) == {"agent_0", "agent_1"}
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    assert list(report["rule"]) == ["has_rows"]


def test_a_changed_benchmark_yaml_re_validates_every_upload(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500])
    daemon.settle()
    (root / "raw/quiz/benchmark.yaml").write_text("metric: correct\nscoring: binary\nparams: {threshold: 0.5}\n")
    result = daemon.sensor_tick()
    assert sum(int(r.tags["agielo/uploads"]) for r in result.run_requests) == 2
    daemon.automation_tick()
    assert read(root, "match_tables", "quiz")["score"].isin([0.0, 1.0]).all()


def test_nightly_schedule_requests_every_benchmark(daemon, root, monkeypatch):
    write_benchmark(root, "quiz", [1300, 1500])
    write_benchmark(root, "vision", [1400, 1800], seed=3)
    daemon.settle()
    assert nightly_rerate.cron_schedule == "0 2 * * *"
    context = dg.build_schedule_context(
        instance=daemon.instance,
        scheduled_execution_time=dt.datetime(2026, 11, 22, 2, 0, tzinfo=dt.UTC),
        repository_def=daemon.defs.get_repository_def(),
    )
    requests = nightly_rerate.evaluate_tick(context).run_requests
    assert sorted(r.partition_key for r in requests) == ["quiz", "vision"]
    assert {r.job_name for r in requests} <= {None, "rate_benchmarks_nightly"}
    assert all(r.run_key.startswith("2026-11-22:") for r in requests)
    # the schedule's run re-rates with the same inputs and seed: byte-identical outputs
    before = output_bytes(root, "quiz")
    job = daemon.defs.resolve_job_def("rate_benchmarks")
    assert job.execute_in_process(instance=daemon.instance, partition_key="quiz").success
    assert output_bytes(root, "quiz") == before


def test_nightly_timezone_is_configurable():
    import subprocess
    import sys

    code = "from agielo_dagster.schedules import nightly_rerate as s; print(s.execution_timezone)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "AGIELO_TIMEZONE": "Europe/Berlin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "Europe/Berlin"


def test_removed_upload_leaves_the_ratings(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    daemon.settle()
    (root / "raw/quiz/agent_2.csv").unlink()
    daemon.settle()
    assert set(read(root, "agent_ratings", "quiz")["agent_id"]) == {"agent_0", "agent_1"}


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_parquet_and_jsonl_uploads(daemon, root, fmt):
    matches = write_benchmark(root, "quiz", [1300, 1700])
    path = root / "raw/quiz/agent_1.csv"
    frame = pd.read_csv(path).assign(note="extra column kept as metadata")
    path.unlink()
    target = root / f"raw/quiz/agent_1.{fmt}"
    if fmt == "parquet":
        frame.to_parquet(target, index=False)
    else:
        target.write_text(frame.to_json(orient="records", lines=True))
    daemon.settle()
    table = read(root, "match_tables", "quiz")
    assert set(table["source_path"]) == {"raw/quiz/agent_0.csv", f"raw/quiz/agent_1.{fmt}"}
    assert len(table) == len(matches)
    stored = pd.read_parquet(io.BytesIO((root / "warehouse/accepted/quiz/agent_1.parquet").read_bytes()))
    assert (stored["meta.note"] == "extra column kept as metadata").all()
