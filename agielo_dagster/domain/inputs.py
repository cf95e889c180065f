"""The pipeline's inputs as listings show them: which benchmarks are present, and a digest of each one's files.

A digest is made of the files' paths and versions: the ETag on S3; locally the content hash the ledger cached by
the file's fingerprint (size, modification and change times, inode), so an unchanged file is not read again, and a
file touched without a change keeps its version. A new small file is hashed, a new large one is known by its
fingerprint until the ledger has read it. The Dagster layer reports each digest as the data version of an
observable source asset.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

from .contract import IngestError, check_name
from .harness import READERS, reader_environment
from .incoming import INCOMING_CACHE
from .judgments import judgment_problems
from .layout import DERIVED_ROOT, INCOMING_LEDGER, LEDGER_FOLDER, ledger_path, raw_folder
from .listing import cached_versions, input_files
from .store import Store, StoredFile

__all__ = ["Listing", "RawTopLevel", "benchmark_listings", "incoming_digest", "known_benchmarks", "problems_digest", "scan_raw"]


@dataclass(frozen=True)
class RawTopLevel:
    """What ``raw/`` holds directly: benchmark folders, and entries that are refused (with why)."""

    benchmarks: list[str]
    refused: list[IngestError]


def scan_raw(store: Store) -> RawTopLevel:
    """Benchmark folders under ``raw/`` (safe names), and the refused entries beside them."""
    benchmarks, refused = [], []
    for name, kind in store.list_entries("raw"):
        path = raw_folder(name)
        if kind == "symlink":
            refused.append(IngestError(path, "symlink", "a symbolic link; links are never followed"))
        elif kind == "file":
            refused.append(
                IngestError(
                    path,
                    "layout",
                    "files belong at raw/<benchmark>/<agent>.<csv|parquet|jsonl> or raw/<benchmark>/benchmark.yaml",
                )
            )
        else:
            try:
                benchmarks.append(check_name(name, "benchmark", path))
            except IngestError as err:
                refused.append(err)
    return RawTopLevel(benchmarks, refused)


def present_benchmarks(store: Store, raw: RawTopLevel | None = None) -> set[str]:
    """Benchmarks with inputs: a folder under raw/, or uploads derived from harness logs."""
    return set((raw or scan_raw(store)).benchmarks) | set(store.list_folders(DERIVED_ROOT))


def known_benchmarks(store: Store, raw: RawTopLevel | None = None) -> list[str]:
    """Benchmarks with inputs or a ledger (a removed folder's ledger is still there to be tidied away)."""
    names = present_benchmarks(store, raw)
    names |= {n.removesuffix(".parquet") for n in store.list_dir(LEDGER_FOLDER) if n.endswith(".parquet")}
    return sorted(names)


RACY_NS = 1_000_000_000
SMALL_FILE_BYTES = 64 * 1024


def settling(files: list[StoredFile], seconds: float = RACY_NS / 1e9) -> bool:
    """Whether a local file of the listing was modified within ``seconds``: it may still be being written."""
    since = time.time_ns() - int(seconds * 1e9)
    return any(not f.kind and f.fingerprint.count(":") == 3 and int(f.fingerprint.split(":")[1]) > since for f in files)


def content_versions(store: Store, cache: str, files: list[StoredFile]) -> list[tuple[str, str]]:
    """(path, version) of each file: its ETag on S3; locally its content hash, from the fingerprint cache the ledger
    keeps or, for a small file not in it, hashed now; a large file not in it by its fingerprint (the ledger then reads
    and caches it; a recent one made new at every look, as git's index does, since it may still change unseen)."""
    out = []
    for f in cached_versions(store, cache, files):
        if f.kind:  # a link, a FIFO, a socket, a device, a hidden name: never opened (each has its ledger row)
            out.append((f.path, f"{f.kind}:{f.fingerprint}"))
            continue
        version = f.version
        if not version and f.size <= SMALL_FILE_BYTES:
            try:
                version = store.hash_file(f.path)
            except FileNotFoundError:
                continue
        if not version:
            version = f"fingerprint:{f.fingerprint}" + (f":{time.time_ns()}" if settling([f]) else "")
        out.append((f.path, version))
    return out


def version_digest(versions: list[tuple[str, str]], *extra: str) -> str:
    digest = hashlib.sha256()
    for path, version in sorted(versions):
        digest.update(f"{path}\0{version}\n".encode())
    for fact in extra:
        digest.update(f"\1{fact}\n".encode())
    return "sha256:" + digest.hexdigest()[:16]


@dataclass(frozen=True)
class Listing:
    digest: str  # of the files' versions
    settling: bool  # a file was modified within the last second


def benchmark_listings(store: Store, raw: RawTopLevel | None = None) -> dict[str, Listing]:
    """{benchmark: the digest of its inputs' versions} for every benchmark present (raw folder or derived uploads)."""
    out = {}
    for benchmark in sorted(present_benchmarks(store, raw)):
        files = input_files(store, benchmark)
        out[benchmark] = Listing(version_digest(content_versions(store, benchmark, files)), settling(files))
    return out


NO_LOGS = "no logs"


def incoming_digest(store: Store) -> str:
    """The digest of the harness logs under ``incoming/`` (their versions) and of the readers' optional packages
    (installing one makes its logs readable: they are read again); :data:`NO_LOGS` when there are none."""
    files = store.list_files("incoming")
    if not files:
        return NO_LOGS
    versions = content_versions(store, INCOMING_CACHE, files)
    return version_digest(versions, *(f"{h}={reader_environment(h)}" for h in sorted(READERS)))


def problems_digest(store: Store, raw: RawTopLevel | None = None) -> str:
    """What the quarantine report is built from: every ledger's problems and skipped files (not its accepted uploads:
    a new model's upload does not re-run the report), the refused entries of raw/, the harness logs' errors and the
    judgment sets' outcomes."""
    raw = raw or scan_raw(store)
    digest = hashlib.sha256()
    for benchmark in known_benchmarks(store, raw):
        meta = json.loads((store.parquet_metadata(ledger_path(benchmark)) or {}).get("agielo") or "{}")
        digest.update(f"{benchmark}\0{meta.get('problems_digest', '')}\n".encode())
    for err in raw.refused:
        digest.update(f"raw\0{err}\n".encode())
    digest.update(store.read_bytes(INCOMING_LEDGER) if store.exists(INCOMING_LEDGER) else b"")
    for problem in judgment_problems(store):
        digest.update(f"judgments\0{problem['file']}\0{problem['message']}\n".encode())
    return "sha256:" + digest.hexdigest()[:16]
