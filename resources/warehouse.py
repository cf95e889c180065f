"""An IO manager that keeps asset outputs as parquet under ``<root>/warehouse/<asset>/<partition>.parquet``.

Accepts pyarrow tables or pandas/polars frames; the output's ``inputs_digest`` metadata and its
asset's code version are written into the file's key-value metadata (so the warehouse alone tells
what each output was computed from, and by which code). Adds Dagster's standard metadata: ``dagster/row_count``, ``dagster/column_schema`` and
``dagster/uri``, the columns described by the engine's schema.

Every input loads as a lazy :class:`~agielo_dagster.domain.stored.Stored` handle; a non-partitioned asset reading a
partitioned one gets ``{partition: Stored}``. An output of ``None`` is a withdrawal (its benchmark has no accepted
upload left): the file is removed, and its handle says ``exists == False``.
"""

import gc

import dagster as dg
import pandas as pd
import pyarrow as pa
from pydantic import PrivateAttr

from agielo_dagster.allocator import give_back_freed_memory
from agielo_dagster.domain.layout import warehouse_path
from agielo_dagster.domain.lineage import CODE_KEY, DIGEST_KEY
from agielo_dagster.domain.stored import Stored
from agielo_dagster.rating.schema import describe

from .storage import ObjectStorage


def to_arrow(obj) -> pa.Table:
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pd.DataFrame):
        return pa.Table.from_pandas(obj, preserve_index=False)
    return obj.to_arrow()  # polars


def with_recorded(table: pa.Table, metadata: dict[str, str] | None = None) -> pa.Table:
    """The table with ``metadata`` added to its schema's key-value metadata (written into the parquet file)."""
    if not metadata:
        return table
    merged = {**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in metadata.items()}}
    return table.replace_schema_metadata(merged)


def column_schema(schema: pa.Schema, table: str = "") -> dg.TableSchema:
    """The written table's columns and types, described by the engine's schema (``rating/schema.py``)."""

    def kind(t: pa.DataType) -> str:
        return str(t.value_type) if pa.types.is_dictionary(t) else str(t)

    return dg.TableSchema(
        columns=[dg.TableColumn(f.name, kind(f.type), description=describe(f.name, table) or None) for f in schema]
    )


_collected = False  # whether a step of this process collected (and froze) the heap yet


def free_previous_steps() -> None:
    """Free, as a step starts, what the previous steps of this process left in reference cycles.

    Their contexts, frames and tables sit in cycles that only a full collection frees, which a process
    holding Dagster's definitions runs rarely: on a wide benchmark (2 million test cases) the report step
    started ~400 MB above the floor. The IO manager runs it once a step, before the step's first input
    (issue 25).

    What survives a collection is frozen (``gc.freeze``): the long-lived heap (Dagster, the modules, the run's
    own context) is not visited again, so a collection costs what the steps since the last one allocated, not
    0.3 s over every object once great_expectations and matplotlib are loaded. The first step of a process
    only freezes: no step ran before it. Then what was freed goes back to the system (``allocator.py``); it was a
    pair of Dagster hooks on every step, two events each in the instance's log (18 of an upload run's ~150).
    """
    global _collected
    if _collected:
        gc.collect()
    gc.freeze()
    _collected = True
    give_back_freed_memory()


def _step_of(context: dg.InputContext) -> tuple[str, str] | None:
    """(run, step) of an input being loaded; None for a context built outside a run."""
    try:
        return context.step_context.run_id, context.step_context.step.key
    except dg.DagsterInvariantViolationError:
        return None


class WarehouseIOManager(dg.ConfigurableIOManager):
    """Parquet files in the warehouse folder of the object storage."""

    storage: dg.ResourceDependency[ObjectStorage]
    _collected_for: tuple[str, str] | None = PrivateAttr(default=None)  # the step whose garbage was last collected

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        path = warehouse_path(
            "/".join(context.asset_key.path), context.asset_partition_key if context.has_asset_partitions else None
        )
        store = self.storage.store
        if obj is None:
            store.remove(path)
            context.add_output_metadata({"dagster/row_count": 0, "withdrawn": True})
            return
        table = to_arrow(obj)
        digest = context.output_metadata.get("inputs_digest")
        digest = getattr(digest, "value", digest)
        code_version = context.asset_spec.code_version if context.has_asset_key else None
        recorded = {DIGEST_KEY: str(digest)} if digest else {}
        recorded |= {CODE_KEY: code_version} if code_version else {}
        store.write_parquet(path, with_recorded(table, recorded))
        context.add_output_metadata(
            {
                "dagster/row_count": table.num_rows,
                "dagster/column_schema": column_schema(table.schema, context.asset_key.path[-1]),
                "dagster/uri": dg.MetadataValue.path(store.uri(path)),
            }
        )

    def load_input(self, context: dg.InputContext) -> "Stored | dict[str, Stored]":
        """The stored output's handle: of the step's own benchmark in a benchmark's run (every partitioned asset is
        partitioned by benchmark; an asset check is handed every partition, and checks the run's), ``{partition:
        handle}`` for a step of no benchmark reading a partitioned asset."""
        step = _step_of(context)
        if step is None or step != self._collected_for:
            self._collected_for = step
            free_previous_steps()
        name, store = "/".join(context.asset_key.path), self.storage.store
        if not context.has_asset_partitions:
            return Stored.of(store, name)
        if context.has_partition_key:
            return Stored.of(store, name, context.partition_key)
        return {p: Stored.of(store, name, p) for p in context.asset_partition_keys}
