"""Seconds of each estimator on 1,000,000 matches (50,000 test cases × 20 agents), with baselines.

- AGI-Elo (`rate`, the default model with its snapshots and reliability) against the tightest plain Python loop (ratings only,
  timed on a 100,000-match slice and scaled).
- Plackett-Luce: building the pairwise win matrix, then the maximum-likelihood step, against
  choix's `ilsr_pairwise_dense` on the same matrix (ONEBench's choice).
- HodgeRank on 1,000,000 pairwise judgments over 50,000 items (sparse least squares).
- One bootstrap resample of the agent ratings (what `bootstrap` repeats n times).

    python benchmarks/estimators.py [--test-cases 50000] [--agents 20]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from rate_1m import tight_loop  # noqa: E402

from agielo_dagster.rating import bootstrap, hodge_rank, pairwise_wins, rate, simulate_matches  # noqa: E402
from agielo_dagster.rating.estimators.plackett_luce import bradley_terry_mle  # noqa: E402


def timed(label: str, fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    seconds = time.perf_counter() - t0
    print(f"{label:58s} {seconds:8.3f} s")
    return out, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--test-cases", type=int, default=50_000)
    parser.add_argument("--agents", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    matches = simulate_matches(rng.normal(1500, 300, args.test_cases), np.linspace(1300, 2000, args.agents), seed=1)
    n = len(matches)
    print(f"{n:,} matches ({args.test_cases:,} test cases × {args.agents} agents)\n")
    rate(matches.head(1000))  # compile outside the timings
    bootstrap(matches.head(2000), n_resamples=2, plackett_luce=False)

    _, agielo = timed("AGI-Elo rate (snapshots + reliability)", rate, matches)
    slice_n = min(100_000, n)
    _, loop = timed(f"  baseline: plain Python loop on {slice_n:,} matches", tight_loop, matches.head(slice_n))
    print(f"  → plain loop scaled to {n:,}: {loop * n / slice_n:.1f} s; speed-up {loop * n / slice_n / agielo:.0f}×\n")

    (wins, _), build = timed("Plackett-Luce: pairwise win matrix", pairwise_wins, matches)
    _, ours = timed("Plackett-Luce: maximum likelihood (Newton)", bradley_terry_mle, wins)
    try:
        import choix

        _, theirs = timed(
            "  baseline: choix.ilsr_pairwise_dense, same matrix", choix.ilsr_pairwise_dense, wins, tol=1e-12, max_iter=10_000
        )
        print(
            f"  → likelihood step: ours {ours * 1e3:.1f} ms, choix {theirs * 1e3:.1f} ms (ratio {theirs / ours:.1f}); whole Plackett-Luce {build + ours:.2f} s\n"
        )
    except ImportError:
        print("  (choix not installed: pip install choix for the baseline)\n")

    items = np.array([f"task_{i:05d}" for i in range(args.test_cases)], dtype=object)
    a, b = rng.integers(0, args.test_cases, (2, n))
    keep = a != b
    truth = rng.normal(0, 1, args.test_cases)
    harder = truth[a[keep]] + rng.logistic(0, 0.5, keep.sum()) > truth[b[keep]]
    judgments = pd.DataFrame({"item_a": items[a[keep]], "item_b": items[b[keep]], "winner": np.where(harder, "a", "b")})
    result, _ = timed(f"HodgeRank on {len(judgments):,} judgments over {args.test_cases:,} items", hodge_rank, judgments)
    print(f"  → inconsistency {result.inconsistency:.3f}, alignment {result.alignment:.3f}\n")

    _, boot = timed(
        "bootstrap: 10 resamples of agent ratings (no Plackett-Luce)", bootstrap, matches, n_resamples=10, plackett_luce=False
    )
    print(f"  → {boot / 10:.2f} s per resample; 200 resamples ≈ {boot * 20:.0f} s (nightly)")


if __name__ == "__main__":
    main()
