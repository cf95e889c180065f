"""The demo and `agielo run` on an idle machine and beside 3 busy processes: wall time and CPU-seconds.

Each figure is one whole process (`agielo demo` on a fresh storage root and instance; `agielo run` over
a copy of the demo's raw logs, so it ingests and rates both benchmarks), its CPU time read from the
kernel when it exits (`wait4`: the process and the children it waited for). "busy" runs it beside 3
processes that spin on a core each, as on a shared CI runner or worker host.

Baseline in the same run: the same commands with the thread libraries left at their own defaults
(libgomp's 300,000-iteration spin, OpenBLAS's threads on every core of the host, its long spin), which
is what the pipeline did before `agielo_dagster/threads.py`. Target: busy CPU-s ≤ 1.3 × idle CPU-s,
and the demo ≤ 45 CPU-s from a fresh clone (the first call also compiles numba's kernels: run it
with --fresh-cache to count that).

    python benchmarks/busy.py [--commands demo,run] [--fresh-cache]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AGIELO = [sys.executable, "-m", "agielo_dagster.cli"]
LIBRARY_DEFAULTS = {name: "" for name in ("GOMP_SPINCOUNT", "OPENBLAS_THREAD_TIMEOUT", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
SPIN = "while True: pass"


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the process and its waited-for children) of one command."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def one_run(command: str, *, busy: bool, environment: dict[str, str], demo_raw: Path | None) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="agielo-busy-") as tmp:
        work = Path(tmp)
        env = os.environ | environment | {"DAGSTER_HOME": str(work / "home"), "AGIELO_STORAGE": str(work / "data")}
        (work / "home").mkdir()
        if command == "demo":
            args = [*AGIELO, "demo"]
        else:
            shutil.copytree(demo_raw, work / "data" / "raw")
            args = [*AGIELO, "run"]
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(3 if busy else 0)]
        try:
            return timed(args, work, env)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", default="demo,run")
    parser.add_argument("--fresh-cache", action="store_true", help="clear numba's cache first (a fresh clone's first run)")
    args = parser.parse_args()
    if args.fresh_cache:
        for cache in (REPO / "agielo_dagster").rglob("__pycache__"):
            for compiled in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
                compiled.unlink()
    with tempfile.TemporaryDirectory(prefix="agielo-busy-raw-") as tmp:
        demo_raw = Path(tmp) / "raw"
        env = os.environ | {"DAGSTER_HOME": str(Path(tmp) / "home"), "AGIELO_STORAGE": str(Path(tmp) / "data")}
        (Path(tmp) / "home").mkdir()
        first_wall, first_cpu = timed([*AGIELO, "demo"], Path(tmp), env)  # the raw logs `agielo run` rates
        shutil.copytree(Path(tmp) / "data" / "raw", demo_raw)
        print(f"cores: {len(os.sched_getaffinity(0))}; load before: {os.getloadavg()[0]:.1f}")
        cache = "an empty numba cache (a fresh clone)" if args.fresh_cache else "numba's cache as found"
        print(f"first demo, idle, with {cache}: {first_wall:.1f}s wall, {first_cpu:.1f} CPU-s")
        print(
            f"{'command':<8} {'threads':<18} {'idle wall':>10} {'idle CPU-s':>11} {'busy wall':>10} {'busy CPU-s':>11} {'busy/idle CPU':>14}"
        )
        for command in args.commands.split(","):
            for label, environment in (("agielo (short spin)", {}), ("library defaults", LIBRARY_DEFAULTS)):
                idle = one_run(command, busy=False, environment=environment, demo_raw=demo_raw)
                busy = one_run(command, busy=True, environment=environment, demo_raw=demo_raw)
                print(
                    f"{command:<8} {label:<18} {idle[0]:>9.1f}s {idle[1]:>10.1f}s {busy[0]:>9.1f}s {busy[1]:>10.1f}s {busy[1] / idle[1]:>13.2f}x"
                )


if __name__ == "__main__":
    main()
