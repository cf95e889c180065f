"""What the pipeline says, and how often: a refused file logged once per change, a rejected re-upload."""

import logging

import dagster as dg
import pandas as pd
import pytest

from agielo_dagster.sensors import benchmarks_sensor

from .conftest import accepted_copy, write_benchmark


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _tick(daemon, cursor):
    """One sensor tick with the cursor of the last (as the daemon passes it); the refusals it logged."""
    context = dg.build_sensor_context(
        instance=daemon.instance, resources={"storage": daemon.storage}, definitions=daemon.defs, cursor=cursor
    )
    lines = _Lines()
    context.log.addHandler(lines)
    try:
        result = benchmarks_sensor(context)
    finally:
        context.log.removeHandler(lines)
    return result, [line for line in lines.lines if "refused:" in line]


def test_the_sensor_logs_a_refused_file_once_per_change(daemon, root):
    write_benchmark(root, "quiz", [1300, 1600])
    daemon.settle()
    (root / "raw/notes.txt").write_text("free text")
    result, refused = _tick(daemon, None)
    assert len(refused) == 1 and "raw/notes.txt" in refused[0], refused
    for _ in range(3):  # the next ticks (every 15 s) say nothing new
        result, refused = _tick(daemon, result.cursor)
        assert refused == []
    (root / "raw/bad name").mkdir()  # a new refusal is logged, once; the old one is not repeated
    result, refused = _tick(daemon, result.cursor)
    assert len(refused) == 1 and "bad name" in refused[0], refused
    (root / "raw/notes.txt").unlink()  # gone, then back: logged again
    result, refused = _tick(daemon, result.cursor)
    (root / "raw/notes.txt").write_text("free text")
    result, refused = _tick(daemon, result.cursor)
    assert len(refused) == 1 and "raw/notes.txt" in refused[0], refused


@pytest.mark.slow  # the quick pass keeps every rule reaching the ledger
def test_a_rejected_re_upload_withdraws_the_agents_last_accepted_version(daemon, root):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    daemon.settle()
    ratings = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet")
    agent = sorted(ratings["agent_id"])[0]
    (root / f"raw/quiz/{agent}.csv").write_text("test_case_id,correct\nq1,0.5\nq2,yes\n")
    daemon.settle()
    ratings = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet")
    assert agent not in set(ratings["agent_id"])  # not rated on the version it replaced
    assert accepted_copy(root, "quiz", agent) is None
    ledger = pd.read_parquet(root / "warehouse/upload_ledger/quiz.parquet").set_index("path")
    assert ledger.loc[f"raw/quiz/{agent}.csv", "status"] == "rejected"
    assert ledger.loc[f"raw/quiz/{agent}.csv", "rule"] == "metric_numeric"


def test_every_rule_an_upload_breaks_reaches_the_ledger_and_agielo_run(daemon, root):
    import io

    from agielo_dagster.cli import RunSummary, print_summary

    write_benchmark(root, "quiz", [1300, 1600])
    rows = [f"q{i},0.5" for i in range(1, 21)]
    rows[5] = "q6," + "7"  # data row 6: out of range
    rows[10] = "q2,1"  # data row 11: a repeated id
    rows[13] = "q14,"  # data row 14: no metric
    (root / "raw/quiz/typo.csv").write_text("test_case_id,correct\n" + "\n".join(rows) + "\n")
    daemon.settle()
    ledger = pd.read_parquet(root / "warehouse/upload_ledger/quiz.parquet").set_index("path")
    message = ledger.loc["raw/quiz/typo.csv", "message"]
    assert ledger.loc["raw/quiz/typo.csv", "rule"] == "metric_in_range" and ledger.loc["raw/quiz/typo.csv", "row"] == 6
    for rule in ("metric_in_range", "test_case_id_unique", "metric_present"):
        assert f"(rule: {rule})" in message, message
    out = io.StringIO()
    print_summary(daemon.storage.store, RunSummary(), out=out)
    (line,) = [line for line in out.getvalue().splitlines() if "raw/quiz/typo.csv" in line]
    assert line == f"  rejected: {message}"


def test_the_judgments_sensor_logs_a_refused_file_once_per_change(daemon, root):
    from agielo_dagster.sensors import judgments_sensor

    (root / "judgments").mkdir(parents=True)
    (root / "judgments/notes.txt").write_text("not a judgment set")

    def tick(cursor):
        context = dg.build_sensor_context(
            instance=daemon.instance, resources={"storage": daemon.storage}, definitions=daemon.defs, cursor=cursor
        )
        lines = _Lines()
        context.log.addHandler(lines)
        try:
            result = judgments_sensor(context)
        finally:
            context.log.removeHandler(lines)
        return result, [line for line in lines.lines if "refused judgments:" in line]

    result, refused = tick(None)
    assert len(refused) == 1 and "judgments/notes.txt" in refused[0] and not result.run_requests
    for _ in range(3):
        result, refused = tick(result.cursor)
        assert refused == []
