"""Data frames in and out of the engine: pandas, polars or pyarrow, validated, as arrays.

The engine works on integer-coded numpy arrays (int32 codes into sorted id arrays).
Functions accept a pandas or polars data frame or a ``pyarrow.Table`` and answer
in the flavour they were given.

A pyarrow table is encoded without a Python object per match: its id columns
(``string``, ``large_string``, ``string_view`` or ``dictionary<int, string>``, as
``pyarrow.parquet.read_table(..., read_dictionary=[...])`` gives them) are
dictionary-encoded in Arrow, the chunks' dictionaries unified, and only the
distinct ids become Python strings. Numeric columns are read without copying
where Arrow allows it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np
import pandas as pd

from .schema import MATCH_COLUMNS

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa
    from numpy.typing import ArrayLike

__all__ = ["MatchTableError", "Matches", "encode_matches", "plain_ids", "row_positions", "to_flavour", "to_pandas"]

Flavour = Literal["pandas", "polars", "arrow"]
Table: TypeAlias = "pd.DataFrame | pl.DataFrame | pa.Table"
"""A table in any of the flavours the engine reads, and answers in (the caller's)."""
Plain: TypeAlias = str | int | float | bool | None
"""A plain value of a summary the engine hands to asset metadata or JSON."""


class MatchTableError(ValueError):
    """A match table that breaks a rule; names the row, the column and the rule.

    Attributes
    ----------
    rule : str
        Short name of the rule, e.g. ``"score_in_range"`` or ``"match_unique"``.
    row : int | None
        0-based position of the (first) offending row.
    column : str | None
        The offending column.
    rows : tuple of int
        Every row the message names (e.g. both rows of a duplicate match).
    """

    def __init__(self, message: str, *, rule: str, row: int | None = None, column: str | None = None, rows: tuple[int, ...] = ()):
        super().__init__(message)
        self.rule = rule
        self.row = row
        self.column = column
        self.rows = rows or ((row,) if row is not None else ())


def flavour_of(df: Table) -> Flavour:
    if isinstance(df, pd.DataFrame):
        return "pandas"
    module = type(df).__module__
    if module.startswith("polars"):
        return "polars"
    if module.startswith("pyarrow") and type(df).__name__ in ("Table", "RecordBatch"):
        return "arrow"
    raise TypeError(f"expected a pandas or polars DataFrame or a pyarrow Table, got {type(df).__name__}")


def to_pandas(df: Table, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """A pandas view of a pandas, polars or pyarrow table (only ``columns``, when given: the others are not converted)."""
    flavour = flavour_of(df)
    if columns is not None:
        df = df[list(columns)] if flavour == "pandas" else df.select(list(columns))
    if flavour == "pandas":
        return df
    return df.to_pandas()


def to_flavour(df: pd.DataFrame, flavour: Flavour) -> Table:
    """Return ``df`` as the given flavour (pandas frames come back with a fresh RangeIndex)."""
    df = df.reset_index(drop=True)
    if flavour == "pandas":
        return df
    if flavour == "arrow":
        import pyarrow as pa

        return pa.Table.from_pandas(df, preserve_index=False)
    import polars as pl

    return pl.from_pandas(df)


def require_columns(df: Table, columns: tuple[str, ...], what: str) -> None:
    present = list(df.column_names) if hasattr(df, "column_names") else list(df.columns)
    missing = [c for c in columns if c not in present]
    if missing:
        raise MatchTableError(
            f"{what} lacks column(s) {', '.join(missing)}; it has {', '.join(map(str, present)) or 'none'} "
            "(rule: required_columns)",
            rule="required_columns",
            column=missing[0],
        )


def ids_of(df: pd.DataFrame, column: str, what: str) -> pd.Series:
    """The id column as strings; a missing id is an error naming its row."""
    values = df[column]
    null = values.isna().to_numpy()
    if null.any():
        row = int(np.flatnonzero(null)[0])
        raise MatchTableError(
            f"{what} row {row}: {column} is missing ({int(null.sum())} missing; rule: id_present)",
            rule="id_present",
            row=row,
            column=column,
        )
    if isinstance(values.dtype, pd.CategoricalDtype) and pd.api.types.is_string_dtype(values.cat.categories):
        return values  # factorizes through its codes
    return values if pd.api.types.is_string_dtype(values) else values.astype(str)


def row_positions(column: pa.Array | pa.ChunkedArray, ids: ArrayLike | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The row of each of ``ids`` in ``column`` (Arrow strings; the first row of an id listed twice), −1 where absent.

    One pass over the column against a hash table of the distinct ``ids``: a test-case table of millions of
    ids is never hashed itself (that table and its copy of the strings were ~40 bytes a test case, issue 25).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = (
        ids.cast(pa.string())
        if isinstance(ids, (pa.Array, pa.ChunkedArray))
        else pa.array(np.asarray(ids, dtype=object), pa.string())
    )
    distinct = pc.unique(ids)
    hit = pc.index_in(column.cast(pa.string()), value_set=distinct)  # per row, which of the ids it holds (null: none)
    if isinstance(hit, pa.ChunkedArray):
        hit = hit.combine_chunks()
    rows = np.flatnonzero(hit.is_valid().to_numpy(zero_copy_only=False))
    which, first = np.unique(hit.drop_null().to_numpy(), return_index=True)
    row_of = np.full(len(distinct), -1, dtype=np.int64)
    row_of[which] = rows[first]
    at = pc.index_in(ids, value_set=distinct)
    if isinstance(at, pa.ChunkedArray):
        at = at.combine_chunks()
    return row_of[at.to_numpy(zero_copy_only=False)] if len(at) else np.empty(0, dtype=np.int64)


def plain_ids(rows: pa.Table) -> pa.Table:
    """``test_case_id, agent_id, score`` of match rows, the ids as plain Arrow strings and the score as float64.

    Filtered, a dictionary column keeps its whole dictionary: a few rows of a wide benchmark's match table carried
    every test case's id, and pandas made a categorical of them (1 × 3M: 16.8 s and +1,098 MiB; issue 25).
    """
    import pyarrow as pa

    columns = ["test_case_id", "agent_id", "score"]
    types = [pa.string(), pa.string(), pa.float64()]
    return pa.table([rows.column(c).cast(t) for c, t in zip(columns, types, strict=True)], names=columns)


def test_case_index(tc: pd.DataFrame) -> pd.Index:
    """The test-case table's ids as a unique string index; a repeated id is an error naming it."""
    index = pd.Index(ids_of(tc, "test_case_id", "test-case table").astype(str).to_numpy(dtype=object))
    if not index.is_unique:
        dup = index[index.duplicated()][0]
        raise MatchTableError(
            f"test-case table lists {dup!r} more than once (rule: test_case_unique)",
            rule="test_case_unique",
            column="test_case_id",
        )
    return index


def floats_of(df: pd.DataFrame, column: str, what: str, lo: float = -np.inf, hi: float = np.inf) -> np.ndarray:
    """A finite float64 column within [lo, hi]; anything else is an error naming its row."""
    try:
        values = df[column].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        coerced = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        row = int(np.flatnonzero(np.isnan(coerced) & df[column].notna().to_numpy())[0])
        raise MatchTableError(
            f"{what} row {row}: {column} {df[column].iloc[row]!r} is not a number (rule: {column}_numeric)",
            rule=f"{column}_numeric",
            row=row,
            column=column,
        ) from None
    check_floats(values, column, what, lo, hi)
    return values


def check_floats(values: np.ndarray, column: str, what: str, lo: float = -np.inf, hi: float = np.inf) -> None:
    """Refuse NaN, ±inf and values outside [lo, hi], naming the first bad row."""
    from ._frame_kernels import count_bad

    if np.isfinite(lo) or np.isfinite(hi):
        bad_count = count_bad(values, float(lo), float(hi))
    else:
        bad_count = count_bad(values, -np.inf, np.inf)
    if bad_count == 0:
        return
    bad = ~np.isfinite(values) | (values < lo) | (values > hi)
    row = int(np.flatnonzero(bad)[0])
    rule = f"{column}_finite" if not np.isfinite(values[row]) else f"{column}_in_range"
    bounds = "a finite number" if rule.endswith("finite") else f"within [{lo:g}, {hi:g}]"
    raise MatchTableError(
        f"{what} row {row}: {column} {float(values[row])!r} is not {bounds} ({bad_count} bad value(s); rule: {rule})",
        rule=rule,
        row=row,
        column=column,
    )


@dataclass(frozen=True)
class Matches:
    """A validated, integer-coded match table.

    ``agent[i]`` and ``test_case[i]`` (int32) index ``agent_ids`` and ``test_case_ids``
    (both sorted), so codes and output rows are independent of row order.
    ``metric`` may be the very array ``score`` when the two columns are equal.
    """

    agent: np.ndarray  # int32 codes
    test_case: np.ndarray  # int32 codes
    score: np.ndarray  # float64 in [0, 1]
    metric: np.ndarray  # float64, finite
    agent_ids: np.ndarray  # object (str)
    test_case_ids: np.ndarray | pa.Array  # object (str); Arrow strings from rate_parquet (a wide benchmark's millions)
    flavour: Flavour

    def __len__(self) -> int:
        return len(self.score)

    @property
    def n_agents(self) -> int:
        return len(self.agent_ids)

    @property
    def n_test_cases(self) -> int:
        return len(self.test_case_ids)

    def reordered(self, order: np.ndarray) -> Matches:
        """The same matches, rows taken in ``order`` (ids and codes unchanged)."""
        score = self.score[order]
        metric = score if self.metric is self.score else self.metric[order]
        return replace(self, agent=self.agent[order], test_case=self.test_case[order], score=score, metric=metric)

    def subset(self, keep: np.ndarray) -> Matches:
        """The matches where ``keep`` (a boolean mask or row indices) holds; ids and codes unchanged."""
        return self.reordered(np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep))


def encode_matches(matches: Table, what: str = "match table", *, unique: bool = True) -> Matches:
    """Validate a match table (pandas, polars or pyarrow) and encode its ids as integers.

    Parameters
    ----------
    matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: one row per match.
    what : str
        How error messages name the table.
    unique : bool
        Refuse a repeated (agent, test case) pair (rule ``match_unique``); every
        estimator of the engine counts a match once, so this is on everywhere.

    Raises
    ------
    MatchTableError
        Naming the row, the column and the rule: ``required_columns``, ``non_empty``,
        ``id_present``, ``score_numeric``/``metric_numeric``, ``score_finite``/``metric_finite``,
        ``score_in_range``, ``match_unique``.
    """
    flavour = flavour_of(matches)
    if flavour == "pandas":
        m = _encode_pandas(matches, what)
    else:
        table = matches.to_arrow() if flavour == "polars" else matches
        if type(table).__name__ == "RecordBatch":
            import pyarrow as pa

            table = pa.Table.from_batches([table])
        m = _encode_arrow(table, what, flavour)
    if unique:
        check_unique_matches(m, what)
    return m


_PARALLEL_FACTORIZE_ROWS = 200_000


def _encode_pandas(matches: pd.DataFrame, what: str) -> Matches:
    df = matches
    require_columns(df, MATCH_COLUMNS, what)
    if len(df) == 0:
        raise MatchTableError(f"{what} has no rows (rule: non_empty)", rule="non_empty")
    test_case_raw = ids_of(df, "test_case_id", what)
    agent_raw = ids_of(df, "agent_id", what)
    score = floats_of(df, "score", what, 0.0, 1.0)
    metric = floats_of(df, "metric", what)
    if len(df) >= _PARALLEL_FACTORIZE_ROWS:  # hashing a million strings takes ~15 ms a column, without the GIL
        with ThreadPoolExecutor(1) as pool:
            agent_codes = pool.submit(pd.factorize, agent_raw, sort=True)
            test_case, test_case_ids = pd.factorize(test_case_raw, sort=True)
            agent, agent_ids = agent_codes.result()
    else:
        test_case, test_case_ids = pd.factorize(test_case_raw, sort=True)
        agent, agent_ids = pd.factorize(agent_raw, sort=True)
    return Matches(
        agent=agent.astype(np.int32),
        test_case=test_case.astype(np.int32),
        score=score,
        metric=score if np.array_equal(metric, score) else metric,
        agent_ids=np.asarray(agent_ids, dtype=object),
        test_case_ids=np.asarray(test_case_ids, dtype=object),
        flavour="pandas",
    )


def _encode_arrow(table: pa.Table, what: str, flavour: Flavour) -> Matches:
    from ._frame_kernels import equal

    require_columns(table, MATCH_COLUMNS, what)
    if table.num_rows == 0:
        raise MatchTableError(f"{what} has no rows (rule: non_empty)", rule="non_empty")
    test_case, test_case_ids = arrow_ids(table.column("test_case_id"), "test_case_id", what)
    agent, agent_ids = arrow_ids(table.column("agent_id"), "agent_id", what)
    score = arrow_floats(table.column("score"), "score", what, 0.0, 1.0)
    metric = arrow_floats(table.column("metric"), "metric", what)
    return Matches(
        agent=agent,
        test_case=test_case,
        score=score,
        metric=score if metric is score or equal(metric, score) else metric,
        agent_ids=agent_ids,
        test_case_ids=test_case_ids,
        flavour=flavour,
    )


def _first_null(column: pa.ChunkedArray) -> int:
    import pyarrow.compute as pc

    return int(pc.index(pc.is_null(column), True).as_py())


def arrow_ids(column: pa.ChunkedArray, name: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow id column as int32 codes into its sorted distinct ids (Python strings per id, not per row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        row = _first_null(column)
        raise MatchTableError(
            f"{what} row {row}: {name} is missing ({column.null_count} missing; rule: id_present)",
            rule="id_present",
            row=row,
            column=name,
        )
    if not pa.types.is_dictionary(column.type):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            column = column.cast(pa.large_string())
        column = pc.dictionary_encode(column)
    if column.num_chunks > 1:
        column = column.unify_dictionaries()
    chunks = [c for c in column.chunks if len(c)]
    dictionary = chunks[0].dictionary
    if not (pa.types.is_string(dictionary.type) or pa.types.is_large_string(dictionary.type)):
        dictionary = dictionary.cast(pa.large_string())
    indices = np.empty(len(column), dtype=np.int32)  # an index is below the dictionary's size, itself at most the rows
    start = 0
    for chunk in chunks:
        idx = chunk.indices.to_numpy(zero_copy_only=False)
        indices[start : start + len(idx)] = idx
        start += len(idx)
    values = np.asarray(dictionary.to_numpy(zero_copy_only=False), dtype=object)
    used = np.flatnonzero(np.bincount(indices, minlength=len(values)) > 0)
    ids, inverse = np.unique(values[used], return_inverse=True)
    if len(used) == len(values) and np.array_equal(inverse, np.arange(len(values))):
        return indices, np.asarray(ids, dtype=object)  # the dictionary is already the sorted distinct ids
    mapping = np.full(len(values), -1, dtype=np.int32)
    mapping[used] = inverse.astype(np.int32)
    from ._frame_kernels import remap

    return remap(indices, mapping), np.asarray(ids, dtype=object)


def arrow_floats(column: pa.ChunkedArray, name: str, what: str, lo: float = -np.inf, hi: float = np.inf) -> np.ndarray:
    """An Arrow numeric column as finite float64 within [lo, hi] (zero-copy when it already is)."""
    import pyarrow as pa

    t = column.type
    if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)):
        floats_of(pd.DataFrame({name: column.to_pandas()}), name, what, lo, hi)  # raises, naming the row
        raise MatchTableError(f"{what}: {name} has type {t}, not a number (rule: {name}_numeric)", rule=f"{name}_numeric")
    if column.null_count:
        row = _first_null(column)
        raise MatchTableError(
            f"{what} row {row}: {name} is missing ({column.null_count} missing; rule: {name}_finite)",
            rule=f"{name}_finite",
            row=row,
            column=name,
        )
    if t != pa.float64():
        column = column.cast(pa.float64())
    chunks = [c for c in column.chunks if len(c)]
    values = chunks[0].to_numpy(zero_copy_only=False) if len(chunks) == 1 else np.concatenate([c.to_numpy() for c in chunks])
    check_floats(values, name, what, lo, hi)
    return values


def check_unique_matches(m: Matches, what: str = "match table") -> None:
    """Refuse an (agent, test case) pair that occurs on more than one row (rule ``match_unique``).

    One bit per possible pair when agents × test cases fit in 2³¹ bits (256 MiB; 12 MiB for
    4,500 × 22,000), else a counting sort of the rows by test case.
    """
    from ._frame_kernels import count_repeats, earliest_repeat, first_duplicate

    cells = m.n_agents * m.n_test_cases
    if cells <= 1 << 31:
        seen = np.zeros((cells + 63) // 64, dtype=np.uint64)
        count = count_repeats(m.agent, m.test_case, m.n_test_cases, seen)
        first, second = earliest_repeat(m.agent, m.test_case, m.n_test_cases, seen) if count else (-1, -1)
    else:
        rows = np.empty(len(m), dtype=np.int32 if len(m) < 2**31 else np.int64)
        first, second, count = first_duplicate(m.agent, m.test_case, m.n_agents, m.n_test_cases, rows)
    if count:
        agent, test_case = m.agent_ids[m.agent[second]], m.test_case_ids[m.test_case[second]]
        test_case = test_case.as_py() if hasattr(test_case, "as_py") else test_case
        raise MatchTableError(
            f"{what} rows {first} and {second}: agent {agent!r} meets test case {test_case!r} more than once "
            f"({count} repeated row(s); each (agent, test case) pair is one match; rule: match_unique)",
            rule="match_unique",
            row=int(second),
            column="agent_id",
            rows=(int(first), int(second)),
        )
