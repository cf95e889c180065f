"""The upload ledger: one source of truth for what a benchmark's uploads are and whether they count.

One ledger per benchmark, ``warehouse/upload_ledger/<benchmark>.parquet``, one row per file in
``raw/<benchmark>/``: its version, and ``accepted``, ``rejected`` (it broke the input contract),
``refused`` (not an upload at all: wrong place, unsafe name, unsupported
type, symbolic link, not a regular file) or ``skipped`` (a hidden name, as an upload still being
written: never read, and no problem), with the rule and message. Everything else derives from it:

- the benchmark's **inputs digest**: the accepted uploads' (path, version), ``benchmark.yaml``'s
  version and the code version (:meth:`Ledger.inputs_digest`);
- the match table (only accepted uploads, from their copies under ``warehouse/accepted/``, :mod:`.copies`), the
  quarantine report.

:func:`refresh_ledger` brings a ledger up to date with the raw folder. It reads only what changed:
a file whose fingerprint (size, mtime, inode locally; ETag on S3) is unchanged keeps its cached
version, and an upload whose (path, version, benchmark.yaml version, ingest code version) is
already in the ledger keeps its outcome. Oversize files are recognised from their listed size,
unread. Writes go accepted copies → fingerprint cache → ledger (the commit point), each atomic, so
a crash anywhere leaves a state the next refresh repairs.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ..rating.settings import DEFAULT_MODEL
from .contract import DEFAULT_FULL_COVERAGE, MAX_REPORT_CHARS, MAX_SPEC_BYTES, BenchmarkSpec, IngestError, parse_benchmark_spec
from .copies import AcceptedCopies, SmallUploads, is_small, write_copies
from .layout import (
    accepted_path,
    classify_input_path,
    derived_spec_path,
    ledger_path,
    spec_path,
    tags_path,
)
from .lineage import INGEST_VERSION, inputs_digest
from .listing import cached_versions, input_files, known_version, unread, write_fingerprints
from .parquet_io import parquet_bytes
from .readers import DecoderUnavailable
from .store import StorageError, Store, StoredFile

__all__ = [
    "LEDGER_SCHEMA",
    "METADATA_UPLOADS",
    "Ledger",
    "LedgerSummary",
    "LedgerUpdate",
    "first_accepted",
    "higher_is_better",
    "read_accepted",
    "read_ledger",
    "read_model",
    "read_scoring",
    "read_summary",
    "refresh_ledger",
]

MESSAGE_CHARS = MAX_REPORT_CHARS  # a rejection may name several rules (contract.Problems)

LEDGER_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("kind", pa.string()),  # upload | tags (the benchmark's test_cases.* file) | other
        ("agent", pa.string()),
        ("status", pa.string()),  # accepted | rejected | refused | skipped
        ("version", pa.string()),
        ("size", pa.int64()),
        ("rows", pa.int64()),
        ("rule", pa.string()),
        ("row", pa.int64()),
        ("line", pa.int64()),
        ("message", pa.string()),
        ("spec_version", pa.string()),
        ("ingest_version", pa.string()),
    ]
)


@dataclass(frozen=True)
class Ledger:
    """A benchmark's uploads as of the last refresh. ``rows``: one dict per file, sorted by path."""

    benchmark: str
    spec_version: str
    rows: tuple[dict, ...]
    scoring: str = ""  # the scoring the accepted uploads were scored with, as JSON (make_scoring's config)
    description: str = ""
    full_coverage: float = DEFAULT_FULL_COVERAGE
    model: str = DEFAULT_MODEL  # benchmark.yaml's rating model
    exclude: tuple[str, ...] = ()  # benchmark.yaml's flags and test-case ids the ratings leave out

    @property
    def provisional_agents(self) -> set[str]:
        """Agents whose upload covers less than ``full_coverage`` of the largest upload's test cases.

        They are placed against the test-case ratings of the others (never moving them) and marked
        provisional, until a full upload comes (an agent evaluated on a plan's few test cases).
        """
        accepted = self.accepted
        if not accepted:
            return set()
        most = max(r["rows"] for r in accepted)
        return {r["agent"] for r in accepted if r["rows"] < self.full_coverage * most}

    def make_scoring(self):
        """The benchmark's scoring function as the accepted uploads were scored (identity when unknown)."""
        return _scoring_of(self.scoring)

    @property
    def accepted(self) -> list[dict]:
        """The accepted uploads (the tag file, an input too, is :attr:`tag_file`)."""
        return [r for r in self.rows if r["status"] == "accepted" and r["kind"] == "upload"]

    @property
    def tag_file(self) -> dict | None:
        """The accepted tag file's row, if the benchmark has one."""
        return next((r for r in self.rows if r["status"] == "accepted" and r["kind"] == "tags"), None)

    @property
    def problems(self) -> list[dict]:
        """Rejected uploads and tag files, and refused files."""
        return [r for r in self.rows if r["status"] not in ("accepted", "skipped")]

    @property
    def inputs_digest(self) -> str:
        """What the benchmark's outputs are made from: the accepted uploads and tag file, and benchmark.yaml (the
        ledger's data version in Dagster; every output records it)."""
        inputs = [*self.accepted, *([self.tag_file] if self.tag_file else [])]
        return inputs_digest(((r["path"], r["version"]) for r in inputs), f"spec={self.spec_version}")

    @property
    def rows_digest(self) -> str:
        """A fingerprint of the ledger's content (recorded in its file, so readers need only the footer)."""
        return _fingerprint(
            [self.spec_version, self.scoring, self.full_coverage, self.model, list(self.exclude), list(self.rows)]
        )

    @property
    def problems_digest(self) -> str:
        """A fingerprint of what the quarantine report shows of this ledger: its problems and skipped files (a new
        accepted upload leaves it as it was)."""
        return _fingerprint([r for r in self.rows if r["status"] != "accepted"])

    def to_table(self) -> pa.Table:
        table = pa.Table.from_pylist(list(self.rows), schema=LEDGER_SCHEMA)
        meta = {
            "benchmark": self.benchmark,
            "spec_version": self.spec_version,
            "scoring": self.scoring,
            "description": self.description,
            "full_coverage": self.full_coverage,
            "model": self.model,
            "exclude": list(self.exclude),
            "rows_digest": self.rows_digest,
            "problems_digest": self.problems_digest,
        }
        return table.replace_schema_metadata({b"agielo": json.dumps(meta, sort_keys=True).encode()})

    def to_parquet(self) -> bytes:
        return parquet_bytes(self.to_table())


