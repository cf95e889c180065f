"""Accepted copies: each accepted upload's normalized rows (``test_case_id, metric, score, meta.*``), kept under
``warehouse/accepted/<benchmark>/`` by the ledger and read back by the match table, never from raw/.

An upload of at most :data:`SMALL_ROWS` rows and no metadata column (a tall benchmark's: 200,000 agents of 5 test
cases) shares a file with the other small uploads its agent's name hashes to, ``_bucket-NNN.parquet`` (one of
:data:`BUCKETS`); any other upload has a file of its own, ``<agent>.parquet`` (no agent name starts with '_').
A file of its own cost a small upload 0.3 ms to write and 0.15 ms to read back, more than everything else its rows
cost (issue 25). A shared file is rewritten when one of its agents changes, so an upload costs its bucket's rows
(1/256 of the small uploads' rows), and every file is a function of the accepted uploads alone, whatever the order
they came in.

A shared file lists its members in its footer (agent, source path, version, spec version and rows of each, in name
order, as its rows are), once: written without arrow's copy of the schema, whose metadata would hold the list again.
A file's members are read when one of its agents is asked about (a footer of 780 members: about 1 ms).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .layout import accepted_folder, in_folder
from .parquet_io import SMALL_TABLE_BYTES
from .store import StorageError, Store

__all__ = [
    "BUCKETS",
    "SHARED_SCHEMA",
    "SMALL_ROWS",
    "AcceptedCopies",
    "CopyReader",
    "SmallUploads",
    "bucket_file",
    "is_small",
    "source_of",
]

BUCKETS = 256
SMALL_ROWS = 1_000
SHARED_SCHEMA = pa.schema([("test_case_id", pa.string()), ("metric", pa.float64()), ("score", pa.float64())])
_SHARED = "_bucket-"
_MEMBERS = b"agielo.members"

Source = tuple[str, str, str]  # an accepted upload's (source path, version, spec version)


def source_of(row: dict) -> Source:
    """The (path, version, spec version) of a ledger row: what its copy must have been made from."""
    return (row["path"], row["version"], row["spec_version"])


def bucket_file(agent: str) -> str:
    """The shared file a small upload of ``agent`` lives in."""
    return _file(_bucket(agent))


def _bucket(agent: str) -> int:
    return int.from_bytes(hashlib.blake2b(agent.encode(), digest_size=8).digest(), "big") % BUCKETS


def _file(bucket: int) -> str:
    return f"{_SHARED}{bucket:03d}.parquet"


def _bucket_of_file(name: str) -> int:
    return int(name.removeprefix(_SHARED).removesuffix(".parquet"))


def is_small(table: pa.Table) -> bool:
    """Whether an accepted upload's rows are kept in a shared file."""
    return table.num_rows <= SMALL_ROWS and table.schema.remove_metadata() == SHARED_SCHEMA


@dataclass(frozen=True, slots=True)
class Member:
    """Where an accepted upload's rows lie: ``rows`` rows from ``offset`` of ``file`` (all of it when ``rows`` is None)."""

    file: str
    source: Source
    offset: int = 0
    rows: int | None = None


