"""Does ``likely_mislabeled`` find wrong reference answers? A planted study against the item-rest correlation.

On each benchmark, 5 % of the informative test cases (those 50-95 % of the agents solve; graded: whose mean score
is in that range) are reversed for every agent, S → 1 − S, as a wrong reference label would; the benchmark is
rated (the default model) and the flagged test cases compared with the planted ones. The baseline is the classical
item-rest correlation < −0.2 (each test case's scores against the agent's total on the other test cases), computed
in the same run on the same data. Per benchmark, over the seeds (counts summed before the ratios):

- ``recall``, ``precision``, ``F1`` of ``likely_mislabeled`` and of the baseline;
- ``F1 new``: the F1 of each with the test cases it already flags on the unplanted benchmark set aside (flags the
  planting did not cause: false flags, or real errors of the data);
- ``false``: the share of the test cases flagged on the unplanted benchmark (ours: ``likely_mislabeled``, then
  ``uninformative``; the baseline's: correlation < −0.2); there, a flag is a false flag or a real error of the data.
- ``relabeled`` (the demo's benchmarks): of the test cases each method flags on the unplanted benchmark, how many
  at least 70 % of the classifiers put in one and the same other class: likely wrong labels of the data itself.

Benchmarks: the demo's digits (20 scikit-learn classifiers × 1,797 images) and breast_cancer (13 × 569), binary
(``correct``) and graded (``p_true``); simulated ones (:func:`~agielo_dagster.rating.simulate.simulate_matches`:
agents and test cases ~ N(1500, 400²), binary and graded Binomial(4, E)/4). ``--cost`` prints instead the CPU
seconds of ``rate`` (rasch, no snapshots nor reliability) on 1M binary matches (1,000 × 1,000), of the item-quality
pass alone within it, and of the 2PL's ``rate`` on the same matches.

    python benchmarks/item_quality.py [--seeds 5] [--cost]
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings

import numpy as np
import pandas as pd

from agielo_dagster.rating import rate
from agielo_dagster.rating.simulate import simulate_matches

SHARE = 0.05
BASELINE = -0.2
QUICK = dict(with_reliability=False, snapshot_fractions=(1.0,), test_case_snapshot_fractions=(1.0,))


CONSENSUS = 0.7
RELABELED: dict[str, set[str]] = {}  # per demo benchmark: the test cases most classifiers put in one other class


def demo_benchmarks() -> dict[str, pd.DataFrame]:
    from agielo_dagster.demo import demo_logs

    out = {}
    for name in ("digits", "breast_cancer"):
        logs = pd.concat([log.assign(agent_id=agent) for agent, log in demo_logs(name).items()], ignore_index=True)
        wrong = logs[logs["predicted_label"] != logs["true_label"]]
        votes = wrong.groupby(["test_case_id", "predicted_label"]).size().groupby("test_case_id").max()
        relabeled = set(votes.index[votes >= CONSENSUS * logs["agent_id"].nunique()])
        for kind, column in (("binary", "correct"), ("graded", "p_true")):
            score = logs[column].astype(np.float64)
            out[f"{name} {kind}"] = pd.DataFrame(
                {"test_case_id": logs["test_case_id"], "agent_id": logs["agent_id"], "metric": score, "score": score}
            )
            RELABELED[f"{name} {kind}"] = relabeled
    return out


def simulated_benchmarks() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(7)
    agents, test_cases = rng.normal(1500, 400, 30), rng.normal(1500, 400, 1000)
    return {
        f"simulated 30x1000 {outcome}": simulate_matches(test_cases, agents, seed=8, outcome=outcome)
        for outcome in ("binary", "graded")
    }


def item_rest(m: pd.DataFrame) -> pd.Series:
    """Each test case's correlation of its scores with the agents' totals on the other test cases (NaN: constant)."""
    x = m.pivot(index="agent_id", columns="test_case_id", values="score")
    rest = x.sum(axis=1).to_numpy()[:, None] - x.to_numpy()
    a, b = x.to_numpy() - x.to_numpy().mean(axis=0), rest - rest.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(axis=0) / np.sqrt((a * a).sum(axis=0) * (b * b).sum(axis=0))
    return pd.Series(r, index=x.columns)


def plant(m: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, set[str]]:
    solved = m.groupby("test_case_id")["score"].mean()
    informative = np.sort(solved.index[(solved >= 0.5) & (solved <= 0.95)].to_numpy())
    rng = np.random.default_rng(seed)
    planted = rng.choice(informative, max(1, round(SHARE * len(informative))), replace=False)
    out = m.copy()
    hit = out["test_case_id"].isin(planted)
    out.loc[hit, "score"] = 1.0 - out.loc[hit, "score"]
    out["metric"] = out["score"]
    return out, set(planted)


def flags(m: pd.DataFrame) -> tuple[set[str], set[str], set[str]]:
    """(likely_mislabeled, uninformative, the baseline's) test cases of ``m``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = rate(m, **QUICK).test_cases
    r = item_rest(m)
    ids = cases["test_case_id"]
    return (
        set(ids[cases["flag"] == "likely_mislabeled"]),
        set(ids[cases["flag"] == "uninformative"]),
        set(r.index[r < BASELINE]),
    )


def scores(tp: int, flagged: int, planted: int) -> tuple[float, float, float]:
    recall, precision = tp / planted, (tp / flagged if flagged else 0.0)
    return recall, precision, (2 * recall * precision / (recall + precision) if recall + precision else 0.0)


def study(benchmarks: dict[str, pd.DataFrame], seeds: int) -> None:
    print(f"planted study, {datetime.date.today()}: {SHARE:.0%} of the informative test cases reversed, {seeds} seeds")
    head = f"{'benchmark':28} {'planted':>7} | {'recall':>6} {'prec':>5} {'F1':>5} | {'base rec':>8} {'prec':>5} {'F1':>5}"
    print(head + f" | {'F1 new':>6} {'base':>5} | {'false':>6} {'uninf':>6} {'base':>6} | {'relabeled':>9} {'base':>5}")
    for name, m in benchmarks.items():
        mislabeled, uninformative, base = flags(m)
        n_t = m["test_case_id"].nunique()
        ours, theirs, planted_total = [0, 0], [0, 0], 0
        ours_new, theirs_new = [0, 0], [0, 0]  # the flags already raised without the planting set aside
        for seed in range(seeds):
            planted_m, planted = plant(m, seed)
            found, _, found_base = flags(planted_m)
            planted_total += len(planted)
            ours[0] += len(found & planted)
            ours[1] += len(found)
            theirs[0] += len(found_base & planted)
            theirs[1] += len(found_base)
            ours_new[0] += len(found & planted)
            ours_new[1] += len((found - mislabeled) | (found & planted))
            theirs_new[0] += len(found_base & planted)
            theirs_new[1] += len((found_base - base) | (found_base & planted))
        r, p, f = scores(*ours, planted_total)
        br, bp, bf = scores(*theirs, planted_total)
        new = f"{scores(*ours_new, planted_total)[2]:6.2f} {scores(*theirs_new, planted_total)[2]:5.2f}"
        false = f"{len(mislabeled) / n_t:6.1%} {len(uninformative) / n_t:6.1%} {len(base) / n_t:6.1%}"
        relabeled = RELABELED.get(name)
        shown = "" if relabeled is None else f" | {_of(mislabeled, relabeled):>9} {_of(base, relabeled):>5}"
        print(
            f"{name:28} {planted_total:7d} | {r:6.2f} {p:5.2f} {f:5.2f} | {br:8.2f} {bp:5.2f} {bf:5.2f} | {new} | {false}{shown}"
        )


def _of(flagged: set[str], relabeled: set[str]) -> str:
    return f"{len(flagged & relabeled)}/{len(flagged)}"


def cost() -> None:
    from agielo_dagster.rating.frames import encode_matches
    from agielo_dagster.rating.item_quality import item_quality
    from agielo_dagster.rating.logistic import by_test_case

    rng = np.random.default_rng(3)
    m = simulate_matches(rng.normal(1500, 400, 1000), rng.normal(1500, 400, 1000), seed=4)
    for model in ("rasch", "2pl"):
        rate(m.head(2000), model=model, **QUICK)  # compiled before timing
    seconds, fits = {}, {}
    for model in ("rasch", "2pl"):
        start = time.process_time()
        fits[model] = rate(m, model=model, **QUICK).fitted.state
        seconds[model] = time.process_time() - start
    fit, data = fits["rasch"], by_test_case(encode_matches(m))
    start = time.process_time()
    item_quality(data, fit.theta, fit.beta_mean, tau2=fit.tau2, phi=fit.phi, binary=True, level=0.95)
    alone = time.process_time() - start
    print(f"{datetime.date.today()}, 1M binary matches (1,000 agents x 1,000 test cases), CPU seconds:")
    print(f"rate, rasch (with item quality): {seconds['rasch']:.2f}; the item-quality pass alone: {alone:.2f}")
    print(f"rate, 2pl: {seconds['2pl']:.2f} ({seconds['2pl'] / seconds['rasch']:.1f}x the rasch's)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cost", action="store_true")
    args = parser.parse_args()
    if args.cost:
        cost()
    else:
        study({**demo_benchmarks(), **simulated_benchmarks()}, args.seeds)
