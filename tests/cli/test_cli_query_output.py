"""`agielo query` says what it leaves out and names its scale; the run summary explains the sign of rho."""

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.cli import main, rho_meaning


def write_warehouse(root, agents=21, test_cases=30, seed=7):
    """A minimal rated warehouse: test-case ratings and the match table of one benchmark."""
    rng = np.random.default_rng(seed)
    (root / "warehouse/test_case_ratings").mkdir(parents=True)
    (root / "warehouse/match_tables").mkdir(parents=True)
    ids = [f"t{i:03d}" for i in range(test_cases)]
    pd.DataFrame({"test_case_id": ids, "mu": np.linspace(1200, 1800, test_cases)}).to_parquet(
        root / "warehouse/test_case_ratings/quiz.parquet"
    )
    rows = [(t, f"agent_{a:02d}", *[float(rng.random() < (a + 1) / (agents + 1))] * 2) for a in range(agents) for t in ids]
    matches = pd.DataFrame(rows, columns=["test_case_id", "agent_id", "metric", "score"])
    matches.to_parquet(root / "warehouse/match_tables/quiz.parquet")


def test_query_says_how_many_it_leaves_out_and_names_its_scale(tmp_path, capsys):
    write_warehouse(tmp_path)
    assert main(["query", "rating > 0", "--storage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "showing 20 of 21 agents (use --top N)" in out
    assert "Plackett-Luce" in out and "not comparable with AGI-Elo ratings" in out
    assert sum("agent_" in line for line in out.splitlines()) == 20

    assert main(["query", "rating > 0", "--storage", str(tmp_path), "--top", "21"]) == 0
    out = capsys.readouterr().out
    assert "showing" not in out and sum("agent_" in line for line in out.splitlines()) == 21


def test_query_selects_by_flag_and_discrimination(tmp_path, capsys):
    write_warehouse(tmp_path, agents=4, test_cases=6)
    path = tmp_path / "warehouse/test_case_ratings/quiz.parquet"
    ratings = pd.read_parquet(path)
    ratings["discrimination"] = [1.1, -0.9, 0.8, 1.0, -1.4, 0.2]
    ratings["flag"] = ["", "likely_mislabeled", "", "saturated", "likely_mislabeled", ""]
    ratings.to_parquet(path)
    assert main(["query", "flag == 'likely_mislabeled' and discrimination < -1", "--storage", str(tmp_path)]) == 0
    assert "selected 1 test case(s); quiz: 1" in capsys.readouterr().out
    assert main(["query", "flag in ['likely_mislabeled', 'saturated']", "--storage", str(tmp_path)]) == 0
    assert "selected 3 test case(s)" in capsys.readouterr().out


def test_query_refuses_a_top_below_one(tmp_path, capsys):
    write_warehouse(tmp_path, agents=3, test_cases=5)
    assert main(["query", "rating > 0", "--storage", str(tmp_path), "--top", "0"]) == 1
    assert "--top must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "rho, phrase",
    [
        (-0.92, "harder test cases, lower scores: as expected"),
        (0.3, "check the metric's direction"),
        (float("nan"), "not measured"),
    ],
)
def test_the_sign_of_rho_is_explained(rho, phrase):
    assert phrase in rho_meaning(rho)
