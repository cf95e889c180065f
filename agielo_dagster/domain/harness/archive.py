"""Bounded reading of zip archives (Inspect's ``.eval`` logs): sizes checked before anything is decompressed.

The upload limit (``max_upload_bytes``) applies to a file's stored, compressed bytes; a zip of a few kilobytes can
expand to gigabytes. :func:`check_archive` holds an archive to the same limit *uncompressed*, before any reader
(inspect_ai's, which reads whole members at once) sees it:

1. the end-of-central-directory record: at most :data:`MAX_ARCHIVE_MEMBERS` members and a central directory of at
   most :data:`MAX_CENTRAL_DIRECTORY_BYTES` (``archive_members``), read before Python's ``zipfile`` parses it;
2. every member's uncompressed size as the central directory declares it, and their total, at most the limit
   (``archive_size``); encrypted members and compression methods other than stored, deflate and zstd (what Inspect
   writes) are refused (``archive_method``);
3. the declared sizes are a claim, not a fact: every member is then decompressed in chunks of
   :data:`CHUNK_BYTES`, counting, and refused (``archive_size``) the moment it yields more than it declares.
   Nothing is kept; peak memory is about one chunk (zstd: plus the frame's window, at most 128 MiB by libzstd's
   default limit).

A member that yields *less* than it declares is left to the reader (a CRC or end-of-stream error, ``inspect_truncated``).
Pure: bytes in, :class:`~agielo_dagster.domain.contract.IngestError` out.
"""

from __future__ import annotations

import io
import struct
import zlib
from zipfile import ZIP_DEFLATED, ZIP_STORED, BadZipFile, ZipFile, ZipInfo

from ..contract import IngestError

__all__ = ["CHUNK_BYTES", "MAX_ARCHIVE_MEMBERS", "MAX_CENTRAL_DIRECTORY_BYTES", "check_archive"]

MAX_ARCHIVE_MEMBERS = 100_000  # an Inspect log has one member per (sample, epoch), a few more for its header
MAX_CENTRAL_DIRECTORY_BYTES = 16 << 20  # bounds what zipfile builds in memory (one ZipInfo per entry)
CHUNK_BYTES = 1 << 20
ZIP_ZSTANDARD = 93  # APPNOTE 4.4.5; the inspect_ai installed here writes its logs with it
_METHODS = {ZIP_STORED: "stored", ZIP_DEFLATED: "deflate", ZIP_ZSTANDARD: "zstd"}
_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
_LOCAL = b"PK\x03\x04"


def check_archive(data: bytes, path: str, max_bytes: int) -> None:
    """Refuse a zip archive whose members, uncompressed, exceed ``max_bytes`` (each, and in total).

    Raises :class:`IngestError` naming ``path``, the member and the rule (``archive_members``, ``archive_size``,
    ``archive_method``, ``inspect_truncated`` for a broken structure); returns None for an archive within bounds.
    """
    view = memoryview(data)
    entries, directory_bytes = _directory_size(view, path)
    if entries > MAX_ARCHIVE_MEMBERS or directory_bytes > MAX_CENTRAL_DIRECTORY_BYTES:
        raise IngestError(
            path,
            "archive_members",
            f"the archive lists {entries:,} members in a directory of {directory_bytes:,} bytes; "
            f"at most {MAX_ARCHIVE_MEMBERS:,} members and {MAX_CENTRAL_DIRECTORY_BYTES:,} bytes are read",
        )
    try:
        with ZipFile(io.BytesIO(data)) as archive:  # BytesIO shares the bytes until written
            members = archive.infolist()
    except (BadZipFile, EOFError, OSError, ValueError, struct.error) as exc:
        raise IngestError(path, "inspect_truncated", f"not a readable zip archive ({type(exc).__name__}: {exc})") from None
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise IngestError(path, "archive_members", f"the archive has {len(members):,} members; at most {MAX_ARCHIVE_MEMBERS:,}")
    total = 0
    for info in members:
        if info.flag_bits & 0x1:
            raise IngestError(path, "archive_method", f"member {_name(info)} is encrypted; logs must not be")
        if info.compress_type not in _METHODS:
            raise IngestError(
                path,
                "archive_method",
                f"member {_name(info)} uses compression method {info.compress_type}; "
                "only stored, deflate and zstd (what Inspect writes) are read",
            )
        if info.file_size > max_bytes:
            raise IngestError(
                path,
                "archive_size",
                f"member {_name(info)} expands to {info.file_size:,} bytes; the upload limit is {max_bytes:,} uncompressed",
            )
        total += info.file_size
        if total > max_bytes:
            raise IngestError(
                path,
                "archive_size",
                f"the archive's members expand to more than {max_bytes:,} bytes in all (the upload limit), "
                f"{total:,} by member {_name(info)}",
            )
    for info in members:
        produced = _expanded_size(_raw(view, info, path), info, path)
        if produced > info.file_size:
            raise IngestError(
                path,
                "archive_size",
                f"member {_name(info)} expands past the {info.file_size:,} bytes it declares (a crafted archive)",
            )