@dataclass(frozen=True)
class AcceptedCopies:
    """What a benchmark's accepted folder holds: its listing, and its shared files' members as they are asked for."""

    store: Store
    benchmark: str
    files: frozenset[str]
    _members: dict[str, dict[str, Member]] = field(default_factory=dict, compare=False, repr=False)  # read footers

    @classmethod
    def read(cls, store: Store, benchmark: str) -> AcceptedCopies:
        return cls(store, benchmark, frozenset(store.list_dir(accepted_folder(benchmark))))

    def members(self, name: str) -> dict[str, Member]:
        """A shared file's members, agent → :class:`Member` ({} when it is missing or cannot be read)."""
        if name not in self._members:
            found = name in self.files and _members(self.store, self._path(name), name)
            self._members[name] = found or {}
        return self._members[name]

    def member(self, agent: str) -> Member | None:
        """The agent's rows in its shared file, if they are there (from whichever source)."""
        return self.members(bucket_file(agent)).get(agent)

    def where(self, row: dict) -> Member | None:
        """Where an accepted ledger row's copy is; None when no copy made from its source is there."""
        member = self.member(row["agent"])
        if member is not None and member.source == source_of(row):
            return member
        own = f"{row['agent']}.parquet"
        return Member(own, source_of(row)) if own in self.files else None

    def holds(self, row: dict) -> bool:
        return self.where(row) is not None

    def listed(self, row: dict) -> bool:
        """Whether a file that may hold an accepted row's copy is there (the listing alone: no footer is read)."""
        return f"{row['agent']}.parquet" in self.files or bucket_file(row["agent"]) in self.files

    def schema(self, row: dict) -> pa.Schema:
        """The columns of an accepted upload's copy (a shared one has no metadata column)."""
        member = self._member(row)
        return SHARED_SCHEMA if member.file.startswith(_SHARED) else self.store.read_schema(self._path(member.file))

    def read_one(self, row: dict, columns: list[str] | None = None) -> pa.Table:
        return next(self.read_many([row], columns))

    def read_many(self, rows: Iterable[dict], columns: list[str] | None = None) -> Iterator[pa.Table]:
        """The copies of accepted ledger rows, in their order: a shared file is read once, when first needed, and
        let go once its last wanted member is given out; a file of its own is read when its turn comes."""
        members = [self._member(row) for row in rows]  # a shared file's Members are held by its read footer anyway
        left = Counter(member.file for member in members if member.rows is not None)  # wanted members of each shared file
        open_shared: dict[str, pa.Table] = {}
        for member in members:
            if member.rows is None:
                yield self.store.read_table(self._path(member.file), columns=columns)
                continue
            if member.file not in open_shared:
                open_shared[member.file] = self.store.read_table(self._path(member.file), columns=columns)
            yield open_shared[member.file].slice(member.offset, member.rows)
            left[member.file] -= 1
            if not left[member.file]:
                del open_shared[member.file]

    def reader(self, rows: list[dict], columns: list[str]) -> CopyReader:
        """The copies of accepted ledger rows, to be read in their order a run at a time (:class:`CopyReader`)."""
        return CopyReader(self, [self._member(row) for row in rows], columns)

    def _member(self, row: dict) -> Member:
        member = self.where(row)
        if member is None:
            raise FileNotFoundError(f"no accepted copy of {row['path']} in {accepted_folder(self.benchmark)}")
        return member

    def _path(self, name: str) -> str:
        return in_folder(accepted_folder(self.benchmark), name)


