"""A parquet upload's row groups and column chunks, read from its footer here rather than by pyarrow.

pyarrow's column-metadata accessors (``FileMetaData.row_group(g).column(c)`` and its properties) let
a C++ exception escape on some damaged footers (an unknown codec, size statistics of the wrong
length or for the wrong type), and the process aborts: one bad upload would end the run. pyarrow's
readers check the same things and raise. So the reader takes what its bounds need from the footer
itself (:func:`row_groups`, Thrift's compact protocol), and leaves decoding to pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass

# parquet.thrift's Type and CompressionCodec enums (the ones the bounds look at)
BYTE_ARRAY = 6
CODECS = {0: None, 1: "snappy", 2: "gzip", 4: "brotli", 6: "zstd", 7: "lz4_raw"}  # LZO (3) and LZ4 (5): pages not walked

# the structs read, by field id: FileMetaData.row_groups (4) -> RowGroup.columns (1) -> ColumnChunk.meta_data (3);
# PageHeader's data_page_header (5), dictionary_page_header (7) and data_page_header_v2 (8)
_FOOTER_FIELDS: dict[int, dict] = {4: {1: {3: {}}}}
PAGE_HEADER_FIELDS: dict[int, dict] = {5: {}, 7: {}, 8: {}}


@dataclass(frozen=True)
class ColumnChunk:
    """One column chunk's ``ColumnMetaData``: where its pages are and what they hold."""

    physical_type: int
    codec: int
    total_uncompressed_size: int
    total_compressed_size: int
    data_page_offset: int
    dictionary_page_offset: int | None

    @property
    def compression(self) -> str | None:
        """The codec's name for ``pyarrow.decompress``, or None uncompressed (KeyError where pages are not walked)."""
        return CODECS[self.codec]


@dataclass(frozen=True)
class RowGroup:
    total_byte_size: int
    columns: tuple[ColumnChunk, ...]


def row_groups(data: bytes) -> tuple[RowGroup, ...]:
    """The row groups of a parquet file's footer (``data`` ends with its length and ``PAR1``); ValueError if unreadable."""
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    if length <= 0 or start < 4:
        raise ValueError("the footer's length is outside the file")
    footer = _Thrift(data, start, len(data) - 8).struct(0, _FOOTER_FIELDS)
    groups = []
    for group in footer.get(4, []):
        chunks = []
        for chunk in group.get(1, []):
            meta = chunk.get(3)
            if meta is None:
                raise ValueError("a column chunk without its metadata")
            chunks.append(
                ColumnChunk(
                    physical_type=meta.get(1, -1),
                    codec=meta.get(4, -1),
                    total_uncompressed_size=meta.get(6, -1),
                    total_compressed_size=meta.get(7, -1),
                    data_page_offset=meta.get(9, -1),
                    dictionary_page_offset=meta.get(11),
                )
            )
        groups.append(RowGroup(total_byte_size=group.get(2, -1), columns=tuple(chunks)))
    return tuple(groups)


class _Thrift:
    """Just enough of Thrift's compact protocol to read a parquet footer or page header: i32/i64 fields, and the
    structs and lists of structs asked for."""

    def __init__(self, data: bytes, pos: int, end: int):
        self.data, self.pos, self.end = data, pos, end

    def byte(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise ValueError("thrift data runs past its end")
        self.pos = pos + 1
        return self.data[pos]

    def varint(self) -> int:
        data, pos, end = self.data, self.pos, self.end
        n = shift = 0
        while True:
            if pos >= end:
                raise ValueError("thrift data runs past its end")
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return n
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def struct(self, depth: int, wanted: dict[int, dict] | None = None) -> dict:
        """The i32/i64 fields of a struct, and those of ``wanted`` (field id: its own wanted fields) that are
        structs or lists of structs; everything else is skipped."""
        if depth > 8:
            raise ValueError("thrift data nested too deep")
        nested = wanted or {}
        out: dict = {}
        field_id = 0
        while (head := self.byte()) != 0:
            kind, delta = head & 0x0F, head >> 4
            field_id = field_id + delta if delta else self.zigzag()
            if kind == 5 or kind == 6:
                n = self.varint()
                out[field_id] = (n >> 1) ^ -(n & 1)
            elif field_id in nested and kind == 12:
                out[field_id] = self.struct(depth + 1, nested[field_id])
            elif field_id in nested and kind == 9:
                out[field_id] = self.structs(depth + 1, nested[field_id])
            else:
                self.skip(kind, depth)
        return out

    def structs(self, depth: int, wanted: dict[int, dict]) -> list[dict]:
        head = self.byte()
        size = self.varint() if head >> 4 == 15 else head >> 4
        if head & 0x0F != 12:
            raise ValueError("a list of structs was expected")
        return [self.struct(depth + 1, wanted) for _ in range(size)]

    def skip(self, kind: int, depth: int, in_list: bool = False) -> None:
        if kind in (1, 2):
            self.pos += 1 if in_list else 0
        elif kind == 3:
            self.pos += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.pos += 8
        elif kind == 8:
            length = self.varint()  # (not ``self.pos += self.varint()``: that adds to the position before the varint)
            self.pos += length
        elif kind in (9, 10):
            head = self.byte()
            size = self.varint() if head >> 4 == 15 else head >> 4
            for _ in range(size):
                self.skip(head & 0x0F, depth + 1, in_list=True)
        elif kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1, in_list=True)
                self.skip(types & 0x0F, depth + 1, in_list=True)
        elif kind == 12:
            self.struct(depth + 1)
        else:
            raise ValueError(f"unknown thrift type {kind}")
        if self.pos > self.end or depth > 8:
            raise ValueError("thrift data runs past its end")
