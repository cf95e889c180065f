"""End-to-end pipeline figures, each against a baseline measured in the same run.

1. Burst: 316 agents' uploads of ~25 rows land at once. Seconds from "files landed" to
   "competency-gap table written", through the real Dagster path (what Dagster counts stale, the benchmark's run:
   ledger with the quality suite, match table, ratings, gaps, report) on a fresh sqlite instance,
   and the same burst beside a benchmark that already has the same agent names (which took one
   run per upload in the old benchmark × agent grid). Target ≤ 60 s, one run either way.
2. Scale: one benchmark of 1,000,000 matches (50,000 test cases × 20 agents, parquet uploads),
   ingest → gaps through Dagster, against the engine alone (rate + competency_gaps) on the same
   matches. Target: the pipeline's overhead beyond the engine ≤ 3 s warm. Run twice in one
   process: 'cold' pays the one-time imports (great_expectations, matplotlib), 'warm' does not.

    python benchmarks/pipeline.py [--uploads 316] [--rows 25] [--test-cases 50000] [--agents 20]
"""

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.cli import run_pipeline
from agielo_dagster.rating import competency_gaps, rate, simulate_matches


def write_uploads(root: Path, benchmark: str, matches: pd.DataFrame, fmt: str) -> None:
    folder = root / "raw" / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    for agent, rows in matches.groupby("agent_id", sort=False):
        frame = rows.rename(columns={"metric": "correct"})[["test_case_id", "correct"]]
        if fmt == "csv":
            frame.to_csv(folder / f"{agent}.csv", index=False)
        else:
            frame.to_parquet(folder / f"{agent}.parquet", index=False)


def fresh_instance(base: Path) -> dg.DagsterInstance:
    home = base / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return dg.DagsterInstance.from_config(str(home))


def burst(uploads: int, rows: int) -> None:
    """A burst lands at once; then the same burst beside a benchmark that already has the same agent names."""
    rng = np.random.default_rng(0)
    matches = simulate_matches(rng.normal(1500, 300, rows), rng.normal(1600, 200, uploads), seed=1)
    for shared in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            if shared:  # the old benchmark × agent grid ran one run per upload in this case
                write_uploads(base / "storage", "earlier_study", matches, "csv")
                with fresh_instance(base / "pre") as instance:
                    run_pipeline(ObjectStorage(root=str(base / "storage")), instance)
            write_uploads(base / "storage", "human_study", matches, "csv")
            storage = ObjectStorage(root=str(base / "storage"))
            with fresh_instance(base) as instance:
                t0 = time.perf_counter()
                summary = run_pipeline(storage, instance)
                seconds = time.perf_counter() - t0
                runs = len(instance.get_runs())
            assert summary.uploads_ingested == uploads, summary
            assert "human_study" in summary.benchmarks_rated, summary
        where = (
            "beside a benchmark with the same agent names"
            if shared
            else "alone (the process's first run: it imports great_expectations, matplotlib, numba's compiler)"
        )
        print(
            f"burst {where}: {uploads} uploads × {rows} rows ingested and rated end to end in {seconds:.1f} s ({runs} Dagster runs)"
        )
    print("       target ≤ 60 s")


def scale(test_cases: int, agents: int) -> None:
    rng = np.random.default_rng(2)
    matches = simulate_matches(rng.normal(1500, 300, test_cases), np.linspace(1300, 2000, agents), seed=3)
    rate(matches.head(1000))  # compile or load the engine's machine code outside the timings
    t0 = time.perf_counter()
    result = rate(matches)
    competency_gaps(result.test_cases, result.agents)
    engine = time.perf_counter() - t0
    timings = []
    for _ in range(2):
        attempt = "warm" if "great_expectations" in sys.modules else "cold"
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            write_uploads(base / "storage", "imagenet_scale", matches, "parquet")
            storage = ObjectStorage(root=str(base / "storage"))
            with fresh_instance(base) as instance:
                t0 = time.perf_counter()
                summary = run_pipeline(storage, instance)
                seconds = time.perf_counter() - t0
                run = next(r for r in instance.get_runs() if r.job_name == "rate_benchmarks")
                steps = {s.step_key: s.end_time - s.start_time for s in instance.get_run_step_stats(run.run_id)}
                timings.append((attempt, seconds, steps.get("benchmark_reports", 0.0)))
            assert summary.benchmarks_rated == ["imagenet_scale"], summary
    print(f"scale: {len(matches):,} matches ({test_cases:,} test cases × {agents} agents, parquet uploads)")
    print(f"       engine alone (rate + 100 snapshots + reliability + gaps): {engine:.2f} s")
    for attempt, seconds, render in timings:
        note = (
            " (imports great_expectations and matplotlib, once per process)"
            if attempt == "cold"
            else " (libraries already imported)"
        )
        print(
            f"       pipeline ingest → gaps, {attempt}: {seconds:.2f} s; overhead beyond the engine {seconds - engine:.2f} s{note}"
        )
        print(
            f"         of which rendering the five figures and the HTML report: {render:.2f} s; without it {seconds - engine - render:.2f} s"
        )
    verdicts = "; ".join(
        f"{a} {'met' if t - engine <= 3 else 'NOT met'} ({'met' if t - engine - r <= 3 else 'NOT met'} without the figures)"
        for a, t, r in timings
    )
    print(f"       target overhead ≤ 3 s (warm): {verdicts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uploads", type=int, default=316)
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("--test-cases", type=int, default=50_000)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--only", choices=["burst", "scale"], default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.environ.setdefault("DAGSTER_HOME", tempfile.mkdtemp())
    if args.only in (None, "burst"):
        burst(args.uploads, args.rows)
    if args.only in (None, "scale"):
        scale(args.test_cases, args.agents)


if __name__ == "__main__":
    main()