def _name(info: ZipInfo) -> str:
    name = info.filename
    return repr(name if len(name) <= 60 else name[:59] + "…")


def _directory_size(view: memoryview, path: str) -> tuple[int, int]:
    """(members, bytes) of the central directory as the end record declares them (zip64 aware)."""
    tail_start = max(0, len(view) - (22 + 0xFFFF))
    at = bytes(view[tail_start:]).rfind(_EOCD)
    if at < 0 or tail_start + at + 22 > len(view):
        raise IngestError(path, "inspect_truncated", "not a readable zip archive (no end-of-central-directory record)")
    at += tail_start
    entries, size = struct.unpack("<HI", view[at + 10 : at + 16])
    if (entries == 0xFFFF or size == 0xFFFFFFFF) and at >= 20 and view[at - 20 : at - 16] == _ZIP64_LOCATOR:
        (offset,) = struct.unpack("<Q", view[at - 12 : at - 4])
        if offset + 56 <= len(view) and view[offset : offset + 4] == _ZIP64_EOCD:
            entries, size = struct.unpack("<QQ", view[offset + 32 : offset + 48])
    return entries, size


def _raw(view: memoryview, info: ZipInfo, path: str) -> memoryview:
    """The member's compressed bytes, located through its local header (no copy)."""
    start = info.header_offset
    header = view[start : start + 30]
    if len(header) < 30 or header[:4] != _LOCAL:
        raise IngestError(path, "inspect_truncated", f"member {_name(info)} has no local header where the directory says")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    begin = start + 30 + name_length + extra_length
    raw = view[begin : begin + info.compress_size]
    if len(raw) < info.compress_size:
        raise IngestError(path, "inspect_truncated", f"member {_name(info)} is cut off (the archive is truncated)")
    return raw


def _expanded_size(raw: memoryview, info: ZipInfo, path: str) -> int:
    """How many bytes the member decompresses to, counting in chunks; stops one chunk past its declared size."""
    if info.compress_type == ZIP_STORED:
        return len(raw)
    count = _inflated_size if info.compress_type == ZIP_DEFLATED else _zstd_size
    try:
        return count(raw, info.file_size, _name(info), path)
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - zlib.error, zstandard.ZstdError: a corrupt stream
        raise IngestError(
            path, "inspect_truncated", f"member {_name(info)} does not decompress ({type(exc).__name__}: {exc})"
        ) from None


def _inflated_size(raw: memoryview, cap: int, name: str, path: str) -> int:
    inflater = zlib.decompressobj(-15)
    produced = 0
    for start in range(0, len(raw), CHUNK_BYTES):
        pending = bytes(raw[start : start + CHUNK_BYTES])
        while pending and not inflater.eof:
            produced += len(inflater.decompress(pending, CHUNK_BYTES))
            if produced > cap:
                return produced
            pending = inflater.unconsumed_tail
        if inflater.eof:
            break
    return produced + len(inflater.flush())


def _zstd_size(raw: memoryview, cap: int, name: str, path: str) -> int:
    try:
        import zstandard
    except ImportError:  # inspect_ai brings it; without it nobody here can read a zstd member
        raise IngestError(path, "archive_method", f"member {name} is zstd-compressed and zstandard is not installed") from None
    produced = 0
    with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as reader:
        while chunk := reader.read(CHUNK_BYTES):
            produced += len(chunk)
            if produced > cap:
                return produced
    return produced
