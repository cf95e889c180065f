"""Test-case tags: read, validated and merged, from a tag file or from the uploads' metadata columns.

A benchmark's test cases can carry tags (a subject, a source, the abilities a case needs, …):

- **a tag file**, ``raw/<benchmark>/test_cases.<csv|parquet|jsonl>`` (:data:`TAG_FILE_NAMES`; the
  stem ``test_cases`` is not an agent): a ``test_case_id`` column and one column per tag, one
  row per test case. It goes through the same readers as an upload (size, UTF-8, csv grammar,
  header width, parquet and jsonl limits), and :func:`read_tags` adds the rules below;
- **upload metadata**: the ``meta.<name>`` columns an accepted upload keeps
  (:func:`tags_from_metadata`). Only columns that give every test case one value in every
  upload become tags: a column that differs between agents (a prediction, a latency) describes
  the agent's answer, not the test case, and is left out.

Tag values are text. A value, and each item of a list, is trimmed of white space; an empty value
is a missing tag. A column where any value holds ``;`` is **multi-valued** (``list<string>``):
``algebra; geometry`` is the list ``[algebra, geometry]``, and a value without ``;`` is a list of
one. In jsonl and parquet a tag may also be an array of strings, numbers or booleans (a parquet
``list<string>`` column): a column holding any array is multi-valued. Numbers and booleans become
their text (``3``, ``0.5``, ``true``).

Rules of a tag file (each an :class:`~.contract.IngestError` naming the file, the data row, for
csv the line, and the rule; nothing else escapes):

- ``has_test_case_id``: a ``test_case_id`` column; ``has_tags``: at least one other column;
- ``tag_name``: tag names are 1–64 characters, ASCII letters, digits, ``_ . -``, starting with a
  letter or ``_`` (a query names them as they are); ``tag_name_reserved``: not ``rating``,
  ``benchmark`` or ``agent_id`` (query fields of their own);
- ``has_rows``; ``test_case_id_present``, ``test_case_id_trimmed``, ``test_case_id_unique``,
  ``test_case_id_type``: ids as in uploads (one row per test case, text or integers, as written);
- ``tag_value_length``: a value or list item of at most :data:`MAX_TAG_VALUE_CHARS` characters;
- ``tag_list_item_empty``: no empty list item (``a;;b``, a trailing ``;``);
  ``tag_list_duplicate``: no item twice in one value; ``tag_list_length``: at most
  :data:`MAX_TAG_ITEMS` items;
- ``tag_value_type``: no objects, nested arrays or binary values.

Merge rule (:func:`merge_tags`): a tag file's column replaces the metadata column of the same
name entirely (for every test case, listed or not); other metadata tags are kept; the rows are
the union of the test cases of both. Test cases that are not in the benchmark are kept and
ignored by whatever joins the tags to the ratings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .contract import MAX_LOG_BYTES, IngestError, Problems
from .layout import TAG_FILE_NAMES, TAG_FILE_STEM, is_tag_file  # noqa: F401 - part of this module's interface
from .readers.common import (
    _PADDED_RE,
    ID_COLUMN,
    _first,
    _Frame,
    _names,
    _prelude,
    _q,
)
from .readers.csv_format import _read_csv
from .readers.jsonl_format import _read_jsonl
from .readers.parquet_format import _read_parquet
from .readers.upload import _first_value_problem

__all__ = [
    "LIST_SEPARATOR",
    "MAX_TAG_ITEMS",
    "MAX_TAG_VALUE_CHARS",
    "RESERVED_TAG_NAMES",
    "TAG_FILE_NAMES",
    "abilities_of",
    "is_tag_file",
    "merge_tags",
    "read_tags",
    "tags_from_metadata",
]

LIST_SEPARATOR = ";"
MAX_TAG_VALUE_CHARS = 200
MAX_TAG_ITEMS = 64
MAX_TAG_NAME_CHARS = 64
RESERVED_TAG_NAMES = ("rating", "benchmark", "agent_id")
_TAG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


class _Bad(Exception):
    """A tag value that breaks a rule: 0-based row, rule, detail (turned into an IngestError by the caller)."""

    def __init__(self, row0: int, rule: str, detail: str):
        super().__init__(detail)
        self.row0, self.rule, self.detail = row0, rule, detail


def tag_name_problem(name: str) -> tuple[str, str] | None:
    """(rule, detail) when ``name`` cannot be a tag name, else None."""
    if name == ID_COLUMN:
        return None
    if len(name) > MAX_TAG_NAME_CHARS or not _TAG_NAME.match(name):
        return (
            "tag_name",
            f"tag column {_q(name)} is not a tag name: 1-{MAX_TAG_NAME_CHARS} ASCII letters, digits, _ . -, "
            "starting with a letter or _",
        )
    if name in RESERVED_TAG_NAMES:
        return "tag_name_reserved", f"tag column {_q(name)} is reserved (queries use {', '.join(RESERVED_TAG_NAMES)}); rename it"
    return None


# -- the tag file ------------------------------------------------------------------------------


def read_tags(data: bytes, file: str, *, max_bytes: int = MAX_LOG_BYTES) -> pa.Table:
    """Read and check a tag file.

    Returns ``test_case_id`` (string) and one column per tag in file order: ``string``, or
    ``list<string>`` for a multi-valued tag (module docstring). Raises :class:`IngestError` for
    every problem, and nothing else. Read in the decoder process, as uploads are.
    """
    from .readers import read_isolated

    (outcome,) = read_isolated("tags", {}, [(data, file)], max_bytes)
    if isinstance(outcome, IngestError):
        raise outcome
    return outcome


def _read_tags(data: bytes, file: str, max_bytes: int) -> pa.Table:
    fmt = _prelude(data, file, max_bytes)

    def check_header(names: Sequence[str]) -> None:
        if ID_COLUMN not in names:
            raise IngestError(file, "has_test_case_id", f"no test_case_id column; columns are {_names(names)}")
        if len(names) < 2:
            raise IngestError(file, "has_tags", "no tag column beside test_case_id; add one column per tag")
        for name in names:
            problem = tag_name_problem(name)
            if problem:
                raise IngestError(file, *problem)

    roles = {ID_COLUMN: "id"}
    if fmt == "csv":
        frame = _read_csv(data, file, check_header)
    elif fmt == "jsonl":
        frame = _read_jsonl(data, file, roles, check_header)
    else:
        frame = _read_parquet(data, file, roles, check_header, max_bytes)
    if frame.rows == 0:
        raise IngestError(file, "has_rows", "the file has a header but no rows")

    problems = Problems(file, frame.line_of)  # every rule the file breaks is named (the first row of each)
    ids = _checked_ids(frame, problems.add)
    names, arrays = [ID_COLUMN], [ids]
    for name in frame.names:
        if name == ID_COLUMN:
            continue
        try:
            arrays.append(tag_values(frame.columns[name], name, json_arrays=fmt != "csv"))
        except _Bad as bad:
            problems.add(bad.row0, bad.rule, bad.detail)
        names.append(name)
    problems.raise_if_any()
    return pa.Table.from_arrays(arrays, names=names)


def _checked_ids(frame: _Frame, reject) -> pa.Array:
    ids = frame.columns[ID_COLUMN]
    if not pa.types.is_string(ids.type):
        ids = ids.cast(pa.string())
    lengths = pc.binary_length(ids)
    missing_ids = bool(ids.null_count or ID_COLUMN in frame.problems or pc.min(lengths).as_py() == 0)
    if missing_ids:
        missing = pc.or_kleene(pc.is_null(ids), pc.equal(lengths, 0))
        _first_value_problem(
            frame,
            ID_COLUMN,
            missing,
            reject,
            lambda r, n: f"test_case_id is missing or empty ({n} row(s)); every row needs an id",
        )
    padded = pc.match_substring_regex(ids, _PADDED_RE)
    r = _first(padded)
    if r >= 0:
        reject(
            r,
            "test_case_id_trimmed",
            f"test_case_id {_q(ids[r].as_py())} has leading or trailing white space; ids are used as written",
        )
    if not missing_ids and len(pc.unique(ids)) != frame.rows:  # (missing ids are not repeats)
        codes = ids.combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False)
        _, first_at = np.unique(codes, return_index=True)
        again = np.ones(len(codes), dtype=bool)
        again[first_at] = False
        r = int(np.argmax(again))
        reject(
            r,
            "test_case_id_unique",
            f"test case {_q(ids[r].as_py())} appears again (first at data row {int(first_at[codes[r]]) + 1}); "
            "a tag file has one row per test case (list several values as a;b)",
        )
    return ids.combine_chunks()


# -- tag values --------------------------------------------------------------------------------


def tag_values(values: pa.ChunkedArray | pa.Array, name: str, *, json_arrays: bool) -> pa.Array:
    """One tag column as ``string`` or ``list<string>`` (module docstring); raises ``_Bad`` naming the first bad row."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    if pa.types.is_dictionary(t):
        values, t = values.cast(t.value_type), t.value_type
    if pa.types.is_null(t):
        return pa.nulls(len(values), pa.string())
    if pa.types.is_nested(t):  # a list column that was not turned into JSON text (metadata of an in-memory table)
        values = pa.array([None if v is None else json.dumps(v, default=str) for v in values.to_pylist()], pa.string())
        json_arrays, t = True, pa.string()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        r = _first(pc.is_valid(values))
        if r >= 0:
            raise _Bad(r, "tag_value_type", f"tag {_q(name)} holds binary values; tags are text")
    try:
        text = values.cast(pa.string())
    except (pa.ArrowException, ValueError) as exc:
        r = _first(pc.is_valid(values))
        raise _Bad(max(r, 0), "tag_value_type", f"tag {_q(name)} of type {t} cannot be read as text ({exc})") from None
    if json_arrays and pc.any(pc.match_substring_regex(text, r'^[\[{"]')).as_py():  # JSON text: a column of mixed kinds
        decoded = _json_lists(text, name)
        if decoded is not None and pa.types.is_list(decoded.type):
            return decoded
        if decoded is not None:
            text = decoded  # scalars as text: read like any text below
    text = pc.utf8_trim_whitespace(text)
    text = pc.if_else(pc.equal(pc.utf8_length(text), 0), pa.scalar(None, pa.string()), text)
    if not pc.any(pc.match_substring(text, LIST_SEPARATOR)).as_py():
        _check_lengths(text, np.arange(len(text)), name)
        return text
    parts = pc.split_pattern(text, LIST_SEPARATOR)
    items = pc.utf8_trim_whitespace(parts.values)
    rows = pc.list_parent_indices(parts).to_numpy(zero_copy_only=False)
    lists = pa.ListArray.from_arrays(parts.offsets, items, mask=parts.is_null())
    _check_lists(lists, items, rows, name)
    return lists


