"""Parquet as the store writes and reads it: tables to bytes (small ones uncompressed, a wide dictionary a row group
at a time) and back, and the rows of a file that match a filter, a row group at a time."""

from __future__ import annotations

import functools
from collections.abc import Mapping

__all__ = [
    "ROW_GROUP_ROWS",
    "SMALL_TABLE_BYTES",
    "parquet_bytes",
    "parts_where",
    "write_parquet",
]


def parts_where(file, columns: list[str] | None, where: Mapping[str, str]):
    """The rows of a parquet file where every ``column`` equals its value, a row group at a time, skipping the row
    groups whose statistics exclude a value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = file.schema_arrow
    index = {column: schema.get_field_index(column) for column in where}
    read = None if columns is None else list(dict.fromkeys([*columns, *where]))
    for group in range(file.num_row_groups):
        meta = file.metadata.row_group(group)
        stats = [(meta.column(index[column]).statistics, value) for column, value in where.items()]
        if any(s is not None and s.has_min_max and not (s.min <= value <= s.max) for s, value in stats):
            continue
        if columns is not None and all(_only(s, value) for s, value in stats):  # every row matches: nothing to filter
            yield file.read_row_group(group, columns=columns, use_threads=False)
            continue
        table = file.read_row_group(group, columns=read, use_threads=False)
        if where:
            keep = [pc.equal(table.column(column).cast(pa.string()), value) for column, value in where.items()]
            table = table.filter(functools.reduce(pc.and_, keep))
        yield table.select(columns) if columns is not None else table


def _only(statistics, value: str) -> bool:
    """Whether a column chunk's statistics say that every row holds ``value``."""
    return (
        statistics is not None
        and statistics.has_min_max
        and statistics.has_null_count
        and statistics.null_count == 0
        and statistics.min == value == statistics.max
    )


ROW_GROUP_ROWS = 1 << 20
"""Rows of a parquet row group (pyarrow's default)."""

SMALL_TABLE_BYTES = 16 << 10
"""Tables up to this size in memory are written uncompressed; larger ones with zstd."""


def write_parquet(table, sink) -> None:
    """``table`` as parquet (zstd, or uncompressed up to :data:`SMALL_TABLE_BYTES`) to ``sink``; a dictionary column whose dictionary is longer than a row group (a
    wide benchmark's test-case ids) is written with each row group's own ids as its dictionary.

    Parquet keeps one dictionary per row group: written whole, a dictionary of 10M test cases went into each of the
    10 row groups (writing took 38 s), and each row group read back with all 10M ids (issue 25).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    wide = [
        i
        for i, field in enumerate(table.schema)
        if pa.types.is_dictionary(field.type) and any(len(c.dictionary) > ROW_GROUP_ROWS for c in table.column(i).chunks)
    ]
    if not wide:
        # zstd's context costs about 75 µs a file, more than it saves on a few rows (a tall benchmark's uploads)
        pq.write_table(table, sink, compression="zstd" if table.nbytes > SMALL_TABLE_BYTES else "none")
        return
    with pq.ParquetWriter(sink, table.schema, compression="zstd") as writer:
        for start in range(0, table.num_rows, ROW_GROUP_ROWS):
            piece = table.slice(start, ROW_GROUP_ROWS)
            for i in wide:
                piece = piece.set_column(i, table.schema.field(i), _own_dictionary(piece.column(i)))
            writer.write_table(piece)


def _own_dictionary(column):
    """A dictionary column with only the values its rows use in its dictionary (in the order of their codes)."""
    import numpy as np
    import pyarrow as pa

    column = column.combine_chunks()
    if column.null_count:
        return column
    codes = column.indices.to_numpy(zero_copy_only=False)
    present = np.zeros(len(column.dictionary), dtype=bool)
    present[codes] = True  # a mask, not np.unique: sorting a row group's codes took about 1 s
    used = np.flatnonzero(present)
    del present
    remap = np.empty(len(column.dictionary), dtype=codes.dtype)
    remap[used] = np.arange(len(used), dtype=codes.dtype)
    return pa.DictionaryArray.from_arrays(pa.array(remap[codes]), column.dictionary.take(pa.array(used)))


def parquet_bytes(table) -> bytes:
    """A pyarrow Table as parquet bytes (as :func:`write_parquet` writes it), written through arrow's own buffer (deterministic)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    write_parquet(table, sink)
    return sink.getvalue().to_pybytes()
