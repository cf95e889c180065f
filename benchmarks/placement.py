"""Placing a new model from 5% of a benchmark: each agent left out in turn, placed, compared with the joint rating.

For every benchmark (the demo's digits and breast_cancer, two simulated ones) each agent is left
out, the others are rated jointly (`rate`), and the left-out agent is placed from its real results
revealed one batch at a time on 5% of the test cases (`place_sequentially`), or from all of them
(`place_agents`, "full"). Figures: median |rating error| against the joint rating of every agent,
Spearman of placed against joint ratings (within a benchmark), coverage of the 90% intervals, test
cases used.

Methods: ``stratified`` (the default: a random sample by difficulty stratum, Neyman-allocated at
the estimate, each result weighted N_h/n_h), ``importance`` (draws ∝ √information at the estimate,
Hansen-Hurwitz weights),
``information`` (greedy maximum information, unweighted), ``random`` (uniform, weighted N/n),
``full``, and a baseline from catsim (a maintained CAT library; `pip install catsim`, in the
``bench`` extra): a 1PL item bank from our frozen ratings (b = (μ − 1500)·ln 10 / 400), its
maximum-information selector and its numerical-search estimator on right/wrong responses
(score ≥ ½), one item at a time; its θ is brought to Elo (1500 + 400 θ / ln 10) and to the joint
scale with `joint_scale`, its interval from the test information.

    python benchmarks/placement.py [--share 0.05] [--seeds 3] [--no-demo] [--no-catsim]
"""

import argparse
import contextlib
import io
import math
import time
import warnings
from statistics import NormalDist

import numpy as np
import pandas as pd

from agielo_dagster.rating import rate, simulate_matches
from agielo_dagster.rating.selection import expected_information, joint_scale, placement_study, study_summary

LOG10 = math.log(10.0)


def demo_benchmarks() -> dict[str, pd.DataFrame]:
    from agielo_dagster.demo import demo_logs

    out = {}
    for name in ("digits", "breast_cancer"):
        logs = demo_logs(name)
        out[name] = pd.concat(
            [log.assign(agent_id=agent, metric=log["p_true"], score=log["p_true"]) for agent, log in logs.items()],
            ignore_index=True,
        )[["test_case_id", "agent_id", "metric", "score"]]
    return out


def simulated_benchmarks() -> dict[str, pd.DataFrame]:
    out = {}
    for k, (n_tc, agents) in enumerate([(2000, np.linspace(1200, 2100, 12)), (1000, np.linspace(1300, 2000, 10))]):
        rng = np.random.default_rng(k)
        out[f"simulated_{n_tc}x{len(agents)}"] = simulate_matches(rng.normal(1500, 300, n_tc), agents, seed=k)
    return out


def catsim_study(matches: pd.DataFrame, benchmark: str, share: float, level: float = 0.9) -> pd.DataFrame:
    """catsim's maximum-information CAT on a 1PL bank from our frozen ratings, each agent left out."""
    from catsim.estimation import NumericalSearchEstimator
    from catsim.item_bank import ItemBank
    from catsim.selection import MaxInfoSelector

    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    joint = rate(matches, seed=1, with_reliability=False).agents.set_index("agent_id")["mu"]
    rows = []
    for agent in joint.index:
        mine = matches[matches["agent_id"] == agent].set_index("test_case_id")["score"]
        rest = rate(matches[matches["agent_id"] != agent], seed=2, with_reliability=False).test_cases
        ids = rest["test_case_id"].to_numpy()
        b = (rest["mu"].to_numpy() - 1500.0) * LOG10 / 400.0
        answers = mine.reindex(ids).to_numpy()
        n = max(1, int(round(share * len(ids))))
        administered, responses, theta = [], [], 0.0
        quiet = io.StringIO()
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):  # catsim prints blank lines
            bank = ItemBank(np.column_stack([np.ones_like(b), b, np.zeros_like(b), np.ones_like(b)]))
            selector, estimator = MaxInfoSelector(), NumericalSearchEstimator()
            for _ in range(n):
                item = selector.select(item_bank=bank, administered_items=administered, est_theta=theta)
                administered.append(int(item))
                responses.append(bool(answers[item] >= 0.5))
                theta = float(
                    estimator.estimate(
                        item_bank=bank, administered_items=administered, response_vector=responses, est_theta=theta
                    )
                )
        elo = 1500.0 + 400.0 * theta / LOG10
        info = expected_information(rest["mu"].to_numpy()[administered], 0.0, elo).sum()
        se = 1.0 / math.sqrt(info) if info > 0 else 350.0
        lo, mid, hi = joint_scale(rest, [elo - z * se, elo, elo + z * se])
        rows.append(
            dict(
                benchmark=benchmark,
                agent_id=agent,
                method="catsim",
                seed=0,
                joint_mu=float(joint[agent]),
                mu=mid,
                mu_lo=min(lo, mid),
                mu_hi=max(hi, mid),
                used=n,
            )
        )
    out = pd.DataFrame(rows)
    out["error"] = out["mu"] - out["joint_mu"]
    out["covered"] = (out["mu_lo"] <= out["joint_mu"]) & (out["joint_mu"] <= out["mu_hi"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--share", type=float, default=0.05, help="budget: share of the test cases (default 0.05)")
    parser.add_argument("--seeds", type=int, default=3, help="sequential placements per agent and method (default 3)")
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--no-demo", action="store_true", help="simulated benchmarks only (the demo takes ~1 min to build)")
    parser.add_argument("--no-catsim", action="store_true", help="skip the catsim baseline")
    args = parser.parse_args()

    use_catsim = not args.no_catsim
    if use_catsim:
        try:
            import catsim  # noqa: F401
        except ImportError:
            print("catsim is not installed (pip install catsim, or the project's `bench` extra): its baseline is skipped\n")
            use_catsim = False

    t0 = time.perf_counter()
    benchmarks = {} if args.no_demo else demo_benchmarks()
    benchmarks.update(simulated_benchmarks())
    seeds = tuple(range(args.seeds))
    frames = []
    for name, matches in benchmarks.items():
        t = time.perf_counter()
        frames.append(placement_study(matches, share=args.share, seeds=seeds, batch_size=args.batch_size, benchmark=name))
        if use_catsim:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                frames.append(catsim_study(matches, name, args.share))
        print(
            f"{name}: {matches['agent_id'].nunique()} agents, {matches['test_case_id'].nunique()} test cases "
            f"({time.perf_counter() - t:.0f} s)"
        )
    rows = pd.concat(frames, ignore_index=True)
    columns = ["median_abs_error", "mean_abs_error", "spearman", "coverage", "median_width", "test_cases_used", "placements"]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(f"\nshare {args.share:.0%}, {len(seeds)} seed(s); errors against the joint rating of every agent (Elo)\n")
        print(study_summary(rows, ("benchmark", "method"))[columns].round(3).to_string())
        print("\nall benchmarks\n")
        print(study_summary(rows)[columns].round(3).to_string())
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
