"""A benchmark's match table, built from its ledger's accepted uploads, incrementally.

``test_case_id, agent_id, metric, score, source_path, source_version``: agents in name order, each
agent's rows in file order; id and lineage columns dictionary-encoded (integer codes and one copy
of each string, however many matches). An agent whose accepted (path, version) is unchanged since
the previous table keeps its rows from it; only new or changed agents are read from
``warehouse/accepted/``. Raw files are never read here. The result equals a build from scratch,
byte for byte once written, whatever the history.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..rating.schema import MATCH_COLUMNS
from .copies import AcceptedCopies
from .ledger import Ledger
from .store import Store
from .stored import DICTIONARY_COLUMNS, Stored

__all__ = [
    "MATCH_SCHEMA",
    "build_match_table",
    "every_match",
    "input_manifest",
    "manifest_of",
    "rated_matches",
    "test_case_metadata",
]

_DICT = pa.dictionary(pa.int32(), pa.string())
MATCH_SCHEMA = pa.schema(
    [
        ("test_case_id", _DICT),
        ("agent_id", _DICT),
        ("metric", pa.float64()),
        ("score", pa.float64()),
        ("source_path", _DICT),
        ("source_version", _DICT),
    ]
)


_SPECS = b"agielo.spec_versions"


def manifest_of(table: pa.Table | None, slices: dict[str, tuple[int, int]] | None = None) -> dict[str, tuple[str, ...]]:
    """agent → (source_path, source_version, spec_version) of each agent with rows in a match table ({} if none).

    Paths and versions are the table's own columns; the spec version, which belongs to the key (the same
    raw file scored under another ``benchmark.yaml`` gives other scores), is in its metadata: the one most
    agents were scored under, and the agents scored under another. (A manifest of every agent in the
    footer was 40 MB at 200,000 agents, parsed again by every reader of the table: 1.2 s each.)
    ``slices``: :func:`_agent_slices` of the table, when the caller has them.
    """
    if table is None or not table.schema.metadata or _SPECS not in table.schema.metadata:
        return {}
    specs = json.loads(table.schema.metadata[_SPECS])
    slices = _agent_slices(table) if slices is None else slices
    if not slices:
        return {}
    starts = pa.array([offset for offset, _ in slices.values()], pa.int64())
    paths, versions = (_strings_at(table.column(c), starts) for c in ("source_path", "source_version"))
    usual, other = specs["spec_version"], specs["other"]
    return {agent: (p, v, other.get(agent, usual)) for agent, p, v in zip(slices, paths, versions, strict=True)}


def _strings_at(column: pa.ChunkedArray, rows: pa.Array) -> list[str]:
    """A (dictionary-encoded) string column's values at ``rows``."""
    values = column.take(rows)
    return (values.cast(pa.string()) if pa.types.is_dictionary(values.type) else values).to_pylist()


def _spec_versions(accepted: list[dict]) -> bytes:
    """The metadata :func:`manifest_of` reads the spec versions from (a function of the accepted rows alone)."""
    counts = Counter(r["spec_version"] for r in accepted)
    usual = max(counts, key=lambda s: (counts[s], s)) if counts else ""
    other = {r["agent"]: r["spec_version"] for r in accepted if r["spec_version"] != usual}
    return json.dumps({"spec_version": usual, "other": other}, sort_keys=True).encode()


def _agent_slices(table: pa.Table) -> dict[str, tuple[int, int]]:
    """agent → (offset, length) of its contiguous rows in a match table grouped by agent."""
    column = table.column("agent_id").combine_chunks()
    if not isinstance(column, pa.DictionaryArray):
        column = column.dictionary_encode()
    codes = column.indices.to_numpy(zero_copy_only=False)
    if len(codes) == 0:
        return {}
    starts = np.concatenate([[0], np.flatnonzero(np.diff(codes)) + 1])
    ends = np.concatenate([starts[1:], [len(codes)]])
    names = column.dictionary.to_pylist()
    return {names[codes[s]]: (int(s), int(e - s)) for s, e in zip(starts, ends, strict=True)}


