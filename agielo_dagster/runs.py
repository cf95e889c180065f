"""A killed run never blocks the next one: runs name their process, and a run whose process is gone is failed.

Every rating run carries the tag ``agielo/benchmark``, and names the process it runs in (``agielo/host``,
``agielo/pid``): ``agielo run`` when it creates the run, a run launched by the daemon when its storage resource
starts (:meth:`ObjectStorage.setup_for_execution`). A run left ``STARTED`` by a killed process (``kill -9`` of
``agielo run``, of a run's process), or ``NOT_STARTED`` (``agielo run`` killed between creating its run and starting
it), is marked failed by whoever next looks (the sensor, ``agielo run``), when its process is gone from this host. Dagster's own run monitoring cannot see it: the default run launcher does not
check its run workers' health, and a run executed in ``agielo run``'s process has no launcher at all. Runs on
other hosts are left to that monitoring. Only a run whose steps run in its own process (the in-process executor)
names it: a Celery worker outlives the step, so its pid says nothing about whether the run is alive.
"""

from __future__ import annotations

import os
import socket

import dagster as dg

BENCHMARK_TAG = "agielo/benchmark"
TRIGGER_TAG = "agielo/trigger"
HOST_TAG = "agielo/host"
PID_TAG = "agielo/pid"
STATE_TAG = "agielo/state"
RERATE_TAG = "agielo/rerate"  # on the nightly job: every step materializes, whether or not its inputs changed
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
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
    """Mark failed the runs in progress, or created and never started, whose process on this host is gone; returns
    their ids. A run not yet started names a process only where ``agielo run`` created it to run in its own."""
    tags = {BENCHMARK_TAG: benchmark} if benchmark else {}
    failed = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.NOT_STARTED, *IN_PROGRESS], tags=tags)):
        run = record.dagster_run
        if _gone(run.tags):
            instance.report_run_failed(run, f"its process ({run.tags[PID_TAG]} on {run.tags[HOST_TAG]}) is gone: killed?")
            failed.append(run.run_id)
    return failed


def benchmark_runs_in_progress(instance: dg.DagsterInstance, benchmark: str) -> list[dg.RunRecord]:
    return list(instance.get_run_records(dg.RunsFilter(statuses=WAITING, tags={BENCHMARK_TAG: benchmark})))


def steps_in_run_process() -> bool:
    """Whether this code location runs every step in its run's own process (``AGIELO_EXECUTOR``, in_process by default)."""
    return (os.environ.get("AGIELO_EXECUTOR", "in_process").strip() or "in_process") == "in_process"
