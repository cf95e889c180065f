"""The production deployment for real: Debian's PostgreSQL and Redis, two Celery workers, the daemon.

DAGSTER_HOME holds nothing but a copy of deploy/dagster.yaml; the code location is the repository's
workspace.yaml with ``AGIELO_EXECUTOR=celery``, so every step of every run executes on a worker.

1. Four benchmarks land at once: the daemon's sensor rates all four, the runs are in Postgres, their
   steps ran on the workers, no two runs of one benchmark overlapped, and the warehouse equals, byte
   for byte, what the embedded default (plain ``agielo run``) writes from the same files.
2. The worker process executing a run's rating step is killed (SIGKILL): the run fails through
   Dagster's own handling (the Celery executor sees the lost worker), nothing partial is visible,
   and the sensor's next run rates the benchmark; the warehouse again equals the default's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from agielo_dagster.runs import BENCHMARK_TAG
from benchmarks.servers import Deployment, deployed, missing_servers

from ..devserver import REPO
from ..warehouse_files import warehouse

pytestmark = [
    pytest.mark.slow,  # the quick pass runs test_production_quick.py
    pytest.mark.component("postgres"),
    pytest.mark.component("redis"),
    pytest.mark.component("celery"),
    pytest.mark.component("daemon"),
    pytest.mark.skipif(bool(missing_servers()), reason=missing_servers() or "servers available"),
]

IN_PROGRESS = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def default_warehouse(root: Path, tmp: Path) -> dict[str, object]:
    """The warehouse plain `agielo run` (in-process executor, SQLite instance) writes from ``root``'s raw files."""
    fresh, home = tmp / "storage", tmp / "home"
    shutil.copytree(root / "raw", fresh / "raw")
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGIELO_", "DAGSTER_POSTGRES_"))}
    result = subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(fresh), "--instance", str(home)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return warehouse(fresh)


def write_benchmark(folder: Path, logs: dict[str, pd.DataFrame]) -> None:
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: p_true\nscoring: identity\n")
    for model, log in logs.items():
        log.to_csv(folder / f"{model}.csv", index=False)


@pytest.fixture(scope="module")
def demo_logs():
    from agielo_dagster.demo import demo_logs

    return demo_logs("breast_cancer")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    with deployed(tmp_path_factory.mktemp("production"), workers=2) as deploy:
        yield deploy


def instance(deploy: Deployment) -> dg.DagsterInstance:
    return dg.DagsterInstance.from_config(str(deploy.home))


def wait_for(condition, what: str, deploy: Deployment, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{deploy.tail()}")


def settled(deploy: Deployment) -> bool:
    with instance(deploy) as inst:
        return not inst.get_run_records(dg.RunsFilter(statuses=IN_PROGRESS), limit=1)


def rating_runs(deploy: Deployment) -> list[dg.RunRecord]:
    with instance(deploy) as inst:
        return list(inst.get_run_records(dg.RunsFilter(job_name="rate_benchmarks")))


def celery_workers_of(deploy: Deployment, run_id: str) -> set[str]:
    """The workers the run's steps executed on, from the Celery executor's own engine events."""
    with instance(deploy) as inst:
        workers = set()
        for entry in inst.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
            event = entry.dagster_event
            if "in celery worker" in (event.message or ""):
                workers.add(event.engine_event_data.metadata["Celery worker"].value)
        return workers


def test_four_benchmarks_at_once_rated_by_the_workers_as_the_default_would(deployment, demo_logs, tmp_path):
    from dagster_postgres import PostgresRunStorage

    deploy, root = deployment, deployment.storage_root
    models = sorted(demo_logs)
    benchmarks = {
        "breast_cancer": demo_logs,
        "bc_first_models": {m: demo_logs[m] for m in models[:8]},
        "bc_last_models": {m: demo_logs[m] for m in models[5:]},
        "bc_first_cases": {m: log.head(400) for m, log in demo_logs.items()},
    }
    staging = tmp_path / "staging"
    for name, logs in benchmarks.items():
        write_benchmark(staging / "raw" / name, logs)
    expected = default_warehouse(staging, tmp_path / "default")
    for name in benchmarks:  # all four change at once: one rename each
        (staging / "raw" / name).rename(root / "raw" / name)

    def done():
        return settled(deploy) and warehouse(root) == expected

    wait_for(done, "the daemon to rate the four benchmarks", deploy, timeout=300)
    assert warehouse(root) == expected  # byte for byte what the embedded default writes

    with instance(deploy) as inst:
        assert isinstance(inst.run_storage, PostgresRunStorage)
    records = rating_runs(deploy)
    by_benchmark: dict[str, list[dg.RunRecord]] = {}
    for record in records:
        by_benchmark.setdefault(record.dagster_run.tags[BENCHMARK_TAG], []).append(record)
    assert set(by_benchmark) == set(benchmarks)
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in records)
    assert all(r.dagster_run.tags.get("agielo/trigger") == "sensor" for r in records)
    for runs in by_benchmark.values():  # one run at a time per benchmark
        spans = sorted((r.start_time, r.end_time) for r in runs)
        assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False)), spans
    workers = set().union(*(celery_workers_of(deploy, r.dagster_run.run_id) for r in records))
    assert workers == {"agielo-w0@" + os.uname().nodename, "agielo-w1@" + os.uname().nodename}, workers


