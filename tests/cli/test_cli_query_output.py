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
    assert "each benchmark's own scale (no leaderboard links them yet" in out
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


def test_negative_gaps_are_explained_in_the_summary(tmp_path):
    """An absolute-error benchmark declared on [0, 242]: four agents already score on the hardest test case (gap < 0);
    the summary says what that means and the range it rests on, once, under the benchmark's line."""
    import io

    from agielo_dagster.cli import RunSummary, print_summary
    from agielo_dagster.domain.store import Store

    gaps = pd.DataFrame(
        {
            "agent_id": [f"m{i}" for i in range(6)],
            "rating": [1900.0, 1850.0, 1800.0, 1750.0, 1500.0, 1400.0],
            "gap_50": [-74.0, -40.0, -10.0, -4.0, 120.0, 220.0],
            "gap_99": [300.0] * 6,
            "assumed_metric_lo": 0.0,
            "assumed_metric_hi": 242.0,
        }
    )
    for table, frame in (
        ("competency_gap_tables", gaps),
        ("reliability_reports", pd.DataFrame({"rho_test_cases": [0.9], "mae": [0.1]})),
        ("agent_ratings", gaps[["agent_id"]]),
    ):
        (tmp_path / "warehouse" / table).mkdir(parents=True)
        frame.to_parquet(tmp_path / "warehouse" / table / "errors.parquet")
    out = io.StringIO()
    print_summary(Store(str(tmp_path)), RunSummary(), out=out)
    assert (
        "    gap < 0 for 4 agents: already scoring on the hardest test case with 50 % confidence, under the metric "
        "range [0, 242] benchmark.yaml declares"
    ) in out.getvalue().splitlines(), out.getvalue()
