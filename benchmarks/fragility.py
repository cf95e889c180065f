"""Fragility of #1: the verified approximation against the exact search, and the demo's figures.

1. Small simulated benchmarks (``--agents`` near-tied agents × ``--test-cases`` test cases, binary
   outcomes, ``--seeds`` of them): the exact answer (every set of 1, 2, … test cases re-rated) beside
   the approximation's (one-step ranking of the test cases, verified by re-rating). Prints how often
   they agree, how far the approximation overshoots, and the re-ratings each needs.
2. The demo's real benchmarks (``agielo demo``'s data): the leader, the fewest test cases found whose
   removal changes it, who takes over, the method and the seconds.

    python benchmarks/fragility.py [--seeds 20] [--agents 4] [--test-cases 12] [--model rasch|2pl|glicko] [--skip-demo]
"""

import argparse
import time

import numpy as np
import pandas as pd

from agielo_dagster.rating import rate, simulate_matches
from agielo_dagster.rating.fragility import fragility_of_first
from agielo_dagster.rating.settings import DEFAULT_MODEL, MODELS


def small_study(seeds: int, agents: int, test_cases: int, model: str) -> None:
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        strengths = 1500.0 + rng.normal(0.0, 40.0, agents)
        matches = simulate_matches(rng.normal(1500.0, 200.0, test_cases), strengths, seed=seed)
        settings = {"model": model}
        exact = fragility_of_first(matches, settings=settings, max_subsets=10**9, max_exact_matches=10**12)
        approx = fragility_of_first(matches, settings=settings, max_subsets=0)
        rows.append(
            {
                "seed": seed,
                "exact": exact.removals,
                "approx": approx.removals,
                "exact_re_ratings": exact.re_ratings,
                "approx_re_ratings": approx.re_ratings,
            }
        )
    table = pd.DataFrame(rows)
    found = table.dropna(subset=["exact", "approx"])
    print(f"small benchmarks: {seeds} seeds, {agents} agents x {test_cases} test cases (binary), model {model}")
    print(table.to_string(index=False))
    if len(found):
        over = found["approx"] - found["exact"]
        print(
            f"approx = exact in {int((over == 0).sum())}/{len(found)}, overshoot mean {over.mean():.2f} max {int(over.max())}; "
            f"never below exact: {bool((over >= 0).all())}; re-ratings median exact {table['exact_re_ratings'].median():.0f}, "
            f"approx {table['approx_re_ratings'].median():.0f}"
        )
    missing = table[["exact", "approx"]].isna().sum()
    print(f"no flip within half the test cases: exact {int(missing['exact'])}, approx {int(missing['approx'])}")


def demo_figures() -> None:
    from agielo_dagster.demo import DEMO_BENCHMARKS, demo_logs

    for benchmark in DEMO_BENCHMARKS:
        logs = demo_logs(benchmark)
        matches = pd.concat(
            [log.assign(agent_id=agent, metric=log["p_true"], score=log["p_true"]) for agent, log in logs.items()],
            ignore_index=True,
        )[["test_case_id", "agent_id", "metric", "score"]]
        agents = rate(matches, with_reliability=False).agents
        tier = agents.loc[agents["rank"] == 1, "agent_id"].tolist()
        start = time.perf_counter()
        f = fragility_of_first(matches, tier=tier)
        seconds = time.perf_counter() - start
        print(
            f"{benchmark}: {len(matches):,} matches, tier {', '.join(f.tier)}; removing {f.removals} of {f.test_cases} test "
            f"cases makes {f.new_leader} first instead of {f.leader} ({f.method}, {f.re_ratings} re-ratings, {seconds:.1f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--test-cases", type=int, default=12)
    parser.add_argument("--model", choices=MODELS, default=DEFAULT_MODEL)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    small_study(args.seeds, args.agents, args.test_cases, args.model)
    if not args.skip_demo:
        demo_figures()


if __name__ == "__main__":
    main()