def test_a_worker_killed_mid_step_fails_the_run_and_the_next_run_rates(deployment, tmp_path):
    deploy, root = deployment, deployment.storage_root
    before = {r.dagster_run.run_id for r in rating_runs(deploy)}
    wait_for(lambda: settled(deploy), "the deployment to be idle", deploy, timeout=120)
    # a bigger benchmark, so its rating step runs long enough to be killed in the middle
    rng = np.random.default_rng(5)
    agents, cases = 30, 8000
    folder = tmp_path / "raw" / "big"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    ids = [f"case_{i:05d}" for i in range(cases)]
    difficulty = rng.normal(0, 1, cases)
    for a in range(agents):
        p = 1 / (1 + np.exp(difficulty - rng.normal(0, 1)))
        pd.DataFrame({"test_case_id": ids, "correct": (rng.random(cases) < p).astype(int)}).to_csv(
            folder / f"agent_{a:02d}.csv", index=False
        )
    folder.rename(root / "raw" / "big")

    deadline = time.monotonic() + 120
    run_id, started = None, set()
    with instance(deploy) as inst:
        while "ratings" not in started and time.monotonic() < deadline:
            runs = [
                r for r in inst.get_run_records(dg.RunsFilter(job_name="rate_benchmarks")) if r.dagster_run.run_id not in before
            ]
            if runs:
                run_id = runs[0].dagster_run.run_id
                started = {e.step_key for e in inst.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)}
            time.sleep(0.05)
    assert "ratings" in started, f"no rating step started ({started})\n{deploy.tail()}"
    killed = deploy.pool_processes()
    for pid in killed:  # the worker processes that execute steps: one of them is rating "big"
        os.kill(pid, signal.SIGKILL)

    def finished():
        with instance(deploy) as inst:
            run = inst.get_run_by_id(run_id)
            return run if run.is_finished else None

    run = wait_for(finished, "the killed run to finish", deploy, timeout=120)
    assert run.status == dg.DagsterRunStatus.FAILURE
    with instance(deploy) as inst:  # failed by the Celery executor, which heard of the lost worker process
        (failure,) = inst.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    assert "WorkerLostError" in failure.dagster_event.event_specific_data.error.to_string(), failure
    # nothing of the killed step is visible: the rating outputs of "big" do not exist
    visible = {path for path in warehouse(root) if "/big." in path or path.startswith("big")}
    assert not any(p.split("/")[0] in ("rating_snapshots", "test_case_ratings", "agent_ratings") for p in visible), visible

    # the sensor asks again (the benchmark is still stale): the next run, on the restarted pool processes, rates it
    expected = default_warehouse(root, tmp_path / "default_after")

    def rated_again():
        runs = [r for r in rating_runs(deploy) if r.dagster_run.run_id not in before | {run_id}]
        ok = [r for r in runs if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS]
        return ok if ok and settled(deploy) and warehouse(root) == expected else None

    wait_for(rated_again, "the next run of 'big' to succeed", deploy, timeout=240)
    assert warehouse(root) == expected
    assert not [p for p in (root / "warehouse").rglob(".*") if p.is_file()], "temporary files left behind"
    assert all(pid not in deploy.pool_processes() for pid in killed)  # Celery replaced the killed processes
