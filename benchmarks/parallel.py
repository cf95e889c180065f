"""Rating runs spread over Celery workers: the nightly re-rating with 1 worker, then with 2.

The production deployment of deploy/ for real, as tests/deploy/test_production.py starts it: Debian's
PostgreSQL and Redis on free ports, the Dagster daemon with DAGSTER_HOME = a copy of
deploy/dagster.yaml, ``AGIELO_EXECUTOR=celery``, and Celery workers started with
``dagster-celery worker start`` (one pool process each). N synthetic benchmarks land at once and the
daemon's sensor rates them (with 2 workers, which also warms both up). Then the nightly job
(``rate_benchmarks_nightly``: re-rating plus estimator comparison and bootstrap uncertainty) is
backfilled over every benchmark, through Dagster's own backfill daemon and run queue: once with one
worker, once with two. Each figure is the wall time from the backfill command to the end of the last
run; the speed-up is their ratio.

    python benchmarks/parallel.py [--benchmarks 12] [--agents 30] [--test-cases 400] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dagster as dg  # noqa: E402

from benchmarks.servers import Deployment, missing_servers, stop_group  # noqa: E402

FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def write_benchmark(root: Path, name: str, agents: int, test_cases: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    ids = [f"{name}_q{i:05d}" for i in range(test_cases)]
    difficulty = rng.normal(0, 1.2, test_cases)
    for a in range(agents):
        p = 1 / (1 + np.exp(difficulty - rng.normal(0, 1)))
        frame = pd.DataFrame({"test_case_id": ids, "correct": (rng.random(test_cases) < p).astype(np.int64)})
        frame.to_csv(folder / f"org__model-{a:03d}.csv", index=False)


def wait(condition, what: str, deploy: Deployment, timeout: float = 3600.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(1)
    raise SystemExit(f"timed out waiting for {what}\n{deploy.tail()}")


def runs_with(deploy: Deployment, tags: dict[str, str]) -> list[dg.RunRecord]:
    with dg.DagsterInstance.from_config(str(deploy.home)) as instance:
        return list(instance.get_run_records(dg.RunsFilter(tags=tags)))


def idle(deploy: Deployment) -> bool:
    with dg.DagsterInstance.from_config(str(deploy.home)) as instance:
        waiting = [s for s in dg.DagsterRunStatus if s not in FINISHED]
        return not instance.get_run_records(dg.RunsFilter(statuses=waiting), limit=1)


def nightly(deploy: Deployment, benchmarks: list[str], phase: str) -> dict[str, float]:
    """Backfill the nightly job over every benchmark; the wall time until its last run ends."""
    tags = {"agielo/trigger": "nightly", "agielo/bench-phase": phase}
    started = time.time()
    command = [
        str(Path(sys.executable).parent / "dagster"),
        "job",
        "backfill",
        "-w",
        str(REPO / "workspace.yaml"),
        "-j",
        "rate_benchmarks_nightly",
        "--partitions",
        ",".join(benchmarks),
        "--tags",
        json.dumps(tags),
        "--noprompt",
    ]
    result = subprocess.run(command, cwd=REPO, env=deploy.env(), capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"backfill failed:\n{result.stdout}\n{result.stderr}")

    def done():
        records = runs_with(deploy, {"agielo/bench-phase": phase})
        finished = [r for r in records if r.dagster_run.status in FINISHED]
        return records if len(finished) == len(benchmarks) else None

    records = wait(done, f"the {phase} backfill", deploy)
    failed = [r.dagster_run.run_id for r in records if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS]
    if failed:
        raise SystemExit(f"{phase}: runs failed: {failed}\n{deploy.tail()}")
    first_start = min(r.start_time for r in records)
    last_end = max(r.end_time for r in records)
    return {
        "wall": last_end - started,
        "runs_span": last_end - first_start,
        "mean_run": float(np.mean([r.end_time - r.start_time for r in records])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", type=int, default=12)
    parser.add_argument("--agents", type=int, default=30)
    parser.add_argument("--test-cases", type=int, default=400)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary folder)")
    args = parser.parse_args()
    if reason := missing_servers():
        raise SystemExit(f"cannot run: {reason}")

    base = args.keep or Path(tempfile.mkdtemp(prefix="agielo_parallel_"))
    base.mkdir(parents=True, exist_ok=True)
    root = base / "storage"
    (root / "raw").mkdir(parents=True, exist_ok=True)
    names = [f"bench_{b:02d}" for b in range(args.benchmarks)]
    print(f"{args.benchmarks} benchmarks x {args.agents} agents x {args.test_cases} test cases; {os.cpu_count()} cores; {base}")
    deploy = Deployment(base / "servers", root, workers=2)
    try:
        t = time.perf_counter()
        deploy.start()
        os.environ.update(deploy.postgres.env())  # so this process can read the instance too
        print(f"postgres, redis, 2 workers and the daemon up in {time.perf_counter() - t:.1f} s")
        staging = base / "staging"
        for b, name in enumerate(names):
            write_benchmark(staging, name, args.agents, args.test_cases, seed=b)
        t = time.perf_counter()
        for name in names:
            (staging / name).rename(root / "raw" / name)

        def rated():
            records = runs_with(deploy, {"agielo/trigger": "sensor"})
            ok = {
                r.dagster_run.tags.get("agielo/benchmark") for r in records if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS
            }
            return ok >= set(names) and idle(deploy)

        wait(rated, "the sensor's first ratings", deploy)
        print(f"first rating by the sensor (2 workers, includes sensor and queue latency): {time.perf_counter() - t:.1f} s")

        stop_group(deploy.worker_processes.pop())  # one worker left
        one = nightly(deploy, names, "one-worker")
        print(
            f"nightly re-rating, 1 worker:  {one['wall']:.1f} s (runs {one['runs_span']:.1f} s, mean run {one['mean_run']:.1f} s)"
        )
        deploy.start_worker(1)
        two = nightly(deploy, names, "two-workers")
        print(
            f"nightly re-rating, 2 workers: {two['wall']:.1f} s (runs {two['runs_span']:.1f} s, mean run {two['mean_run']:.1f} s)"
        )
        print(f"speed-up: {one['wall'] / two['wall']:.2f}x")
    finally:
        deploy.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
