"""Rating at the Open LLM Leaderboard's scale, straight from parquet: 10M and 100M matches.

For each size a benchmark of 4,500 agents is generated to a parquet file first (outside the
timing; ids dictionary-encoded, binary outcomes from known ratings), then rated in a fresh
process by ``rate_parquet`` with 1 order and with ``DEFAULT_ORDERS`` orders, all cores,
100 snapshots and the reliability of the first order. Each run prints its seconds (load:
read, validate and encode the parquet file row group by row group; rate) and the process's
peak resident memory (``ru_maxrss``, imports included).

Targets: memory ≤ 6 GB peak, one order ≤ 30 s for 100M matches, on 2 cores.

    python benchmarks/rate_100m.py [--sizes 10M 100M] [--agents 4500] [--dir /tmp/agielo_bench]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def generate(path: Path, n_agents: int, n_test_cases: int, seed: int = 0, block: int = 500) -> None:
    """Write a full cross of agents × test cases, ``block`` test cases per row group (dictionary-encoded ids)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    agent_rating = rng.normal(1500, 200, n_agents)
    case_rating = rng.normal(1500, 400, n_test_cases)
    agents = pa.array([f"model_{i:05d}" for i in range(n_agents)])
    cases = pa.array([f"question_{i:06d}" for i in range(n_test_cases)])
    schema = pa.schema(
        [
            ("test_case_id", pa.dictionary(pa.int32(), pa.string())),
            ("agent_id", pa.dictionary(pa.int32(), pa.string())),
            ("metric", pa.float64()),
            ("score", pa.float64()),
        ]
    )
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema) as writer:
        for lo in range(0, n_test_cases, block):
            hi = min(lo + block, n_test_cases)
            t = np.repeat(np.arange(lo, hi, dtype=np.int32), n_agents)
            a = np.tile(np.arange(n_agents, dtype=np.int32), hi - lo)
            p = 1.0 / (1.0 + 10.0 ** ((case_rating[t] - agent_rating[a]) / 400.0))
            s = (rng.random(len(p)) < p).astype(np.float64)
            writer.write_table(
                pa.table(
                    [pa.DictionaryArray.from_arrays(t, cases), pa.DictionaryArray.from_arrays(a, agents), s, s],
                    schema=schema,
                )
            )
    tmp.rename(path)


def run(path: Path, orders: int) -> dict:
    """One measurement (in this process): load (read + validate + encode) and rate; seconds and peak RSS.

    The same two steps as ``rate_parquet(path, orders=orders)``, timed apart.
    """
    from agielo_dagster.rating import DEFAULT_ORDERS, rate
    from agielo_dagster.rating.glicko import rate_encoded
    from agielo_dagster.rating.parquet import encode_parquet

    rate(_tiny(), orders=2)  # compile (or load the cached machine code) outside the timing
    t0 = time.perf_counter()
    m = encode_parquet(path)
    t1 = time.perf_counter()
    result = rate_encoded(m, dict(orders=orders, seed=42))
    t2 = time.perf_counter()
    final = result.reliability.to_pandas().iloc[-1]
    return {
        "matches": len(m),
        "agents": m.n_agents,
        "test_cases": m.n_test_cases,
        "orders": orders,
        "default_orders": DEFAULT_ORDERS,
        "load_s": t1 - t0,
        "rate_s": t2 - t1,
        "total_s": t2 - t0,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "rho_agents": float(final["rho_agents"]),
        "mae": float(final["mae"]),
        "cores": len(os.sched_getaffinity(0)),
    }


def _tiny():
    import pandas as pd

    return pd.DataFrame(
        {
            "test_case_id": ["a", "b", "a", "b"],
            "agent_id": ["x", "x", "y", "y"],
            "metric": [1.0, 0.0, 0.0, 1.0],
            "score": [1.0, 0.0, 0.0, 1.0],
        }
    )


def _size(text: str) -> int:
    text = text.upper()
    return int(float(text[:-1]) * {"K": 1e3, "M": 1e6, "G": 1e9}[text[-1]]) if text[-1] in "KMG" else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["10M", "100M"])
    parser.add_argument("--agents", type=int, default=4500)
    parser.add_argument("--dir", default="/tmp/agielo_bench")
    parser.add_argument("--orders", type=int, nargs="*", help="orders to time (default: 1 and DEFAULT_ORDERS)")
    parser.add_argument(
        "--shuffles", type=int, nargs="*", dest="orders", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )  # the earlier name of --orders
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run(Path(args.run), args.orders[0])))
        return

    from agielo_dagster.rating import DEFAULT_ORDERS

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    print(
        f"{'matches':>12} {'agents':>6} {'test cases':>10} {'orders':>6} {'load s':>7} {'rate s':>7} {'total s':>7} {'peak RSS':>9}"
    )
    for size in args.sizes:
        n = _size(size)
        n_test_cases = max(1, round(n / args.agents))
        path = folder / f"matches_{args.agents}x{n_test_cases}.parquet"
        if not path.exists():
            t0 = time.perf_counter()
            generate(path, args.agents, n_test_cases)
            print(f"(generated {path} in {time.perf_counter() - t0:.0f} s, {path.stat().st_size / 2**30:.2f} GiB; not timed)")
        for orders in args.orders or [1, DEFAULT_ORDERS]:
            out = subprocess.run(
                [sys.executable, __file__, "--run", str(path), "--orders", str(orders)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{r['matches']:>12,} {r['agents']:>6,} {r['test_cases']:>10,} {r['orders']:>6} {r['load_s']:>7.1f} "
                f"{r['rate_s']:>7.1f} {r['total_s']:>7.1f} {r['peak_rss_gib']:>7.2f} GiB   (rho_agents {r['rho_agents']:.3f}, MAE {r['mae']:.4f})"
            )
    print(f"cores: {len(os.sched_getaffinity(0))}; targets at 100M: one order <= 30 s, peak <= 6 GiB")


if __name__ == "__main__":
    main()
