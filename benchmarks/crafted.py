"""Crafted input files the limit benchmarks and the security tests share: zip archives built byte by byte (so a
central directory can lie about a member's size), real deflate and zstd streams of zeros, and parquet files
whose footer understates their decoded size."""

from __future__ import annotations

import io
import struct
import zlib

MiB = 1 << 20
DEFLATE, ZSTD, STORED = 8, 93, 0


def deflated_zeros(n: int) -> bytes:
    """A raw deflate stream of ``n`` zero bytes: one compressed MiB, repeated (a full flush resets the compressor)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = packer.compress(bytes(MiB)) + packer.flush(zlib.Z_FULL_FLUSH)
    rest = packer.compress(bytes(n % MiB)) + packer.flush()
    return block * (n // MiB) + rest


def zstd_zeros(n: int) -> bytes:
    import zstandard

    packer, out = zstandard.ZstdCompressor(level=3).compressobj(), []
    for _ in range(n // MiB):
        out.append(packer.compress(bytes(MiB)))
    return b"".join(out) + packer.flush()


def zip_bytes(members: list[tuple[str, int, bytes, int]]) -> bytes:
    """A zip of ``(name, method, compressed bytes, declared uncompressed size)``; CRCs only of stored members."""
    body, directory = io.BytesIO(), io.BytesIO()
    for name, method, data, declared in members:
        encoded, offset = name.encode(), body.tell()
        crc = zlib.crc32(data) if method == STORED else 0
        fields = (20, 0, method, 0, 0, crc, len(data), declared, len(encoded), 0)
        body.write(struct.pack("<4s5HI2I2H", b"PK\x03\x04", *fields) + encoded + data)
        directory.write(struct.pack("<4s6HI2I5H2I", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, offset) + encoded)
    count, size, start = len(members), directory.tell(), body.tell()
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, count, count, size, start, 0)
    return body.getvalue() + directory.getvalue() + end


def _parquet(table) -> bytes:
    import io

    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def _varint(n: int, length: int | None = None) -> bytes:  # thrift compact: zigzag i64 as a (padded) varint
    out = bytearray()
    while True:
        out.append(n & 0x7F)
        n >>= 7
        if not n and (length is None or len(out) >= length):
            break
    return bytes(b | 0x80 for b in out[:-1]) + out[-1:]


def understated_footer(size: int = 64 << 20, *, column_too: bool = False) -> bytes:
    """A small parquet file (one value of ``size`` bytes) whose footer says its row group decodes to 1,000 bytes.

    With ``column_too`` the value's column chunk also declares 1,000 uncompressed bytes: only the page
    headers (which Arrow allocates by) tell the truth.
    """
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    data = bytearray(_parquet(pa.table({"test_case_id": ["a"], "note": ["x" * size]})))
    declared = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).total_byte_size
    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    honest = _varint(2 * declared)
    at = bytes(data).index(honest, footer_start)
    data[at : at + len(honest)] = _varint(2 * 1000, len(honest))
    if column_too:
        chunk = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).column(1).total_uncompressed_size
        honest = _varint(2 * chunk)
        at = bytes(data).index(honest, footer_start)
        data[at : at + len(honest)] = _varint(2 * 1000, len(honest))
        assert pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).column(1).total_uncompressed_size == 1000
    assert pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).total_byte_size == 1000
    return bytes(data)
