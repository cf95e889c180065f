"""Object storage: a local folder (default) or ``s3://bucket/prefix`` through s3fs.

Layout under the root::

    raw/<benchmark>/<agent>.<csv|parquet|jsonl>   uploads (never modified or deleted here)
    raw/<benchmark>/benchmark.yaml                how to score the benchmark
    warehouse/<asset>/<benchmark>.parquet         outputs, written atomically

Credentials come from the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
or any source boto understands) and never pass through Dagster config.
"""

import functools
import hashlib
import os
import posixpath
import uuid
from dataclasses import dataclass

import dagster as dg
import fsspec
from pydantic import Field, PrivateAttr

from agielo_dagster.ingest import MAX_LOG_BYTES, IngestError, RawPath, classify_raw_path

DEFAULT_ROOT = "agielo_data"


def default_root() -> str:
    """``AGIELO_STORAGE`` if set, else ``./agielo_data`` (made absolute)."""
    root = os.environ.get("AGIELO_STORAGE") or DEFAULT_ROOT
    return root if "://" in root else os.path.abspath(root)


class StorageUnavailable(ConnectionError):
    """The object storage did not answer (stopped, restarting, network down): worth a retry."""


def _connection_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    try:
        import botocore.exceptions as be

        errors += [be.EndpointConnectionError, be.ConnectionClosedError, be.ReadTimeoutError, be.ConnectTimeoutError]
    except ImportError:
        pass
    return tuple(errors)