def _fingerprint(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LedgerUpdate:
    """What a refresh did: the new ledger, the rows that changed, and how many uploads were read."""

    ledger: Ledger
    changed: list[dict] = field(default_factory=list)  # new or changed rows, and removed files (status "removed")
    validated: int = 0  # uploads read and checked in this refresh
    written: bool = False  # the ledger file changed

    @property
    def unchanged(self) -> bool:
        return not self.written


@dataclass(frozen=True)
class LedgerSummary:
    """A stored ledger as most of its readers need it (the counts, the problems, the tag file), found in Arrow: a tall
    benchmark's 200,000 rows are not each made a dict to be counted (1.2 s a read, and six steps read it)."""

    benchmark: str
    accepted: int  # accepted uploads, as len(Ledger.accepted)
    problems: tuple[dict, ...]  # as Ledger.problems
    tag_file: dict | None  # as Ledger.tag_file
    description: str = ""
    skipped: tuple[dict, ...] = ()  # hidden names, never read


def _stored(store: Store, benchmark: str) -> tuple[pa.Table, dict] | None:
    """The stored ledger's table and metadata; None when there is none (or it cannot be read: the next refresh
    rebuilds it)."""
    try:
        table = store.read_table(ledger_path(benchmark))
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - missing or truncated: rebuilt from the raw files
        return None
    meta = _metadata(table.schema)
    return None if meta is None else (table, meta)


def read_ledger(store: Store, benchmark: str) -> Ledger | None:
    """The stored ledger, or None when there is none (or it cannot be read: the next refresh rebuilds it)."""
    if (stored := _stored(store, benchmark)) is None:
        return None
    table, meta = stored
    return Ledger(
        benchmark,
        meta.get("spec_version", ""),
        _rows_of(table),
        meta.get("scoring", ""),
        meta.get("description", ""),
        float(meta.get("full_coverage", DEFAULT_FULL_COVERAGE)),
        meta.get("model", DEFAULT_MODEL),
        tuple(meta.get("exclude", ())),
    )


def read_summary(store: Store, benchmark: str) -> LedgerSummary | None:
    """:class:`LedgerSummary` of the stored ledger (None as :func:`read_ledger`)."""
    if (stored := _stored(store, benchmark)) is None:
        return None
    table, meta = stored
    accepted = pc.fill_null(pc.equal(table.column("status"), "accepted"), False)
    skipped = pc.fill_null(pc.equal(table.column("status"), "skipped"), False)
    uploads, tags = (pc.and_(accepted, pc.equal(table.column("kind"), kind)) for kind in ("upload", "tags"))
    tag_files = _rows_of(table.filter(pc.fill_null(tags, False)))
    return LedgerSummary(
        benchmark,
        pc.sum(pc.fill_null(uploads, False)).as_py() or 0,
        _rows_of(table.filter(pc.invert(pc.or_(accepted, skipped)))),
        tag_files[0] if tag_files else None,
        meta.get("description", ""),
        _rows_of(table.filter(skipped)),
    )


METADATA_UPLOADS = 50
"""The accepted uploads (the first in agent order) whose ``meta.*`` columns are read for tags and test-case metadata:
enough to describe the test cases, whatever the number of agents."""


def first_accepted(store: Store, benchmark: str, count: int = METADATA_UPLOADS) -> list[dict]:
    """The first ``count`` accepted uploads' rows in agent order (what tags and metadata are sampled from), sorted and
    cut in Arrow; [] without a ledger."""
    if (stored := _stored(store, benchmark)) is None:
        return []
    table = stored[0]
    accepted = pc.and_(pc.equal(table.column("status"), "accepted"), pc.equal(table.column("kind"), "upload"))
    return list(_rows_of(table.filter(pc.fill_null(accepted, False)).sort_by("agent").slice(0, count)))


def _rows_of(table: pa.Table) -> tuple[dict, ...]:
    """A stored ledger's rows as dicts; a column of few distinct values (status, rule, the spec and ingest versions)
    gives one Python object a value, not one a row (a tall benchmark's 200,000 rows: 330 MB → 275 MB; about as fast)."""
    columns = []
    for column in table.columns:
        if pa.types.is_string(column.type) and table.num_rows > 1:
            encoded = column.combine_chunks().dictionary_encode()
            if len(encoded.dictionary) <= table.num_rows // 2:
                values = [*encoded.dictionary.to_pylist(), None]
                codes = encoded.indices.fill_null(len(values) - 1).to_numpy(zero_copy_only=False).tolist()
                columns.append([values[i] for i in codes])
                continue
        columns.append(column.to_pylist())
    names = table.column_names
    return tuple(dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True))


