"""Graded predictions held out, and the reliability yardstick: the figures README quotes.

1. The held-out check (5 folds, repeated with ``--repeats`` seeds) on graded benchmarks:
   MAE in metric units of the paper's E[M] (``agielo``), the default calibrated one
   (``agielo_calibrated``), Rasch, the additive two-way model and the test-case mean, and in
   how many of the folds the default beats each baseline.
   Benchmarks: a simulated absolute-error benchmark (12 agents x 300 test cases, errors dominated
   by how hard each test case is) and scikit-learn's bundled ``diabetes`` regression
   (12 regressors, out-of-fold absolute errors, minmax(0, 350) lower is better); with ``--demo``
   also the demo's digits and breast_cancer (p_true, and digits' correct answers as binary, log-loss).
2. The yardstick: each benchmark's binned MAE at 100 % beside 10 calibrated twins', and the
   seconds the twins take.

    python benchmarks/heldout_graded.py [--repeats 6] [--demo]
"""

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parents[1]))

from agielo_dagster.rating import heldout_check, identity, minmax, rate  # noqa: E402
from agielo_dagster.rating.heldout import default_method  # noqa: E402
from agielo_dagster.rating.reliability import calibration_twins  # noqa: E402


def absolute_errors(seed: int = 1):
    from benchmarks.graded import absolute_error_benchmark

    return absolute_error_benchmark(seed)


def diabetes():
    from benchmarks.graded import DIABETES_HI, diabetes_benchmark

    return diabetes_benchmark(), minmax(0.0, DIABETES_HI, higher_is_better=False)


def demo(benchmark: str, binary: bool = False):
    from agielo_dagster.demo import demo_logs

    logs = demo_logs(benchmark)
    column = "correct" if binary else "p_true"
    frame = pd.concat(
        [log.assign(agent_id=a, metric=log[column].astype(float), score=log[column].astype(float)) for a, log in logs.items()],
        ignore_index=True,
    )
    return frame[["test_case_id", "agent_id", "metric", "score"]], identity()


def held_out(name: str, matches: pd.DataFrame, scoring, repeats: int) -> None:
    tables = [heldout_check(matches, folds=5, seed=seed, scoring=scoring) for seed in range(repeats)]
    measure = "log_loss" if (tables[0]["measure"] == "log_loss").any() else "mae"
    default = default_method(measure == "log_loss")
    values = pd.concat([t[t["measure"] == measure].set_index("method")["value"] for t in tables], axis=1).mean(axis=1)
    better = sum(t[t["measure"] == measure].set_index("method")["folds_better_than_default"] for t in tables)
    shown = ["agielo", "agielo_sigma", "agielo_calibrated", "additive", "agent_mean", "test_case_mean"]
    cells = "  ".join(f"{m} {values[m]:.4g}" for m in shown if m in values)
    print(f"{name:28s} {measure} over {5 * repeats} folds: {cells}")
    for baseline in ("test_case_mean", "additive"):
        print(
            f"{'':28s} {default} vs {baseline}: {100 * (values[default] / values[baseline] - 1):+.1f} %, "
            f"the baseline better in {int(better[baseline])} of {5 * repeats} folds"
        )


def yardstick(name: str, matches: pd.DataFrame) -> None:
    result = rate(matches, seed=42)
    start = time.perf_counter()
    y = calibration_twins(matches, result, twins=10, seed=42)
    seconds = time.perf_counter() - start
    print(
        f"{name:28s} binned MAE {y.mae:.4f}; 10 twins ({y.noise}, φ {y.dispersion:.3f}): mean {y.mae_twin:.4f}, "
        f"95 % {y.mae_twin_hi:.4f}, visible {y.miscalibration_visible}; {seconds:.2f} s for {len(matches):,} matches"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=6, help="seeds of the 5-fold split (6 -> 30 folds)")
    parser.add_argument("--demo", action="store_true", help="also the demo's classifiers (trains them: minutes)")
    args = parser.parse_args()
    benchmarks = {"simulated absolute errors": absolute_errors(), "diabetes (absolute error)": diabetes()}
    if args.demo:
        benchmarks |= {
            "digits (p_true)": demo("digits"),
            "breast_cancer (p_true)": demo("breast_cancer"),
            "digits correct (binary)": demo("digits", binary=True),
        }
    for name, (matches, scoring) in benchmarks.items():
        held_out(name, matches, scoring, args.repeats)
    for name, (matches, _) in benchmarks.items():
        yardstick(name, matches)


if __name__ == "__main__":
    main()
