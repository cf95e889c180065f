"""The incremental pipeline on a local storage root: sensor → one run per stale benchmark → ledger and outputs."""

import datetime as dt
import os

import dagster as dg
import pandas as pd
import pytest
from agielo_dagster.assets.ledger import UPLOADS_CHECK

from agielo_dagster.domain.lineage import RATING_VERSION
from agielo_dagster.schedules import nightly_rerate

from .conftest import BENCHMARK_OUTPUTS, accepted_copy, write_benchmark, write_log

pytestmark = [pytest.mark.component("dagster")]


def read(root, asset, benchmark):
    return pd.read_parquet(root / "warehouse" / asset / f"{benchmark}.parquet")


def ledger(root, benchmark):
    return read(root, "upload_ledger", benchmark).set_index("path")


def output_bytes(root, benchmark):
    return {a: (root / "warehouse" / a / f"{benchmark}.parquet").read_bytes() for a in BENCHMARK_OUTPUTS}


def materialization_count(instance, asset, partition):
    return len(
        instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1000
        ).records
    )


def validated(run) -> int:
    """How many uploads a run read and checked (0 when its ledger step found nothing to do)."""
    for event in run.get_asset_materialization_events():
        m = event.step_materialization_data.materialization
        if m.asset_key == dg.AssetKey("upload_ledger"):
            return m.metadata["validated_in_this_run"].value
    return 0


def test_new_uploads_become_one_run_per_benchmark(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700, 1900])
    result = daemon.sensor_tick()
    (request,) = result.run_requests  # one run for the benchmark, whatever its number of uploads
    assert request.partition_key == "quiz" and request.tags["agielo/benchmark"] == "quiz"
    assert daemon.instance.get_dynamic_partitions("benchmarks") == ["quiz"]  # partitions grow with benchmarks only
    (run,) = daemon.runs
    assert run.success and validated(run) == 4
    rows = ledger(root, "quiz")
    assert list(rows["status"]) == ["accepted"] * 4 and list(rows["rows"]) == [60] * 4
    gaps = read(root, "competency_gap_tables", "quiz")
    # the true order, but agents 1 and 2 (1500, 1700) each solve 30 of the 60 test cases: the data cannot order
    # them (their intervals overlap)
    order = list(gaps["agent_id"])
    assert order[0] == "agent_3" and order[-1] == "agent_0" and set(order[1:3]) == {"agent_1", "agent_2"}
    # lineage: each row reaches its input file, version, the benchmark's input set and the code version
    assert set(gaps["source_path"]) == {f"raw/quiz/agent_{i}.csv" for i in range(4)}
    assert gaps["source_version"].str.startswith("sha256:").all()
    assert (gaps["code_version"] == RATING_VERSION).all() and gaps["inputs_digest"].nunique() == 1
    matches = read(root, "match_tables", "quiz")
    assert list(matches.columns) == ["test_case_id", "agent_id", "metric", "score", "source_path", "source_version"]
    assert len(matches) == 4 * 60
    rel = read(root, "reliability_reports", "quiz")
    assert list(rel["fraction"]) == [k / 10 for k in range(1, 11)] and rel["rho_test_cases"].iloc[-1] < -0.8
    # the yardstick on the 100 % row: simulated from the model, so its binned error is within the twins'
    assert rel["mae_twin"].iloc[:-1].isna().all() and rel["mae_twin"].iloc[-1] > 0
    assert rel["mae_twin_hi"].iloc[-1] >= rel["mae_twin"].iloc[-1]
    assert rel["miscalibration_visible"].iloc[-1] == (rel["mae"].iloc[-1] > rel["mae_twin_hi"].iloc[-1])
    for asset in ("upload_ledger", "match_tables", "agent_ratings", "benchmark_reports"):
        assert materialization_count(daemon.instance, asset, "quiz") == 1
    # nothing changed: the leaderboard across benchmarks and the quarantine report once, then nothing at all
    assert [r.job_name for r in daemon.sensor_tick().run_requests] == ["rate_leaderboard", "report_quarantine"]
    assert not daemon.sensor_tick().run_requests