def _check_lengths(items: pa.Array, rows: np.ndarray, name: str) -> None:
    long = pc.greater(pc.utf8_length(items), MAX_TAG_VALUE_CHARS)
    r = _first(long)
    if r >= 0:
        raise _Bad(
            int(rows[r]),
            "tag_value_length",
            f"tag {_q(name)} value {_q(items[r].as_py())} is {len(items[r].as_py())} characters; at most {MAX_TAG_VALUE_CHARS}",
        )


def _check_lists(lists: pa.ListArray, items: pa.Array, rows: np.ndarray, name: str) -> None:
    empty = pc.equal(pc.utf8_length(items), 0)
    r = _first(empty)
    if r >= 0:
        raise _Bad(
            int(rows[r]),
            "tag_list_item_empty",
            f"tag {_q(name)} has an empty item (two {LIST_SEPARATOR!r} in a row, or one at an end); "
            f"list values as a{LIST_SEPARATOR}b",
        )
    _check_lengths(items, rows, name)
    counts = pc.list_value_length(lists)
    r = _first(pc.greater(counts, MAX_TAG_ITEMS))
    if r >= 0:
        raise _Bad(r, "tag_list_length", f"tag {_q(name)} lists {counts[r].as_py()} items; at most {MAX_TAG_ITEMS}")
    pairs = pd.DataFrame({"row": rows, "item": items.to_numpy(zero_copy_only=False)})
    again = pairs.duplicated().to_numpy()
    if again.any():
        i = int(np.argmax(again))
        raise _Bad(int(rows[i]), "tag_list_duplicate", f"tag {_q(name)} lists {_q(pairs['item'].iloc[i])} twice in one value")


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _json_lists(text: pa.Array, name: str) -> pa.Array | None:
    """A column of JSON text (jsonl or parquet values of mixed kinds, arrays, objects) as ``string`` or ``list<string>``.

    None when some value is not JSON at all: the column is plain text that happens to start with '[' or '{'.
    """
    out: list[list[str] | None] = []
    bad: _Bad | None = None
    for row, value in enumerate(text.to_pylist()):
        if value is None:
            out.append(None)
            continue
        try:
            decoded = json.loads(value)
        except ValueError:
            return None
        items = decoded if isinstance(decoded, list) else [decoded]
        texts = [_scalar_text(v) for v in items]  # None for an object or a nested array
        if any(t is None for t in texts) and bad is None:
            bad = _Bad(
                row, "tag_value_type", f"tag {_q(name)} holds {_q(value)}: tags are text, numbers, booleans or arrays of them"
            )
        out.append([t.strip() for t in texts if t is not None])
    if bad is not None:
        raise bad
    if all(v is None or len(v) == 1 for v in out) and not any(
        isinstance(json.loads(v), list) for v in text.drop_null().to_pylist()
    ):
        return pa.array([None if v is None else v[0] for v in out], pa.string())  # scalars of mixed kinds: their text
    lists = pa.array(out, pa.list_(pa.string()))
    lists = pc.if_else(pc.equal(pc.list_value_length(lists), 0), pa.scalar(None, lists.type), lists)
    flat_rows = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    _check_lists(lists, pc.list_flatten(lists), flat_rows, name)
    return lists


