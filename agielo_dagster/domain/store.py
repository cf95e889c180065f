"""Object storage: a local folder (default) or ``s3://bucket/prefix`` through s3fs.

The domain's only door to files. Listings report every file's size and a cheap *fingerprint*
(size, modification and change times in ns, and inode locally; the ETag on S3); a file's *version* is the
SHA-256 of its content locally and its ETag on S3. Writes are atomic: readers see the old file
or the new one, never half of one. Symbolic links are listed as such and never followed.

Credentials come from the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, or any
source boto understands); they are never logged and never part of a message.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import posixpath
import socket
import stat
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter

import fsspec

from .contract import MAX_LOG_BYTES
from .parquet_io import parquet_bytes, parts_where, write_parquet

__all__ = [
    "StorageError",
    "StorageUnavailable",
    "Store",
    "StoredFile",
    "TEMP_SUFFIX",
    "default_max_upload_bytes",
    "default_root",
]

DEFAULT_ROOT = "agielo_data"
TEMP_SUFFIX = ".tmp"
SCHEMES = ("s3",)


def default_root() -> str:
    """``AGIELO_STORAGE`` if set, else ``./agielo_data`` (made absolute)."""
    root = os.environ.get("AGIELO_STORAGE") or DEFAULT_ROOT
    return root if "://" in root else os.path.abspath(root)


def default_max_upload_bytes() -> int:
    """``AGIELO_MAX_UPLOAD_BYTES`` (a whole number of bytes) if set, else :data:`~.contract.MAX_LOG_BYTES` (256 MiB).

    What it implies is in docs/input-contract.md: a parquet upload's decoded table may be 8 times it, the decoder
    process's memory 8 times it (at least 64 MiB) beyond what it holds, and a file's CPU 10 s + 0.5 s a MiB.
    """
    text = os.environ.get("AGIELO_MAX_UPLOAD_BYTES", "").strip()
    if not text:
        return MAX_LOG_BYTES
    if not text.isdecimal() or int(text) < 1:
        raise StorageError(f"AGIELO_MAX_UPLOAD_BYTES must be a whole number of bytes (at least 1), got {text[:40]!r}")
    return int(text)


class StorageError(Exception):
    """The storage could not be used; the message is one line naming the place and the fix."""

    retryable = False


class UploadsAreReadOnly(PermissionError):
    """The pipeline itself tried to write or remove an upload under raw/: a bug, never a storage problem."""


class StorageUnavailable(StorageError, ConnectionError):
    """The object storage did not answer (stopped, restarting, network down): worth a retry."""

    retryable = True


def _s3_errors():
    try:
        import botocore.exceptions as be
    except ImportError:  # pragma: no cover - s3fs depends on botocore
        return (), (), ()
    unreachable = (be.EndpointConnectionError, be.ConnectionClosedError, be.ReadTimeoutError, be.ConnectTimeoutError)
    credentials = (be.NoCredentialsError, be.PartialCredentialsError)
    return unreachable, credentials, (be.ClientError,)


def _guarded(method):
    """Turn the storage libraries' exceptions into one-line StorageErrors naming the place (never credentials)."""

    @functools.wraps(method)
    def wrapper(self: Store, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StorageError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised when not a storage problem
            error = self.classify_error(exc)
            if error is None:
                raise
            raise error from exc

    return wrapper


def _read_local(full: str, limit: int | None) -> bytes:
    """A local file's bytes, at most ``limit + 1`` of them; read by its size, not by the limit: a read buffer of the
    limit (256 MB, allocated and freed) costs 60 µs a file, five times the rest of a small file's read."""
    fd = os.open(full, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        want = None if limit is None else limit + 1
        step, got, parts = os.fstat(fd).st_size + 1, 0, []  # one byte more: a file that grew since is read on
        while want is None or got < want:
            chunk = os.read(fd, step if want is None else min(step, want - got))
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
            step = 1 << 20
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class StoredFile:
    """A listed file: where it is (relative to the root), its size and its fingerprint.

    ``version`` is known from the listing on S3 (the ETag); locally it is the content hash,
    filled in by :meth:`Store.versions` (through a fingerprint cache, so unchanged files are
    never read again). What is listed but never opened (a symbolic link, a FIFO, a socket, a device,
    a hidden name) has its ``kind`` as its version.
    """

    path: str
    size: int
    fingerprint: str
    version: str = ""
    kind: str = ""  # "": a regular file; else why it is never opened: "symlink", "fifo", "socket", "device", "hidden"

    @property
    def symlink(self) -> bool:
        return self.kind == "symlink"

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def benchmark(self) -> str:
        return self.path.split("/")[1]

    @property
    def agent(self) -> str:
        return self.name.rsplit(".", 1)[0]


@dataclass
class Store:
    """The storage root every part of the pipeline reads from and writes to."""

    root: str = field(default_factory=default_root)
    endpoint_url: str | None = None
    max_upload_bytes: int = field(default_factory=default_max_upload_bytes)

    def __post_init__(self):
        scheme = self.root.split("://", 1)[0].lower() if "://" in self.root else "file"
        if scheme not in ("file", *SCHEMES):
            raise StorageError(
                f"storage root {self.root!r}: unknown scheme {scheme + '://'!r}; use a local folder or s3://bucket/prefix"
            )
        self._fs = None

    # -- where things are -------------------------------------------------------------------

    @property
    def is_local(self) -> bool:
        return "://" not in self.root or self.root.startswith("file://")

    @property
    def base(self) -> str:
        root = self.root.removeprefix("file://")
        if not self.is_local:
            root = root.split("://", 1)[1]
        return root.rstrip("/") or "/"

    @property
    def endpoint(self) -> str:
        return self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or "AWS"

    @property
    def where(self) -> str:
        """The root as a user names it (with the S3 endpoint)."""
        return self.root if self.is_local else f"{self.root} at {self.endpoint}"

    def full_path(self, path: str) -> str:
        clean = posixpath.normpath(path)
        if clean.startswith(("/", "..")) or "/../" in f"/{clean}/":
            raise ValueError(f"path {path!r} leaves the storage root")
        return f"{self.base}/{clean}"

    def uri(self, path: str) -> str:
        """A user-facing address of a stored file (never holds credentials)."""
        return self.full_path(path) if self.is_local else f"s3://{self.full_path(path)}"

    def filesystem(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            if self.is_local:
                self._fs = fsspec.filesystem("file")
            else:
                endpoint = self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL")
                options = {"client_kwargs": {"endpoint_url": endpoint}} if endpoint else {}
                # Fail fast and let the callers' retry policy recover, visibly, rather than hide an
                # outage in the clients' own retries. Listings must see every new upload.
                self._fs = fsspec.filesystem(
                    "s3",
                    use_listings_cache=False,
                    skip_instance_cache=True,
                    config_kwargs={"retries": {"max_attempts": 2, "mode": "standard"}, "connect_timeout": 5, "read_timeout": 60},
                    **options,
                )
                self._fs.retries = 2  # s3fs's own retry loop (5 by default)
        return self._fs

    # -- errors ------------------------------------------------------------------------------

    def classify_error(self, exc: BaseException) -> StorageError | None:
        """A one-line StorageError for a storage library's exception, or None if it is not one."""
        if isinstance(exc, UploadsAreReadOnly):
            return None
        unreachable, credentials, client = _s3_errors()
        name = type(exc).__name__
        if isinstance(exc, unreachable) or isinstance(exc, (ConnectionError, TimeoutError)) and not self.is_local:
            return StorageUnavailable(
                f"object storage {self.where} is unreachable ({name}); is the endpoint up and AWS_ENDPOINT_URL right?"
            )
        if isinstance(exc, credentials):
            return StorageError(
                f"object storage {self.where}: no credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
        code = ""
        if isinstance(exc, client):
            code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
        if isinstance(exc, PermissionError) or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403"):
            if self.is_local:
                return StorageError(f"storage root {self.root}: permission denied ({exc.__class__.__name__}: {exc})"[:300])
            return StorageError(
                f"object storage {self.where}: access denied; check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY "
                "and the bucket's permissions"
            )
        if code in ("NoSuchBucket",):
            return StorageError(f"object storage {self.where}: the bucket does not exist (create it, or pass --create)")
        return None

    # -- listing -----------------------------------------------------------------------------

    @_guarded
    def check_root(self, *, create: bool = False) -> None:
        """Raise a StorageError when the root (local folder, or bucket) does not exist, unless ``create``."""
        fs = self.filesystem()
        if self.is_local:
            if os.path.isdir(self.base):
                return
            if os.path.exists(self.base):
                raise StorageError(f"storage root {self.root} is a file, not a folder")
            if not create:
                raise StorageError(f"storage root {self.root} does not exist (create it, or pass --create)")
            os.makedirs(self.base, exist_ok=True)
            return
        bucket = self.base.split("/", 1)[0]
        try:
            fs.ls(bucket)  # not exists(): s3fs answers False for every failure, credentials and outages included
        except FileNotFoundError:
            if not create:
                raise StorageError(
                    f"object storage {self.where}: bucket {bucket!r} does not exist (create it, or pass --create)"
                ) from None
            fs.mkdir(bucket)

    @_guarded
    def list_files(self, folder: str, *, hidden: bool = False) -> list[StoredFile]:
        """Every file under ``folder`` at any depth, sorted by path; hidden names (``.x``, files or folders) are
        skipped, or with ``hidden`` listed (``kind="hidden"``, a folder as one entry, never entered).

        Locally, symbolic links (to files or folders), FIFOs, sockets and devices are listed with their ``kind``
        and never followed or opened.
        """
        top = self.full_path(folder)
        if self.is_local:
            return sorted(self._walk_local(top, hidden), key=attrgetter("path"))
        fs = self.filesystem()
        if not fs.exists(top):
            return []
        found = []
        for full, info in fs.find(top, detail=True).items():
            rel = self._relative(full)
            if info.get("type") == "file" and hidden and _hidden(rel):
                found.append(StoredFile(rel, int(info.get("size") or 0), "hidden", "hidden", "hidden"))
            if info.get("type") != "file" or _hidden(rel):
                continue
            etag = str(info.get("ETag") or info.get("etag") or "").strip('"')
            version = f"etag:{etag}" if etag else ""
            found.append(StoredFile(rel, int(info.get("size") or 0), version or f"size:{info.get('size')}", version))
        return sorted(found, key=lambda f: f.path)

    def _walk_local(self, top: str, hidden: bool):
        if not os.path.isdir(top):
            return
        stack = [(top, self._relative(top).rstrip("/"))]
        while stack:
            folder, under = stack.pop()
            prefix = f"{under}/" if under else ""  # (a path a folder, not one a file: 200,000 uploads in one)
            with os.scandir(folder) as entries:
                for entry in entries:
                    rel = prefix + entry.name
                    if entry.name.startswith("."):
                        if hidden:
                            yield StoredFile(rel, 0, "hidden", "hidden", "hidden")
                        continue
                    if entry.is_symlink():
                        yield StoredFile(rel, 0, "symlink", "symlink", "symlink")
                    elif entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, rel))
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        # ctime too: a write that restores the old mtime (utime) still moves ctime
                        yield StoredFile(rel, st.st_size, f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")
                    else:  # a FIFO would block the reader forever, a device read without end: never opened
                        kind = _SPECIAL.get(stat.S_IFMT(entry.stat(follow_symlinks=False).st_mode), "device")
                        yield StoredFile(rel, 0, kind, kind, kind)

    def _relative(self, full: str) -> str:
        full = full.replace(os.sep, "/") if self.is_local else full
        prefix = self.base.rstrip("/") + "/"
        return full[len(prefix) :] if full.startswith(prefix) else full.split(prefix, 1)[-1]

    @_guarded
    def list_dir(self, folder: str) -> list[str]:
        """Names of the files directly in a folder, hidden ones skipped ([] if it does not exist)."""
        full = self.full_path(folder)
        if self.is_local:
            if not os.path.isdir(full):
                return []
            with os.scandir(full) as entries:
                return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_file(follow_symlinks=False))
        fs = self.filesystem()
        if not fs.exists(full):
            return []
        return sorted(
            name
            for info in fs.ls(full, detail=True)
            if info.get("type") == "file" and not (name := info["name"].rsplit("/", 1)[-1]).startswith(".")
        )

    @_guarded
    def list_entries(self, folder: str) -> list[tuple[str, str]]:
        """(name, kind) directly in a folder, kind ∈ file | folder | symlink; hidden names skipped."""
        full = self.full_path(folder)
        if self.is_local:
            if not os.path.isdir(full):
                return []
            with os.scandir(full) as entries:
                out = [
                    (e.name, "symlink" if e.is_symlink() else "folder" if e.is_dir(follow_symlinks=False) else "file")
                    for e in entries
                    if not e.name.startswith(".")
                ]
            return sorted(out)
        fs = self.filesystem()
        if not fs.exists(full):
            return []
        out = []
        for info in fs.ls(full, detail=True):
            name = info["name"].rstrip("/").rsplit("/", 1)[-1]
            if not name.startswith("."):
                out.append((name, "folder" if info.get("type") == "directory" else "file"))
        return sorted(out)

    @_guarded
    def list_folders(self, folder: str) -> list[str]:
        """Names of the sub-folders directly in a folder (hidden ones and symbolic links skipped)."""
        full = self.full_path(folder)
        if self.is_local:
            if not os.path.isdir(full):
                return []
            with os.scandir(full) as entries:
                return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
        fs = self.filesystem()
        if not fs.exists(full):
            return []
        return sorted(
            name
            for info in fs.ls(full, detail=True)
            if info.get("type") == "directory" and not (name := info["name"].rstrip("/").rsplit("/", 1)[-1]).startswith(".")
        )

    # -- reading -----------------------------------------------------------------------------

    @_guarded
    def read_bytes(self, path: str, *, limit: int | None = None) -> bytes:
        """The file's bytes; with ``limit``, at most ``limit + 1`` of them (enough to tell it is too big)."""
        if self.is_local:  # fsspec's file object costs 50 µs a file (a tall benchmark reads 200,000 uploads)
            return _read_local(self.full_path(path), limit)
        with self.filesystem().open(self.full_path(path), "rb") as f:
            return f.read() if limit is None else f.read(limit + 1)

    @_guarded
    def read_versioned(self, path: str, *, limit: int | None = None) -> tuple[bytes, str]:
        """The file's bytes and the version they are (content hash locally, ETag on S3).

        On S3 the ETag is taken before and after the read; a file replaced meanwhile is read again.
        """
        if self.is_local:
            data = self.read_bytes(path, limit=limit)
            return data, content_version(data)
        fs = self.filesystem()
        full = self.full_path(path)
        for _ in range(5):
            before = _etag(fs.info(full))
            data = self.read_bytes(path, limit=limit)
            if _etag(fs.info(full)) == before:
                return data, before
        raise StorageUnavailable(f"{self.uri(path)} kept changing while it was read")

    @_guarded
    def hash_file(self, path: str) -> str:
        """A local file's content version, read in blocks (never whole into memory)."""
        digest = hashlib.sha256()
        with self.filesystem().open(self.full_path(path), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return "sha256:" + digest.hexdigest()

    @_guarded
    def read_table(
        self,
        path: str,
        *,
        columns: list[str] | None = None,
        read_dictionary: list[str] | None = None,
    ):
        """A parquet file as a pyarrow Table (natively: arrow never calls back into a Python file object)."""
        return self._parquet_file(path, read_dictionary).read(columns=columns, use_threads=False)

    def read_parts(
        self,
        path: str,
        *,
        columns: list[str] | None = None,
        read_dictionary: list[str] | None = None,
        where: Mapping[str, str] | None = None,
    ):
        """:meth:`read_table` a row group at a time (a generator): memory is one row group, however large the file.

        ``where={column: value, …}`` keeps only the rows where every string ``column`` equals its ``value``,
        skipping the row groups whose statistics exclude a value."""
        yield from parts_where(self._parquet_file(path, read_dictionary), columns, where or {})

    def _parquet_file(self, path: str, read_dictionary: list[str] | None):
        """The file opened for reading in this thread: for the many small files of a benchmark this is 3× faster than
        read_table's dataset machinery, and leaves no reader thread behind at interpreter exit; without pre-buffering
        (which coalesces reads for high-latency stores), a file of 5 rows reads in 0.18 ms instead of 0.26, and 4M rows
        no slower."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.parquet_source(path), read_dictionary=read_dictionary, pre_buffer=False)

    @_guarded
    def parquet_source(self, path: str):
        """What a parquet reader should open: the local path, or the bytes of an S3 object as an arrow buffer."""
        import pyarrow as pa

        return self.full_path(path) if self.is_local else pa.py_buffer(self.read_bytes(path))

    @_guarded
    def read_schema(self, path: str):
        """A parquet file's schema (with its key-value metadata), from the footer only."""
        import pyarrow.parquet as pq

        if self.is_local:
            return pq.read_schema(self.full_path(path))
        with self.filesystem().open(self.full_path(path), "rb") as f:
            return pq.read_schema(f)  # footer only: no reader threads behind the Python file object

    @_guarded
    def key_values(self, path: str) -> dict[bytes, bytes]:
        """A parquet file's key-value metadata as written, from its footer (no arrow schema is built from it)."""
        import pyarrow.parquet as pq

        return pq.read_metadata(self.parquet_source(path)).metadata or {}

    def parquet_metadata(self, path: str) -> dict[str, str] | None:
        """A parquet file's key-value metadata, read from its footer only; None if it is missing or unreadable."""
        try:
            metadata = self.read_schema(path).metadata or {}
        except StorageError:
            raise
        except (FileNotFoundError, OSError, ValueError):
            return None
        return {k.decode(): v.decode() for k, v in metadata.items()}

    @_guarded
    def exists(self, path: str) -> bool:
        return self.filesystem().exists(self.full_path(path))

    # -- writing -----------------------------------------------------------------------------

    @_guarded
    def write_bytes(self, path: str, data: bytes, *, durable: bool = True) -> None:
        """Write atomically: readers see the old file or the new one, never half of one.

        ``durable`` flushes the file to disk before it replaces the old one; writers of many files
        pass ``False`` and call :meth:`flush_to_disk` once before recording them.
        """
        if path.split("/", 1)[0] == "raw":
            raise UploadsAreReadOnly(f"the pipeline never writes uploads ({path})")
        full = self.full_path(path)
        if not self.is_local:
            self.filesystem().pipe_file(full, data)  # one PUT: S3 objects appear whole or not at all
            return
        folder = posixpath.dirname(full)
        tmp = posixpath.join(folder, f".{posixpath.basename(full)}.{_host_tag()}-{os.getpid()}-{uuid.uuid4().hex}{TEMP_SUFFIX}")
        try:
            f = open(tmp, "wb")
        except FileNotFoundError:  # the folder's first file (makedirs first would cost each of 200,000 files a stat)
            os.makedirs(folder, exist_ok=True)
            f = open(tmp, "wb")
        replaced = False
        try:
            with f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, full)
            replaced = True
        finally:
            if not replaced:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(tmp)

    def write_parquet(self, path: str, table, *, durable: bool = True) -> None:
        """Write a pyarrow Table as :func:`parquet_bytes` would, atomically; locally streamed to the file, so that a
        large table's parquet (a wide benchmark's snapshots: ~110 MB) is never held in memory, twice (issue 25)."""
        if path.split("/", 1)[0] == "raw" or not self.is_local:
            self.write_bytes(path, parquet_bytes(table), durable=durable)
            return
        full = self.full_path(path)
        folder = posixpath.dirname(full)
        os.makedirs(folder, exist_ok=True)
        tmp = posixpath.join(folder, f".{posixpath.basename(full)}.{_host_tag()}-{os.getpid()}-{uuid.uuid4().hex}{TEMP_SUFFIX}")
        try:
            with open(tmp, "wb") as f:
                write_parquet(table, f)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, full)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    def flush_to_disk(self) -> None:
        """Make every write so far durable (locally one sync; S3 writes are durable when they return)."""
        if self.is_local:
            os.sync()

    @_guarded
    def remove(self, path: str) -> None:
        """Remove a derived file if present (refuses anything under raw/)."""
        if path.split("/", 1)[0] == "raw":
            raise UploadsAreReadOnly(f"the pipeline never removes uploads ({path})")
        fs = self.filesystem()
        full = self.full_path(path)
        if fs.exists(full):
            fs.rm(full)

    @_guarded
    def remove_empty_folder(self, path: str) -> None:
        """Remove a derived folder if it is empty (S3 has no folders: nothing to do)."""
        if self.is_local and path.split("/", 1)[0] != "raw":
            try:
                os.rmdir(self.full_path(path))
            except OSError:
                pass  # missing or not empty

    @_guarded
    def remove_temporaries(self, folder: str, *, older_than_seconds: float = 600.0) -> list[str]:
        """Remove leftover temporary files (a crash inside a write) under a local folder; returns their paths.

        A temporary file names its writer (host and process): one whose writer on this host has exited
        goes at once, so a run right after a kill finds the folder clean. Any other goes only when older
        than ``older_than_seconds``, so a write still in flight elsewhere is left alone.
        """
        if not self.is_local:
            return []  # S3 writes are single PUTs: nothing is left behind
        top = self.full_path(folder)
        removed = []
        cutoff = time.time() - older_than_seconds
        for dirpath, _, names in os.walk(top):
            for name in names:
                if name.startswith(".") and name.endswith(TEMP_SUFFIX):
                    path = os.path.join(dirpath, name)
                    try:
                        if _writer_has_exited(name) or os.lstat(path).st_mtime < cutoff:
                            os.remove(path)
                            removed.append(self._relative(path))
                    except FileNotFoundError:
                        continue
        return removed


@functools.cache
def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _writer_has_exited(name: str) -> bool:
    """Whether a temporary file's writer ran on this host and has exited (its pid is gone)."""
    parts = name.removesuffix(TEMP_SUFFIX).rsplit(".", 1)[-1].split("-")
    if len(parts) != 3 or parts[0] != _host_tag() or not parts[1].isdigit():
        return False  # another host, or a name from before writers were named: only age tells
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def content_version(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _etag(info: dict) -> str:
    return "etag:" + str(info.get("ETag") or info.get("etag") or "").strip('"')


_SPECIAL = {stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "device", stat.S_IFBLK: "device"}


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/"))
