"""Leaderboard scale: uploads shaped like the Open LLM Leaderboard (v2), through the real pipeline.

6 benchmarks × 4,500 agents × 200 test cases = 27,000 uploads and 5.4M matches (org/model agent
names, real-looking document ids, three binary and three graded metrics, CSV and parquet), on a
fresh storage root and a fresh Dagster instance. Every figure is the wall time of a whole
`agielo run` process (what a user waits for), or of one evaluation of the sensor in a process
that has loaded the code location (what the daemon's code server does every tick).

(a) the first `agielo run` over everything: target ≤ 10 min; and the partition keys per asset;
(b) a no-op `agielo run` and a sensor tick with nothing changed: target ≤ 3 s each; baseline in the
    same run: reading and hashing every raw file, which is what a sensor without the ledger's
    fingerprint cache has to do on every tick;
(c) one new model (one upload in each of the 6 benchmarks): `agielo run` to new gap tables,
    target ≤ 60 s; how many uploads were read, and that no other upload's accepted copy changed;
(d) the 1M-match benchmark's pipeline overhead beyond the engine, warm: `benchmarks/pipeline.py --only scale`.

    python benchmarks/scale.py [--agents 4500] [--test-cases 200] [--benchmarks 6] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
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
TASKS = [  # (benchmark, metric, graded?)
    ("leaderboard_bbh", "acc_norm", False),
    ("leaderboard_gpqa", "acc_norm", False),
    ("leaderboard_math_hard", "exact_match", False),
    ("leaderboard_ifeval", "inst_level_loose_acc", True),
    ("leaderboard_musr", "acc_norm", True),
    ("leaderboard_mmlu_pro", "acc", True),
]
ORGS = ["meta-llama", "Qwen", "mistralai", "google", "microsoft", "01-ai", "tiiuae", "EleutherAI", "allenai", "nvidia"]


def agent_names(n: int, rng: np.random.Generator) -> list[str]:
    sizes = ["0.5B", "1.5B", "3B", "7B", "8B", "14B", "32B", "70B"]
    return [f"{ORGS[i % len(ORGS)]}__model-{sizes[rng.integers(len(sizes))]}-v{i:05d}" for i in range(n)]


def write_benchmark(root: Path, task: str, metric: str, graded: bool, agents: list[str], test_cases: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    folder = root / "raw" / task
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "benchmark.yaml").write_text(f"metric: {metric}\nscoring: identity\ndescription: synthetic {task}\n")
    ids = [f"{task}|doc_{i:05d}" for i in range(test_cases)]
    difficulty = rng.normal(0, 1.2, test_cases)
    for k, agent in enumerate(agents):
        p = 1 / (1 + np.exp(difficulty - rng.normal(0, 1)))
        values = np.round(np.clip(p + rng.normal(0, 0.08, test_cases), 0, 1), 4) if graded else (rng.random(test_cases) < p) * 1
        if k % 3 == 0:
            pd.DataFrame({"test_case_id": ids, metric: values}).to_parquet(folder / f"{agent}.parquet", index=False)
        else:
            body = "".join(f"{i},{v}\n" for i, v in zip(ids, values, strict=True))
            (folder / f"{agent}.csv").write_text(f"test_case_id,{metric}\n{body}")


def agielo_run(root: Path, home: Path) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"agielo run failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return seconds, out.stdout


def sensor_tick_seconds(root: Path, home: Path, repeats: int = 3) -> tuple[float, str]:
    """One evaluation of benchmarks_sensor in a process that loaded the code location (as the daemon's code server)."""
    code = f"""
import time, dagster as dg
from agielo_dagster.definitions import build_definitions
from agielo_dagster.resources.storage import ObjectStorage
from agielo_dagster.sensors import benchmarks_sensor
storage = ObjectStorage(root={str(root)!r})
defs = build_definitions(storage)
with dg.DagsterInstance.from_config({str(home)!r}) as instance:
    times = []
    for _ in range({repeats}):
        context = dg.build_sensor_context(instance=instance, resources={{"storage": storage}}, definitions=defs)
        t = time.perf_counter(); result = benchmarks_sensor(context); times.append(time.perf_counter() - t)
    print(min(times), len(result.run_requests or []))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, requests = out.stdout.split()
    return float(seconds), requests


def hash_everything(root: Path) -> float:
    started = time.perf_counter()
    for path in (root / "raw").rglob("*"):
        if path.is_file():
            hashlib.sha256(path.read_bytes()).hexdigest()
    return time.perf_counter() - started


def accepted_mtimes(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in (root / "warehouse/accepted").rglob("*.parquet")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=4500)
    parser.add_argument("--test-cases", type=int, default=200)
    parser.add_argument("--benchmarks", type=int, default=6)
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="agielo_scale_"))
    root, home = base / "storage", base / "home"
    shutil.rmtree(base, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    tasks = TASKS[: args.benchmarks]
    rng = np.random.default_rng(0)
    agents = agent_names(args.agents, rng)
    t = time.perf_counter()
    for k, (task, metric, graded) in enumerate(tasks):
        write_benchmark(root, task, metric, graded, agents, args.test_cases, seed=k)
    uploads = len(tasks) * len(agents)
    print(f"wrote {uploads:,} uploads, {uploads * args.test_cases:,} matches, in {time.perf_counter() - t:.0f} s (not timed)")

    first, out = agielo_run(root, home)
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        keys = len(instance.get_dynamic_partitions("benchmarks"))
    print(f"(a) first agielo run: {first:.0f} s for {uploads:,} uploads (target ≤ 600 s: {'met' if first <= 600 else 'NOT met'})")
    print(f"    {out.splitlines()[1]}")
    print(f"    partition keys: {keys} per partitioned asset (benchmarks), against {uploads:,} in a benchmark × agent grid")

    noop, out = agielo_run(root, home)
    tick, requests = sensor_tick_seconds(root, home)
    baseline = hash_everything(root)
    print(f"(b) no-op agielo run: {noop:.1f} s (target ≤ 3 s: {'met' if noop <= 3 else 'NOT met'}); {out.splitlines()[1]}")
    print(
        f"    sensor tick, nothing changed: {tick:.2f} s, {requests} run request(s) (target ≤ 3 s: {'met' if tick <= 3 else 'NOT met'})"
    )
    print(f"    baseline, reading and hashing every raw file: {baseline:.1f} s ({baseline / tick:.0f}× the tick)")

    before = accepted_mtimes(root)
    newcomer = "newlab__fresh-model-9B"
    for k, (task, metric, graded) in enumerate(tasks):
        single = root / "one" / "raw" / task
        write_benchmark(root / "one", task, metric, graded, [newcomer], args.test_cases, seed=100 + k)
        shutil.move(single / f"{newcomer}.parquet", root / "raw" / task / f"{newcomer}.parquet")
    shutil.rmtree(root / "one")
    new_model, out = agielo_run(root, home)
    after = accepted_mtimes(root)
    rewritten = sum(after.get(p) != m for p, m in before.items())
    added = len(set(after) - set(before))
    print(
        f"(c) one new model, one upload in each of {len(tasks)} benchmarks: {new_model:.0f} s to new gap tables "
        f"(target ≤ 60 s: {'met' if new_model <= 60 else 'NOT met'}); {first / new_model:.0f}× faster than the first run"
    )
    print(
        f"    {out.splitlines()[1]}; accepted copy files written: {added} new, {rewritten} of the other {len(before):,} rewritten (small uploads share 256 files)"
    )
    for task, *_ in tasks:
        gaps = pd.read_parquet(root / "warehouse/competency_gap_tables" / f"{task}.parquet")
        assert newcomer in set(gaps["agent_id"]), task
    print("(d) the 1M-match overhead: python benchmarks/pipeline.py --only scale")
    if args.keep is None:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
