"""`agielo run` and `agielo demo` as a user runs them: a subprocess on a fresh DAGSTER_HOME."""

import os
import subprocess
import sys

import dagster as dg
import pandas as pd
import pytest

from ..devserver import REPO
from ..pipeline.conftest import write_benchmark


def agielo(*args, home, timeout=300):
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return path


def test_run_reports_rejections_and_is_idempotent(tmp_path, home):
    root = tmp_path / "storage"
    write_benchmark(root, "quiz", [1300, 1600, 1900])
    (root / "raw/quiz/typo.csv").write_text("test_case_id,correct\nq1,0.5\nq2,yes\n")
    first = agielo("run", "--storage", str(root), home=home)
    assert first.returncode == 0, first.stderr
    assert "ingested 4 upload(s); rated 1 benchmark(s)" in first.stdout
    assert "quiz: 3 agents; best agent_2" in first.stdout
    lines = first.stdout.splitlines()
    below = lines[next(i for i, line in enumerate(lines) if "quiz: 3 agents" in line) + 1]
    assert below.startswith("    Fragility of #1: ") and "agent_2" in below, below  # how many test cases decide it
    assert (
        "rejected: raw/quiz/typo.csv: data row 2 (line 3): correct 'yes' is not a number (rule: metric_numeric)" in first.stdout
    )
    strict = agielo("run", "--storage", str(root), "--strict", home=home)
    assert strict.returncode == 2  # nothing new, but a rejected upload is still there
    assert "ingested 0 upload(s); rated 0 benchmark(s)" in strict.stdout
    # the same instance holds the runs the UI will show
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert {r.job_name for r in instance.get_runs()} == {"rate_benchmarks", "rate_leaderboard", "report_quarantine"}


@pytest.mark.slow
def test_demo_uses_real_scikit_learn_results(demo_run):
    out, root = demo_run["out"], demo_run["root"]
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ingested 33 upload(s); rated 2 benchmark(s)" in out.stdout
    digits = pd.read_parquet(root / "warehouse/match_tables/digits.parquet")
    assert digits["agent_id"].nunique() == 20 and digits["test_case_id"].nunique() == 1797
    assert digits["metric"].between(0, 1).all() and digits["metric"].nunique() > 1000  # graded p_true
    gaps = pd.read_parquet(root / "warehouse/competency_gap_tables/digits.parquet")
    # real models: the 1-nearest-neighbour classifier beats a depth-2 decision tree on handwritten digits
    ranked = list(gaps["agent_id"])
    assert ranked.index("knn_1") < ranked.index("decision_stump_depth_2")
    cancer = pd.read_parquet(root / "warehouse/match_tables/breast_cancer.parquet")
    assert cancer["agent_id"].nunique() == 13 and cancer["metric"].nunique() > 100
    # figures and the report are written next to the tables
    # wrong labels: the strongest classifiers give the true class almost nothing, the weakest more (issue 40)
    assert "8 test cases look mislabeled: digits_0005, digits_0129, digits_0480, digits_0794, digits_1038, …" in out.stdout
    suspects = pd.read_csv(root / "warehouse/exports/suspects/digits.csv")
    assert (suspects["flag"] == "likely_mislabeled").sum() == 8 and "knn_1" in suspects.columns
    for benchmark in ("digits", "breast_cancer"):
        assert (root / f"warehouse/reports/{benchmark}.html").stat().st_size > 10_000
        assert len(list((root / f"warehouse/figures/{benchmark}").glob("*.png"))) == 5
