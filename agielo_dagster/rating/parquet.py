"""Rating straight from parquet files: ids stay dictionary-encoded, nothing goes through pandas.

A benchmark of 10⁸ matches (the Open LLM Leaderboard: 4,500 agents × 22,000 test cases)
is read one row group at a time, straight into preallocated arrays: int32 codes for the
ids (each row group's dictionary codes, renumbered once the distinct ids are found and sorted in
Arrow; only distinct agent ids become Python strings, the test cases' stay Arrow strings) and
float64 metric and score. Only those arrays stay in memory, about 20 bytes a match (12 when the
metric equals the score).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ._frame_kernels import equal, remap
from .frames import (
    MATCH_COLUMNS,
    Matches,
    MatchTableError,
    _first_null,
    check_floats,
    check_unique_matches,
    floats_of,
)
from .ratings import rate_encoded
from .result import RatingResult
from .settings import RatingSettings, Setting

__all__ = ["encode_parquet", "rate_parquet", "read_matches"]

if TYPE_CHECKING:
    import fsspec
    import pyarrow as pa
    import pyarrow.fs

Source: TypeAlias = "str | PathLike[str] | bytes | pa.Buffer"
"""A parquet file: a path, or the file in memory."""
Paths: TypeAlias = "Source | Sequence[Source]"
FileSystem: TypeAlias = "pyarrow.fs.FileSystem | fsspec.AbstractFileSystem"
"""Where the paths live (e.g. S3): a pyarrow or fsspec filesystem."""


def _sources(paths: Paths) -> list[Any]:
    """Paths as strings; in-memory files (``pyarrow.Buffer`` or bytes) as they are."""

    def one(p: Any) -> Any:
        return str(p) if isinstance(p, (str, PathLike)) else p

    return [one(p) for p in paths] if isinstance(paths, (list, tuple)) else [one(paths)]


def _open(source: Any, filesystem: Any, **options: Any) -> Any:
    """A new ``ParquetFile`` over a path or an in-memory file (each reader gets its own position)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(source, (bytes, pa.Buffer)):
        return pq.ParquetFile(pa.BufferReader(source), **options)
    return pq.ParquetFile(source, filesystem=filesystem, **options)


def read_matches(paths: Paths, *, filesystem: FileSystem | None = None) -> pa.Table:
    """The match columns of one or more parquet files as a ``pyarrow.Table``, ids dictionary-encoded."""
    import pyarrow.parquet as pq

    sources = _sources(paths)
    return pq.read_table(
        sources if len(sources) > 1 else sources[0],
        columns=list(MATCH_COLUMNS),
        read_dictionary=["test_case_id", "agent_id"],
        filesystem=filesystem,
    )


def _row_groups(sources: list[str], filesystem: Any) -> Iterator[Any]:
    """Every row group of every file, in order, read two at a time in threads (pyarrow decodes without the GIL).

    Each read opens its own reader: a ``ParquetFile`` is not safe to share between threads.
    """

    def read(source: str, group: int) -> Any:
        reader = _open(source, filesystem, read_dictionary=["test_case_id", "agent_id"])
        return reader.read_row_group(group, columns=list(MATCH_COLUMNS))

    jobs = [(s, g) for s in sources for g in range(_open(s, filesystem).num_row_groups)]
    with ThreadPoolExecutor(2) as pool:
        pending = [pool.submit(read, *job) for job in jobs[:2]]
        for k in range(len(jobs)):
            table = pending.pop(0).result()
            if k + 2 < len(jobs):
                pending.append(pool.submit(read, *jobs[k + 2]))
            yield table