def read_scoring(store: Store, benchmark: str):
    """:meth:`Ledger.make_scoring` of the stored ledger, read from its footer alone (None where there is no ledger).

    A tall benchmark's ledger is a row per upload (200,000 of them: 230 MB as Python); what the gap tables
    and the held-out check need of it is this.
    """
    try:
        schema = store.read_schema(ledger_path(benchmark))
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - missing or truncated, as read_ledger
        return None
    meta = _metadata(schema)
    return None if meta is None else _scoring_of(meta.get("scoring", ""))


def higher_is_better(store: Store, benchmark: str) -> bool:
    """Whether benchmark.yaml declares a higher metric better, as the ratings were scored (True without a ledger)."""
    scoring = read_scoring(store, benchmark)
    return True if scoring is None else bool(scoring.higher_is_better)


def read_model(store: Store, benchmark: str) -> str:
    """The rating model benchmark.yaml names, read from the stored ledger's footer (the default where there is none)."""
    return _footer(store, benchmark).get("model", DEFAULT_MODEL)


def read_exclude(store: Store, benchmark: str) -> tuple[str, ...]:
    """The flags and test-case ids benchmark.yaml's ``exclude`` leaves out of the ratings (from the ledger's footer)."""
    return tuple(_footer(store, benchmark).get("exclude", ()))