# -- upload metadata ---------------------------------------------------------------------------


def _value_key(value: Any) -> Any:
    if isinstance(value, (list, tuple, np.ndarray)):
        return "\x1f".join(map(str, value))
    return value


def tags_from_metadata(table: pa.Table | pd.DataFrame | Sequence[pa.Table | pd.DataFrame]) -> pa.Table:
    """Tags from the ``meta.<name>`` columns of accepted uploads.

    Parameters
    ----------
    table : pyarrow.Table, DataFrame, or a sequence of them
        Accepted uploads (:func:`~.readers.read_upload`'s output) of one benchmark: one table, or
        one per upload (a test case then appears once per upload; the uploads' formats may differ).

    Returns
    -------
    pyarrow.Table
        ``test_case_id`` (one row per test case, in order of first appearance) and a tag ``<name>``
        for every ``meta.<name>`` column that has a valid tag name (:func:`tag_name_problem`),
        passes the value rules of a tag file in every upload, and gives each test case at most one
        distinct value across the uploads (ignoring missing values). Other metadata columns are
        left out: metadata never rejects anything.
    """
    tables = list(table) if isinstance(table, (list, tuple)) else [table]
    tables = [t if isinstance(t, pa.Table) else pa.Table.from_pandas(t, preserve_index=False) for t in tables]
    for t in tables:
        if ID_COLUMN not in t.column_names:
            raise ValueError(f"an accepted upload has a {ID_COLUMN} column; this table has {', '.join(t.column_names)}")
    ids = np.concatenate(
        [t.column(ID_COLUMN).cast(pa.string()).to_numpy(zero_copy_only=False).astype(object) for t in tables]
        or [np.array([], dtype=object)]
    )
    unique_ids, first_row = np.unique(ids, return_index=True)
    order = np.sort(first_row)  # test cases in order of first appearance
    out_names, out_arrays = [ID_COLUMN], [pa.array(ids[order], pa.string())]
    names = list(dict.fromkeys(c for t in tables for c in t.column_names if c.startswith("meta.")))
    for column in names:
        name = column[len("meta.") :]
        if tag_name_problem(name) is not None:
            continue
        pieces: list[pa.Array] = []
        try:
            for t in tables:
                if column in t.column_names:
                    pieces.append(tag_values(t.column(column), name, json_arrays=True))
                else:
                    pieces.append(pa.nulls(t.num_rows, pa.string()))
        except _Bad:
            continue
        multi = any(pa.types.is_list(p.type) for p in pieces)
        pylist = [(None if v is None else [v] if multi and isinstance(v, str) else v) for p in pieces for v in p.to_pylist()]
        frame = pd.DataFrame({"id": ids, "key": [None if v is None else _value_key(v) for v in pylist]}).dropna()
        if len(unique_ids) != len(ids) and (frame.groupby("id")["key"].nunique() > 1).any():
            continue  # differs between uploads: about the agent's answer, not the test case
        first_value = pd.Series(frame.index.to_numpy(), index=frame["id"].to_numpy())
        first_value = first_value[~first_value.index.duplicated()]
        rows = first_value.reindex(ids[order]).to_numpy()
        out_names.append(name)
        out_arrays.append(
            pa.array([None if np.isnan(r) else pylist[int(r)] for r in rows], pa.list_(pa.string()) if multi else pa.string())
        )
    return pa.Table.from_arrays(out_arrays, names=out_names)


