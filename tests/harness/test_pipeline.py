"""Harness logs through the real pipeline: dropped under incoming/, rated like any upload, problems named.

Logs are the real tools' (the session fixtures of conftest.py run lm-eval and Inspect offline).
"""

import json
import shutil
import sys

import dagster as dg
import pandas as pd
import pytest
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.cli import RunSummary, print_summary
from agielo_dagster.domain.incoming import read_incoming

from ..pipeline.conftest import Daemon


def read(root, asset, benchmark):
    return pd.read_parquet(root / "warehouse" / asset / f"{benchmark}.parquet")


@pytest.fixture
def pipeline(tmp_path):
    root = tmp_path / "storage"
    (root / "raw").mkdir(parents=True)
    with dg.instance_for_test() as instance:
        yield root, Daemon(ObjectStorage(root=str(root)), instance)


def benchmarks_of(root) -> set[str]:
    return {p.stem for p in (root / "warehouse/agent_ratings").glob("*.parquet")}


@pytest.mark.slow  # the quick pass keeps test_inspect_logs_are_rated
def test_an_lm_eval_run_fans_out_into_one_benchmark_per_task_and_a_later_run_joins(pipeline, lm_eval_logs):
    root, daemon = pipeline
    shutil.copytree(lm_eval_logs / "run1", root / "incoming/lm-eval/run1")
    runs = daemon.settle()
    assert all(r.success for r in runs)
    tasks = benchmarks_of(root)
    assert "quiz_mc" in tasks and any(t.startswith("quiz_gen") for t in tasks)  # one benchmark per task (and filter)
    agents = set(read(root, "agent_ratings", "quiz_mc")["agent_id"])
    assert agents == {"EleutherAI__pythia-160m-96564b34"}  # the model's name, made safe (the original kept as metadata)
    ledger = read(root, "upload_ledger", "quiz_mc")
    assert list(ledger["status"]) == ["accepted"] and ledger["path"].iloc[0].startswith("warehouse/derived/quiz_mc/")

    # a new model's run folder dropped later is picked up by the sensor and rated
    shutil.copytree(lm_eval_logs / "run2", root / "incoming/lm-eval/run2")
    runs = daemon.settle()
    assert runs[0].dagster_run.job_name == "convert_incoming"
    now = set(read(root, "agent_ratings", "quiz_mc")["agent_id"])
    assert len(now) == 2 and agents < now and any(a.startswith("acme__parrot-7b-") for a in now)
    assert not daemon.sensor_tick().run_requests  # settled: nothing read again


@pytest.mark.slow  # the quick pass keeps test_inspect_logs_are_rated
def test_lm_eval_logs_and_the_same_results_as_csv_rate_identically(pipeline, lm_eval_logs, tmp_path):
    root, daemon = pipeline
    for run in ("run1", "run2"):
        shutil.copytree(lm_eval_logs / run, root / f"incoming/lm-eval/{run}")
    daemon.settle()
    # the same results, written by a user as CSV uploads of another benchmark with the inferred benchmark.yaml
    folder = root / "raw/quiz_mc_csv"
    folder.mkdir()
    (folder / "benchmark.yaml").write_bytes((root / "warehouse/derived/quiz_mc/benchmark.yaml").read_bytes())
    for path in sorted((root / "warehouse/derived/quiz_mc").glob("*.parquet")):
        rows = pd.read_parquet(path)
        spec = (folder / "benchmark.yaml").read_text()
        name = next(line.split(":", 1)[1].strip() for line in spec.splitlines() if line.startswith("metric:"))
        rows[["test_case_id", name]].to_csv(folder / f"{path.stem}.csv", index=False)
    daemon.settle()
    columns = ["test_case_id", "agent_id", "metric", "score"]
    from_logs, from_csv = read(root, "match_tables", "quiz_mc"), read(root, "match_tables", "quiz_mc_csv")
    pd.testing.assert_frame_equal(from_logs[columns].astype(str), from_csv[columns].astype(str))
    ratings = ["agent_id", "mu", "sigma", "matches", "mean_metric"]
    pd.testing.assert_frame_equal(
        read(root, "agent_ratings", "quiz_mc")[ratings], read(root, "agent_ratings", "quiz_mc_csv")[ratings]
    )
    pd.testing.assert_frame_equal(
        read(root, "test_case_ratings", "quiz_mc")[["test_case_id", "mu"]],
        read(root, "test_case_ratings", "quiz_mc_csv")[["test_case_id", "mu"]],
    )


