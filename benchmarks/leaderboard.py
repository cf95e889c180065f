"""What the leaderboard across benchmarks costs beside the benchmarks' own fits (issue 41's target: at most 2×), cold
and warm (one new agent on one benchmark, from the last fit), and which weighing of the benchmarks ranks better.

Per pool (G benchmarks of T test cases, A agents in all, each benchmark evaluated by a random ``share`` of them; true
ratings N(0, 300²), each benchmark's difficulties N(its centre, 300²), centres N(0, 300²); binary, or every other
benchmark graded), CPU seconds of:

- ``sum of fits``: each benchmark's model alone (``model_cost.fit_alone``), summed: the yardstick;
- ``pool``: ``rate_pool`` from scratch; ``warm``: after one more agent lands on one benchmark, from the last fit;
- the peak memory of the pool (bytes per match).

Then, on the first shape, the weighing: Spearman ρ of the pooled ratings with the true ones, for "test_case" and
"benchmark", over 5 draws. Each piece runs in a process of its own (``model_cost.measure``); compare within a run.

    python benchmarks/leaderboard.py [--shapes 10x100x2000x0.5 100x200x10000x0.025] [--timeout 600]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from model_cost import fit_alone, measure  # beside this script (sys.path's first folder when run)
from scipy.stats import spearmanr

from agielo_dagster.rating.frames import Matches
from agielo_dagster.rating.pool import rate_pool

SHAPES = ("10x100x2000x0.5", "30x200x500x0.2", "100x200x10000x0.025")


def draw(g: int, a: int, t: int, share: float, seed: int = 0, graded: bool = True):
    """(benchmarks, true agent ratings): each benchmark's matches, encoded over the agents it was evaluated by."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.0, 300.0, a)
    ids = np.array([f"agent_{j:04d}" for j in range(a)], dtype=object)
    out = {}
    for b in range(g):
        players = np.flatnonzero(rng.random(a) < share)
        if len(players) < 2:
            players = rng.choice(a, 2, replace=False)
        difficulty = rng.normal(rng.normal(0.0, 300.0), 300.0, t)
        agent = np.tile(np.arange(len(players), dtype=np.int32), t)
        case = np.repeat(np.arange(t, dtype=np.int32), len(players))
        p = 1.0 / (1.0 + 10.0 ** ((difficulty[case] - truth[players][agent]) / 400.0))
        score = rng.beta(6 * p + 0.2, 6 * (1 - p) + 0.2) if graded and b % 2 else (rng.random(len(p)) < p).astype(float)
        t_ids = np.array([f"b{b}_tc_{i:06d}" for i in range(t)], dtype=object)
        out[f"b{b:03d}"] = Matches(agent, case, score, score, ids[players], t_ids, "pandas")
    return out, dict(zip(ids, truth, strict=True))


def with_newcomer(benchmarks: dict, seed: int = 1) -> dict:
    """One more agent's full upload on the first benchmark (as good as its median agent)."""
    rng = np.random.default_rng(seed)
    name = next(iter(benchmarks))
    m = benchmarks[name]
    n_a, n_t = m.n_agents, m.n_test_cases
    p = np.bincount(m.test_case, m.score, n_t) / np.maximum(np.bincount(m.test_case, minlength=n_t), 1)
    new = (rng.random(n_t) < p).astype(float)
    grown = Matches(
        np.concatenate([m.agent, np.full(n_t, n_a, dtype=np.int32)]),
        np.concatenate([m.test_case, np.arange(n_t, dtype=np.int32)]),
        np.concatenate([m.score, new]),
        np.concatenate([m.score, new]),
        np.append(m.agent_ids, "zz_newcomer"),
        m.test_case_ids,
        "pandas",
    )
    return {**benchmarks, name: grown}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES), help="benchmarks x agents x test cases x share")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"{'shape':>24} {'matches':>11} {'sum of fits':>12} {'pool':>8} {'pool/fits':>9} {'warm':>7} {'warm/fits':>9} {'B/match':>8}"
    )
    for text in args.shapes:
        g, a, t, share = (float(x) if i == 3 else int(x) for i, x in enumerate(text.split("x")))
        benchmarks, _ = draw(g, a, t, share)
        n = sum(len(m) for m in benchmarks.values())

        def fits(benchmarks=benchmarks):
            for m in benchmarks.values():
                fit_alone(m)
            return 0

        alone = measure(fits, args.repeats, args.timeout)
        pooled = measure(lambda benchmarks=benchmarks: (rate_pool(benchmarks),), args.repeats, args.timeout)
        start = rate_pool(benchmarks).fit if pooled else None
        grown = with_newcomer(benchmarks)
        warm = measure(lambda g=grown, s=start: (rate_pool(g, start=s),), args.repeats, args.timeout) if start else None
        if alone is None or pooled is None:
            print(f"{text:>24} {n:>11,} timed out")
            continue
        line = f"{text:>24} {n:>11,} {alone[0]:>11.2f}s {pooled[0]:>7.2f}s {pooled[0] / alone[0]:>8.2f}×"
        line += f" {warm[0]:>6.2f}s {warm[0] / alone[0]:>8.2f}×" if warm else "  (warm timed out)"
        print(line + f" {pooled[2] / n:>8.0f}   passes {pooled[3]} cold, {warm[3] if warm else '-'} warm", flush=True)
    print("\nweighing (first shape, 5 draws): Spearman ρ of the pooled ratings with the true ones")
    g, a, t, share = (float(x) if i == 3 else int(x) for i, x in enumerate(args.shapes[0].split("x")))
    for weigh in ("test_case", "benchmark"):
        rhos = []
        for seed in range(5):
            benchmarks, truth = draw(g, a, t, share, seed=seed)
            agents = rate_pool(benchmarks, weigh=weigh).agents
            rhos.append(spearmanr(agents["mu"], agents["agent_id"].map(truth)).statistic)
        print(f"  {weigh:>10}: median {np.median(rhos):.4f}, min {min(rhos):.4f}")


if __name__ == "__main__":
    main()
