"""The paper's ImageNet scale: 50,000 test cases × 20 agents = 1,000,000 matches.

Prints seconds and peak memory of rating + 100 snapshots + reliability, and the
ratio against plain per-match Python loops run in this process on a
100,000-match slice and scaled to 1M: the authors' shape (``DataFrame.iterrows``
over dicts, about 50 µs a match) and the tightest plain loop. Both baselines
do the ratings only, so the ratios understate the gap.

Targets: whole 1M job ≤ 1 s on 2 cores, peak memory ≤ 1 GB.

    python benchmarks/rate_1m.py [--test-cases 50000] [--agents 20]
"""

from __future__ import annotations

import argparse
import math
import resource
import time
import tracemalloc

import numpy as np
import pandas as pd

from agielo_dagster.rating import rate
from agielo_dagster.rating.glicko import Q
from agielo_dagster.rating.simulate import simulate_matches


def _glicko_pair(mt, st, ma, sa, s):
    g = lambda sig: 1 / math.sqrt(1 + 3 * Q * Q * sig * sig / math.pi**2)  # noqa: E731
    gt, ga = g(st), g(sa)
    ea = 1 / (1 + 10 ** (-gt * (ma - mt) / 400))
    et = 1 / (1 + 10 ** (-ga * (mt - ma) / 400))
    va = 1 / (1 / sa**2 + Q * Q * gt * gt * ea * (1 - ea))
    vt = 1 / (1 / st**2 + Q * Q * ga * ga * et * (1 - et))
    return (mt + Q * vt * ga * ((1 - s) - et), math.sqrt(vt)), (ma + Q * va * gt * (s - ea), math.sqrt(va))


def authors_loop(matches: pd.DataFrame, seed: int = 42) -> dict:
    """The authors' shape: shuffled DataFrame, ``iterrows``, dicts of per-player state."""
    players: dict = {}
    for _, row in matches.sample(frac=1, random_state=seed).reset_index(drop=True).iterrows():
        rt = players.setdefault(("t", row["test_case_id"]), {"mu": 1500.0, "rd": 350.0, "n": 0, "perf": 0.0})
        ra = players.setdefault(("a", row["agent_id"]), {"mu": 1500.0, "rd": 350.0, "n": 0, "perf": 0.0})
        for p in (rt, ra):
            p["n"] += 1
            p["perf"] += row["metric"]
        (rt["mu"], rt["rd"]), (ra["mu"], ra["rd"]) = _glicko_pair(rt["mu"], rt["rd"], ra["mu"], ra["rd"], row["score"])
    return players


def tight_loop(matches: pd.DataFrame, seed: int = 42) -> dict:
    """The fastest plain Python: zipped columns, lists of state."""
    players: dict = {}
    rows = matches.sample(frac=1, random_state=seed)
    for t, a, s in zip(rows["test_case_id"], rows["agent_id"], rows["score"], strict=True):
        rt = players.setdefault(("t", t), [1500.0, 350.0])
        ra = players.setdefault(("a", a), [1500.0, 350.0])
        rt[:], ra[:] = _glicko_pair(rt[0], rt[1], ra[0], ra[1], s)
    return players


def per_match_seconds(loop, matches: pd.DataFrame) -> float:
    t0 = time.perf_counter()
    loop(matches)
    return (time.perf_counter() - t0) / len(matches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--test-cases", type=int, default=50_000)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loop-slice", type=int, default=100_000, help="matches timed in the Python baselines")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    matches = simulate_matches(rng.normal(1500, 300, args.test_cases), np.linspace(1300, 2000, args.agents), seed=1)
    n = len(matches)
    rate(matches.head(1000))  # compile (or load the cached machine code) outside the timing

    seconds = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        result = rate(matches)
        seconds.append(time.perf_counter() - t0)
    best = min(seconds)

    tracemalloc.start()
    rate(matches)
    _, peak_traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    slice_n = min(args.loop_slice, n)
    authors_s = per_match_seconds(authors_loop, matches.head(slice_n)) * n
    tight_s = per_match_seconds(tight_loop, matches.head(slice_n)) * n

    rel = result.reliability
    print(f"matches                     {n:,} ({args.test_cases:,} test cases × {args.agents} agents)")
    print(f"rate + 100 snapshots + rel. {best:.3f} s (best of {args.repeats}: {', '.join(f'{s:.3f}' for s in seconds)})")
    print(
        f"peak memory (numpy/python)  {peak_traced / 2**20:.0f} MiB traced; process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB"
    )
    print(
        f"authors-style loop          {authors_s / n * 1e6:.1f} µs/match on {slice_n:,} → {authors_s:.1f} s for {n:,} (ratings only)"
    )
    print(
        f"tight Python loop           {tight_s / n * 1e6:.1f} µs/match on {slice_n:,} → {tight_s:.1f} s for {n:,} (ratings only)"
    )
    print(f"speed-up                    {authors_s / best:.0f}× vs authors-style, {tight_s / best:.0f}× vs tight loop")
    print(f"target ≤ 1 s                {'met' if best <= 1.0 else 'NOT met'}")
    print(
        f"reliability at 100%         rho_t {rel['rho_test_cases'].iloc[-1]:.3f}, rho_a {rel['rho_agents'].iloc[-1]:.3f}, MAE {rel['mae'].iloc[-1]:.4f}"
    )


if __name__ == "__main__":
    main()
