"""Do the 95 % rating intervals cover agents' true ratings, in every regime? The whole grid, in one run.

Simulated benchmarks (see :mod:`agielo_dagster.rating.coverage`), ``--replications`` of each regime,
rated by ``rate(model=--model)``. The regimes, in groups:

- ``base``: 30 agents × 400 test cases, true agent and test-case ratings N(1500, sd²), sd 200/400/600/800
  × dense/30 %/10 % of the pairs × binary/graded (Binomial(4, E)/4): the 24 regimes of the issue;
- ``few``: 100 agents × 20, 24 and 50 test cases (binary and graded, sd 400; binary sd 800 at 24);
- ``sparse``: 100 agents × 2,000 test cases at 2 % and 5 % of the pairs (20 to 100 matches an agent);
- ``agents``: 200, 500 and 2,000 agents × 400 test cases at 10 % of the pairs;
- ``tails``: heavy-tailed difficulties, Student's t with 3 degrees of freedom scaled to sd;
- ``ceiling``: graded scores out of 4 scored out of 3 (S = min(K, 3)/3: many at 1): no logistic
  rating equals the latent θ, so coverage is of the pseudo-true rating (``truth`` pseudo: the same
  model on 20,000 test cases of the same population);
- ``2pl``: test cases with unequal discriminations, lognormal(0, 0.5), binary (``--model 2pl`` is the
  model that fits them; the default ``rasch`` shows the cost of the misspecification, against the
  latent θ and against its own pseudo-truth).

Per regime it prints:

- ``cover``: the share of agent intervals that cover the true rating (up to Elo's common shift);
- ``ext``: the same for the best and the worst true agent of each benchmark;
- ``rank``: the share of ``rank_lo..rank_hi`` that contain the true rank;
- ``width``: the interval's half-width over 1.96 × the standard error of a correctly specified joint
  maximum-likelihood fit of the same design (:func:`~agielo_dagster.rating.coverage.joint_mle_se`):
  median and 90th percentile over the agents, and the median over the extremes;
- ``slope``: of the estimated rating on the true rating (1 = an unbiased scale);
- ``iters``, ``max``: the fit's mean and largest number of iterations (Newton steps; 200 is the fit's
  cap: it stopped unconverged; ``-`` for glicko);
- ``miss``: the targets missed (coverage ≥ 0.90 ``c``, extremes ≥ 0.85 ``x``, slope 0.95–1.05 ``s``,
  median width ≤ 1.3 ``w``), judged on the point estimate: with 20 replications of 30 agents a
  coverage has a binomial sd of about 1 point, the extremes' about 3.5.

Every regime's replications draw the same benchmarks whatever ``--model``: models compare paired.
The full grid with 20 replications takes about 5 CPU-minutes (rasch: half of it the pseudo-truths of the
ceiling rows, a sixth the 2,000 agents); glicko's 16 orders about 2.5 with 20.

    python benchmarks/coverage_grid.py [--replications 20] [--model rasch|2pl|glicko] [--quick] [--groups base few ...]
                                  [--workers 2] [--orders 16]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from agielo_dagster.rating.coverage import Regime, replicate
from agielo_dagster.rating.settings import MODELS

SPREADS = (200, 400, 600, 800)
DESIGNS = (1.0, 0.3, 0.1)


def _grid() -> dict[str, list[Regime]]:
    few = [Regime(n_agents=100, n_test_cases=n, outcome=o) for n in (20, 24, 50) for o in ("binary", "graded")]
    return {
        "base": [Regime(sd=sd, share=s, outcome=o) for o in ("binary", "graded") for s in DESIGNS for sd in SPREADS],
        "few": few + [Regime(sd=800, n_agents=100, n_test_cases=24)],
        "sparse": [
            Regime(share=s, outcome=o, n_agents=100, n_test_cases=2000) for s in (0.02, 0.05) for o in ("binary", "graded")
        ]
        + [Regime(sd=800, share=s, n_agents=100, n_test_cases=2000) for s in (0.02, 0.05)],
        "agents": [Regime(share=0.1, n_agents=n) for n in (200, 500, 2000)] + [Regime(share=0.1, n_agents=500, outcome="graded")],
        "tails": [Regime(sd=sd, share=s, difficulty="t3") for s in (1.0, 0.1) for sd in (400, 800)],
        "ceiling": [Regime(sd=sd, share=s, outcome="ceiling", truth="pseudo") for s in (1.0, 0.3) for sd in (400, 800)],
        "2pl": [Regime(share=s, discrimination=0.5) for s in (1.0, 0.1)] + [Regime(discrimination=0.5, truth="pseudo")],
    }


QUICK = [
    ("base", Regime(sd=400)),
    ("base", Regime(sd=800, share=0.1)),
    ("base", Regime(sd=800, share=0.3, outcome="graded")),
    ("few", Regime(n_agents=100, n_test_cases=24)),
    ("sparse", Regime(share=0.02, n_agents=100, n_test_cases=2000)),
    ("agents", Regime(share=0.1, n_agents=500)),
    ("tails", Regime(sd=800, difficulty="t3")),
    ("ceiling", Regime(sd=800, outcome="ceiling", truth="pseudo")),
    ("2pl", Regime(discrimination=0.5)),
]


def study(regime: Regime, replications: int, model: str, rate_kwargs: dict) -> dict:
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a sparse draw may leave an agent in a group of its own
        reps = [replicate(regime, 1000 * r + 7, model=model, iterations=True, **rate_kwargs) for r in range(replications)]
    width = np.concatenate([r.width_ratio for r in reps])
    return dict(
        cover=np.concatenate([r.covered for r in reps]).mean(),
        ext=np.concatenate([r.covered[r.extreme] for r in reps]).mean(),
        rank=np.concatenate([r.rank_covered for r in reps]).mean(),
        width_med=np.median(width),
        width_90=np.quantile(width, 0.9),
        width_ext=np.median(np.concatenate([r.width_ratio[r.extreme] for r in reps])),
        slope=np.mean([r.slope for r in reps]),
        iters=np.mean([r.iterations for r in reps]),
        iters_max=np.max([r.iterations for r in reps]),
        cpu=time.process_time() - start,
    )


def _study(args) -> dict:
    return study(*args)


def _misses(f: dict) -> str:
    miss = ("c" if f["cover"] < 0.90 else "") + ("x" if f["ext"] < 0.85 else "")
    miss += ("s" if not 0.95 <= f["slope"] <= 1.05 else "") + ("w" if f["width_med"] > 1.3 else "")
    return miss or "-"


def describe(r: Regime) -> str:
    design = "dense" if r.share == 1.0 else f"{100 * r.share:g}%"
    extra = {"t3": " t3"}.get(r.difficulty, "") + (f" 2PL({r.discrimination:g})" if r.discrimination else "")
    return f"{r.n_agents}x{r.n_test_cases} sd{r.sd:g} {design} {r.outcome}{extra}" + (" (pseudo)" if r.truth == "pseudo" else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=20)
    parser.add_argument("--model", choices=MODELS, default="rasch")
    parser.add_argument("--orders", type=int, default=16, help="glicko's orders")
    parser.add_argument("--quick", action="store_true", help="one regime or two of each group")
    parser.add_argument("--groups", nargs="+", default=None, help="only these groups")
    parser.add_argument("--workers", type=int, default=1, help="processes, each studying whole regimes")
    args = parser.parse_args()
    rate_kwargs = dict(orders=args.orders, workers=1) if args.model == "glicko" else {}
    regimes = QUICK if args.quick else [(g, r) for g, rs in _grid().items() for r in rs]
    if args.groups:
        regimes = [(g, r) for g, r in regimes if g in args.groups]
    print(
        f"model {args.model}{f' ({args.orders} orders)' if args.model == 'glicko' else ''}; {args.replications} replications "
        f"per regime; 95 % intervals; {len(regimes)} regimes, {args.workers} process(es), {os.cpu_count()} cores"
    )
    print(
        f"{'group':7} {'regime':38} {'cover':>5} {'ext':>5} {'rank':>5} {'width':>5} {'p90':>5} {'ext':>5} "
        f"{'slope':>5} {'iters':>5} {'max':>3} {'cpu s':>6} miss"
    )
    wall, met, cpu = time.perf_counter(), 0, 0.0
    tasks = [(r, args.replications, args.model, rate_kwargs) for _, r in regimes]
    with ProcessPoolExecutor(args.workers) if args.workers > 1 else _Serial() as pool:
        try:
            for (group, r), f in zip(regimes, pool.map(_study, tasks), strict=True):
                met += _misses(f) == "-"
                cpu += f["cpu"]
                iters = "    -   -" if np.isnan(f["iters"]) else f"{f['iters']:5.1f} {f['iters_max']:3.0f}"
                print(
                    f"{group:7} {describe(r):38} {f['cover']:5.3f} {f['ext']:5.3f} {f['rank']:5.3f} {f['width_med']:5.2f} "
                    f"{f['width_90']:5.2f} {f['width_ext']:5.2f} {f['slope']:5.3f} {iters} {f['cpu']:6.1f} {_misses(f)}",
                    flush=True,
                )
        except NotImplementedError as e:
            sys.exit(f"rate(model={args.model!r}) is not implemented yet ({e})")
    print(f"{met} of {len(regimes)} regimes meet every target; {time.perf_counter() - wall:.0f} s wall, {cpu:.0f} CPU-s")


class _Serial:
    """``map`` in this process (``--workers 1``): tracebacks and profiles stay readable."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items):
        return map(fn, items)


if __name__ == "__main__":
    main()
