"""What every asset shares: output declarations, ownership, tags, and the retry rule.

Retries only where a retry can help: an unreachable object storage is retried (2, 4, 8, 16 s
later); every other error fails the step at once, since running the same deterministic code on
the same inputs again gives the same error.
"""

from contextlib import contextmanager

import dagster as dg
import pandas as pd

from agielo_dagster.domain.lineage import CODE_VERSION
from agielo_dagster.domain.store import StorageError

OWNERS = ["team:evaluation"]
TAGS = {"domain": "evaluation", "method": "agi-elo"}
STORAGE_RETRIES = 4
SHOWN_ROWS = 20


def benchmark_output(description: str, group: str = "ratings", *, required: bool = True) -> dg.AssetOut:
    """A per-benchmark output kept as parquet in the warehouse."""
    return dg.AssetOut(
        io_manager_key="warehouse_io_manager",
        group_name=group,
        code_version=CODE_VERSION,
        kinds={"parquet"},
        owners=OWNERS,
        tags=TAGS,
        description=description,
        is_required=required,
    )


@contextmanager
def retried_on_storage_errors(context: dg.OpExecutionContext):
    """Retry the step when the object storage is unreachable; fail it at once, with one line, otherwise."""
    try:
        yield
    except StorageError as exc:
        if exc.retryable and context.retry_number < STORAGE_RETRIES:
            raise dg.RetryRequested(max_retries=STORAGE_RETRIES, seconds_to_wait=2 ** (context.retry_number + 1)) from exc
        raise dg.Failure(str(exc), allow_retries=False) from None


def digest_of(table) -> str:
    """The inputs digest an upstream output recorded (pyarrow tables keep their file's metadata)."""
    from agielo_dagster.domain.status import DIGEST_KEY

    return (table.schema.metadata or {}).get(DIGEST_KEY.encode(), b"").decode()


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