class _Ids:
    """Codes for ids arriving as one Arrow dictionary (or string) chunk at a time, numbered by the sorted ids at the end.

    Each chunk's codes are its own dictionary's until :meth:`sorted` finds the distinct ids and sorts them
    in Arrow (UTF-8 byte order, which is the code-point order of Python's ``sorted``), then renumbers each
    chunk through its dictionary's place among them: no Python string but one per distinct id, no dict of
    them (on a wide benchmark of 2 million test cases the dict and its strings were ~450 MB, issue 25).
    """

    def __init__(self, name: str):
        self.name = name
        self.chunks: list[tuple[int, int, Any]] = []  # (first row, rows, the chunk's dictionary)

    def encode(self, chunk: Any, out: np.ndarray, offset: int, what: str) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if chunk.null_count:
            row = offset + _first_null(chunk)
            raise MatchTableError(
                f"{what} row {row}: {self.name} is missing (rule: id_present)", rule="id_present", row=row, column=self.name
            )
        if not pa.types.is_dictionary(chunk.type):
            if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
                chunk = chunk.cast(pa.large_string())
            chunk = pc.dictionary_encode(chunk)
        out[offset : offset + len(chunk)] = chunk.indices.to_numpy(zero_copy_only=False)
        self.chunks.append((offset, len(chunk), chunk.dictionary.cast(pa.large_string())))

    def sorted(self, codes: np.ndarray, *, arrow: bool = False) -> np.ndarray | pa.Array:
        """Renumber ``codes`` (in place) so that they follow the sorted ids; returns the ids (Arrow strings with ``arrow``)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.chunks:
            return pa.array([], pa.large_string()) if arrow else np.array([], dtype=object)
        # every chunk's dictionary encoded at once (one hash table, however many chunks), the distinct ids sorted
        entries = pc.dictionary_encode(pa.concat_arrays([d for _, _, d in self.chunks]))
        spans = [(offset, rows, len(d)) for offset, rows, d in self.chunks]
        self.chunks.clear()
        order = pc.sort_indices(entries.dictionary)
        rank = np.empty(len(order), dtype=np.int32)
        rank[order.to_numpy()] = np.arange(len(order), dtype=np.int32)
        ids = entries.dictionary.take(order)
        at = entries.indices.to_numpy()
        del entries, order
        start = 0
        for offset, rows, size in spans:
            place = rank[at[start : start + size]]
            codes[offset : offset + rows] = remap(codes[offset : offset + rows], place)
            start += size
        return ids if arrow else ids.to_numpy(zero_copy_only=False)


def _floats(chunk: Any, name: str, out: np.ndarray, offset: int, what: str) -> None:
    import pyarrow as pa

    if chunk.null_count:
        row = offset + _first_null(chunk)
        raise MatchTableError(
            f"{what} row {row}: {name} is missing (rule: {name}_finite)", rule=f"{name}_finite", row=row, column=name
        )
    t = chunk.type
    if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)):
        import pandas as pd

        try:
            floats_of(pd.DataFrame({name: chunk.to_pandas()}), name, what)
        except MatchTableError as err:  # name the row of the whole table, not of the chunk
            row = offset + (err.row or 0)
            raise MatchTableError(
                f"{what} row {row}: {name} is not a number (rule: {name}_numeric)", rule=f"{name}_numeric", row=row, column=name
            ) from None
    out[offset : offset + len(chunk)] = chunk.to_numpy(zero_copy_only=False)


def encode_parquet(paths: Paths, *, filesystem: FileSystem | None = None, what: str = "match table") -> Matches:
    """Validate and encode the matches of parquet file(s), one row group at a time (see the module docstring)."""

    sources = _sources(paths)
    n = 0
    for source in sources:
        meta = _open(source, filesystem)
        missing = [c for c in MATCH_COLUMNS if c not in meta.schema_arrow.names]
        if missing:
            raise MatchTableError(
                f"{what} {source if isinstance(source, str) else '(in memory)'} lacks column(s) {', '.join(missing)} (rule: required_columns)",
                rule="required_columns",
                column=missing[0],
            )
        n += meta.metadata.num_rows
    if n == 0:
        raise MatchTableError(f"{what} has no rows (rule: non_empty)", rule="non_empty")
    agent, test_case = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
    score, metric = np.empty(n), np.empty(n)
    agents, cases = _Ids("agent_id"), _Ids("test_case_id")
    offset = 0
    for table in _row_groups(sources, filesystem):
        for k in range(table.column(0).num_chunks):
            chunk = {c: table.column(c).chunk(k) for c in MATCH_COLUMNS}
            cases.encode(chunk["test_case_id"], test_case, offset, what)
            agents.encode(chunk["agent_id"], agent, offset, what)
            _floats(chunk["score"], "score", score, offset, what)
            _floats(chunk["metric"], "metric", metric, offset, what)
            offset += len(chunk["score"])
    check_floats(score, "score", what, 0.0, 1.0)
    check_floats(metric, "metric", what)
    if equal(metric, score):
        metric = score  # one array serves both (about 800 MB fewer for 10⁸ matches)
    # the test cases' ids stay Arrow strings: a wide benchmark's millions of them as Python strings were ~70 bytes each
    m = Matches(agent, test_case, score, metric, agents.sorted(agent), cases.sorted(test_case, arrow=True), "arrow")
    check_unique_matches(m, what)
    return m


def rate_parquet(
    paths: Paths, *, filesystem: FileSystem | None = None, settings: RatingSettings | None = None, **rate_kwargs: Setting
) -> RatingResult:
    """:func:`~agielo_dagster.rating.rate` on the matches of parquet file(s); tables come back as ``pyarrow.Table``.

    Parameters
    ----------
    paths : path or sequence of paths
        Parquet files with the columns ``test_case_id, agent_id, metric, score`` (others are not
        read); ids as strings or dictionary-encoded strings.
    filesystem : pyarrow or fsspec filesystem, optional
        Where the paths live (e.g. S3).
    settings : RatingSettings, optional
        The rating's settings, built once (the pipeline's way); or else
    **rate_kwargs
        the keyword arguments of :func:`~agielo_dagster.rating.rate` (``seed``, ``orders``, …).

    Returns
    -------
    RatingResult
        The same numbers as ``rate(pyarrow.parquet.read_table(paths))``, without holding the table.
    """
    if settings is not None and rate_kwargs:
        raise TypeError(f"rate_parquet: give settings or keyword arguments, not both ({', '.join(sorted(rate_kwargs))})")
    settings = settings if settings is not None else RatingSettings.of(rate_kwargs)
    return rate_encoded(encode_parquet(paths, filesystem=filesystem), settings)