def _footer(store: Store, benchmark: str) -> dict:
    try:
        meta = _metadata(store.read_schema(ledger_path(benchmark)))
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - missing or truncated, as read_ledger
        meta = None
    return meta or {}


def _metadata(schema: pa.Schema) -> dict | None:
    """A stored ledger's own metadata (spec version, scoring, description…); None for a file that is not a ledger."""
    try:
        meta = json.loads(schema.metadata[b"agielo"])
    except (KeyError, TypeError, ValueError):  # no metadata, or not ours
        return None
    return meta if schema.remove_metadata() == LEDGER_SCHEMA else None


def _scoring_of(scoring: str):
    from ..rating.scoring import identity, make_scoring

    if not scoring:
        return identity()
    config = json.loads(scoring)
    return make_scoring(config["scoring"], config["params"])


def read_accepted(store: Store, benchmark: str, row: dict, columns: list[str] | None = None) -> pa.Table:
    """An accepted upload (its ledger row), normalized (``test_case_id, metric, score, meta.*``)."""
    return AcceptedCopies.read(store, benchmark).read_one(row, columns)


def _row(file: StoredFile, status: str, *, agent: str = "", error: IngestError | None = None, rows: int = 0, **extra) -> dict:
    row = {
        "path": file.path,
        "kind": "upload" if agent else "other",
        "agent": agent,
        "status": status,
        "version": file.version,
        "size": file.size,
        "rows": rows,
        "rule": error.rule if error else "",
        "row": error.row if error else None,
        "line": error.line if error else None,
        "message": _cap(str(error)) if error else "",
        "spec_version": "",
        "ingest_version": INGEST_VERSION,
    }
    row.update(extra)
    return row


