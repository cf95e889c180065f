"""How many cores this process may use: its CPU affinity, capped by its cgroup's CPU quota.

A container or CI runner limited to 2 CPUs on a 64-core host still reports 64 in ``os.cpu_count()``;
thread pools sized to that count compete with each other and with the neighbours. ``AGIELO_THREADS``
overrides the figure, e.g. to 1 per Celery worker process when a worker runs several steps at once.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["cgroup_cpu_limit", "usable_cores"]

THREADS_VARIABLE = "AGIELO_THREADS"


def cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota of this process's cgroup in cores (cgroup v2 ``cpu.max``, else v1's CFS quota), None if unlimited."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def usable_cores() -> int:
    """``AGIELO_THREADS`` if set, else the CPUs this process may run on, capped by its cgroup quota (at least 1)."""
    configured = os.environ.get(THREADS_VARIABLE, "").strip()
    if configured:
        if not configured.isdigit() or int(configured) < 1:
            raise ValueError(f"{THREADS_VARIABLE}={configured!r}: expected a whole number of threads, at least 1")
        return int(configured)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, math.ceil(limit))
    return max(1, cores)