def merge_tags(file_tags: pa.Table | None, metadata_tags: pa.Table | None) -> pa.Table | None:
    """The tags of a benchmark: the tag file's columns, then the metadata tags it does not name (module docstring)."""
    if file_tags is None or metadata_tags is None:
        return file_tags if metadata_tags is None else metadata_tags
    extra = [c for c in metadata_tags.column_names if c != ID_COLUMN and c not in file_tags.column_names]
    file_ids = file_tags.column(ID_COLUMN).to_numpy(zero_copy_only=False).astype(object)
    meta_ids = metadata_tags.column(ID_COLUMN).to_numpy(zero_copy_only=False).astype(object)
    only_meta = meta_ids[~np.isin(meta_ids, file_ids)]
    ids = np.concatenate([file_ids, only_meta])
    names, arrays = [ID_COLUMN], [pa.array(ids, pa.string())]
    for c in file_tags.column_names[1:]:
        column = file_tags.column(c).combine_chunks()
        arrays.append(pa.concat_arrays([column, pa.nulls(len(only_meta), column.type)]))
        names.append(c)
    if extra:
        where = pd.Index(meta_ids).get_indexer(ids)
        take = pa.array(np.where(where >= 0, where, 0))
        missing = pa.array(where < 0)
        for c in extra:
            column = metadata_tags.column(c).combine_chunks()
            taken = column.take(take)
            arrays.append(pc.if_else(missing, pa.scalar(None, column.type), taken))
            names.append(c)
    return pa.Table.from_arrays(arrays, names=names)


def abilities_of(tags: Any, tag: str = "abilities") -> pd.DataFrame:
    """The long frame ``item_id, ability`` of a tag (one row per test case and value), for :func:`~agielo_dagster.rating.ability_masses`."""
    df = tags.to_pandas() if isinstance(tags, pa.Table) else pd.DataFrame(tags)
    if tag not in df.columns:
        raise KeyError(f"no tag {tag!r}; tags are {', '.join(c for c in df.columns if c != ID_COLUMN) or 'none'}")
    values = df[tag].map(lambda v: list(v) if isinstance(v, (list, tuple, np.ndarray)) else ([] if v is None or v != v else [v]))
    long = pd.DataFrame({"item_id": df[ID_COLUMN].astype(str), "ability": values}).explode("ability").dropna()
    return long.astype({"ability": str}).drop_duplicates().reset_index(drop=True)