def _canonical(column: pa.ChunkedArray) -> pa.DictionaryArray:
    """One dictionary array whose dictionary lists the values in order of first appearance.

    Makes the encoding a function of the rows alone, not of how the table was assembled. Chunks
    that share a dictionary (slices of the previous table) are merged by their codes, so the cost
    is one pass over the codes plus the distinct dictionaries, never dictionaries × chunks.
    """
    offsets: dict[tuple, int] = {}
    dictionaries, codes = [], []
    total = 0
    for chunk in column.chunks:
        if len(chunk) == 0:
            continue
        d = chunk.dictionary
        key = tuple(b.address if b is not None else 0 for b in d.buffers()) + (d.offset, len(d))
        if key not in offsets:
            offsets[key] = total
            dictionaries.append(d)
            total += len(d)
        codes.append(chunk.indices.to_numpy(zero_copy_only=False).astype(np.int64) + offsets[key])
    if not codes:
        return pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string()))
    merged = pc.dictionary_encode(pa.concat_arrays([d.cast(pa.string()) for d in dictionaries]))
    values = merged.indices.to_numpy(zero_copy_only=False)[np.concatenate(codes)]  # codes into merged.dictionary
    used, first = np.unique(values, return_index=True)
    order = used[np.argsort(first, kind="stable")]
    remap = np.empty(len(merged.dictionary), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(remap[values]), merged.dictionary.take(pa.array(order)))


PIECE_AGENTS = 5_000
"""The most agents read into one piece: the files of their own of a piece's agents are held until it is made, and a
piece costs a few KB however few its rows (100,000 agents of 5 rows, one piece each: 350 MB)."""


def _read_piece(fresh: list[dict], rows: pa.Table, lengths: np.ndarray) -> pa.Table:
    """Consecutive agents (their ledger rows) read from their accepted uploads (``rows``, ``lengths`` of them each),
    as one piece of the match table.

    Built over all of them at once: a tall benchmark has many agents of a few rows each, and
    per-agent arrow calls cost more than reading the rows (20,000 agents: 11 s → 5).
    """
    codes = pa.array(np.repeat(np.arange(len(fresh), dtype=np.int32), lengths))

    def per_agent(key: str) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(codes, pa.array([r[key] for r in fresh], pa.string()))

    return pa.table(
        [
            pc.dictionary_encode(rows.column("test_case_id")).cast(_DICT),
            per_agent("agent"),
            rows.column("metric").cast(pa.float64()),
            rows.column("score").cast(pa.float64()),
            per_agent("path"),
            per_agent("version"),
        ],
        schema=MATCH_SCHEMA,
    )


def build_match_table(store: Store, ledger: Ledger, previous: pa.Table | None = None, *, provisional: bool = False) -> pa.Table:
    """The accepted matches of the ledger's benchmark (see the module docstring).

    The agents with full uploads, or with ``provisional=True`` the provisional ones
    (:attr:`Ledger.provisional_agents`). ``previous`` is the same table from the last run, if any:
    rows of unchanged agents are taken from it instead of being read again.
    """
    partial = ledger.provisional_agents
    accepted = sorted((r for r in ledger.accepted if (r["agent"] in partial) == provisional), key=lambda r: r["agent"])
    slices = _agent_slices(previous) if previous is not None else {}
    reusable = manifest_of(previous, slices)
    copies = AcceptedCopies.read(store, ledger.benchmark)
    to_read = [
        r
        for r in accepted
        if not (reusable.get(r["agent"]) == (r["path"], r["version"], r["spec_version"]) and r["agent"] in slices)
    ]
    reader = copies.reader(to_read, columns=["test_case_id", "metric", "score"])
    del to_read
    pieces: list[pa.Table] = []
    fresh: list[dict] = []  # agents to read since the last reused run
    kept: list[int] = []  # [offset, length] of the current run of reused rows, contiguous in ``previous``

    def flush_fresh() -> None:
        if fresh:
            pieces.append(_read_piece(fresh, *reader.next_rows(len(fresh))))
            fresh.clear()

    def flush_kept() -> None:
        if kept:
            pieces.append(previous.slice(*kept).select(MATCH_SCHEMA.names).cast(MATCH_SCHEMA))
            kept.clear()

    for r in accepted:
        agent, source = r["agent"], (r["path"], r["version"], r["spec_version"])
        if reusable.get(agent) == source and agent in slices:
            offset, length = slices[agent]
            flush_fresh()
            if not kept or kept[0] + kept[1] != offset:
                flush_kept()
                kept[:] = [offset, 0]
            kept[1] += length
            continue
        flush_kept()
        fresh.append(r)
        if len(fresh) >= PIECE_AGENTS:
            flush_fresh()
    flush_fresh()
    flush_kept()
    if pieces:
        table = pa.concat_tables(pieces)
    else:
        table = MATCH_SCHEMA.empty_table()
    columns = [
        _canonical(table.column(c)) if c in DICTIONARY_COLUMNS else table.column(c).combine_chunks() for c in MATCH_SCHEMA.names
    ]
    return pa.Table.from_arrays(columns, schema=MATCH_SCHEMA.with_metadata({_SPECS: _spec_versions(accepted)}))


