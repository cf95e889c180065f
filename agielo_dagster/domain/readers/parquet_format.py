"""The parquet reader: the footer's cheap limits, then batches decoded by pyarrow and measured as they come.

What decoding may allocate is bounded by the decoder process's memory limit (:mod:`.isolation`), not predicted here
from footers or page headers; what the decoded table may hold is measured batch by batch (``log_size``).
"""

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
from .common import _JSONL_CHUNK_ROWS, _check_names, _cut, _first, _Frame, _mask, _memory_limit, _out_of_memory, _Problem, _q
from .jsonl_format import _json_text

_PARQUET_BATCH_ROWS = 1 << 18


def _check_frame(data: bytes, file: str) -> None:
    """The magic bytes and the footer's length (read from the file's last 8 bytes, before any parsing)."""
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


def _unreadable(file: str, exc: Exception, what: str = "not a readable parquet file (truncated or corrupt?)") -> IngestError:
    return _memory_limit(file) if _out_of_memory(exc) else IngestError(file, "parquet_parse", f"{what}: {_cut(str(exc))}")


def _read_parquet(
    data: bytes, file: str, roles: dict[str, str], check_header: Callable[[Sequence[str]], None], max_bytes: int
) -> _Frame:
    _check_frame(data, file)
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        meta = parquet.metadata
        leaves, declared_rows = meta.num_columns, meta.num_rows
    except Exception as exc:  # noqa: BLE001 - any footer failure is an unreadable file
        raise _unreadable(file, exc) from None
    if leaves > MAX_COLUMNS:
        raise IngestError(file, "header_width", f"the parquet file has {leaves:,} columns; at most {MAX_COLUMNS} are allowed")
    max_rows = max(max_bytes // MIN_ROW_BYTES, 1)
    if declared_rows > max_rows or declared_rows < 0:
        raise IngestError(
            file,
            "log_size",
            f"the parquet file declares {declared_rows:,} rows; at most {max_rows:,} under the limit of {max_bytes:,} bytes",
        )
    try:
        names = list(parquet.schema_arrow.names)
    except Exception as exc:  # noqa: BLE001
        raise _unreadable(file, exc, "the parquet schema is unreadable") from None
    _check_names(names, file, "the parquet schema")
    check_header(names)
    arrays = _parquet_arrays(parquet, file, max_bytes)
    rows = len(arrays[0]) if arrays else 0
    if rows != declared_rows or len(arrays) != len(names):
        raise IngestError(file, "parquet_parse", "the parquet data does not match its footer (corrupt?)")
    for name, values in zip(names, arrays, strict=True):
        _check_text(values, name, file)
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


def _parquet_arrays(parquet: pq.ParquetFile, file: str, max_bytes: int) -> list[pa.ChunkedArray]:
    """Every column, decoded batch by batch: reading stops at the first batch that brings the table, measured as it
    will be once dictionaries are expanded, past :data:`PARQUET_EXPANSION` times the limit."""
    bound = PARQUET_EXPANSION * max_bytes
    try:
        types = list(parquet.schema_arrow.types)
        pieces: list[list[pa.Array]] = [[] for _ in types]
        total = 0
        for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS, use_threads=False):
            for i, values in enumerate(batch.columns):
                total += _expanded_nbytes(values)
                pieces[i].append(values)
            if total > bound:
                raise IngestError(
                    file,
                    "log_size",
                    f"the parquet file decodes to more than {total:,} bytes; at most {PARQUET_EXPANSION} times the limit of {max_bytes:,}",
                )
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - corrupt pages, bad compression, …
        raise _unreadable(file, exc) from None
    return [pa.chunked_array(p, type=p[0].type if p else t) for p, t in zip(pieces, types, strict=True)]


def _check_text(values: pa.ChunkedArray, name: str, file: str) -> None:
    """Text columns hold valid UTF-8 (Arrow's parquet reader does not check; nested text is checked where it is
    turned into JSON text)."""
    t = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
        return
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        raise IngestError(file, "utf8", f"column {_q(name)} holds text that is not valid UTF-8; write it as UTF-8") from None


_BYTE_ARRAYS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)


def _expanded_nbytes(values: pa.Array) -> int:
    """The bytes an array takes once its dictionary (if any) is expanded into plain values."""
    if not pa.types.is_dictionary(values.type):
        return values.nbytes
    value_type = values.type.value_type
    if any(is_type(value_type) for is_type in _BYTE_ARRAYS):
        lengths = pc.take(pc.binary_length(values.dictionary), values.indices)
        return int(pc.sum(lengths).as_py() or 0) + 9 * len(values)  # values, 8-byte offsets, validity
    width = value_type.bit_width // 8 if pa.types.is_primitive(value_type) else 8
    return (width + 1) * len(values) + values.dictionary.nbytes


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
