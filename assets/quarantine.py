"""quarantine_report: every upload the pipeline refused, and why, until it is fixed."""

import json

import dagster as dg
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage, refusals

from agielo_dagster.domain.lineage import CODE_VERSION

from .automation import ON_UPSTREAM_CHANGE, STORAGE_RETRY
from .raw import raw_benchmark_logs

QUARANTINE_COLUMNS = ["benchmark", "agent", "file", "version", "rule", "message"]


def read_quarantine(storage: ObjectStorage) -> pd.DataFrame:
    """Refused raw files and rejected uploads that are still present (fixed ones leave on acceptance)."""
    files = storage.list_raw()
    present = {f.path for f in files}
    versions = {f.path: f.version for f in files}
    rows = [
        {
            "benchmark": "",
            "agent": "",
            "file": err.file,
            "version": versions.get(err.file, ""),
            "rule": err.rule,
            "message": str(err),
        }
        for err in refusals(files)
    ]
    for benchmark in storage.list_dir("warehouse/quarantine"):
        for name in storage.list_dir(f"warehouse/quarantine/{benchmark}"):
            record = json.loads(storage.read_bytes(f"warehouse/quarantine/{benchmark}/{name}"))
            # a record of a spec problem names benchmark.yaml; keep it while the agent's upload exists
            upload_present = any(p.startswith(f"raw/{record['benchmark']}/{record['agent']}.") for p in present)
            if upload_present:
                rows.append({c: record.get(c, "") for c in QUARANTINE_COLUMNS})
    return pd.DataFrame(rows, columns=QUARANTINE_COLUMNS).sort_values(["file", "agent"], ignore_index=True)


@dg.asset(
    retry_policy=STORAGE_RETRY,
    deps=[raw_benchmark_logs],
    automation_condition=ON_UPSTREAM_CHANGE,
    io_manager_key="warehouse_io_manager",
    group_name="ingest",
    code_version=CODE_VERSION,
    kinds={"pandas", "parquet"},
    description="Raw files that were refused (wrong place, unsafe name, unsupported type) and uploads that were "
    "rejected, with the file, its version, the rule and the message. A fixed upload is accepted on its next "
    "version and leaves this report.",
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