def every_match(*stored: Stored) -> pa.Table | None:
    """A benchmark's stored matches (``MATCH_COLUMNS``) of ``stored`` in turn: its match table, then its provisional
    agents' (partial uploads); None where none is stored (never rated, or withdrawn)."""
    tables = [s.read(list(MATCH_COLUMNS)) for s in stored if s.exists]
    if not tables:
        return None
    return pa.concat_tables([t.cast(tables[0].schema) for t in tables]) if len(tables) > 1 else tables[0]


def rated_matches(test_case_ratings: Stored, *stored: Stored) -> pa.Table | None:
    """:func:`every_match` of ``stored`` on the test cases the benchmark rates, those of its ``test_case_ratings``:
    benchmark.yaml's exclude leaves some out of the ratings, not of the match table. The matches as read where every
    test case is rated; else their ids re-encoded, so that no excluded id lingers in a dictionary (pandas would make
    a category of it)."""
    matches = every_match(*stored)
    if matches is None:
        return None
    rated = test_case_ratings.read(["test_case_id"]).column("test_case_id").cast(pa.string()).combine_chunks()
    kept = pc.is_in(matches.column("test_case_id"), value_set=rated)
    if pc.all(kept).as_py() is not False:
        return matches
    matches = matches.filter(kept)
    ids = matches.column("test_case_id").cast(pa.string()).dictionary_encode()
    return matches.set_column(matches.schema.get_field_index("test_case_id"), "test_case_id", ids)


def input_manifest(ledger: Ledger) -> pa.Table:
    """The exact inputs of the benchmark's ratings: agent_id, source_path, source_version, spec_version, matches, provisional."""
    accepted = sorted(ledger.accepted, key=lambda r: r["agent"])
    partial = ledger.provisional_agents
    return pa.table(
        {
            "agent_id": pa.array([r["agent"] for r in accepted], pa.string()),
            "source_path": pa.array([r["path"] for r in accepted], pa.string()),
            "source_version": pa.array([r["version"] for r in accepted], pa.string()),
            "spec_version": pa.array([r["spec_version"] for r in accepted], pa.string()),
            "matches": pa.array([r["rows"] for r in accepted], pa.int64()),
            "provisional": pa.array([r["agent"] in partial for r in accepted], pa.bool_()),
        }
    )


def test_case_metadata(
    store: Store, benchmark: str, uploads: list[dict], test_case_ids: list[str], *, max_columns: int = 20
) -> pd.DataFrame:
    """The metadata columns (``meta.*`` of accepted uploads) of a few test cases.

    Read from the ``uploads`` given (ledger rows: a few, e.g. :func:`~.ledger.first_accepted`) and at
    most ``max_columns`` metadata columns each, so the cost does not grow with the number of agents
    or columns; a value that differs between those uploads shows as ``varies``.
    Returns one row per test case: ``test_case_id`` plus one column per metadata name.
    """
    wanted = pa.array(test_case_ids, pa.string())
    values: dict[str, dict[str, set]] = {}
    copies = AcceptedCopies.read(store, benchmark)
    for r in uploads:
        names = [n for n in copies.schema(r).names if n.startswith("meta.")][:max_columns]
        if not names:
            continue
        table = copies.read_one(r, columns=["test_case_id", *names])
        table = table.filter(pc.is_in(table.column("test_case_id"), value_set=wanted))
        for row in table.to_pylist():
            for name in names:
                values.setdefault(name.removeprefix("meta."), {}).setdefault(row["test_case_id"], set()).add(str(row[name]))
    out = pd.DataFrame({"test_case_id": test_case_ids})
    for column, by_case in list(values.items())[:max_columns]:
        out[column] = [
            (next(iter(by_case[t])) if len(by_case.get(t, ())) == 1 else ("varies" if by_case.get(t) else ""))
            for t in test_case_ids
        ]
    return out