def _ranges(firsts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The row numbers ``firsts[i] … firsts[i] + lengths[i] - 1``, for each i in turn."""
    ends = np.cumsum(lengths)
    return np.repeat(firsts - (ends - lengths), lengths) + np.arange(ends[-1] if len(ends) else 0)


def _taken(pool: pa.Table, firsts: np.ndarray, lengths: np.ndarray, split: int) -> pa.Table:
    """The rows of :func:`_ranges` from a pool that may be two tables (rows before ``split`` the first's): each taken
    from on its own, since a take across chunks first joins them (a million rows for a file of 4,000)."""
    rows = _ranges(firsts, lengths)
    if pool.column(0).num_chunks == 1:
        return pool.take(pa.array(rows)).combine_chunks()
    before, after = pool.slice(0, split).combine_chunks(), pool.slice(split).combine_chunks()
    early = rows < split
    joined = pa.concat_tables([before.take(pa.array(rows[early])), after.take(pa.array(rows[~early] - split))])
    order = np.empty(len(rows), np.int64)  # back to the members' order
    order[np.flatnonzero(early)] = np.arange(early.sum())
    order[np.flatnonzero(~early)] = early.sum() + np.arange((~early).sum())
    return joined.combine_chunks().take(pa.array(order))


def _at(member: Member) -> tuple[int, int]:
    return member.offset, member.rows


class CopyReader:
    """The copies of accepted uploads, a run of consecutive ones at a time, as one table (:meth:`next_rows`).

    The shared files they lie in are read once, together, and a run of small uploads is taken from them
    at once: a tall benchmark's 200,000 uploads are not 200,000 slices of tables put together again
    (a match table of 200,000 agents: 7.2 s → 3.1 s). A file of its own is read when its turn comes.
    """

    def __init__(self, copies: AcceptedCopies, members: list[Member], columns: list[str]) -> None:
        self._copies, self._members, self._columns, self._next = copies, members, columns, 0
        shared = sorted({m.file for m in members if m.rows is not None})
        tables = [copies.store.read_table(copies._path(name), columns=columns).replace_schema_metadata(None) for name in shared]
        firsts = itertools.accumulate((t.num_rows for t in tables), initial=0)
        self._first = dict(zip(shared, firsts, strict=False))  # each shared file's first row in the pool
        self._pool = pa.concat_tables(tables).combine_chunks() if tables else None
        del tables

    def next_rows(self, count: int) -> tuple[pa.Table, np.ndarray]:
        """The copies of the next ``count`` uploads, one after another, and the number of rows of each."""
        members = self._members[self._next : self._next + count]
        self._next += len(members)
        if self._pool is not None and all(m.rows is not None for m in members):
            starts = np.fromiter((self._first[m.file] + m.offset for m in members), np.int64, len(members))
            lengths = np.fromiter((m.rows for m in members), np.int64, len(members))
            return self._pool.take(pa.array(_ranges(starts, lengths))), lengths
        tables = [self._one(m) for m in members]
        lengths = np.fromiter((t.num_rows for t in tables), np.int64, len(tables))
        return pa.concat_tables(tables).combine_chunks(), lengths

    def _one(self, member: Member) -> pa.Table:
        if member.rows is None:
            path = self._copies._path(member.file)
            return self._copies.store.read_table(path, columns=self._columns).replace_schema_metadata(None)
        return self._pool.slice(self._first[member.file] + member.offset, member.rows)


def _members(store: Store, path: str, name: str) -> dict[str, Member]:
    """A shared file's members, from its footer ({} when it cannot be read: its uploads are checked again)."""
    try:
        listed = json.loads(store.key_values(path)[_MEMBERS])
        offsets = itertools.accumulate(listed["rows"], initial=0)
        specs: dict[str, str] = {}  # one string a spec version, not one a member (a tall benchmark's 200,000: 24 MB)
        spec_versions = (specs.setdefault(s, s) for s in listed["spec_version"])
        columns = zip(listed["agent"], listed["path"], listed["version"], spec_versions, offsets, listed["rows"], strict=False)
        return {agent: Member(name, (p, v, s), offset, n) for agent, p, v, s, offset, n in columns}
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - missing, truncated or not ours
        return {}


class SmallUploads:
    """Small accepted uploads read in this refresh, gathered a batch at a time, until their shared files are written.

    A batch's rows are one table, and its uploads' agents, sources, first rows and buckets plain lists and arrays:
    200,000 uploads held as tables of 5 rows would cost a GB, and as a dict of tuples 50 MB.
    """

    def __init__(self) -> None:
        self.batches: list[pa.Table] = []
        self.agents: list[list[str]] = []
        self.sources: list[list[Source]] = []
        self.starts: list[np.ndarray] = []  # each upload's first row in its batch, and the batch's end
        self.buckets: list[np.ndarray] = []
        self._by_bucket: tuple | None = None  # made when the shared files are written, once every batch is in
        self._rows: pa.Table | None = None

    def add(self, uploads: list[tuple[str, Source, pa.Table]]) -> None:
        if not uploads:
            return
        self._by_bucket = self._rows = None
        self.batches.append(pa.concat_tables([t.replace_schema_metadata(None) for _, _, t in uploads]).combine_chunks())
        self.agents.append([agent for agent, _, _ in uploads])
        self.sources.append([source for _, source, _ in uploads])
        self.starts.append(np.cumsum([0, *(t.num_rows for _, _, t in uploads)]))
        self.buckets.append(np.fromiter((_bucket(agent) for agent, _, _ in uploads), np.int32, len(uploads)))

    def agent_set(self) -> set[str]:
        return {agent for agents in self.agents for agent in agents}

    def files(self) -> set[str]:
        return {_file(int(b)) for buckets in self.buckets for b in np.unique(buckets)}

    def in_file(self, name: str) -> list[tuple[str, Source, int, int]]:
        """The uploads of a shared file: agent, source, and where their rows lie in :meth:`rows` (first row, count)."""
        batches, places, bounds, firsts = self._grouped()
        bucket = _bucket_of_file(name)
        out = []
        for k, i in zip(batches[bounds[bucket] : bounds[bucket + 1]], places[bounds[bucket] : bounds[bucket + 1]], strict=True):
            starts = self.starts[k]
            out.append((self.agents[k][i], self.sources[k][i], firsts[k] + int(starts[i]), int(starts[i + 1] - starts[i])))
        return out

    def _grouped(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """Every upload's batch and place in it, in bucket order; where each bucket's begin; each batch's first row."""
        if self._by_bucket is None:
            buckets = np.concatenate(self.buckets) if self.buckets else np.empty(0, np.int32)
            batch = np.repeat(np.arange(len(self.buckets)), [len(b) for b in self.buckets])
            place = np.concatenate([np.arange(len(b)) for b in self.buckets]) if self.buckets else np.empty(0, np.int64)
            order = np.argsort(buckets, kind="stable")
            bounds = np.searchsorted(buckets[order], np.arange(BUCKETS + 1))
            firsts = itertools.accumulate((b.num_rows for b in self.batches), initial=0)
            self._by_bucket = (batch[order].tolist(), place[order].tolist(), bounds.tolist(), list(firsts))
        return self._by_bucket

    def rows(self) -> pa.Table:
        """Every batch's rows, one after another, as one table (made once)."""
        if self._rows is None:
            self._rows = pa.concat_tables(self.batches).combine_chunks()
        return self._rows


def write_copies(store: Store, benchmark: str, before: AcceptedCopies, accepted: list[dict], small: SmallUploads) -> None:
    """Bring the shared files in line with the ``accepted`` ledger rows, and remove every copy no row needs.

    The files of their own of this refresh's large uploads are written already; ``small`` holds its small ones.
    A shared file is rewritten only where its members changed.
    """
    folder = accepted_folder(benchmark)
    new = small.agent_set()
    kept: dict[str, list[dict]] = {}  # shared file → the rows of its members that stay
    own: set[str] = set()
    for row in accepted:
        if row["agent"] in new:
            continue
        known = before.member(row["agent"])
        if known is not None and known.source == source_of(row):
            kept.setdefault(known.file, []).append(row)
        else:
            own.add(f"{row['agent']}.parquet")
    del new
    touched = small.files()
    for name in sorted(touched | {n for n in before.files if n.startswith(_SHARED)}):
        stays = kept.get(name, [])
        if name not in touched and name in before.files and len(stays) == len(before.members(name)):
            continue  # the same members, from the same sources
        if stays or name in touched:
            store.write_bytes(in_folder(folder, name), _shared_file(store, folder, name, stays, small, before), durable=False)
        else:
            store.remove(in_folder(folder, name))
    for name in before.files:
        if not name.startswith(_SHARED) and name not in own:
            store.remove(in_folder(folder, name))


def _shared_file(store, folder, name, stays: list[dict], small: SmallUploads, before: AcceptedCopies) -> bytes:
    """A shared file's bytes: its members' rows in agent order (taken at once from the old file and this refresh's
    small uploads, not sliced a member at a time), the members listed in its footer."""
    import pyarrow.parquet as pq

    fresh = small.in_file(name)
    pool = small.rows() if fresh else None
    old_rows = 0
    if stays:
        old = store.read_table(in_folder(folder, name)).replace_schema_metadata(None)
        old_rows, pool = old.num_rows, pa.concat_tables([old, pool]) if pool is not None else old
    members = [(r["agent"], source_of(r), *_at(before.members(name)[r["agent"]])) for r in stays]
    members += [(agent, source, old_rows + first, rows) for agent, source, first, rows in fresh]
    members.sort(key=lambda m: m[0])
    agents, sources, firsts, counts = zip(*members, strict=True)
    paths, versions, specs = zip(*sources, strict=True)
    listed = {"agent": agents, "path": paths, "version": versions, "spec_version": specs, "rows": counts}
    table = _taken(pool, np.asarray(firsts, np.int64), np.asarray(counts, np.int64), old_rows)
    sink = pa.BufferOutputStream()
    compression = "zstd" if table.nbytes > SMALL_TABLE_BYTES else "none"
    with pq.ParquetWriter(sink, table.schema, compression=compression, store_schema=False) as writer:  # parquet's own types
        writer.write_table(table)
        writer.add_key_value_metadata({_MEMBERS: json.dumps(listed).encode()})
    return sink.getvalue().to_pybytes()
