"""An IO manager that keeps asset outputs as parquet under ``<root>/warehouse/<asset>/<partition>.parquet``.

Accepts pyarrow tables or pandas/polars frames; the output's ``inputs_digest`` metadata and its
asset's code version are written into the file's key-value metadata (so the warehouse alone tells
what each output was computed from, and by which code). Adds Dagster's standard metadata: ``dagster/row_count``, ``dagster/column_schema`` and
``dagster/uri``, the columns described by the engine's schema. Loads pyarrow tables with id columns dictionary-encoded, or pandas when the input
asks for it (``metadata={"pandas": True}``), reading only the columns an input names
(``metadata={"columns": [...]}``) and, with ``metadata={"where": {column: value, ...}}``, only the
rows where every named string column equals its value (row group by row group).

An output of ``None`` is a withdrawal (its benchmark has no accepted upload left): the file is removed, and a
withdrawn input loads as ``None``.
"""

import gc

import dagster as dg
import pandas as pd
import pyarrow as pa
from pydantic import PrivateAttr

from agielo_dagster.domain.layout import warehouse_path
from agielo_dagster.domain.lineage import CODE_KEY, DIGEST_KEY
from agielo_dagster.rating.schema import describe

from .storage import ObjectStorage

DICTIONARY_COLUMNS = ("test_case_id", "agent_id", "source_path", "source_version")


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
    started ~400 MB above the floor. The IO manager runs it once a step, before the step's first input,
    and steps that read their data themselves call it first (issue 25).

    What survives a collection is frozen (``gc.freeze``): the long-lived heap (Dagster, the modules, the run's
    own context) is not visited again, so a collection costs what the steps since the last one allocated, not
    0.3 s over every object once great_expectations and matplotlib are loaded. The first step of a process
    only freezes: no step ran before it.
    """
    global _collected
    if _collected:
        gc.collect()
    gc.freeze()
    _collected = True


def read_stored(store, path: str, columns: list[str] | None = None, where: dict | None = None) -> pa.Table:
    """A stored output as the IO manager loads it: pyarrow, ids dictionary-encoded (for steps that read lazily)."""
    names = store.read_schema(path).names
    return store.read_table(path, columns=columns, read_dictionary=[c for c in DICTIONARY_COLUMNS if c in names], where=where)


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

    def _path(self, context: dg.OutputContext | dg.InputContext) -> str:
        name = "/".join(context.asset_key.path)
        return warehouse_path(name, context.asset_partition_key if context.has_asset_partitions else None)

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        path = self._path(context)
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

    def load_input(self, context: dg.InputContext):
        """The stored table: pyarrow (ids dictionary-encoded) or, with ``metadata={"pandas": True}``, pandas."""
        step = _step_of(context)
        if step is None or step != self._collected_for:
            self._collected_for = step
            free_previous_steps()
        metadata = context.definition_metadata or {}
        path = self._path(context)
        if not self.storage.store.exists(path):
            return None  # withdrawn
        table = read_stored(self.storage.store, path, metadata.get("columns"), metadata.get("where"))
        return table.to_pandas() if metadata.get("pandas") else table
