"""Memory and time of `agielo run` in every shape of benchmark, beside the bound (issue 25).

A grid of shapes at the same number of matches N (1M by default; 10M with ``--ten-million``):
1 × N (one agent, a wide benchmark such as a large single-model evaluation), 2 × N/2, 20 × N/20,
√N × √N (square), 10,000 × N/10,000 (the most agents of the issue's range of shapes) and N/5 × 5 (tall: many
agents, few test cases, one file each), each with and without 3 partial
uploads of 20 rows (provisional agents). Each cell is one fresh storage root and Dagster instance
and one real `agielo run` subprocess from start to gap tables; the figures are its wall time, its
time per match, its ratio to the square shape's time per match, and its peak RSS (``VmHWM`` of
the process) beside the bound of issue 10: 300 bytes per match + 1 GiB.

Uploads are CSV files (``test_case_id,correct``), one per agent, as a user would write them; a
partial upload is 20 rows of test cases the benchmark rates. Generating the files is not timed.

    python benchmarks/shapes.py [--matches 1000000] [--ten-million] [--only 1xN,sqrt] [--keep DIR]
    python benchmarks/shapes.py --placement   # provisional placement alone, against 100,000 and 1M test cases

Timings on a shared machine are noisy (the load average is printed): decide by the memory column.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

REPO = Path(__file__).resolve().parents[1]
MAX_LOG_BYTES = 256 * 1024 * 1024  # the upload limit (agielo_dagster.domain.contract)
BOUND_PER_MATCH, BOUND_BASE = 300, 1 << 30
PARTIAL_UPLOADS, PARTIAL_ROWS = 3, 20
TALLEST_AGENTS = 10_000  # the range of shapes runs from 1 × 15.7M to 10,000 × 5: its most agents

# run in the child: the CLI's own entry point, then its peak RSS (its own and any children's)
CHILD = (
    "import sys; from agielo_dagster.cli import main; code = main(['run', '--storage', sys.argv[1]]); "
    "print('peak_kib', int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1])); "
    "sys.exit(code)"
)


def shapes(n: int) -> list[tuple[str, int, int]]:
    """(name, agents, test cases) with agents × test cases ≈ n."""
    side = round(math.sqrt(n))
    return [
        ("1xN", 1, n),
        ("2xN/2", 2, n // 2),
        ("20xN/20", 20, n // 20),
        ("sqrt", side, n // side),
        ("10kxN/10k", TALLEST_AGENTS, n // TALLEST_AGENTS),
        ("N/5x5", n // 5, 5),
    ]


def write_shape(root: Path, agents: int, test_cases: int, partial: bool, seed: int = 0) -> int:
    """One benchmark's raw uploads; returns the number of matches written."""
    folder = root / "raw" / "shape"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    rng = np.random.default_rng(seed)
    # the 1 × 15.7M was one CSV under the upload limit (256 MiB): ids as short as that needs
    prefix = "case-" if test_cases * (len("case-") + len(str(test_cases)) + 5) < MAX_LOG_BYTES else "c"  # "id",v\n
    ids = pa.array(np.char.add(prefix, np.arange(test_cases).astype(str)))
    difficulty = rng.normal(0, 1, test_cases)
    if agents <= 1000:  # one file per agent
        for a in range(agents):
            p = 1 / (1 + np.exp(difficulty - rng.normal(0, 1)))
            table = pa.table({"test_case_id": ids, "correct": (rng.random(test_cases) < p).astype(np.int8)})
            pacsv.write_csv(table, folder / f"model_{a:06d}.csv")
    else:  # a tall benchmark: many small uploads
        for a in range(agents):
            p = 1 / (1 + np.exp(difficulty - rng.normal(0, 1)))
            body = "".join(f"case-{i},{int(v)}\n" for i, v in enumerate(rng.random(test_cases) < p))
            (folder / f"model_{a:06d}.csv").write_text("test_case_id,correct\n" + body)
    matches = agents * test_cases
    if partial:
        rows = min(PARTIAL_ROWS, max(1, int(0.5 * test_cases)))  # under full_coverage (0.8) of the largest upload
        for k in range(PARTIAL_UPLOADS):
            pick = rng.choice(test_cases, rows, replace=False)
            table = pa.table({"test_case_id": ids.take(pa.array(pick)), "correct": rng.integers(0, 2, rows).astype(np.int8)})
            pacsv.write_csv(table, folder / f"partial_{k}.csv")
            matches += rows
    return matches


