"""What the default rating model costs at 1M matches, from 20 agents to 200,000, against Glicko's 16 orders in the same run.

Shapes of 1,000,000 binary matches (agents × test cases, share of the pairs played): 20 × 50,000,
1,000 × 1,000 and 4,000 × 250 dense, 2,000 × 5,000 at 10 %, 10,000 × 100 and 200,000 × 5; with
``--big`` also 10,000 × 10,000 (100M matches: about 25 minutes on 2 cores and 15 GB). True ratings N(1500, 300²) both sides.

Per shape, on the encoded matches (the ids' encoding is left out of every figure):

- ``fit``: the model alone, as ``rate(model="rasch")`` runs it: the components, the canonical order
  (``by_test_case``), ``fit_logistic`` and the agents' variances (``relative_variance``);
- ``rate``: the whole ``rate(model="rasch")`` with its defaults (10 snapshot fits, reliability);
- ``glicko16``: the baseline, ``rate(model="glicko", orders=16, with_reliability=False, workers=1)``;
- each run as the command line and the Dagster code location run the engine: BLAS on one thread
  (``agielo_dagster.threads``), the baseline's way too;
- CPU seconds (the process's, every thread) beside wall seconds, best of ``--repeats``; the ratios are
  of CPU seconds (issue 44's target: the default at most 2× the baseline); ``rate/fit`` is what the
  snapshots and the reliability add to the fit;
- ``peak``: the growth of the peak resident memory (``VmHWM``, reset through ``/proc/self/clear_refs``)
  over what the matches already hold, in MiB and bytes a match (the product's memory bound is 300 bytes
  a match + 1 GiB, docs/input-contract.md).

Each run is a process of its own, forked once the matches are drawn (they are shared, and its peak is
its own); a run past ``--timeout`` seconds is stopped and shown as such.

Machines shared with other work inflate wall more than CPU seconds; compare ratios within a run.

    python benchmarks/model_cost.py [--repeats 3] [--big] [--shapes 20x50000 1000x1000 ...] [--timeout 180]

The default table takes about 6 minutes on 2 cores, most of it in the whole ``rate`` of 200,000 × 5 (docs/engine.md).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import time
from dataclasses import dataclass

import agielo_dagster.threads  # noqa: F401  (before numpy: BLAS on one thread from the start, as the command line runs it)

# isort: split
import numpy as np

from agielo_dagster.rating.frames import Matches
from agielo_dagster.rating.graph import components
from agielo_dagster.rating.logistic import by_test_case, fit_logistic, relative_variance
from agielo_dagster.rating.ratings import rate_encoded
from agielo_dagster.rating.settings import RatingSettings
from agielo_dagster.threads import one_blas_thread


@dataclass(frozen=True)
class Shape:
    n_agents: int
    n_test_cases: int
    share: float = 1.0

    @property
    def name(self) -> str:
        return f"{self.n_agents}x{self.n_test_cases}" + ("" if self.share == 1.0 else f"@{100 * self.share:g}%")


SHAPES = (
    Shape(20, 50_000),
    Shape(1_000, 1_000),
    Shape(2_000, 5_000, 0.1),
    Shape(4_000, 250),
    Shape(10_000, 100),
    Shape(200_000, 5),
)
BIG = Shape(10_000, 10_000)
BLOCK = 2_000_000  # matches drawn at a time: the generator's temporaries stay small beside the 100M arrays


def draw(shape: Shape, seed: int = 0) -> Matches:
    """Binary matches of ``shape``, already encoded (codes are the sorted ids' positions), drawn in blocks of test cases."""
    rng = np.random.default_rng(seed)
    a_true = rng.normal(0.0, 300.0, shape.n_agents)
    t_true = rng.normal(0.0, 300.0, shape.n_test_cases)
    per_block = max(1, BLOCK // shape.n_agents)
    agents, cases, scores = [], [], []
    for lo in range(0, shape.n_test_cases, per_block):
        hi = min(lo + per_block, shape.n_test_cases)
        a = np.tile(np.arange(shape.n_agents, dtype=np.int32), hi - lo)
        t = np.repeat(np.arange(lo, hi, dtype=np.int32), shape.n_agents)
        if shape.share < 1.0:
            keep = rng.random(len(a)) < shape.share
            a, t = a[keep], t[keep]
        p = 1.0 / (1.0 + 10.0 ** ((t_true[t] - a_true[a]) / 400.0))
        agents.append(a)
        cases.append(t)
        scores.append((rng.random(len(p)) < p).astype(np.float64))
    score = np.concatenate(scores)
    del scores
    a_ids = np.array([f"agent_{j:06d}" for j in range(shape.n_agents)], dtype=object)
    t_ids = np.array([f"tc_{i:06d}" for i in range(shape.n_test_cases)], dtype=object)
    return Matches(np.concatenate(agents), np.concatenate(cases), score, score, a_ids, t_ids, "pandas")


def fit_alone(m: Matches):
    """What ``rate(model="rasch")`` computes of the model itself: the fit and the agents' variances."""
    _, a_comp, _ = components(m)
    data = by_test_case(m)
    fit = fit_logistic(data, a_comp, binary=True)
    return fit, relative_variance(fit, data, a_comp, sandwich=False)


RASCH = RatingSettings(model="rasch")
GLICKO = RatingSettings(model="glicko", orders=16, with_reliability=False, workers=1)


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _run(fn, conn) -> None:
    """In a forked child: run ``fn`` once and send back (CPU s, wall s, peak RSS growth in bytes, the fit's iterations)."""
    gc.collect()
    base = _status("VmRSS") if _reset_peak() else None
    with one_blas_thread():
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak = float("nan") if base is None else _status("VmHWM") - base
    conn.send((cpu, wall, peak, getattr(out[0], "iterations", -1) if isinstance(out, tuple) else -1))


def measure(fn, repeats: int, timeout: float) -> tuple[float, float, float, int] | None:
    """Best CPU s and wall s of ``repeats`` runs, each in a process of its own forked from this one (the matches
    shared, the peak its own); the first run's peak growth and iterations. None if a run passed ``timeout`` s."""
    ctx = multiprocessing.get_context("fork")
    runs = []
    for _ in range(repeats):
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_run, args=(fn, send))
        child.start()
        done = receive.poll(timeout)
        runs.append(receive.recv() if done else None)
        if not done:
            child.kill()
        child.join()
        if runs[-1] is None:
            return None
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2], runs[0][3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="also 10,000 x 10,000 (100M matches), once")
    parser.add_argument("--shapes", nargs="+", default=None, help="only these, e.g. 1000x1000 2000x5000@10%% 10000x10000")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds a step may run (more: shown as >timeout)")
    args = parser.parse_args()
    shapes = list(SHAPES) + [BIG] if args.big else list(SHAPES)
    if args.shapes:
        shapes = [s for s in (*SHAPES, BIG) if s.name in args.shapes]
    small = draw(Shape(50, 200))
    fit_alone(small), rate_encoded(small, RASCH), rate_encoded(small, GLICKO)  # compile (or load the cached code) first
    print(f"binary matches; CPU s (wall s); best of {args.repeats} (1 at 100M); {len(os.sched_getaffinity(0))} cores")
    print(
        f"{'shape':16} {'matches':>11} {'fit':>14} {'rate':>14} {'glicko16':>14} {'fit/g16':>7} {'rate/g16':>8} {'rate/fit':>8} "
        f"{'iters':>5} {'fit peak MiB':>12} {'B/match':>7} {'rate peak MiB':>13}"
    )
    for shape in shapes:
        m = draw(shape)
        n = len(m)
        repeats = 1 if n > 20_000_000 else args.repeats
        fit = measure(lambda m=m: fit_alone(m), repeats, args.timeout)
        whole = measure(lambda m=m: rate_encoded(m, RASCH), repeats, args.timeout)
        glicko = measure(lambda m=m: rate_encoded(m, GLICKO), repeats, args.timeout)
        print(
            f"{shape.name:16} {n:11,d} {_seconds(fit, args.timeout)} {_seconds(whole, args.timeout)} "
            f"{_seconds(glicko, args.timeout)} {_ratio(fit, glicko):>7} {_ratio(whole, glicko):>8} {_ratio(whole, fit):>8} "
            f"{fit[3] if fit else '-':>5} {_mib(fit):>12} {f'{fit[2] / n:.0f}' if fit else '-':>7} {_mib(whole):>13}",
            flush=True,
        )
        del m
        gc.collect()


def _seconds(run, timeout: float) -> str:
    return f"{run[0]:6.2f} ({run[1]:5.2f})" if run else f"{f'>{timeout:g} s':>14}"


def _ratio(a, b) -> str:
    return f"{a[0] / b[0]:.2f}" if a and b else "-"


def _mib(run) -> str:
    return f"{run[2] / 2**20:.0f}" if run else "-"


if __name__ == "__main__":
    main()
