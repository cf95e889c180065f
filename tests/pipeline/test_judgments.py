"""Judgment sets through the real pipeline: one ledger outcome per file, shown like uploads' (agielo run, quarantine)."""

import io

import pandas as pd

from agielo_dagster.cli import print_summary, run_pipeline
from agielo_dagster.domain.judgments import read_judgment_outcome


def _run(daemon) -> str:
    summary = run_pipeline(daemon.storage, daemon.instance)
    assert not summary.failed_runs, summary.failed_runs
    out = io.StringIO()
    print_summary(daemon.storage.store, summary, out=out)
    return out.getvalue()


def test_a_rejected_judgments_file_has_one_outcome_shown_once_until_fixed(daemon, root):
    folder = root / "judgments"
    folder.mkdir(parents=True)
    (folder / "study.csv").write_text("item_a,item_b,winner,weight\nt1,t2,a,1\nt2,t3,a,inf\nt3,t1,b,-1\n,t4,a,1\n")
    (folder / "good.csv").write_text("item_a,item_b,winner\nt1,t2,a\nt2,t3,a\n")
    (folder / "notes.txt").write_text("not a judgment set")
    text = _run(daemon)
    lines = [line for line in text.splitlines() if "judgments/" in line and ("rejected:" in line or "refused:" in line)]
    assert len(lines) == 2, text
    study = next(line for line in lines if "judgments/study.csv" in line)
    assert study.startswith("  rejected: judgments/study.csv: data row 2 (line 3): weight 'inf'")
    assert "(also data row 3) (rule: weight_positive)" in study and "data row 4 (line 5): item_a is empty" in study
    assert any(line.startswith("  refused: judgments/notes.txt") for line in lines)
    outcome = read_judgment_outcome(daemon.storage.store, "study")
    assert outcome["status"] == "rejected" and outcome["rule"] == "weight_positive" and outcome["row"] == 2
    assert read_judgment_outcome(daemon.storage.store, "good")["status"] == "accepted"
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    assert list(report[report["file"].str.startswith("judgments/")]["file"]) == ["judgments/notes.txt", "judgments/study.csv"]
    assert pd.read_parquet(root / "warehouse/difficulty_judgments/study.parquet").empty  # no NaN scores
    scores = pd.read_parquet(root / "warehouse/difficulty_judgments/good.parquet")
    assert list(scores["item"]) == ["t1", "t2", "t3"]
    # nothing changed: nothing read again, the rejection still shown once
    again = _run(daemon)
    assert "judgments: read" not in again and again.count("judgments/study.csv") == 1
    # fixed: accepted, ranked, gone from the quarantine report
    (folder / "study.csv").write_text("item_a,item_b,winner,weight\nt1,t2,a,1\nt2,t3,a,2\nt3,t4,b,0.5\n")
    fixed = _run(daemon)
    assert "judgments: read 1 set(s): study" in fixed and "judgments/study.csv" not in fixed.replace("read 1 set(s): study", "")
    assert read_judgment_outcome(daemon.storage.store, "study")["status"] == "accepted"
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    assert "judgments/study.csv" not in set(report["file"])
    assert set(pd.read_parquet(root / "warehouse/difficulty_judgments/study.parquet")["item"]) == {"t1", "t2", "t3", "t4"}
