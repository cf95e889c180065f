"""What every asset shares: output declarations, ownership, tags, and the retry rule.

Retries only where a retry can help: an unreachable object storage is retried (2, 4, 8, 16 s
later); every other error fails the step at once, since running the same deterministic code on
the same inputs again gives the same error.
"""

from contextlib import contextmanager

import dagster as dg
import pandas as pd

from agielo_dagster.domain.store import StorageError

from .partitions import benchmark_partitions

OWNERS = ["team:evaluation"]
TAGS = {"domain": "evaluation", "method": "agi-elo"}
RUN_TAG = "agielo/run"
"""Which runs write a per-benchmark output: ``rating`` (every rating run), ``nightly`` or ``on_demand``. The
rating jobs select by it, and a benchmark's withdrawal and staleness are read from it (``agielo_dagster.outputs``)."""
RUNS = ("rating", "nightly", "on_demand")
STORAGE_RETRIES = 4
SHOWN_ROWS = 20


def declared(
    description: str,
    group: str,
    *,
    kinds=("parquet",),
    tags: dict | None = None,
    stored: bool = True,
) -> dict:
    """The settings every asset shares (for ``dg.asset`` and ``dg.AssetOut`` alike): the one way assets are declared.

    ``stored``: its output is a table the warehouse IO manager writes; False for an asset that writes its own files
    and returns a ``MaterializeResult`` (the ledgers). The code version is the asset's module's, set where the
    definitions are assembled (``definitions.versioned_assets``).
    """
    return dict(
        **({"io_manager_key": "warehouse_io_manager"} if stored else {}),
        group_name=group,
        kinds=set(kinds),
        owners=OWNERS,
        tags=TAGS | (tags or {}),
        description=description,
    )


def per_benchmark(run: str) -> dict:
    if run not in RUNS:
        raise ValueError(f"run={run!r}: expected one of {RUNS}")
    return {RUN_TAG: run}


def benchmark_output(description: str, group: str = "ratings", *, required: bool = True, run: str = "rating") -> dg.AssetOut:
    """A per-benchmark output of a multi-asset, kept as parquet in the warehouse."""
    return dg.AssetOut(**declared(description, group, tags=per_benchmark(run)), is_required=required)


def benchmark_asset(description: str, group: str = "ratings", *, run: str = "rating", **settings) -> dict:
    """The settings of a per-benchmark asset (``@dg.asset(**benchmark_asset(...))``), partitioned by benchmark."""
    return declared(description, group, tags=per_benchmark(run), **settings) | {"partitions_def": benchmark_partitions}


@contextmanager
def retried_on_storage_errors(context: dg.OpExecutionContext):
    """Retry the step when the object storage is unreachable; fail it at once, with one line, otherwise."""
    try:
        yield
    except StorageError as exc:
        if exc.retryable and context.retry_number < STORAGE_RETRIES:
            raise dg.RetryRequested(max_retries=STORAGE_RETRIES, seconds_to_wait=2 ** (context.retry_number + 1)) from exc
        raise dg.Failure(str(exc), allow_retries=False) from None


def frame_table(frame: pd.DataFrame, columns: list[str], limit: int = SHOWN_ROWS, digits: int = 1) -> dg.TableMetadataValue:
    """The first rows of a frame as a Dagster table, floats rounded for display."""
    shown = frame[columns].head(limit)
    types = {
        c: ("float" if pd.api.types.is_float_dtype(shown[c]) else "int" if pd.api.types.is_integer_dtype(shown[c]) else "string")
        for c in columns
    }
    records = [
        dg.TableRecord(
            {
                c: (round(float(v), digits) if types[c] == "float" else int(v) if types[c] == "int" else str(v))
                for c, v in row.items()
            }
        )
        for row in shown.to_dict("records")
    ]
    return dg.MetadataValue.table(records, schema=dg.TableSchema(columns=[dg.TableColumn(c, types[c]) for c in columns]))
