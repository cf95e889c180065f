"""Placement on the refined scale against today's Glicko placement, leave-one-agent-out on the demo's real benchmarks.

For each classifier of digits (20) and breast_cancer (13): rate the others, place it, and compare
with its rating when rated jointly with the others (same settings, another seed for the rest):

- ``refined``: ``rate(..., refine=True)`` of the others, the newcomer placed by
  :func:`~agielo_dagster.rating.refined_placement.place_on_refined` (pairwise equations against the fixed
  refined ratings), against the joint ``rate(..., refine=True)``;
- ``glicko``: ``rate(...)`` of the others, the newcomer placed by
  :func:`~agielo_dagster.rating.place_agents` (history replay), against the joint ``rate(...)``.

Prints per benchmark the median and mean |placed − joint| (Elo), the largest, the coverage of the
placement's 90 % interval (joint rating inside ``mu_lo..mu_hi``), the median interval half-width, and
the median and largest |error| relative to the other agents' mean (``rel``: each rating minus the mean
of the other agents on its own table, which sets the scale's common level aside).
About a minute on one core.

    python benchmarks/placement_refined.py [--benchmarks digits breast_cancer]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import pandas as pd  # noqa: E402

from agielo_dagster.demo import demo_logs  # noqa: E402
from agielo_dagster.rating import place_agents, rate  # noqa: E402
from agielo_dagster.rating.refined_placement import place_on_refined  # noqa: E402


def matches_of(name: str) -> pd.DataFrame:
    logs = demo_logs(name)
    return pd.concat(
        [log.assign(agent_id=a, metric=log["p_true"], score=log["p_true"]) for a, log in logs.items()], ignore_index=True
    )[["test_case_id", "agent_id", "metric", "score"]]


def leave_one_out(matches: pd.DataFrame, refine: bool, level: float = 0.9) -> pd.DataFrame:
    joint = rate(matches, seed=1, with_reliability=False, refine=refine).agents.set_index("agent_id")
    rows = []
    for agent in joint.index:
        rest_matches = matches[matches.agent_id != agent]
        mine = matches[matches.agent_id == agent]
        rest = rate(rest_matches, seed=2, with_reliability=False, refine=refine)
        if refine:
            p = place_on_refined(mine, rest_matches, rest.agents, level=level).iloc[0]
        else:
            p = place_agents(mine, rest.test_cases, level=level).iloc[0]
        truth = joint.loc[agent, "mu"]
        # the same, each side measured from the mean of the other agents (the scale's common level set aside)
        relative = (p["mu"] - rest.agents["mu"].mean()) - (truth - joint["mu"].drop(agent).mean())
        rows.append(
            dict(
                agent=agent,
                error=p["mu"] - truth,
                relative=relative,
                covered=p["mu_lo"] <= truth <= p["mu_hi"],
                half=(p["mu_hi"] - p["mu_lo"]) / 2,
            )
        )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmarks", nargs="+", default=["digits", "breast_cancer"])
    args = ap.parse_args()
    print(
        f"{'benchmark':14} {'method':8} {'median|err|':>11} {'mean|err|':>9} {'max|err|':>8} {'cover90':>7} {'half-width':>10} {'med|rel|':>8} {'max|rel|':>8} {'s':>5}"
    )
    for name in args.benchmarks:
        matches = matches_of(name)
        for method, refine in (("glicko", False), ("refined", True)):
            t0 = time.perf_counter()
            r = leave_one_out(matches, refine)
            err = r["error"].abs()
            print(
                f"{name:14} {method:8} {err.median():11.1f} {err.mean():9.1f} {err.max():8.1f} {r['covered'].mean():7.2f} "
                f"{r['half'].median():10.1f} {r['relative'].abs().median():8.1f} {r['relative'].abs().max():8.1f} "
                f"{time.perf_counter() - t0:5.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
