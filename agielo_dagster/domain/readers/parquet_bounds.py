"""The parquet decoded-size bounds: from the footer, then the page headers, then measured batch by batch."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..contract import (
    PARQUET_EXPANSION,
    IngestError,
)
from .common import _cut
from .parquet_footer import BYTE_ARRAY, PAGE_HEADER_FIELDS, ColumnChunk, RowGroup, _Thrift

_PARQUET_BATCH_ROWS = 1 << 18

_PARQUET_PREFIX_BATCH_ROWS = 1 << 10  # text stored by prefix (DELTA_BYTE_ARRAY) is read plain: small batches


def _too_big(file: str, what: str, size: int, max_bytes: int) -> IngestError:
    return IngestError(
        file,
        "log_size",
        f"the parquet file {what} {size:,} bytes; at most {PARQUET_EXPANSION} times the limit of {max_bytes:,}",
    )


_BYTE_ARRAYS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)


def _parquet_arrays(
    data: bytes, file: str, parquet: pq.ParquetFile, groups: tuple[RowGroup, ...], bound: int, max_bytes: int
) -> list[pa.ChunkedArray]:
    """Every column of a parquet file, decoded batch by batch and measured as it goes: at most ``bound`` bytes.

    The footer's own sizes are checked first (each column chunk's uncompressed pages, which a row
    group's ``total_byte_size`` may understate), then the page headers (:func:`_page_survey`: what
    decompression allocates, and which text columns could expand). Those are read as dictionaries
    (a repeated value held once), the others plain; every batch is measured as it will be once
    expanded, so reading stops at the first batch that brings the total past ``bound``, before the
    expansion is made.
    """
    chunks = sum(max(column.total_uncompressed_size, 0) for group in groups for column in group.columns)
    if chunks > bound:
        raise _too_big(file, "declares column chunks of", chunks, max_bytes)
    pages, expanding, prefixed = _page_survey(data, groups, bound)
    if pages > bound:
        raise _too_big(file, "has pages that decompress to", pages, max_bytes)
    schema = parquet.schema_arrow
    as_dictionary, leaf = [], 0
    for f in schema:
        if any(is_type(f.type) for is_type in _BYTE_ARRAYS) and leaf in expanding and leaf not in prefixed:
            as_dictionary.append(f.name)
        leaf += _leaves(f.type)
    try:
        reader = pq.ParquetFile(pa.BufferReader(data), read_dictionary=as_dictionary) if as_dictionary else parquet
        types = list(reader.schema_arrow.types)
        pieces: list[list[pa.Array]] = [[] for _ in types]
        total = 0
        rows = _PARQUET_PREFIX_BATCH_ROWS if prefixed else _PARQUET_BATCH_ROWS
        for batch in reader.iter_batches(batch_size=rows, use_threads=False):
            for i, values in enumerate(batch.columns):
                total += _expanded_nbytes(values)
                pieces[i].append(values)
            if total > bound:
                raise _too_big(file, "decodes to more than", total, max_bytes)
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - corrupt pages, bad compression, …
        raise IngestError(
            file, "parquet_parse", f"not a readable parquet file (truncated or corrupt?): {_cut(str(exc))}"
        ) from None
    return [pa.chunked_array(p, type=p[0].type if p else t) for p, t in zip(pieces, types, strict=True)]


def _leaves(t: pa.DataType) -> int:
    """How many parquet leaf columns an Arrow field of type ``t`` is stored as."""
    if pa.types.is_dictionary(t) or not t.num_fields:
        return 1
    return sum(_leaves(t.field(i).type) for i in range(t.num_fields))


# data page encodings whose values are stored whole (decoded size = stored size): PLAIN, DELTA_LENGTH_BYTE_ARRAY
_WHOLE_VALUES = frozenset({0, 6})

_DICTIONARY_ENCODED = frozenset({2, 8})  # PLAIN_DICTIONARY, RLE_DICTIONARY


def _page_survey(data: bytes, groups: tuple[RowGroup, ...], bound: int) -> tuple[int, set[int], set[int]]:
    """(bytes every page decompresses to, the leaf columns to read as dictionaries, those with text
    stored by prefix), from the page headers.

    Arrow allocates each page by its header's ``uncompressed_page_size`` (and fails a page that
    decompresses to anything else), so their sum bounds what decompression holds. A text column's
    dictionary-encoded pages expand to at most their values times the dictionary's longest value
    (read from the dictionary page); columns are read plain while these bounds add up to at most
    ``bound``. A column beyond that, or whose pages cannot be walked here, is read as a dictionary
    and measured expanded. Text stored by prefix (``DELTA_BYTE_ARRAY``, which Arrow cannot read as
    a dictionary) is read plain, in small batches.
    """
    total, expansion, expanding, prefixed = 0, 0, set(), set()
    for group in groups:
        for c, column in enumerate(group.columns):
            start = column.data_page_offset
            if 0 < (column.dictionary_page_offset or 0) < start:
                start = column.dictionary_page_offset
            try:
                size, grows = _walk_pages(data, start, start + column.total_compressed_size, column, bound)
            except (ValueError, IndexError, KeyError, pa.ArrowException):
                expanding.add(c)
                continue
            total += size
            if grows < 0:  # stored by prefix
                prefixed.add(c)
                continue
            expansion += grows
            if expansion > bound:
                expanding.add(c)
    return total, expanding, prefixed


def _walk_pages(data: bytes, pos: int, end: int, column: ColumnChunk, bound: int) -> tuple[int, int]:
    """The pages of one column chunk: (sum of uncompressed sizes, most bytes its dictionary-encoded values
    expand to, or -1 where text is stored by prefix). Stops as soon as the pages declare more than
    ``bound`` (the file is refused for that), before decompressing a page that large."""
    if pos < 0 or end > len(data) or pos >= end:
        raise ValueError("column chunk outside the file")
    total, longest, encoded, prefixed = 0, 0, 0, False
    while pos < end:
        reader = _Thrift(data, pos, end)
        header = reader.struct(0, PAGE_HEADER_FIELDS)
        uncompressed, compressed, kind = header.get(2, -1), header.get(3, -1), header.get(1, -1)
        if uncompressed < 0 or compressed < 0:
            raise ValueError("page header without sizes")
        total += uncompressed
        if total > bound:
            return total, 0
        values, encoding = header.get(5, header.get(8, {})).get(1, -1), header.get(5, {}).get(2, header.get(8, {}).get(4, -1))
        if kind == 2:
            if column.physical_type == BYTE_ARRAY:
                longest = max(longest, _longest_value(data, reader.pos, compressed, uncompressed, column.compression))
        elif kind in (0, 3):
            if encoding in _DICTIONARY_ENCODED and column.physical_type == BYTE_ARRAY:
                encoded += max(values, 0)
            elif encoding not in _WHOLE_VALUES and column.physical_type == BYTE_ARRAY:
                prefixed = True
        pos = reader.pos + compressed
    return total, -1 if prefixed else encoded * longest


def _longest_value(data: bytes, pos: int, compressed: int, uncompressed: int, codec: str | None) -> int:
    """The longest value of a PLAIN byte-array dictionary page (4-byte length, then the bytes)."""
    page = memoryview(data)[pos : pos + compressed]
    if codec is not None:
        page = memoryview(pa.decompress(page, decompressed_size=uncompressed, codec=codec))
    longest, at, n = 0, 0, len(page)
    while at < n:
        length = int.from_bytes(page[at : at + 4], "little")
        longest = max(longest, length)
        at += 4 + length
    return longest


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
