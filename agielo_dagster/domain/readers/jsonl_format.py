"""The jsonl reader: line by line, duplicate keys and nesting checked, values turned into Arrow arrays in chunks."""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable, Sequence

import pyarrow as pa

from ..contract import (
    MAX_COLUMNS,
    MAX_JSON_DEPTH,
    MAX_QUOTED_CHARS,
    IngestError,
)
from .common import _JSONL_CHUNK_ROWS, _check_names, _cut, _decode, _Frame, _note, _Problem, _q

_JSONL_TEXT_BLOCK = 1 << 20

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _too_deep(value: object, limit: int) -> bool:
    """Whether arrays and objects nest deeper than ``limit`` (the value itself at depth 1); iterative."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        children = v.values() if type(v) is dict else v
        stack.extend((c, depth + 1) for c in children if type(c) in (dict, list))
    return False


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a float" if value == value and abs(value) != float("inf") else "a non-finite float"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _jsonl_lines(text: str):
    """(line number, line) for every line of the text, without its line break; bounded memory."""
    number, pos, n = 0, 0, len(text)
    while pos < n:
        end = text.find("\n", min(pos + _JSONL_TEXT_BLOCK, n - 1))
        end = n if end < 0 else end + 1
        block = text[pos:end]
        pos = end
        lines = block.split("\n")
        if block.endswith("\n"):
            lines.pop()
        for line in lines:
            number += 1
            yield number, line[:-1] if line.endswith("\r") else line


class _JsonlColumn:
    """One jsonl column built in chunks: Arrow pieces, each with its kind (string, int64, …, json)."""

    def __init__(self, name: str, role: str):
        self.name, self.role, self.covered = name, role, 0
        self.pieces: list[tuple[str, pa.Array]] = []


def _read_jsonl(data: bytes, file: str, roles: dict[str, str], check_header: Callable[[Sequence[str]], None]) -> _Frame:
    text = _decode(data, file)
    if text.startswith("\ufeff"):
        text = text[1:]
    columns: dict[str, _JsonlColumn] = {}
    lines = array("q")
    problems: dict[str, _Problem] = {}
    chunk: list[dict] = []
    rows = 0
    loads = json.JSONDecoder(object_pairs_hook=_object_without_duplicates).decode

    def flush() -> None:
        start = rows - len(chunk)
        for column in columns.values():
            if column.covered < start:  # the key first appears in this chunk: earlier rows lack it
                column.pieces.append(("null", pa.nulls(start - column.covered)))
            _append_piece(column, [r.get(column.name) for r in chunk], start, problems)
            column.covered = rows
        chunk.clear()

    for number, line in _jsonl_lines(text):
        if not line.strip(" \t\r"):
            continue
        try:
            obj = _parse_line(loads, line, number, file)
        except _DuplicateKey as dup:
            _raise_duplicate_key(file, number, line, dup.key)
        if type(obj) is not dict:
            raise IngestError(
                file, "jsonl_parse", f"line {number} is {_json_kind(obj)}, not a JSON object (one object per line)", line=number
            )
        if "\\u" in line and _SURROGATE_ESCAPE.search(line) and not _encodable(obj):
            raise IngestError(
                file,
                "jsonl_parse",
                f"line {number} has a lone surrogate escape (such as \\ud800), which is not text",
                line=number,
            )
        if (line.count("[") + line.count("{") > MAX_JSON_DEPTH) and _too_deep(obj, MAX_JSON_DEPTH):
            raise IngestError(
                file, "jsonl_depth", f"line {number} nests arrays or objects more than {MAX_JSON_DEPTH} deep", line=number
            )
        for key in obj:
            if key not in columns:
                if len(columns) >= MAX_COLUMNS:
                    raise IngestError(
                        file,
                        "header_width",
                        f"line {number} brings the number of distinct keys to {len(columns) + 1}; at most {MAX_COLUMNS} are allowed",
                        line=number,
                    )
                columns[key] = _JsonlColumn(key, roles.get(key, "meta"))
        chunk.append(obj)
        lines.append(number)
        rows += 1
        if len(chunk) >= _JSONL_CHUNK_ROWS:
            flush()
    if chunk:
        flush()
    if rows == 0:
        raise IngestError(file, "log_not_empty", "file has no JSON lines")
    names = list(columns)
    _check_names(names, file, "the file's keys")
    check_header(names)
    out = {name: _finish_column(column) for name, column in columns.items()}
    return _Frame(names, out, rows, lambda r: int(lines[r]) if 0 <= r < len(lines) else None, problems)


def _encodable(obj: dict) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _parse_line(loads: Callable[[str], object], line: str, number: int, file: str) -> object:
    """One jsonl line parsed; every failure but a duplicate key is a rejection naming the line."""
    try:
        return loads(line)
    except RecursionError:
        raise IngestError(
            file, "jsonl_depth", f"line {number} nests arrays or objects more than {MAX_JSON_DEPTH} deep", line=number
        ) from None
    except json.JSONDecodeError as exc:
        raise IngestError(
            file, "jsonl_parse", f"line {number} is not a JSON object: {exc.msg} (column {exc.colno})", line=number
        ) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        if "Exceeds the limit" in str(exc):
            raise IngestError(
                file, "jsonl_parse", f"line {number} has an integer of more than 4,300 digits", line=number
            ) from None
        raise IngestError(file, "jsonl_parse", f"line {number} is not valid JSON: {_cut(str(exc))}", line=number) from None


def _raise_duplicate_key(file: str, number: int, line: str, key: str) -> None:
    """A key repeated on a line: unique_columns at the top level, jsonl_parse inside a value (or a later syntax error)."""
    pairs = _parse_line(json.JSONDecoder(object_pairs_hook=list).decode, line, number, file)
    if not line.lstrip(" \t").startswith("{"):
        raise IngestError(file, "jsonl_parse", f"line {number} is not a JSON object (one object per line)", line=number)
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise IngestError(
            file, "unique_columns", f"line {number} has the key {_q(key)} twice; every key once per line", line=number
        ) from None
    raise IngestError(
        file, "jsonl_parse", f"line {number} repeats the key {_q(key)} inside a nested object", line=number
    ) from None


def _append_piece(column: _JsonlColumn, values: list, start: int, problems: dict) -> None:
    """Turn one chunk of a jsonl column into an Arrow piece, recording the first bad id or metric value."""
    if column.role == "id":
        column.pieces.append(("string", _id_piece(values, start, problems, column.name)))
    elif column.role == "metric":
        column.pieces.append(("float64", _metric_piece(values, start, problems, column.name)))
    else:
        column.pieces.append(_meta_piece(values))


def _id_piece(values: list, start: int, problems: dict, name: str) -> pa.Array:
    try:
        return pa.array(values, pa.string())
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    out: list[str | None] = []
    for i, v in enumerate(values):
        if type(v) is str or v is None:
            out.append(v)
        elif type(v) is int:
            out.append(str(v))
        else:
            out.append(None)
            _note(
                problems,
                name,
                start + i,
                "test_case_id_type",
                lambda v=v: (
                    f"test_case_id {_cut(_json_text(v), MAX_QUOTED_CHARS)} is {_json_kind(v)}; ids must be "
                    "JSON strings or integers (put the id in quotes as it should read)"
                ),
            )
    return pa.array(out, pa.string())


def _metric_piece(values: list, start: int, problems: dict, name: str) -> pa.Array:
    try:
        return pa.array(values, pa.float64())
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    out: list[float | None] = []
    for i, v in enumerate(values):
        t = type(v)
        if t is float or v is None:
            out.append(v)
            continue
        if t is bool or t is int:
            try:
                out.append(float(v))
                continue
            except OverflowError:
                reason = f"{name} {_q(v)} is too large for a 64-bit float"
        elif t is str:
            reason = f"{name} {_q(v)} is text, not a number; write plain numbers (not in quotes)"
        else:
            reason = f"{name} {_q(v)} is {_json_kind(v)}, not a number; write plain numbers"
        out.append(None)
        _note(problems, name, start + i, "metric_numeric", lambda reason=reason: reason)
    return pa.array(out, pa.float64())


_SCALAR_KINDS = {
    str: ("string", pa.string()),
    int: ("int64", pa.int64()),
    float: ("float64", pa.float64()),
    bool: ("bool", pa.bool_()),
}

_KIND_TYPES = dict(_SCALAR_KINDS.values())


def _meta_piece(values: list) -> tuple[str, pa.Array]:
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if not kinds:
        return "null", pa.nulls(len(values))
    if kinds == {int, float}:  # JSON numbers: float64 when every integer is exact in a float64
        try:
            return "float64", pa.array(values, pa.float64())
        except (pa.ArrowException, OverflowError, ValueError, TypeError):
            pass
    if len(kinds) == 1:
        (kind,) = kinds
        if kind in _SCALAR_KINDS:
            label, arrow_type = _SCALAR_KINDS[kind]
            try:
                return label, pa.array(values, arrow_type)
            except (pa.ArrowException, OverflowError, ValueError, TypeError):
                pass  # e.g. an integer beyond int64: kept as JSON text
    return "json", pa.array([None if v is None else _json_text(v) for v in values], pa.string())


def _json_text(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return _cut(repr(value), 1000)


def _finish_column(column: _JsonlColumn) -> pa.ChunkedArray:
    kinds = {k for k, _ in column.pieces} - {"null"}
    if kinds == {"int64", "float64"}:  # numbers: float64 when every integer is exact in a float64
        try:
            column.pieces = [(k, p.cast(pa.float64()) if k == "int64" else p) for k, p in column.pieces]
            kinds = {"float64"}
        except (pa.ArrowException, OverflowError, ValueError):
            pass
    if len(kinds) == 1 and "json" not in kinds:
        (kind,) = kinds
        arrow_type = _KIND_TYPES[kind]
        arrays = [p if k != "null" else pa.nulls(len(p), arrow_type) for k, p in column.pieces]
    elif not kinds:
        arrow_type = pa.string() if column.role == "id" else pa.float64() if column.role == "metric" else pa.null()
        arrays = [pa.nulls(len(p), arrow_type) for _, p in column.pieces]
    else:
        arrow_type = pa.string()
        arrays = [p if k == "json" else _to_json_text(p) for k, p in column.pieces]
    return pa.chunked_array(arrays, type=arrow_type)


def _to_json_text(values: pa.Array) -> pa.Array:
    """A typed piece as JSON text (for a column whose pieces disagree on the type); nulls stay null."""
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), pa.string())
    return pa.array([None if v is None else _json_text(v) for v in values.to_pylist()], pa.string())