def test_a_changed_upload_re_rates_only_its_benchmark_and_reads_only_itself(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    write_benchmark(root, "vision", [1400, 1800], seed=3)
    daemon.settle()
    before_quiz = read(root, "agent_ratings", "quiz").set_index("agent_id")["mu"]
    before_vision = output_bytes(root, "vision")
    vision_count = materialization_count(daemon.instance, "match_tables", "vision")

    log = pd.read_csv(root / "raw/quiz/agent_0.csv").assign(correct=1)  # agent_0 re-submits: it solves everything
    write_log(root, "quiz", "agent_0", log)
    result = daemon.sensor_tick()
    assert [r.partition_key for r in result.run_requests] == ["quiz"]
    assert validated(daemon.runs[-1]) == 1  # only the changed upload was read
    after_quiz = read(root, "agent_ratings", "quiz").set_index("agent_id")["mu"]
    assert after_quiz["agent_0"] > before_quiz["agent_0"] + 200 and after_quiz.idxmax() == "agent_0"
    assert materialization_count(daemon.instance, "match_tables", "vision") == vision_count
    assert output_bytes(root, "vision") == before_vision
    # a new version of an accepted upload changes no problem: the quarantine report is not run again
    assert "report_quarantine" not in [r.job_name for r in daemon.sensor_tick().run_requests]


@pytest.mark.slow  # the quick pass keeps the fingerprint test
def test_a_change_that_keeps_size_and_modification_time_is_seen(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500])
    daemon.settle()
    path = root / "raw/quiz/agent_0.csv"
    stat = os.stat(path)
    flipped = pd.read_csv(path).assign(correct=lambda f: 1 - f["correct"])
    write_log(root, "quiz", "agent_0", flipped)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime as before the change
    assert os.stat(path).st_size == stat.st_size
    result = daemon.sensor_tick()
    assert [r.partition_key for r in result.run_requests] == ["quiz"]
    stored = read(root, "match_tables", "quiz")
    assert (stored.loc[stored["agent_id"] == "agent_0", "metric"].to_numpy() == flipped["correct"].to_numpy()).all()


@pytest.mark.slow  # the quick pass has rejections in test_bad_uploads, test_cli_errors and the browser
def test_a_rejected_upload_is_shown_as_rejected_and_is_not_rated(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    daemon.settle()
    bad = pd.read_csv(root / "raw/quiz/agent_1.csv")
    bad.loc[5, "correct"] = 7.0  # outside identity's [0, 1]
    write_log(root, "quiz", "agent_1", bad)
    raw_before = (root / "raw/quiz/agent_1.csv").read_bytes()
    daemon.sensor_tick()
    run = daemon.runs[-1]
    assert run.success  # a rejection is a finding, not a failed run
    (evaluation,) = [e for e in run.get_asset_check_evaluations() if e.check_name == UPLOADS_CHECK]
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    assert evaluation.metadata["first_rule"].value == "metric_in_range"
    row = ledger(root, "quiz").loc["raw/quiz/agent_1.csv"]
    assert row["status"] == "rejected" and row["rule"] == "metric_in_range" and row["row"] == 6 and row["line"] == 7
    # the outputs are those of the files as they are now: agent_1's current upload is not rateable
    assert set(read(root, "agent_ratings", "quiz")["agent_id"]) == {"agent_0", "agent_2"}
    assert accepted_copy(root, "quiz", "agent_1") is None
    assert (root / "raw/quiz/agent_1.csv").read_bytes() == raw_before  # raw files are never touched
    daemon.settle()
    report = read(root, "quarantine_report", "_all")
    assert list(report["file"]) == ["raw/quiz/agent_1.csv"] and list(report["rule"]) == ["metric_in_range"]
    # an unchanged rejected upload is never read again
    assert not daemon.sensor_tick().run_requests

    bad.loc[5, "correct"] = 1.0  # the user fixes the file
    write_log(root, "quiz", "agent_1", bad)
    daemon.settle()
    assert read(root, "quarantine_report", "_all").empty
    assert read(root, "match_tables", "quiz").query("agent_id == 'agent_1'")["metric"].iloc[5] == 1.0


def test_one_broken_upload_does_not_stall_its_benchmark(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500])
    (root / "raw/quiz/broken.csv").write_text("test_case_id,correct\n")  # header only
    daemon.settle()
    assert set(read(root, "agent_ratings", "quiz")["agent_id"]) == {"agent_0", "agent_1"}
    assert list(read(root, "quarantine_report", "_all")["rule"]) == ["has_rows"]


