"""match_tables and input_manifests: every accepted match of a benchmark, and the exact inputs behind it.

The step after the ledger: when the ledger's data version (the accepted inputs) is the one this table was built
from, and its code is the same, the step yields nothing and Dagster skips everything downstream (a rejected upload, a
touched file: nothing to re-rate). The nightly job (``agielo/rerate``) always rebuilds.
"""

import dagster as dg
import pyarrow as pa
from agielo_dagster.resources.storage import ObjectStorage
from agielo_dagster.resources.warehouse import free_previous_steps

from agielo_dagster.domain.ledger import read_ledger
from agielo_dagster.domain.lineage import RATING_VERSION
from agielo_dagster.domain.matches import build_match_table, input_manifest
from agielo_dagster.domain.stored import Stored
from agielo_dagster.freshness import Graph, why_stale
from agielo_dagster.runs import RERATE_TAG

from .common import benchmark_output, retried_on_storage_errors
from .partitions import benchmark_partitions

SHOWN_ROWS = 100


def previous_match_table(storage: ObjectStorage, benchmark: str, asset: str = "match_tables") -> pa.Table | None:
    """The last match table, to reuse unchanged agents' rows (None if missing or unreadable: built from scratch).

    The step's own previous output, so not an input (Dagster has no self-dependency on a dynamic partition): read
    through the handle its inputs load as."""
    stored = Stored.of(storage.store, asset, benchmark)
    try:
        return stored.read() if stored.exists else None
    except (OSError, ValueError):
        return None


@dg.multi_asset(
    outs={
        "match_tables": benchmark_output(
            "All accepted matches of a benchmark: test_case_id, agent_id, metric, score, and the source file path and "
            "version of every row (lineage). Ids are dictionary-encoded.",
            required=False,
        ),
        "provisional_matches": benchmark_output(
            "The matches of provisional agents (uploads covering less than full_coverage of the largest upload, e.g. a "
            "plan's few test cases): placed against the test-case ratings, never moving them. Same columns.",
            required=False,
        ),
        "input_manifests": benchmark_output(
            "The exact inputs of a benchmark's ratings: agent_id, source_path, source_version, spec_version, matches.",
            required=False,
        ),
    },
    partitions_def=benchmark_partitions,
    deps=["upload_ledger"],  # by key: what this step runs does not include the ledger's module (its code version)
)
def match_tables(context: dg.AssetExecutionContext, storage: ObjectStorage):
    benchmark = context.partition_key
    key = dg.AssetKey("match_tables")
    own = Graph({key: (dg.AssetKey("upload_ledger"),)}, {key: context.assets_def.code_versions_by_key[key]}, frozenset())
    if context.run.tags.get(RERATE_TAG) != "true" and not why_stale(context.instance, own, key, benchmark):
        context.log.info(f"{benchmark}: the accepted inputs and the code are those of the last match table; nothing to re-rate")
        return
    free_previous_steps()  # the ledger's step, before it: this step reads its data itself
    with retried_on_storage_errors(context):
        ledger = read_ledger(storage.store, benchmark)
        if ledger is None or not ledger.accepted:
            context.log.info(f"{benchmark}: no accepted upload; its outputs are withdrawn")
            for name in ("match_tables", "provisional_matches", "input_manifests"):
                yield dg.Output(None, name, metadata={"withdrawn": True})
            return
        table = build_match_table(storage.store, ledger, previous_match_table(storage, benchmark))
        provisional = build_match_table(
            storage.store, ledger, previous_match_table(storage, benchmark, "provisional_matches"), provisional=True
        )
    digest = ledger.inputs_digest
    manifest = input_manifest(ledger)
    yield dg.Output(
        table,
        "match_tables",
        metadata={
            "agents": manifest.num_rows,
            "test_cases": len(table.column("test_case_id").chunk(0).dictionary) if table.num_rows else 0,
            "inputs_digest": digest,
            "code_version": RATING_VERSION,
        },
    )
    yield dg.Output(
        provisional, "provisional_matches", metadata={"inputs_digest": digest, "agents": len(ledger.provisional_agents)}
    )
    yield dg.Output(
        manifest,
        "input_manifests",
        metadata={
            "inputs_digest": digest,
            "input_files": dg.MetadataValue.table(
                [dg.TableRecord(r) for r in manifest.slice(0, SHOWN_ROWS).to_pylist()],
                schema=dg.TableSchema(
                    columns=[
                        dg.TableColumn("agent_id", "string"),
                        dg.TableColumn("source_path", "string"),
                        dg.TableColumn("source_version", "string"),
                        dg.TableColumn("spec_version", "string"),
                        dg.TableColumn("matches", "int"),
                        dg.TableColumn("provisional", "bool"),
                    ]
                ),
            ),
        },
    )