@pytest.mark.slow  # the quick pass keeps test_inspect_logs_are_rated
def test_bad_logs_are_named_in_the_ledger_and_by_agielo_run(pipeline, lm_eval_logs):
    root, daemon = pipeline
    shutil.copytree(lm_eval_logs / "run1", root / "incoming/lm-eval/run1")
    # the same run dropped twice: two logs claim the same (model, task)
    shutil.copytree(lm_eval_logs / "run1", root / "incoming/lm-eval/copy_of_run1")
    # a truncated samples file in a third drop
    shutil.copytree(lm_eval_logs / "run2", root / "incoming/lm-eval/cut")
    samples = sorted((root / "incoming/lm-eval/cut").rglob("samples_quiz_mc_*.jsonl"))[-1]
    samples.write_bytes(samples.read_bytes()[: len(samples.read_bytes()) // 2])
    daemon.settle()
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    rules = set(report["rule"])
    assert {"harness_duplicate", "lm_eval_truncated"} <= rules, rules
    assert not (root / "warehouse/derived/quiz_mc").exists() or not list((root / "warehouse/derived/quiz_mc").glob("Eleuther*"))
    import io

    out = io.StringIO()
    print_summary(daemon.storage.store, RunSummary(), out=out)
    text = out.getvalue()
    assert "(rule: harness_duplicate)" in text and "(rule: lm_eval_truncated)" in text and "incoming/lm-eval/cut/" in text
    # the user removes the copy: the run's uploads are rated again
    shutil.rmtree(root / "incoming/lm-eval/copy_of_run1")
    daemon.settle()
    assert "EleutherAI__pythia-160m-96564b34" in set(read(root, "agent_ratings", "quiz_mc")["agent_id"])


def test_inspect_logs_are_rated(pipeline, inspect_logs):
    root, daemon = pipeline
    shutil.copytree(inspect_logs / "logs", root / "incoming/inspect/logs")
    daemon.settle()
    benchmarks = benchmarks_of(root)
    assert benchmarks, "no benchmark rated from the Inspect logs"
    for benchmark in benchmarks:
        assert len(read(root, "agent_ratings", benchmark)) == 2  # alpha and beta


@pytest.mark.slow  # the quick pass keeps test_inspect_logs_are_rated
def test_a_log_refused_for_a_missing_optional_dependency_is_read_once_it_is_installed(pipeline, inspect_logs, monkeypatch):
    """The outcome came from the environment, not the file: installing inspect-ai re-reads the same bytes."""
    root, daemon = pipeline
    with monkeypatch.context() as absent:
        for module in ("inspect_ai", "inspect_ai.log"):  # as if the optional dependency were not installed
            absent.setitem(sys.modules, module, None)
        shutil.copytree(inspect_logs / "logs", root / "incoming/inspect/logs")
        daemon.settle()
        errors = [e for r in read_incoming(daemon.storage.store) for e in json.loads(r["errors"])]
        assert errors and {e["rule"] for e in errors} == {"inspect_not_installed"}
        assert not benchmarks_of(root)
    # "pip install 'agielo-dagster[harness]'": the same files, now readable; the sensor sees it without a file change
    assert daemon.sensor_tick(execute=False).run_requests
    daemon.settle()
    assert not [e for r in read_incoming(daemon.storage.store) for e in json.loads(r["errors"])]
    benchmarks = benchmarks_of(root)
    assert benchmarks and all(len(read(root, "agent_ratings", b)) == 2 for b in benchmarks)
    assert not daemon.sensor_tick().run_requests  # settled: not read again while the environment stays