def _cap(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"


def spec_file_of(benchmark: str, paths) -> str:
    """The benchmark.yaml in force: the user's under raw/, else the one inferred from harness logs."""
    paths = set(paths)
    if spec_path(benchmark) in paths or derived_spec_path(benchmark) not in paths:
        return spec_path(benchmark)
    return derived_spec_path(benchmark)


def _spec(store: Store, benchmark: str, files: list[StoredFile]) -> tuple[str, BenchmarkSpec | None, IngestError | None]:
    """(benchmark.yaml's version, the spec or None, the error that rejects every upload or None)."""
    path = spec_file_of(benchmark, (f.path for f in files))
    spec_file = next((f for f in files if f.path == path), None)
    if spec_file is None:
        error = IngestError(
            path, "spec_exists", "benchmark.yaml is missing: it says which column is the metric and how to score it"
        )
        return "", None, error
    if spec_file.kind:
        return spec_file.kind, None, unread(spec_file)[1]
    if spec_file.size > MAX_SPEC_BYTES:
        error = IngestError(path, "spec_size", f"benchmark.yaml is {spec_file.size:,} bytes; at most {MAX_SPEC_BYTES:,}")
        return spec_file.version or f"size:{spec_file.fingerprint}", None, error  # known by its listing, never read
    data, version = store.read_versioned(path, limit=MAX_SPEC_BYTES)
    try:
        return version, parse_benchmark_spec(data, benchmark, path), None
    except IngestError as err:
        return version, None, err


Reader = Callable[..., list]  # read_uploads(items, spec, max_bytes=...): a table or an IngestError for each (data, file)

READ_UPLOADS, READ_BYTES = 1_000, 16 << 20
"""The most uploads, and bytes, read before they are checked together (:func:`~.readers.read_uploads`)."""

BATCH_UPLOADS = 20_000
"""The most accepted uploads held before they are written: a tall benchmark's uploads are a few rows each, held as
tables until their batch is written (1.5 KB a table: 30 MB)."""


def refresh_ledger(
    store: Store,
    benchmark: str,
    *,
    read_uploads: Reader,
    batch_rows: int = 2_000_000,
) -> LedgerUpdate:
    """Bring a benchmark's ledger (and its accepted uploads) up to date with ``raw/<benchmark>/``.

    Parameters
    ----------
    store : Store
    benchmark : str
        A safe benchmark name (the caller has checked it).
    read_uploads : callable
        ``read_uploads([(data, file), …], spec, max_bytes=...) -> [pyarrow.Table | IngestError, …]`` (the input
        contract, :func:`~agielo_dagster.domain.readers.read_uploads`): each upload's normalized rows, or its error.
    batch_rows : int
        Accepted uploads are written in batches of about this many rows (and at most :data:`BATCH_UPLOADS` uploads).

    Returns
    -------
    LedgerUpdate
    """
    old = read_ledger(store, benchmark)
    listed_at_ns = time.time_ns()
    listing = cached_versions(store, benchmark, input_files(store, benchmark))
    spec_version, spec, spec_error = _spec(store, benchmark, listing)
    learned = {spec_file_of(benchmark, (f.path for f in listing)): spec_version}  # versions found while reading
    previous = {r["path"]: r for r in old.rows} if old else {}
    copies = AcceptedCopies.read(store, benchmark)

    rows: dict[str, dict] = {}
    uploads: list[tuple[StoredFile, str]] = []
    for f in listing:
        if f.path in (spec_path(benchmark), derived_spec_path(benchmark)):
            continue
        if f.kind:
            status, error = unread(f)
            rows[f.path] = _row(f, status, error=error)
            continue
        try:
            raw = classify_input_path(f.path)
        except IngestError as err:
            rows[f.path] = _row(known_version(store, f), "refused", error=err)
            continue
        if raw is not None and raw.kind == "upload":
            uploads.append((f, raw.agent))
        elif raw is not None and raw.kind == "tags":
            rows[f.path] = _tag_file(store, benchmark, f, previous.get(f.path), learned)
    if not any(r["kind"] == "tags" and r["status"] == "accepted" for r in rows.values()):
        store.remove(tags_path(benchmark))

    per_agent = Counter(agent for _, agent in uploads)
    to_check: list[tuple[StoredFile, str]] = []
    for f, agent in uploads:
        if per_agent[agent] > 1 or spec_error is not None:
            f = known_version(store, f)
        if per_agent[agent] > 1:
            names = sorted(g.name for g, a in uploads if a == agent)
            error = IngestError(
                f.path, "one_file_per_agent", f"agent {agent!r} has {len(names)} files ({', '.join(names)}); keep exactly one"
            )
            rows[f.path] = _row(f, "rejected", agent=agent, error=error, spec_version=spec_version)
        elif f.size > store.max_upload_bytes:
            error = IngestError(
                f.path,
                "log_size",
                f"file is {f.size:,} bytes; the limit is {store.max_upload_bytes:,} (split it or raise the limit)",
            )
            rows[f.path] = _row(f, "rejected", agent=agent, error=error, spec_version=spec_version)
        elif spec_error is not None:
            rows[f.path] = _row(f, "rejected", agent=agent, error=spec_error, spec_version=spec_version)
        else:
            reuse = _reusable(previous.get(f.path), f.version, spec_version, copies)
            if reuse is not None:
                rows[f.path] = reuse
            else:
                to_check.append((f, agent))

    def known_outcome(path: str, version: str) -> dict | None:
        return _reusable(previous.get(path), version, spec_version, copies)

    small = SmallUploads()
    validated = _validate(
        store,
        benchmark,
        spec,
        spec_version,
        to_check,
        rows,
        learned,
        known_outcome,
        read_uploads,
        batch_rows,
        small,
    )
    accepted = [r for r in rows.values() if r["status"] == "accepted" and r["kind"] == "upload"]
    write_copies(store, benchmark, copies, accepted, small)
    del small
    store.flush_to_disk()  # one sync for every accepted copy, before the ledger names them
    write_fingerprints(store, benchmark, listing, listed_at_ns, learned)

    scoring = json.dumps(spec.scoring.to_config(), sort_keys=True) if spec else ""
    ledger = Ledger(
        benchmark,
        spec_version,
        tuple(rows[p] for p in sorted(rows)),
        scoring,
        spec.description if spec else "",
        spec.full_coverage if spec else DEFAULT_FULL_COVERAGE,
        spec.model if spec else DEFAULT_MODEL,
        spec.exclude if spec else (),
    )
    changed = [r for p, r in sorted(rows.items()) if previous.get(p) != r]
    changed += [{**r, "status": "removed"} for p, r in sorted(previous.items()) if p not in rows]
    written = old is None or old != ledger
    if written:
        store.write_bytes(ledger_path(benchmark), ledger.to_parquet())
    return LedgerUpdate(ledger, changed, validated, written)


def _tag_file(store: Store, benchmark: str, f: StoredFile, before: dict | None, learned: dict[str, str]) -> dict:
    """The ledger row of the benchmark's tag file, read and validated only when it changed."""
    from .tags import read_tags  # the tag reader builds on the upload readers

    if f.size > store.max_upload_bytes:
        error = IngestError(f.path, "log_size", f"file is {f.size:,} bytes; the limit is {store.max_upload_bytes:,}")
        return {**_row(known_version(store, f), "rejected", error=error), "kind": "tags"}
    if (
        before is not None
        and f.version
        and (before["version"], before["ingest_version"]) == (f.version, INGEST_VERSION)
        and (before["status"] != "accepted" or store.exists(tags_path(benchmark)))
    ):
        return dict(before)
    data, version = store.read_versioned(f.path, limit=store.max_upload_bytes)
    learned[f.path] = version
    f = StoredFile(f.path, len(data), f.fingerprint, version, f.kind)
    if before is not None and (before["version"], before["ingest_version"]) == (version, INGEST_VERSION):
        if before["status"] != "accepted" or store.exists(tags_path(benchmark)):
            return dict(before)
    try:
        tags = read_tags(data, f.path, max_bytes=store.max_upload_bytes)
    except IngestError as err:
        return {**_row(f, "rejected", error=err), "kind": "tags"}
    store.write_bytes(tags_path(benchmark), parquet_bytes(tags))
    return {**_row(f, "accepted", rows=tags.num_rows), "kind": "tags"}


def read_tag_file(store: Store, benchmark: str) -> pa.Table | None:
    """The benchmark's validated tag file, or None."""
    try:
        return store.read_table(tags_path(benchmark)) if store.exists(tags_path(benchmark)) else None
    except (OSError, ValueError):
        return None


def _reusable(before: dict | None, version: str, spec_version: str, copies: AcceptedCopies) -> dict | None:
    """The previous outcome of an upload, when it was reached on these very bytes, spec and ingest code."""
    if (
        before is not None
        and version
        and before["status"] in ("accepted", "rejected")
        and before["rule"] not in ("one_file_per_agent", "log_size")
        and (before["version"], before["spec_version"], before["ingest_version"]) == (version, spec_version, INGEST_VERSION)
        and (before["status"] != "accepted" or copies.holds(before))
    ):
        return dict(before)
    return None


def _outcomes(read_uploads: Reader, items: list[tuple[bytes, str]], spec: BenchmarkSpec, max_bytes: int) -> list:
    """``read_uploads``'s outcomes (a table or an IngestError each); whatever else goes wrong rejects only the upload
    it went wrong on."""
    try:
        return read_uploads(items, spec, max_bytes=max_bytes)
    except (StorageError, DecoderUnavailable):  # the storage or the machine, not an upload: the step fails and is retried
        raise
    except Exception as exc:  # noqa: BLE001 - found again upload by upload
        if len(items) > 1:
            return [outcome for item in items for outcome in _outcomes(read_uploads, [item], spec, max_bytes)]
        return [IngestError(items[0][1], "unreadable", f"could not be read ({type(exc).__name__}: {exc})")]


def _validate(
    store, benchmark, spec, spec_version, to_check, rows, learned, known_outcome, read_uploads, batch_rows, small
) -> int:
    """Read and check ``to_check`` uploads; accepted large ones are written to warehouse/accepted/, small ones gathered
    in ``small`` (their shared files are written once every upload is known). Returns how many were checked.

    An upload whose bytes turn out to be those the ledger already judged (only its fingerprint
    moved) keeps its outcome.
    """
    pending: list[tuple[StoredFile, str, pa.Table]] = []
    pending_rows = 0
    checked = 0

    def flush():
        nonlocal pending_rows
        shared = []
        for f, agent, table in pending:
            rows[f.path] = _row(f, "accepted", agent=agent, rows=table.num_rows, spec_version=spec_version)
            if is_small(table):
                shared.append((agent, (f.path, f.version, spec_version), table))
                continue
            meta = {"source_path": f.path, "source_version": f.version, "spec_version": spec_version, "agent": agent}
            table = table.replace_schema_metadata({b"agielo": json.dumps(meta, sort_keys=True).encode()})
            store.write_bytes(accepted_path(benchmark, agent), parquet_bytes(table), durable=False)
        small.add(shared)
        pending.clear()
        pending_rows = 0

    reading: list[tuple[StoredFile, str, bytes]] = []  # read, to be checked together
    reading_bytes = 0
    in_flight: list[tuple[list[tuple[StoredFile, str]], Future]] = []  # a batch the decoder reads while we read the next

    def check():
        nonlocal reading_bytes
        uploads = [(f, agent) for f, agent, _ in reading]
        items = [(data, f.path) for f, _, data in reading]
        reading.clear()  # the bytes go once read: a wide upload's 200 MB are not held through the writes
        reading_bytes = 0
        in_flight.append((uploads, checking.submit(_outcomes, read_uploads, items, spec, store.max_upload_bytes)))
        if len(in_flight) > 1:
            settle(*in_flight.pop(0))

    def settle(uploads: list[tuple[StoredFile, str]], outcomes: Future) -> None:
        nonlocal pending_rows
        for (f, agent), outcome in zip(uploads, outcomes.result(), strict=True):
            if isinstance(outcome, IngestError):
                rows[f.path] = _row(f, "rejected", agent=agent, error=outcome, spec_version=spec_version)
                continue
            pending.append((f, agent, outcome))
            pending_rows += outcome.num_rows
            if pending_rows >= batch_rows or len(pending) >= BATCH_UPLOADS:
                flush()

    # the decoder process reads a batch while this process reads the next from storage (one batch ahead)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agielo-decode") as checking:
        for f, agent in to_check:
            try:
                data, version = store.read_versioned(f.path, limit=store.max_upload_bytes)
            except FileNotFoundError:
                continue  # removed since the listing: the next refresh sees it gone
            f = StoredFile(f.path, len(data), f.fingerprint, version, f.kind)
            learned[f.path] = version
            if (outcome := known_outcome(f.path, version)) is not None:
                rows[f.path] = outcome
                continue
            checked += 1
            reading.append((f, agent, data))
            reading_bytes += len(data)
            if len(reading) >= READ_UPLOADS or reading_bytes >= READ_BYTES:
                check()
        check()
        while in_flight:
            settle(*in_flight.pop(0))
    flush()
    return checked
