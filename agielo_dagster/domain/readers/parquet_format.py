"""The parquet reader: ids, metrics and metadata columns from the decoded arrays."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..contract import (
    MAX_COLUMNS,
    MAX_PARQUET_FOOTER_BYTES,
    MIN_ROW_BYTES,
    PARQUET_EXPANSION,
    IngestError,
)
from .common import _JSONL_CHUNK_ROWS, _check_names, _cut, _first, _Frame, _mask, _Problem, _q
from .jsonl_format import _json_text
from .parquet_bounds import _parquet_arrays
from .parquet_footer import row_groups


def _read_parquet(
    data: bytes, file: str, roles: dict[str, str], check_header: Callable[[Sequence[str]], None], max_bytes: int
) -> _Frame:
    if len(data) < 12 or data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        raise IngestError(
            file, "parquet_parse", "not a parquet file (it must start and end with PAR1); truncated or another format?"
        )
    footer = int.from_bytes(data[-8:-4], "little")
    if footer > MAX_PARQUET_FOOTER_BYTES:
        raise IngestError(
            file,
            "parquet_footer",
            f"the parquet footer is {footer:,} bytes; at most {MAX_PARQUET_FOOTER_BYTES:,} (too many columns or row groups)",
        )
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        meta = parquet.metadata
        leaves = meta.num_columns
        declared_rows = meta.num_rows
        groups = row_groups(data)  # not pyarrow's column metadata (parquet_footer)
        decoded = sum(max(group.total_byte_size, 0) for group in groups)
    except Exception as exc:  # noqa: BLE001 - any footer failure is an unreadable file
        raise IngestError(
            file, "parquet_parse", f"not a readable parquet file (truncated or corrupt?): {_cut(str(exc))}"
        ) from None
    if leaves > MAX_COLUMNS:
        raise IngestError(file, "header_width", f"the parquet file has {leaves:,} columns; at most {MAX_COLUMNS} are allowed")
    max_rows = max(max_bytes // MIN_ROW_BYTES, 1)
    if declared_rows > max_rows or declared_rows < 0:
        raise IngestError(
            file,
            "log_size",
            f"the parquet file declares {declared_rows:,} rows; at most {max_rows:,} under the limit of {max_bytes:,} bytes",
        )
    if decoded > PARQUET_EXPANSION * max_bytes:
        raise IngestError(
            file,
            "log_size",
            f"the parquet file decodes to {decoded:,} bytes; at most {PARQUET_EXPANSION} times the limit of {max_bytes:,}",
        )
    try:
        names = list(parquet.schema_arrow.names)
    except Exception as exc:  # noqa: BLE001
        raise IngestError(file, "parquet_parse", f"the parquet schema is unreadable: {_cut(str(exc))}") from None
    _check_names(names, file, "the parquet schema")
    check_header(names)
    arrays = _parquet_arrays(data, file, parquet, groups, PARQUET_EXPANSION * max_bytes, max_bytes)
    rows = len(arrays[0]) if arrays else 0
    if rows != declared_rows or len(arrays) != len(names):
        raise IngestError(file, "parquet_parse", "the parquet data does not match its footer (corrupt?)")
    problems: dict[str, _Problem] = {}
    columns = {}
    for name, values in zip(names, arrays, strict=True):
        role = roles.get(name, "meta")
        if role == "id":
            columns[name] = _parquet_ids(values, problems, name)
        elif role == "metric":
            columns[name] = _parquet_metric(values, problems, name)
        else:
            columns[name] = _parquet_meta(values)
    return _Frame(names, columns, rows, lambda r: None, problems)


def _decoded(values: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(values.type):
        return values.cast(values.type.value_type)
    return values


def _parquet_ids(values: pa.ChunkedArray, problems: dict, name: str) -> pa.ChunkedArray:
    values = _decoded(values)
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return values.cast(pa.string())
    if pa.types.is_integer(t):
        return values.cast(pa.string())
    r = _first(pc.is_valid(values)) if not pa.types.is_null(t) else -1
    if r >= 0:
        problems[name] = _Problem(
            r,
            "test_case_id_type",
            f"test_case_id is a parquet column of {_cut(str(t), 60)} ({_q(values[r].as_py())} in this row); ids must be strings or integers",
            np.flatnonzero(_mask(pc.is_valid(values))),
        )
    return pa.chunked_array([pa.nulls(len(values), pa.string())])


def _parquet_metric(values: pa.ChunkedArray, problems: dict, name: str) -> pa.ChunkedArray:
    values = _decoded(values)
    t = values.type
    if pa.types.is_decimal(t):
        # Arrow's decimal -> float64 cast divides by a power of ten in floating point (0.1 -> 0.09999999999999999);
        # the decimal's exact text parsed as a float64 (correctly rounded) is the nearest float64
        return values.cast(pa.string()).cast(pa.float64())
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return values.cast(pa.float64(), safe=False)
    if not pa.types.is_null(t):
        r = _first(pc.is_valid(values))
        if r >= 0:
            kind = "text" if pa.types.is_string(t) or pa.types.is_large_string(t) else _cut(str(t), 60)
            problems[name] = _Problem(
                r,
                "metric_numeric",
                f"{name} is a parquet column of {kind} ({_q(values[r].as_py())} in this row), not numbers; write plain numbers",
                np.flatnonzero(_mask(pc.is_valid(values))),
            )
    return pa.chunked_array([pa.nulls(len(values), pa.float64())])


def _parquet_meta(values: pa.ChunkedArray) -> pa.ChunkedArray:
    values = _decoded(values)
    t = values.type
    if not (pa.types.is_nested(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return values
    pieces = []
    for chunk in values.chunks:
        for offset in range(0, len(chunk), _JSONL_CHUNK_ROWS):
            part = chunk.slice(offset, _JSONL_CHUNK_ROWS)
            pieces.append(pa.array([None if v is None else _json_text(v) for v in part.to_pylist()], pa.string()))
    return pa.chunked_array(pieces, type=pa.string())