def _reachable(method):
    """Turn connection failures into StorageUnavailable naming the root (never credentials)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StorageUnavailable:
            raise
        except _connection_errors() as exc:
            where = (
                self.root
                if self.is_local
                else f"{self.root} at {self.endpoint_url or os.environ.get('AWS_ENDPOINT_URL') or 'AWS'}"
            )
            raise StorageUnavailable(
                f"object storage {where} is unreachable ({type(exc).__name__}); the step is retried"
            ) from exc

    return wrapper


@dataclass(frozen=True)
class StoredFile:
    """A file under ``raw/``: where it is and which version of it."""

    path: str  # relative to the root, e.g. raw/digits/knn_1.csv
    version: str  # ETag on S3, sha256 of the content locally
    size: int

    @property
    def benchmark(self) -> str:
        return self.path.split("/")[1]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def agent(self) -> str:
        return self.name.rsplit(".", 1)[0]


class ObjectStorage(dg.ConfigurableResource):
    """The storage root every asset reads from and writes to."""

    root: str = Field(default_factory=default_root, description="Local folder or s3://bucket/prefix")
    endpoint_url: str | None = Field(
        default=None,
        description="S3-compatible endpoint (e.g. a local SeaweedFS); default AWS_ENDPOINT_URL or AWS itself",
    )
    max_upload_bytes: int = Field(default=MAX_LOG_BYTES, description="Larger uploads are refused unread (rule log_size)")
    _fs: object = PrivateAttr(default=None)

    @property
    def is_local(self) -> bool:
        return "://" not in self.root or self.root.startswith("file://")

    def filesystem(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            if self.is_local:
                self._fs = fsspec.filesystem("file")
            else:
                endpoint = self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL")
                options = {"client_kwargs": {"endpoint_url": endpoint}} if endpoint else {}
                # Fail fast and let the assets' retry policy recover, visibly in the UI, rather than
                # hide an outage in the clients' own retries. Listings must see every new upload.
                self._fs = fsspec.filesystem(
                    "s3",
                    use_listings_cache=False,
                    skip_instance_cache=True,
                    config_kwargs={"retries": {"max_attempts": 2, "mode": "standard"}, "connect_timeout": 5, "read_timeout": 60},
                    **options,
                )
                self._fs.retries = 2  # s3fs's own retry loop (a class attribute, 5 by default)
        return self._fs

    @property
    def base(self) -> str:
        root = self.root.removeprefix("file://")
        if not self.is_local:
            root = root.split("://", 1)[1]
        return root.rstrip("/")

    def full_path(self, path: str) -> str:
        clean = posixpath.normpath(path)
        if clean.startswith(("/", "..")) or "/../" in f"/{clean}/":
            raise ValueError(f"path {path!r} leaves the storage root")
        return f"{self.base}/{clean}"

    def uri(self, path: str) -> str:
        """A user-facing address of a stored file (never holds credentials)."""
        return self.full_path(path) if self.is_local else f"s3://{self.full_path(path)}"

    @_reachable
    def list_raw(self) -> list[StoredFile]:
        """Every file under ``raw/`` at any depth, sorted by path (classify with :func:`classify`)."""
        return self.list_files("raw")

    @_reachable
    def list_files(self, folder: str) -> list[StoredFile]:
        """Every file under ``folder`` at any depth, with its version, sorted by path."""
        fs = self.filesystem()
        top = self.full_path(folder)
        if not fs.exists(top):
            return []
        found = []
        for full, info in sorted(fs.find(top, detail=True).items()):
            if info.get("type") != "file":
                continue
            rel = full[len(self.base) + 1 :] if full.startswith(self.base) else full.split(f"{self.base}/", 1)[-1]
            found.append(StoredFile(rel, self._version(full, info), int(info.get("size") or 0)))
        return found

    def _version(self, full: str, info: dict) -> str:
        etag = info.get("ETag") or info.get("etag")
        if etag:
            return "etag:" + str(etag).strip('"')
        if int(info.get("size") or 0) > self.max_upload_bytes:
            # refused for its size anyway: don't read gigabytes on every sensor tick
            return f"oversize:{info.get('size')}:{info.get('mtime') or info.get('created')}"
        digest = hashlib.sha256()
        with self.filesystem().open(full, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return "sha256:" + digest.hexdigest()

    @_reachable
    def read_bytes(self, path: str, *, limit: int | None = None) -> bytes:
        """The file's bytes; with ``limit``, at most ``limit + 1`` of them (enough to tell it is too big)."""
        with self.filesystem().open(self.full_path(path), "rb") as f:
            return f.read() if limit is None else f.read(limit + 1)

    @_reachable
    def read_versioned(self, path: str, *, limit: int | None = None) -> tuple[bytes, str]:
        """The file's bytes and the version they are (the same identity :meth:`list_raw` reports).

        On S3 the ETag is taken before and after the read; a file replaced meanwhile is read again.
        """
        full = self.full_path(path)
        if self.is_local:
            data = self.read_bytes(path, limit=limit)
            return data, "sha256:" + hashlib.sha256(data).hexdigest()
        fs = self.filesystem()
        for _ in range(5):
            before = self._version(full, fs.info(full))
            data = self.read_bytes(path, limit=limit)
            if self._version(full, fs.info(full)) == before:
                return data, before
        raise OSError(f"{path} kept changing while it was read")

    @_reachable
    def exists(self, path: str) -> bool:
        return self.filesystem().exists(self.full_path(path))

    @_reachable
    def write_bytes(self, path: str, data: bytes) -> None:
        """Write atomically: readers see the old file or the new one, never half of one."""
        fs = self.filesystem()
        full = self.full_path(path)
        if self.is_local:
            folder = posixpath.dirname(full)
            os.makedirs(folder, exist_ok=True)
            tmp = posixpath.join(folder, f".{posixpath.basename(full)}.{uuid.uuid4().hex}.tmp")
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, full)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
        else:
            fs.pipe_file(full, data)  # one PUT: S3 objects appear whole or not at all

    @_reachable
    def list_dir(self, path: str) -> list[str]:
        """Names of the files directly in a folder ([] if it does not exist)."""
        fs = self.filesystem()
        full = self.full_path(path)
        if not fs.exists(full):
            return []
        return sorted(p.rsplit("/", 1)[-1] for p in fs.ls(full, detail=False) if not p.endswith("/"))

    @_reachable
    def remove(self, path: str) -> None:
        """Remove a derived file (refuses anything under raw/)."""
        if path.split("/", 1)[0] == "raw":
            raise PermissionError(f"the pipeline never removes uploads ({path})")
        fs = self.filesystem()
        if fs.exists(self.full_path(path)):
            fs.rm(self.full_path(path))


def classify(file: StoredFile) -> RawPath | None:
    """What a raw file is (see :func:`agielo_dagster.ingest.classify_raw_path`); raises IngestError if refused."""
    return classify_raw_path(file.path)


def _kind(file: StoredFile) -> str:
    try:
        raw = classify(file)
    except IngestError:
        return "refused"
    return raw.kind if raw else "hidden"


def is_upload(file: StoredFile) -> bool:
    return _kind(file) == "upload"


def is_spec(file: StoredFile) -> bool:
    return _kind(file) == "spec"


def refusals(files: list[StoredFile]) -> list[IngestError]:
    """Why each refused raw file is refused (wrong place, unsafe name, unsupported type)."""
    out = []
    for file in files:
        try:
            classify(file)
        except IngestError as err:
            out.append(err)
    return out
