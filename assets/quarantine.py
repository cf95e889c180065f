"""quarantine_report: every upload the pipeline refused, and why, until it is fixed."""

import json

import dagster as dg
import pandas as pd

from agielo_dagster.lineage import CODE_VERSION
from resources.storage import ObjectStorage

from .automation import ON_UPSTREAM_CHANGE
from .raw import raw_benchmark_logs

QUARANTINE_COLUMNS = ["benchmark", "agent", "file", "version", "rule", "message"]


def read_quarantine(storage: ObjectStorage) -> pd.DataFrame:
    """The quarantine records of uploads that are still present (fixed ones are removed on acceptance)."""
    present = {f.path for f in storage.list_raw()}
    rows = []
    for benchmark in storage.list_dir("warehouse/quarantine"):
        for name in storage.list_dir(f"warehouse/quarantine/{benchmark}"):
            record = json.loads(storage.read_bytes(f"warehouse/quarantine/{benchmark}/{name}"))
            if record["file"] in present or not record["file"].endswith((".csv", ".parquet", ".jsonl")):
                rows.append({c: record.get(c, "") for c in QUARANTINE_COLUMNS})
    return pd.DataFrame(rows, columns=QUARANTINE_COLUMNS).sort_values(["benchmark", "agent"], ignore_index=True)


@dg.asset(
    deps=[raw_benchmark_logs],
    automation_condition=ON_UPSTREAM_CHANGE,
    io_manager_key="warehouse_io_manager",
    group_name="ingest",
    code_version=CODE_VERSION,
    kinds={"pandas", "parquet"},
    description="Uploads that were refused, with the file, its version, the rule and the message. A fixed upload "
    "is accepted on its next version and leaves this report.",
)
def quarantine_report(context: dg.AssetExecutionContext, storage: ObjectStorage) -> pd.DataFrame:
    report = read_quarantine(storage)
    context.add_output_metadata(
        {
            "rejected_uploads": len(report),
            "report": dg.MetadataValue.md(
                report[["file", "rule", "message"]].to_markdown(index=False) if len(report) else "no rejected uploads"
            ),
        }
    )
    return report
