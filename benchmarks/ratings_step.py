"""What the ratings step costs beside the fit alone (issue 44's target: at most 3×), on square, tall and wide shapes.

Per shape (binary matches, true ratings N(1500, 300²) both sides, drawn by ``model_cost.draw``), CPU seconds of
each piece the pipeline runs around the model, as the ``agent_ratings`` asset runs it (its limits included:
fragility up to ``FRAGILITY_MAX_MATCHES`` matches, twins up to ``TWIN_MAX_MATCHES``):

- ``fit``: the model alone (``model_cost.fit_alone``: the fit and the agents' variances), the yardstick;
- ``rate``: the whole ``rate`` (tables, snapshots, reliability);
- ``fragility``: ``fragility_of_first`` against the top tier (``standing.top_tier``);
- ``twins``: ``calibration_twins`` (10 calibrated twins, the reliability's yardstick);
- ``provisional``: ``place_provisional_agents`` of 5 % more agents, each with half of the test cases;
- ``heldout``: ``heldout_check`` (5 folds; the nightly asset, shown apart);
- ``step``: rate + fragility + twins + provisional; ``step/fit`` is the target's ratio (with the held-out folds:
  ``+heldout/fit``).

Each piece runs in a process of its own, forked once the matches are drawn (``model_cost.measure``), the best of
``--repeats`` runs; compare ratios within a run (these machines are shared).

    python benchmarks/ratings_step.py [--shapes 400x400 632x24 10000x5 20x5000] [--repeats 1] [--timeout 300]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import agielo_dagster.threads  # noqa: F401  (before numpy: BLAS on one thread from the start, as the command line runs it)

# isort: split
import numpy as np
import pandas as pd
from agielo_dagster.assets.ratings import FRAGILITY_MAX_MATCHES, TWIN_MAX_MATCHES, TWINS

from agielo_dagster.rating import calibration_twins, heldout_check, place_provisional_agents, rate
from agielo_dagster.rating.fragility import fragility_of_first
from agielo_dagster.rating.standing import top_tier

sys.path.insert(0, str(Path(__file__).parent))
from model_cost import Shape, draw, fit_alone, measure  # noqa: E402

SHAPES = (Shape(400, 400), Shape(632, 24), Shape(10_000, 5), Shape(20, 5_000))
PIECES = ("fit", "rate", "fragility", "twins", "provisional", "heldout")


def table(shape: Shape, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The benchmark's matches, and 5 % more agents' partial uploads (each on every other test case)."""
    grown = Shape(shape.n_agents + max(1, shape.n_agents // 20), shape.n_test_cases, shape.share)
    m = draw(grown, seed)
    frame = pd.DataFrame(
        {"test_case_id": m.test_case_ids[m.test_case], "agent_id": m.agent_ids[m.agent], "metric": m.metric, "score": m.score}
    )
    newcomer = m.agent >= shape.n_agents
    partial = frame[newcomer & (m.test_case % 2 == 0)]
    return frame[~newcomer].reset_index(drop=True), partial.reset_index(drop=True)


def pieces(matches: pd.DataFrame, partial: pd.DataFrame) -> dict:
    """Each piece as a function of nothing (run in a forked child)."""
    from agielo_dagster.rating.frames import encode_matches

    result = rate(matches)
    tier = top_tier(result.agents)
    rated = result.agents["agent_id"].astype(str).tolist()
    out = {
        "fit": lambda: fit_alone(encode_matches(matches)),
        "rate": lambda: rate(matches),
        "provisional": lambda: place_provisional_agents(partial, result.test_cases),
        "heldout": lambda: heldout_check(matches, folds=5),
    }
    if len(matches) <= FRAGILITY_MAX_MATCHES:
        out["fragility"] = lambda: fragility_of_first(matches, tier=tier, candidates=rated, result=result)
    if len(matches) <= TWIN_MAX_MATCHES:
        out["twins"] = lambda: calibration_twins(matches, result, twins=TWINS, seed=0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=None, help="only these, e.g. 632x24 10000x5")
    parser.add_argument("--repeats", type=int, default=1, help="best CPU s of this many runs of each piece")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    shapes = [s for s in SHAPES if not args.shapes or s.name in args.shapes]
    small, small_partial = table(Shape(30, 60))
    for fn in pieces(small, small_partial).values():  # compile (or load the cached code) first
        fn()
    print(f"binary matches; CPU s, best of {args.repeats} run(s) each; {len(os.sched_getaffinity(0))} cores")
    print(f"{'shape':10} {'matches':>9} " + " ".join(f"{p:>11}" for p in PIECES) + f" {'step/fit':>8} {'+heldout/fit':>12}")
    for shape in shapes:
        matches, partial = table(shape)
        cpu = {}
        for name, fn in pieces(matches, partial).items():
            run = measure(fn, args.repeats, args.timeout)
            cpu[name] = run[0] if run else np.inf
        step = sum(cpu.get(p, 0.0) for p in ("rate", "fragility", "twins", "provisional"))
        cells = " ".join(f"{cpu[p]:11.3f}" if p in cpu else f"{'skipped':>11}" for p in PIECES)
        print(
            f"{shape.name:10} {len(matches):9,d} {cells} {step / cpu['fit']:8.1f} {(step + cpu['heldout']) / cpu['fit']:12.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
