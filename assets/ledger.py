"""upload_ledger: one row per file in ``raw/<benchmark>/``: accepted, rejected or refused, and why.

The first step of every rating run. It waits for earlier runs of its benchmark, validates only
the uploads that changed since the ledger was last written (the input contract, then the
great_expectations suite), and stores accepted uploads normalized under ``warehouse/accepted/``.
It materializes when the ledger changed or the benchmark's outputs are stale; otherwise the run
ends here, having done nothing. The ``uploads_accepted`` check fails (as a warning: the benchmark
is still rated on its accepted uploads) while any upload is rejected or refused.
"""

import dagster as dg
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.layout import ledger_path, warehouse_path
from agielo_dagster.domain.ledger import Ledger, read_ledger, refresh_ledger
from agielo_dagster.domain.lineage import CODE_VERSION, INGEST_VERSION
from agielo_dagster.domain.quality import failed_expectations
from agielo_dagster.domain.readers import read_upload
from agielo_dagster.domain.status import DIGEST_KEY, FINAL_OUTPUT, present_benchmarks, withdraw
from agielo_dagster.runs import claim_benchmark

from .common import OWNERS, TAGS, retried_on_storage_errors
from .partitions import benchmark_partitions

SHOWN_ROWS = 100  # uploads listed in the UI's metadata; the ledger file holds them all
LOGGED_ROWS = 20
UPLOAD_COLUMNS = ["path", "status", "rule", "message", "rows", "version"]


class LedgerConfig(dg.Config):
    rerate: bool = False  # re-rate even when the outputs are current (the nightly re-rating sets it)


def uploads_table(rows: list[dict], limit: int = SHOWN_ROWS) -> dg.TableMetadataValue:
    """Uploads as a Dagster table (no markdown: names and messages are shown, never interpreted)."""
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("path", "string"),
            dg.TableColumn("status", "string", description="accepted | rejected | refused | removed"),
            dg.TableColumn("rule", "string"),
            dg.TableColumn("message", "string"),
            dg.TableColumn("rows", "int"),
            dg.TableColumn("version", "string"),
        ]
    )
    records = [
        dg.TableRecord({c: (r[c] if c != "version" else str(r[c])[:19]) if r[c] is not None else "" for c in UPLOAD_COLUMNS})
        for r in rows[:limit]
    ]
    return dg.MetadataValue.table(records, schema=schema)


@dg.asset(
    partitions_def=benchmark_partitions,
    output_required=False,
    group_name="ingest",
    code_version=INGEST_VERSION,
    kinds={"parquet"},
    owners=OWNERS,
    tags=TAGS,
    description="The benchmark's uploads, one row per file in raw/<benchmark>/: version, accepted | rejected | refused, "
    "rows, rule and message. Only new or changed uploads are read. warehouse/upload_ledger/<benchmark>.parquet.",
)
def upload_ledger(context: dg.AssetExecutionContext, config: LedgerConfig, storage: ObjectStorage):
    benchmark = context.partition_key
    store = storage.store
    with retried_on_storage_errors(context):
        claim_benchmark(context, benchmark)
        for path in store.remove_temporaries("warehouse"):
            context.log.info(f"removed a leftover temporary file {path}")
        if benchmark not in present_benchmarks(store):
            removed = withdraw(store, benchmark, everything=True)
            context.log.info(f"{benchmark} has no inputs left: withdrew {len(removed)} output file(s)")
            return
        update = refresh_ledger(store, benchmark, read_upload=read_upload, quality_suite=failed_expectations)
        ledger = update.ledger
        digest = ledger.inputs_digest(CODE_VERSION)
        rated = (store.parquet_metadata(warehouse_path(FINAL_OUTPUT, benchmark)) or {}).get(DIGEST_KEY)
        withdrawn = []
        if not ledger.accepted:
            withdrawn = withdraw(store, benchmark)
        for row in update.changed[:LOGGED_ROWS]:  # each log line is an event in the instance: a few, then a count
            level = context.log.info if row["status"] in ("accepted", "removed") else context.log.warning
            level(f"{row['status']} {row['message'] or row['path']}")
        if len(update.changed) > LOGGED_ROWS:
            context.log.info(f"… and {len(update.changed) - LOGGED_ROWS} more changed upload(s): see the ledger")
        if not (update.written or withdrawn or config.rerate or (ledger.accepted and rated != digest)):
            context.log.info(f"{benchmark}: outputs are current for inputs {digest}; nothing to do")
            return
        yield dg.MaterializeResult(
            metadata=_metadata(store, ledger, update, digest, bool(withdrawn)), data_version=dg.DataVersion(digest)
        )


def _metadata(store, ledger: Ledger, update, digest: str, withdrawn: bool) -> dict:
    problems = ledger.problems
    return {
        "dagster/row_count": len(ledger.rows),
        "dagster/uri": dg.MetadataValue.path(store.uri(ledger_path(ledger.benchmark))),
        "accepted": len(ledger.accepted),
        "rejected": sum(r["status"] == "rejected" for r in problems),
        "refused": sum(r["status"] == "refused" for r in problems),
        "validated_in_this_run": update.validated,
        "changed_in_this_run": uploads_table(update.changed),
        "rejected_and_refused": uploads_table(problems),
        "inputs_digest": digest,
        "withdrawn": withdrawn,
        "code_version": CODE_VERSION,
    }


@dg.asset_check(
    asset=upload_ledger,
    name="uploads_accepted",
    description="Fails (as a warning) while any upload of the benchmark is rejected or any file refused; lists them with "
    "their rule. The benchmark is rated on its accepted uploads meanwhile.",
)
def uploads_accepted(context: dg.AssetCheckExecutionContext, storage: ObjectStorage) -> dg.AssetCheckResult:
    ledger = read_ledger(storage.store, context.partition_key)
    problems = ledger.problems if ledger else []
    return dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "benchmark": context.partition_key,  # partitioned checks are a preview feature of Dagster: named here instead
            "accepted": len(ledger.accepted) if ledger else 0,
            "rejected_or_refused": len(problems),
            "problems": uploads_table(problems),
            **({"first_rule": problems[0]["rule"], "first_problem": problems[0]["message"]} if problems else {}),
        },
    )
