"""Do the 95 % rating intervals cover agents' true ratings, in every regime? The full grid, in one run.

Simulated benchmarks of 30 agents × 400 test cases, true agent and test-case ratings both
N(1500, sd²), Elo-logistic outcomes: binary, or graded (Binomial(4, E)/4: partial credit in
quarters). Grid: sd 200/400/600/800 × dense/30 %/10 % of the (agent, test case) pairs ×
binary/graded, ``--replications`` benchmarks each, rated by :func:`rate` with its defaults
(K = 16 orders, refined) and, with ``--glicko``, also without the refinement for comparison.

Per regime it prints:

- ``cover``: the share of agent intervals that cover the true rating (up to Elo's common shift);
- ``extremes``: the same for the best and the worst true agent of each benchmark;
- ``rank``: the share of ``rank_lo..rank_hi`` that contain the true rank;
- ``width``: the interval's half-width over 1.96 × the standard error of a correctly specified
  joint maximum-likelihood fit of the same design (inverse Fisher information at the true
  ratings, test cases profiled out: see :mod:`agielo_dagster.rating.coverage`), median and 90th
  percentile over the agents, and the median over the extremes;
- ``slope``: of the estimated rating on the true rating (1 = an unbiased scale).

Runs in about 5 minutes on 2 cores with 20 replications (one core: ``--workers 1``).

    python benchmarks/coverage.py [--replications 20] [--glicko] [--workers 1]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

# run as a script, this folder leads sys.path, and this file would stand in for the `coverage` package numba looks for
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402

from agielo_dagster.rating.coverage import replicate  # noqa: E402

SPREADS = (200, 400, 600, 800)
DESIGNS = (("dense", 1.0), ("30%", 0.3), ("10%", 0.1))
OUTCOMES = ("binary", "graded")


def regime(sd: float, share: float, outcome: str, replications: int, **rate_kwargs) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a sparse draw may leave an agent in a group of its own
        reps = [replicate(sd, share, outcome, 1000 * r + 7, **rate_kwargs) for r in range(replications)]
    width = np.concatenate([r.width_ratio for r in reps])
    width_x = np.concatenate([r.width_ratio[r.extreme] for r in reps])
    return dict(
        cover=np.concatenate([r.covered for r in reps]).mean(),
        extremes=np.concatenate([r.covered[r.extreme] for r in reps]).mean(),
        rank=np.concatenate([r.rank_covered for r in reps]).mean(),
        width_med=np.median(width),
        width_90=np.quantile(width, 0.9),
        width_ext=np.median(width_x),
        slope=np.mean([r.slope for r in reps]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=20)
    parser.add_argument("--glicko", action="store_true", help="also rate without the refinement (refine=False)")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    methods = [("refined", dict(refine=True))] + ([("glicko", dict(refine=False))] if args.glicko else [])
    print(f"{args.replications} replications of 30 agents x 400 test cases per regime; 95 % intervals")
    print(
        f"{'method':8} {'sd':>4} {'design':>6} {'outcome':>7} {'cover':>6} {'extremes':>8} {'rank':>6} "
        f"{'width med':>9} {'p90':>5} {'ext':>5} {'slope':>6}"
    )
    start = time.perf_counter()
    for name, kwargs in methods:
        for outcome in OUTCOMES:
            for design, share in DESIGNS:
                for sd in SPREADS:
                    f = regime(sd, share, outcome, args.replications, workers=args.workers, **kwargs)
                    print(
                        f"{name:8} {sd:4d} {design:>6} {outcome:>7} {f['cover']:6.3f} {f['extremes']:8.3f} {f['rank']:6.3f} "
                        f"{f['width_med']:9.2f} {f['width_90']:5.2f} {f['width_ext']:5.2f} {f['slope']:6.3f}",
                        flush=True,
                    )
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
