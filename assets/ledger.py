"""upload_ledger: one row per file in ``raw/<benchmark>/``: accepted, rejected or refused, and why.

The first step of every rating run. It validates only the uploads that changed since the ledger was last written
(the input contract), stores accepted uploads normalized under
``warehouse/accepted/``, and materializes with the benchmark's inputs digest (the accepted uploads, the tag file and
``benchmark.yaml``) as its data version: a run that only rejects a file leaves that version, and so everything
downstream, as it was. The ``uploads_accepted`` check is evaluated in every run and summarizes every benchmark's
latest ledger: it fails (as a warning: the benchmarks are still rated on their accepted uploads) while any upload of
any benchmark is rejected or refused, with a benchmark column. Its headline in the UI is therefore the state of all
benchmarks, never "Passed" after a clean run of one benchmark while another still has rejections.
"""

import dagster as dg
from agielo_dagster.resources.storage import ObjectStorage
from agielo_dagster.resources.warehouse import column_schema

from agielo_dagster.domain.layout import LEDGER_FOLDER, ledger_path
from agielo_dagster.domain.ledger import LEDGER_SCHEMA, Ledger, read_summary, refresh_ledger
from agielo_dagster.domain.lineage import INGEST_VERSION
from agielo_dagster.domain.readers import read_uploads

from .common import declared, retried_on_storage_errors
from .partitions import benchmark_partitions

SHOWN_ROWS = 100  # uploads listed in the UI's metadata; the ledger file holds them all
LOGGED_ROWS = 20
UPLOAD_COLUMNS = ["path", "status", "rule", "message", "rows", "version"]


def uploads_table(rows: list[dict], limit: int = SHOWN_ROWS, benchmark_column: bool = False) -> dg.TableMetadataValue:
    """Uploads as a Dagster table (no markdown: names and messages are shown, never interpreted); with
    ``benchmark_column``, rows carry a ``benchmark`` key shown first."""
    schema = dg.TableSchema(
        columns=[
            *([dg.TableColumn("benchmark", "string")] if benchmark_column else []),
            dg.TableColumn("path", "string"),
            dg.TableColumn("status", "string", description="accepted | rejected | refused | skipped | removed"),
            dg.TableColumn("rule", "string"),
            dg.TableColumn("message", "string"),
            dg.TableColumn("rows", "int"),
            dg.TableColumn("version", "string"),
        ]
    )
    columns = (["benchmark"] if benchmark_column else []) + UPLOAD_COLUMNS
    records = [
        dg.TableRecord({c: (r[c] if c != "version" else str(r[c])[:19]) if r[c] is not None else "" for c in columns})
        for r in rows[:limit]
    ]
    return dg.MetadataValue.table(records, schema=schema)


UPLOADS_CHECK = "uploads_accepted"


@dg.asset(
    partitions_def=benchmark_partitions,
    deps=["raw_uploads"],  # by key, as every dependency on another module's asset: its module is not this one's code
    check_specs=[
        dg.AssetCheckSpec(
            UPLOADS_CHECK,
            asset="upload_ledger",
            description="Every benchmark's latest uploads: fails (as a warning) while any upload of any benchmark is "
            "rejected or any file refused, listing them with their benchmark and rule. Evaluated in every run of the "
            "ledger. The benchmarks are rated on their accepted uploads meanwhile.",
        )
    ],
    **declared(
        "The benchmark's uploads, one row per file in raw/<benchmark>/: version, accepted | rejected | refused, "
        "rows, rule and message. Only new or changed uploads are read. warehouse/upload_ledger/<benchmark>.parquet. "
        "Its data version is the digest of the accepted inputs.",
        "ingest",
        stored=False,
    ),
)
def upload_ledger(context: dg.AssetExecutionContext, storage: ObjectStorage):
    benchmark = context.partition_key
    store = storage.store
    with retried_on_storage_errors(context):
        update = refresh_ledger(store, benchmark, read_uploads=read_uploads)
        for row in update.changed[:LOGGED_ROWS]:  # each log line is an event in the instance: a few, then a count
            level = context.log.info if row["status"] in ("accepted", "removed", "skipped") else context.log.warning
            level(f"{row['status']} {row['message'] or row['path']}")
        if len(update.changed) > LOGGED_ROWS:
            context.log.info(f"… and {len(update.changed) - LOGGED_ROWS} more changed upload(s): see the ledger")
        ledger = update.ledger
        yield dg.MaterializeResult(metadata=_metadata(store, ledger, update), data_version=dg.DataVersion(ledger.inputs_digest))
        yield uploads_check(store, benchmark)


