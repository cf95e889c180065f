"""Runs of one benchmark never overlap, and a killed run never blocks the next one.

Every rating run carries the tag ``agielo/benchmark``. Its first step records which process runs
it (``agielo/host``, ``agielo/pid``) and waits for the runs of the same benchmark that started
before it; then it asks whether the benchmark is still stale, so a benchmark changed once is rated
once, whether the daemon, ``agielo run`` or both started a run for it. A run left ``STARTED`` by a
killed process (``kill -9`` of ``agielo run``, a crashed worker) is marked failed by whoever next
looks, when its process is gone from this host; runs on other hosts are left to Dagster's own run
monitoring. Only a step that runs in its run's own process (the in-process executors) names its
process: a step on a Celery worker does not, since that worker outlives the step and the run goes on
elsewhere, so its pid says nothing about whether the run is alive.
"""

from __future__ import annotations

import os
import socket
import time

import dagster as dg

BENCHMARK_TAG = "agielo/benchmark"
TRIGGER_TAG = "agielo/trigger"
HOST_TAG = "agielo/host"
PID_TAG = "agielo/pid"
STATE_TAG = "agielo/state"
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
# executors that run every step in the run's own process (Definitions' default, and execute_in_process)
RUN_PROCESS_EXECUTORS = ("in_process", "execute_in_process_executor")
WAITING = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, *IN_PROGRESS]


def _process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot ('' where /proc is not available)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def process_tags() -> dict[str, str]:
    """Tags naming this process, so that others can tell when it is gone."""
    pid = os.getpid()
    return {HOST_TAG: socket.gethostname(), PID_TAG: f"{pid}:{_process_start(pid)}"}


def _gone(tags: dict[str, str]) -> bool:
    """True when the tagged process ran on this host and no longer exists (a reused pid does not count)."""
    if tags.get(HOST_TAG) != socket.gethostname() or PID_TAG not in tags:
        return False
    pid_text, _, started = tags[PID_TAG].partition(":")
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):
        return False
    return bool(started) and _process_start(pid) != started


def fail_orphaned_runs(instance: dg.DagsterInstance, benchmark: str | None = None) -> list[str]:
    """Mark failed the in-progress runs whose process on this host is gone; returns their ids."""
    tags = {BENCHMARK_TAG: benchmark} if benchmark else {}
    failed = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=IN_PROGRESS, tags=tags)):
        run = record.dagster_run
        if _gone(run.tags):
            instance.report_run_failed(run, f"its process ({run.tags[PID_TAG]} on {run.tags[HOST_TAG]}) is gone: killed?")
            failed.append(run.run_id)
    return failed


def benchmark_runs_in_progress(instance: dg.DagsterInstance, benchmark: str) -> list[dg.RunRecord]:
    return list(instance.get_run_records(dg.RunsFilter(statuses=WAITING, tags={BENCHMARK_TAG: benchmark})))


def claim_benchmark(context: dg.OpExecutionContext, benchmark: str, *, timeout: float = 3600.0, poll: float = 0.5) -> None:
    """Tag this run with its process, then wait until no run of the benchmark that started earlier is in progress."""
    instance = context.instance
    in_run_process = context.job_def.executor_def.name in RUN_PROCESS_EXECUTORS
    instance.add_run_tags(context.run.run_id, {BENCHMARK_TAG: benchmark, **(process_tags() if in_run_process else {})})
    mine = instance.get_run_record_by_id(context.run.run_id)
    my_start = (mine.start_time or mine.create_timestamp.timestamp(), context.run.run_id)
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        fail_orphaned_runs(instance, benchmark)
        earlier = [
            r
            for r in instance.get_run_records(dg.RunsFilter(statuses=IN_PROGRESS, tags={BENCHMARK_TAG: benchmark}))
            if r.dagster_run.run_id != context.run.run_id
            and (r.start_time or r.create_timestamp.timestamp(), r.dagster_run.run_id) < my_start
        ]
        if not earlier:
            return
        if not announced:
            context.log.info(f"waiting for run {earlier[0].dagster_run.run_id} of {benchmark!r} to finish")
            announced = True
        if time.monotonic() > deadline:
            context.log.warning(f"run {earlier[0].dagster_run.run_id} of {benchmark!r} is still in progress; going ahead")
            return
        time.sleep(poll)
