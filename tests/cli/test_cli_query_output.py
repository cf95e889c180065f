"""`agielo query` says what it leaves out and names its scale; the sign of rho is explained by the declared direction."""

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.cli import main
from agielo_dagster.domain.meaning import rho_meaning


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


def test_query_refuses_a_top_below_one(tmp_path, capsys):
    write_warehouse(tmp_path, agents=3, test_cases=5)
    assert main(["query", "rating > 0", "--storage", str(tmp_path), "--top", "0"]) == 1
    assert "--top must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "rho, higher_is_better, of, phrase",
    [
        (-0.92, True, "test cases", "harder test cases, lower metric: as expected where higher is better"),
        (0.3, True, "test cases", "(ρ +0.30), though benchmark.yaml declares higher is better: check the metric's direction"),
        # a declared lower-is-better metric (an error): harder test cases have a higher one, stronger agents a lower one
        (1.0, False, "test cases", "harder test cases, higher metric: as expected where lower is better"),
        (-1.0, False, "agents", "stronger agents, lower metric: as expected where lower is better"),
        (-0.5, False, "test cases", "(ρ -0.50), though benchmark.yaml declares lower is better: check the metric's direction"),
        (0.8, True, "agents", "stronger agents, higher metric: as expected where higher is better"),
        (float("nan"), False, "test cases", "not measured"),
    ],
)
def test_the_sign_of_rho_is_explained_by_the_declared_direction(rho, higher_is_better, of, phrase):
    meaning = rho_meaning(rho, higher_is_better, of=of)
    assert phrase in meaning
    assert ("check the metric's direction" in meaning) == ("though" in phrase)
