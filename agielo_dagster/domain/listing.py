"""What a benchmark's folder holds, and each file's version: listings, the fingerprint cache, files never opened.

Locally a file's version is its content hash, cached by fingerprint (size, times, inode) so that an unchanged file
is never read again; S3 listings carry ETags. What is listed but never opened (a symbolic link, a FIFO, a socket,
a device, a hidden name) has a row of its own in the ledger all the same (:func:`unread`).
"""

from __future__ import annotations

import pyarrow as pa

from .contract import IngestError
from .layout import derived_folder, fingerprint_path, raw_folder
from .parquet_io import parquet_bytes
from .store import StorageError, Store, StoredFile

RACY_SECONDS = 0.1
_FINGERPRINTS = pa.schema([("path", pa.string()), ("fingerprint", pa.string()), ("version", pa.string())])


def cached_versions(store: Store, cache: str, files: list[StoredFile]) -> list[StoredFile]:
    """Fill in local content versions from the fingerprint cache (S3 listings carry ETags); '' where unknown.

    Files over the upload limit get a version made of their fingerprint: they are refused unread.
    """
    if not store.is_local:
        return files
    known = {}
    try:
        cached = store.read_table(fingerprint_path(cache))
        if cached.schema.remove_metadata() == _FINGERPRINTS:
            known = {(r["path"], r["fingerprint"]): r["version"] for r in cached.to_pylist()}
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - no cache yet, or a damaged one: hash again
        known = {}
    out = []
    for f in files:
        if f.version:
            out.append(f)
            continue
        version = known.get((f.path, f.fingerprint)) or (f"size:{f.fingerprint}" if f.size > store.max_upload_bytes else "")
        out.append(StoredFile(f.path, f.size, f.fingerprint, version, f.kind) if version else f)
    return out


def known_version(store: Store, f: StoredFile) -> StoredFile:
    """The file with its version, hashing it if the cache did not know it (for files that are not read anyway)."""
    return f if f.version else StoredFile(f.path, f.size, f.fingerprint, store.hash_file(f.path), f.kind)


def write_fingerprints(
    store: Store, cache: str, files: list[StoredFile], listed_at_ns: int, learned: dict[str, str] | None = None
) -> None:
    """Remember each listed file's version by its fingerprint (local storage; S3 lists versions itself); a file
    listed without one takes the version ``learned`` while reading it."""
    if not store.is_local:
        return
    # as git does with its index: a file changed just before it was listed may change again within the
    # clock's granularity without its fingerprint moving, so it is not cached (it is hashed next time)
    settled = listed_at_ns - int(RACY_SECONDS * 1e9)
    learned = learned or {}
    paths, fingerprints, versions = [], [], []
    for f in files:
        version = f.version or learned.get(f.path, "")
        if version and not f.kind and int(f.fingerprint.split(":")[2]) < settled:
            paths.append(f.path)
            fingerprints.append(f.fingerprint)
            versions.append(version)
    table = pa.table([paths, fingerprints, versions], schema=_FINGERPRINTS)
    store.write_bytes(fingerprint_path(cache), parquet_bytes(table))


def input_files(store: Store, benchmark: str) -> list[StoredFile]:
    """A benchmark's inputs: its files under raw/ (hidden names too: each has its ledger row), and the uploads derived
    from harness logs."""
    return store.list_files(raw_folder(benchmark), hidden=True) + store.list_files(derived_folder(benchmark))


_UNREAD = {
    "symlink": ("refused", "symlink", "a symbolic link; links are never followed"),
    "fifo": ("refused", "not_a_regular_file", "a FIFO (named pipe), not a regular file; it is never opened"),
    "socket": ("refused", "not_a_regular_file", "a socket, not a regular file; it is never opened"),
    "device": ("refused", "not_a_regular_file", "a device, not a regular file; it is never opened"),
    "hidden": (
        "skipped",
        "hidden_name",
        "its name starts with '.', as an upload still being written: skipped, never read (rename it once complete)",
    ),
}


def unread(f: StoredFile) -> tuple[str, IngestError]:
    """(status, error) of a listed file that is never opened (``f.kind``: a link, a FIFO, a socket, a device, a hidden
    name)."""
    status, rule, why = _UNREAD[f.kind]
    return status, IngestError(f.path, rule, why)
