"""The leaderboard across benchmarks (issue 41) as a new user meets it: three tasks scored three ways, six models, one
of which evaluated half of one task; run by the daemon's own sensor and jobs, then one more model lands."""

import io

import dagster as dg
import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from agielo_dagster.cli import RunSummary, print_summary
from agielo_dagster.domain.capability_query import query_warehouse
from agielo_dagster.domain.store import Store

from .conftest import write_log

ABILITY = {"m0": 1200, "m1": 1350, "m2": 1500, "m3": 1650, "m4": 1800, "m5": 1950}
HALF = "m5"  # evaluated on half of the rubric task only
SPECS = {
    "quiz": "metric: correct\nscoring: identity\n",
    "rubric": "metric: points\nscoring: minmax\nparams: {lo: 0, hi: 10}\n",
    "error": "metric: abs_error\nscoring: minmax\nparams: {lo: 0, hi: 5, higher_is_better: false}\n",
}


def results(task: str, agent: str, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    difficulty = np.random.default_rng(len(task)).normal({"quiz": 1400, "rubric": 1500, "error": 1700}[task], 250, n)
    p = 1.0 / (1.0 + 10 ** ((difficulty - ABILITY.get(agent, 1580)) / 400))
    ids = [f"{task}_{i:03d}" for i in range(n)]
    if task == "quiz":
        return pd.DataFrame({"test_case_id": ids, "correct": (rng.random(n) < p).astype(float)})
    if task == "rubric":
        return pd.DataFrame({"test_case_id": ids, "points": rng.binomial(10, p).astype(float)})
    return pd.DataFrame({"test_case_id": ids, "abs_error": np.round(5.0 * (1.0 - rng.beta(8 * p + 0.5, 8 * (1 - p) + 0.5)), 3)})


def write_tasks(root, agents, n=80):
    for t, (task, spec) in enumerate(SPECS.items()):
        folder = root / "raw" / task
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "benchmark.yaml").write_text(spec)
        if task == "quiz":
            topics = pd.DataFrame(
                {"test_case_id": [f"quiz_{i:03d}" for i in range(n)], "topic": ["algebra", "geometry"] * (n // 2)}
            )
            topics.to_csv(folder / "test_cases.csv", index=False)
        for a, agent in enumerate(agents):
            frame = results(task, agent, n, seed=100 * t + a)
            write_log(root, task, agent, frame.iloc[: n // 2] if (agent == HALF and task == "rubric") else frame)


def leaderboard(root, name="agent_leaderboard"):
    return pd.read_parquet(root / "warehouse" / name / "_all.parquet")


def test_three_tasks_six_models_one_leaderboard_then_a_seventh(daemon, root):
    write_tasks(root, list(ABILITY))
    runs = daemon.settle()
    assert runs and all(r.success for r in runs)
    board = leaderboard(root).set_index("agent_id")
    assert sorted(board.index) == sorted(ABILITY)  # every model once, the half-evaluated one too
    assert (board["status"] == "rated").all() and (board["component"] == 0).all()
    assert board.loc[HALF, "benchmarks"] == 3 and board.loc[HALF, "test_cases"] == 80 + 40 + 80
    rho = spearmanr(board["mu"], pd.Series(ABILITY)[board.index]).statistic
    assert rho >= 0.9, rho
    by_benchmark = leaderboard(root, "agent_benchmark_ratings")
    assert by_benchmark.query("agent_id == @HALF and benchmark == 'rubric'")["status"].item() == "provisional"
    scales = leaderboard(root, "benchmark_scales").set_index("benchmark")
    assert not scales.loc["error", "higher_is_better"] and scales.loc["quiz", "higher_is_better"]
    # the hardest task is the hardest on the one scale; its agents' own ratings move onto it by its centre
    assert scales["centre"].idxmax() == "error" and scales["centre"].idxmin() == "quiz"
    on_pool = by_benchmark.query("benchmark == 'error'")
    np.testing.assert_allclose(on_pool["mu_on_pool"] - on_pool["mu"], scales.loc["error", "centre"] - 1500.0)
    assert not daemon.sensor_tick(execute=False).run_requests  # settled: nothing stale, the leaderboard included
    index = (root / "warehouse/explorer/_index.html").read_text()
    assert all(f'"{task}.html"' in index for task in SPECS)  # linked to each benchmark's page, beside it
    assert "m5" in (root / "warehouse/reports/_leaderboard.html").read_text()
    out = io.StringIO()
    print_summary(Store(str(root)), RunSummary(), out=out)
    assert "across 3 benchmarks: 6 agents on one scale; top tier" in out.getvalue()
    query = query_warehouse(Store(str(root)), "benchmark in ['quiz', 'rubric']")
    ranked = query.ranking.set_index("agent_id")
    assert query.linked and sorted(ranked.index) == sorted(ABILITY)  # the half-evaluated model too, from its part
    assert ranked.loc[HALF, "test_cases"] == 80 + 40 and ranked.loc[HALF, "benchmarks"] == 2
    first = daemon.instance.get_latest_materialization_event(dg.AssetKey("agent_leaderboard"))
    # one more model on one task: re-rated there, and the leaderboard re-fitted from where it was
    write_log(root, "quiz", "m6", results("quiz", "m6", 80, seed=7))
    write_log(root, "error", "p0", results("error", "p0", 80, seed=8).iloc[:20])  # a partial upload, nothing else
    runs = daemon.settle()
    assert runs and all(r.success for r in runs)
    board = leaderboard(root).set_index("agent_id")
    assert board.loc["p0", "status"] == "provisional" and pd.isna(board.loc["p0", "rank"])
    assert 1 <= board.loc["p0", "rank_lo"] <= board.loc["p0", "rank_hi"] <= 8
    assert board.loc["m6", "benchmarks"] == 1 and board.loc["m6", "status"] == "rated"
    assert board.loc["m6", "sigma"] > board.loc[["m2", "m3"], "sigma"].max()  # one task: a wider interval
    latest = daemon.instance.get_latest_materialization_event(dg.AssetKey("agent_leaderboard"))
    passes = [e.asset_materialization.metadata["passes"].value for e in (first, latest)]
    assert passes[1] < passes[0], passes
