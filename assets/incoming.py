"""harness_uploads: harness logs dropped under incoming/ (lm-eval, Inspect, HELM, Every Eval Ever) as ordinary uploads.

Only drops whose files changed are read. Each (task, model) becomes ``warehouse/derived/<benchmark>/<agent>.parquet``
with an inferred ``benchmark.yaml``; the benchmarks' own runs then take them like files under ``raw/``.
"""

import json

import dagster as dg
from agielo_dagster.resources.storage import ObjectStorage
from agielo_dagster.resources.warehouse import column_schema

from agielo_dagster.domain.incoming import INCOMING_LEDGER, INCOMING_SCHEMA, read_incoming, refresh_incoming

from .common import declared, retried_on_storage_errors
from .ledger import uploads_table

SHOWN_ROWS = 100


def _drops_table(records: list[dict]) -> dg.TableMetadataValue:
    rows = []
    for r in records:
        uploads, errors = json.loads(r["uploads"]), json.loads(r["errors"])
        rows.append(
            dg.TableRecord(
                {
                    "drop": r["drop"],
                    "harness": r["harness"],
                    "uploads": ", ".join(f"{u['benchmark']}/{u['agent']}" for u in uploads)[:300],
                    "errors": len(errors),
                    "first_error": errors[0]["message"] if errors else "",
                }
            )
        )
    columns = [
        dg.TableColumn(c, "int" if c == "errors" else "string") for c in ("drop", "harness", "uploads", "errors", "first_error")
    ]
    return dg.MetadataValue.table(rows[:SHOWN_ROWS], schema=dg.TableSchema(columns=columns))


@dg.asset(
    deps=["incoming_logs"],
    **declared(
        "Harness logs under incoming/ (lm-evaluation-harness --log_samples folders, Inspect .eval logs, HELM run "
        "folders, Every Eval Ever *_samples.jsonl) turned into ordinary uploads under warehouse/derived/, one per (task, "
        "model), with an inferred benchmark.yaml. One row per drop in warehouse/incoming_ledger.parquet.",
        "ingest",
        stored=False,
    ),
)
def harness_uploads(context: dg.AssetExecutionContext, storage: ObjectStorage) -> dg.MaterializeResult:
    store = storage.store
    with retried_on_storage_errors(context):
        update = refresh_incoming(store)
    errors = [e for r in update.records for e in json.loads(r["errors"])]
    for e in errors[:20]:
        context.log.warning(e["message"])
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(update.records),
            "dagster/uri": dg.MetadataValue.path(store.uri(INCOMING_LEDGER)),
            "dagster/column_schema": column_schema(INCOMING_SCHEMA, "harness_uploads"),
            "drops": len(update.records),
            "drops_read_in_this_run": update.read,
            "uploads": sum(len(json.loads(r["uploads"])) for r in update.records),
            "errors": len(errors),
            "drops_table": _drops_table(update.records),
        }
    )


@dg.asset_check(
    asset=harness_uploads,
    name="harness_logs_readable",
    description="Fails (as a warning) while any harness log under incoming/ has errors; lists them with their rule.",
)
def harness_logs_readable(context: dg.AssetCheckExecutionContext, storage: ObjectStorage) -> dg.AssetCheckResult:
    errors = [e for r in read_incoming(storage.store) for e in json.loads(r["errors"])]
    shown = [
        {"path": e["file"], "status": "rejected", "rule": e["rule"], "message": e["message"], "rows": 0, "version": ""}
        for e in errors
    ]
    return dg.AssetCheckResult(
        passed=not errors,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"errors": len(errors), "problems": uploads_table(shown)},
    )
