"""quarantine_report: every upload rejected and every file refused, across benchmarks (and judgment sets), and why;
and every file skipped on purpose (a hidden name under raw/, status ``skipped``: named and counted, not a problem)."""

import dagster as dg
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.incoming import incoming_problems
from agielo_dagster.domain.inputs import known_benchmarks, problems_digest, scan_raw
from agielo_dagster.domain.judgments import judgment_problems
from agielo_dagster.domain.ledger import read_summary
from agielo_dagster.domain.store import Store

from .common import declared, retried_on_storage_errors
from .ledger import uploads_table

QUARANTINE_COLUMNS = ["benchmark", "agent", "file", "version", "status", "rule", "message"]


def read_quarantine(store: Store) -> pd.DataFrame:
    """Rejected uploads, refused files and skipped ones that are present now, from the ledgers and a listing of raw/."""
    raw = scan_raw(store)
    rows = [
        {"benchmark": "", "agent": "", "file": e.file, "version": "", "status": "refused", "rule": e.rule, "message": str(e)}
        for e in raw.refused
    ]
    for e in judgment_problems(store):  # judgments/<set>.csv rejected by its contract, or refused
        rows.append({"benchmark": "", "agent": "", **e})
    for e in incoming_problems(store):
        rows.append(
            {
                "benchmark": "",
                "agent": "",
                "file": e["file"],
                "version": "",
                "status": "rejected",
                "rule": e["rule"],
                "message": e["message"],
            }
        )
    for benchmark in known_benchmarks(store, raw):
        summary = read_summary(store, benchmark)
        for r in (*summary.problems, *summary.skipped) if summary else []:
            rows.append(
                {
                    "benchmark": benchmark,
                    "agent": r["agent"],
                    "file": r["path"],
                    "version": r["version"],
                    "status": r["status"],
                    "rule": r["rule"],
                    "message": r["message"],
                }
            )
    return pd.DataFrame(rows, columns=QUARANTINE_COLUMNS).sort_values(["file"], ignore_index=True)


@dg.asset(
    deps=["upload_problems"],
    **declared(
        "Every rejected upload and refused file still present, across benchmarks: file, version, status, rule, "
        "message. Built from the upload ledgers; a fixed upload leaves it on its next version.",
        "ingest",
    ),
)
def quarantine_report(context: dg.AssetExecutionContext, storage: ObjectStorage) -> dg.Output:
    store = storage.store
    with retried_on_storage_errors(context):
        digest = problems_digest(store)
        report = read_quarantine(store)
    shown = [
        {"path": r["file"], "status": r["status"], "rule": r["rule"], "message": r["message"], "rows": 0, "version": r["version"]}
        for r in report.to_dict("records")
    ]
    return dg.Output(
        report,
        metadata={
            "inputs_digest": digest,
            "problems": int((report["status"] != "skipped").sum()),
            "skipped": int((report["status"] == "skipped").sum()),
            "report": uploads_table(shown),
        },
    )