def _metadata(store, ledger: Ledger, update) -> dict:
    problems = ledger.problems
    return {
        "dagster/row_count": len(ledger.rows),
        "dagster/uri": dg.MetadataValue.path(store.uri(ledger_path(ledger.benchmark))),
        "dagster/column_schema": column_schema(LEDGER_SCHEMA, "upload_ledger"),
        "accepted": len(ledger.accepted),
        "rejected": sum(r["status"] == "rejected" for r in problems),
        "refused": sum(r["status"] == "refused" for r in problems),
        "skipped": sum(r["status"] == "skipped" for r in ledger.rows),
        "validated_in_this_run": update.validated,
        "changed_in_this_run": uploads_table(update.changed),
        "rejected_and_refused": uploads_table(problems),
        "inputs_digest": ledger.inputs_digest,
        "code_version": INGEST_VERSION,
    }


def benchmarks_table(outcomes: list[dict]) -> dg.TableMetadataValue:
    """One row per benchmark: its latest ledger's counts and first problem."""
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("benchmark", "string"),
            dg.TableColumn("outcome", "string", description="passed | failed"),
            dg.TableColumn("accepted", "int"),
            dg.TableColumn("rejected", "int"),
            dg.TableColumn("refused", "int"),
            dg.TableColumn("first_rule", "string"),
        ]
    )
    return dg.MetadataValue.table([dg.TableRecord(o) for o in outcomes[:SHOWN_ROWS]], schema=schema)


def uploads_check(store, benchmark: str) -> dg.AssetCheckResult:
    """``uploads_accepted``: every benchmark's latest ledger (the run's own benchmark named in ``benchmark``, its
    counts in ``rejected_or_refused`` and ``first_rule``); fails while any benchmark has a rejected or refused file."""
    names = {n.removesuffix(".parquet") for n in store.list_dir(LEDGER_FOLDER)} | {benchmark}
    outcomes, problems, own = [], [], []
    own_accepted = 0
    for name in sorted(names):
        summary = read_summary(store, name)
        if summary is None:
            continue
        mine = summary.problems
        problems.extend({**r, "benchmark": name} for r in mine)
        if name == benchmark:
            own, own_accepted = mine, summary.accepted
        outcomes.append(
            {
                "benchmark": name,
                "outcome": "failed" if mine else "passed",
                "accepted": summary.accepted,
                "rejected": sum(r["status"] == "rejected" for r in mine),
                "refused": sum(r["status"] == "refused" for r in mine),
                "first_rule": mine[0]["rule"] or "" if mine else "",
            }
        )
    failing = [o["benchmark"] for o in outcomes if o["outcome"] == "failed"]
    return dg.AssetCheckResult(
        check_name=UPLOADS_CHECK,
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        description=(
            f"{len(failing)} of {len(outcomes)} benchmark(s) with rejected or refused files: {', '.join(failing[:10])}"
            + (", …" if len(failing) > 10 else "")
            if failing
            else f"every upload of {len(outcomes)} benchmark(s) accepted"
        ),
        metadata={
            "benchmark": benchmark,  # the run's benchmark; the tables cover every benchmark
            "accepted": own_accepted,
            "rejected_or_refused": len(own),
            "benchmarks_failing": len(failing),
            "benchmarks": benchmarks_table(outcomes),
            "problems": uploads_table(problems, benchmark_column=True),
            **({"first_rule": own[0]["rule"], "first_problem": own[0]["message"]} if own else {}),
        },
    )