def test_a_changed_scoring_re_validates_and_re_rates(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500])
    daemon.settle()
    (root / "raw/quiz/benchmark.yaml").write_text("metric: correct\nscoring: binary\nparams: {threshold: 0.5}\n")
    daemon.sensor_tick()
    assert validated(daemon.runs[-1]) == 2
    assert read(root, "match_tables", "quiz")["score"].isin([0.0, 1.0]).all()
    assert set(ledger(root, "quiz")["spec_version"]) == {ledger(root, "quiz")["spec_version"].iloc[0]}


def test_a_metric_renamed_to_a_missing_column_withdraws_the_ratings(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500])
    daemon.settle()
    (root / "raw/quiz/benchmark.yaml").write_text("metric: accuracy\nscoring: identity\n")
    daemon.settle()
    assert set(ledger(root, "quiz")["rule"]) == {"has_metric"}
    for asset in BENCHMARK_OUTPUTS:
        assert not (root / "warehouse" / asset / "quiz.parquet").exists(), asset

    # the UI says so: the ledger's latest materialization accepts nothing, and each output's own is marked withdrawn
    def latest(asset):
        (record,) = daemon.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=["quiz"]), limit=1
        ).records
        return record.asset_materialization.metadata

    assert latest("upload_ledger")["accepted"].value == 0
    assert all(latest(asset)["withdrawn"].value is True for asset in BENCHMARK_OUTPUTS)
    assert not daemon.sensor_tick().run_requests


@pytest.mark.slow  # minutes of daemon ticks; slow pass
def test_a_deleted_benchmark_folder_loses_its_outputs_and_partition(daemon, root):
    import shutil

    write_benchmark(root, "quiz", [1300, 1500])
    write_benchmark(root, "vision", [1400, 1800], seed=3)
    daemon.settle()
    shutil.move(root / "raw/quiz", root / "raw/quiz_v2")  # renamed
    daemon.settle()
    assert not list((root / "warehouse").rglob("quiz.parquet")) and not (root / "warehouse/accepted/quiz").exists()
    assert (root / "warehouse/agent_ratings/quiz_v2.parquet").exists()
    assert sorted(daemon.instance.get_dynamic_partitions("benchmarks")) == ["quiz_v2", "vision"]


@pytest.mark.slow  # the quick pass runs the nightly job in test_seams
def test_nightly_schedule_requests_every_benchmark(daemon, root):
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
    assert all(r.run_key.startswith("2026-11-22:") for r in requests)
    # the nightly run re-rates with the same inputs and seed: byte-identical outputs, and the estimators too
    before = output_bytes(root, "quiz")
    job = daemon.defs.resolve_job_def("rate_benchmarks_nightly")
    run = job.execute_in_process(instance=daemon.instance, partition_key="quiz", run_config=None)
    assert run.success
    assert materialization_count(daemon.instance, "agent_ratings", "quiz") == 2
    assert output_bytes(root, "quiz") == before
    assert (root / "warehouse/estimator_comparison/quiz.parquet").exists()


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


@pytest.mark.slow  # slow pass
def test_removed_upload_leaves_the_ratings(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    daemon.settle()
    (root / "raw/quiz/agent_2.csv").unlink()
    daemon.settle()
    assert set(read(root, "agent_ratings", "quiz")["agent_id"]) == {"agent_0", "agent_1"}
    assert "raw/quiz/agent_2.csv" not in ledger(root, "quiz").index


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
    stored = accepted_copy(root, "quiz", "agent_1")
    assert (stored["meta.note"] == "extra column kept as metadata").all()


def test_unchanged_files_are_known_by_their_fingerprint_without_being_read(daemon, root):
    from agielo_dagster.domain.listing import cached_versions, input_files
    from agielo_dagster.domain.store import content_version

    write_benchmark(root, "quiz", [1300, 1500, 1700])
    daemon.settle()
    store = daemon.storage.store
    listed = cached_versions(store, "quiz", input_files(store, "quiz"))
    assert len(listed) == 4 and all(f.version for f in listed)  # three uploads and benchmark.yaml, none to hash
    for f in listed:
        assert f.version == content_version((root / f.path).read_bytes())