def measure(base: Path, agents: int, test_cases: int, partial: bool) -> dict:
    shutil.rmtree(base, ignore_errors=True)
    root, home = base / "storage", base / "home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    matches = write_shape(root, agents, test_cases, partial)
    os.sync()  # the generated files on disk first: their write-back would slow the run's own writes (tall: 0.8 → 1.1 ms an upload)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if out.returncode != 0 or "rated 1 benchmark(s)" not in out.stdout:
        raise SystemExit(f"agielo run failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    peak = int(out.stdout.split("peak_kib")[1].split()[0]) * 1024
    shutil.rmtree(base, ignore_errors=True)
    return {"matches": matches, "seconds": seconds, "peak": peak, "bound": BOUND_PER_MATCH * matches + BOUND_BASE, "load": load}


def placement() -> None:
    """3 partial uploads of 20 results placed against frozen tables of 100,000 and 1,000,000 test cases, in this process:
    place_provisional_agents beside the per-agent stratum_weights + place_on_subset calls it replaced."""
    import pandas as pd

    from agielo_dagster.rating import place_on_subset, place_provisional_agents, stratum_weights

    rng = np.random.default_rng(0)
    for n in (100_000, 1_000_000):
        ids = np.char.add("case-", np.arange(n).astype(str))
        tc = pa.table(
            {"test_case_id": ids, "mu": rng.normal(1500, 300, n), "sigma": np.full(n, 120.0), "matches": np.ones(n, np.int64)}
        )
        new = pd.concat(
            [
                pd.DataFrame({"test_case_id": ids[rng.choice(n, PARTIAL_ROWS, replace=False)], "agent_id": f"partial_{a}"})
                for a in range(3)
            ]
        )
        new["metric"] = new["score"] = rng.integers(0, 2, len(new)).astype(float)
        place_provisional_agents(new.head(PARTIAL_ROWS), tc)  # the engine's compiled code loaded: not timed
        started = time.perf_counter()
        place_provisional_agents(new, tc, level=0.95)
        now = time.perf_counter() - started
        started = time.perf_counter()
        for _, results in new.groupby("agent_id"):
            place_on_subset(results, tc, level=0.95, design=stratum_weights(tc, results["test_case_id"]))
        before = time.perf_counter() - started
        print(
            f"{n:>10,} test cases: place_provisional_agents {now:.2f} s; per agent stratum_weights + place_on_subset {before:.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matches", type=int, default=1_000_000)
    parser.add_argument("--ten-million", action="store_true", help="also the 10M-match rows (slow: minutes each)")
    parser.add_argument("--only", default="", help="comma-separated shape names (1xN, 2xN/2, 20xN/20, sqrt, 10kxN/10k, N/5x5)")
    parser.add_argument("--no-partial", action="store_true", help="skip the rows with partial uploads")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder")
    parser.add_argument("--placement", action="store_true", help="only time provisional placement against wide tables")
    args = parser.parse_args()
    if args.placement:
        return placement()
    base = args.keep or Path(tempfile.mkdtemp(prefix="agielo_shapes_"))
    sizes = [args.matches] + ([10_000_000] if args.ten_million else [])
    wanted = {s for s in args.only.split(",") if s}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.1f}")
    print(
        f"{'matches':>10} {'shape':>9} {'agents':>8} {'test cases':>10} {'partial':>7} {'wall s':>7} "
        f"{'µs/match':>8} {'× square':>8} {'peak MiB':>8} {'bound MiB':>9} {'ok':>3} {'load':>5}",
        flush=True,
    )
    for n in sizes:
        rows = []
        for name, agents, test_cases in sorted(shapes(n), key=lambda s: s[0] != "sqrt"):
            if wanted and name not in wanted and name != "sqrt":
                continue
            for partial in (False, True) if not args.no_partial else (False,):
                r = measure(base / "run", agents, test_cases, partial) | {
                    "name": name,
                    "agents": agents,
                    "test_cases": test_cases,
                    "partial": partial,
                }
                rows.append(r)
                print(
                    f"  measured {name} {'with' if partial else 'without'} partial uploads: {r['seconds']:.1f} s, "
                    f"{r['peak'] / 2**20:,.0f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
        square = {r["partial"]: r["seconds"] / r["matches"] for r in rows if r["name"] == "sqrt"}
        for r in rows:
            per = r["seconds"] / r["matches"]
            print(
                f"{r['matches']:>10,} {r['name']:>9} {r['agents']:>8,} {r['test_cases']:>10,} {('3×20' if r['partial'] else '-'):>7} "
                f"{r['seconds']:>7.1f} {per * 1e6:>8.1f} {per / square[r['partial']]:>8.2f} {r['peak'] / 2**20:>8,.0f} "
                f"{r['bound'] / 2**20:>9,.0f} {('yes' if r['peak'] <= r['bound'] else 'NO'):>3} {r['load']:>5.1f}",
                flush=True,
            )
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
