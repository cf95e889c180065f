"""Strict readers for uploads: bytes in, a checked Arrow table out, or exactly one :class:`IngestError`.

:func:`read_upload` reads one agent's upload (``raw/<benchmark>/<agent>.<csv|parquet|jsonl>``) and
enforces the input contract; :func:`read_rows` is the same format readers without the contract, for
other tabular inputs (pairwise judgments ``item_a,item_b,winner``). The suffix of the file name
(case-insensitive) picks the format. No Dagster, no storage: bytes come from the caller.

Every problem with the bytes, however pathological, is an :class:`IngestError` naming the file,
the 1-based data row and file line where known, and the rule; its message is at most about
:data:`~.contract.MAX_MESSAGE_CHARS` characters and quotes values cut to
:data:`~.contract.MAX_QUOTED_CHARS`. A file that parses but breaks the contract in several ways
(ids, metric values, range) gets one error naming every rule it breaks, in file order: the first
row of each rule described, the next :data:`~.contract.MAX_ROWS_NAMED` numbered and the rest
counted (:class:`~.contract.Problems`; at most :data:`~.contract.MAX_REPORT_CHARS` characters).
Problems that stop the reading itself (encoding, row width, the header, limits) are named alone. Any unforeseen exception while reading is turned into the
rule ``read_error`` rather than escaping (a crash would make the step retry, then fail unnamed).

Test-case ids (one typing rule in every format)
------------------------------------------------
Ids are text and are never rewritten: no trimming, no case folding, no number formatting.

- **csv**: every id is read as text exactly as written (``001``, ``1`` and ``1.0`` are three ids).
- **jsonl and parquet**: an id is a string or an integer. An integer becomes its decimal text
  (``1`` → ``"1"``, ``-7`` → ``"-7"``), so a jsonl or parquet integer id ``1`` is the same test
  case as a csv id ``1`` (but not ``001``). A JSON ``null``, a missing key or a parquet null is
  ``test_case_id_present``; a float (``1.0``, ``1e3``, ``NaN``), a boolean, an array, an object, or
  a parquet column of any other type is ``test_case_id_type``.
- In every format an empty id is ``test_case_id_present``; an id starting or ending with Unicode
  white space (``White_Space``: space, tab, CR, LF, NBSP, ideographic space, …) is
  ``test_case_id_trimmed``; an id seen twice is ``test_case_id_unique``.

Metrics
-------
- **csv**: one grammar, ASCII only, no locale: ``[+-]?(D+(.D+)?|.D+)([eE][+-]?D+)?`` with ``D`` in
  ``0-9``, parsed to the nearest float64. The words ``nan``, ``inf`` and ``infinity`` (any case,
  optionally signed) are read as numbers and then fail ``metric_finite``, as do values that
  overflow a float64 (``1e400``). An empty field is ``metric_present``. Anything else is
  ``metric_numeric`` with the reason: a decimal comma or thousands separator (``0,5``,
  ``1,000``), non-ASCII digits (``１``, ``٣``), white space around the number, a percent sign,
  a point without digits after it (``1.``), or simply not a number (``yes``).
- **jsonl and parquet**: integers, floats, booleans (``true``/``false`` as 1/0) and parquet
  decimals are numbers, converted to float64 (integers beyond 2**53 and decimals are rounded to
  the nearest float64); a JSON integer too large for a float64 (say 400 digits) is
  ``metric_numeric``. A null or missing value is ``metric_present``; text, arrays, objects, or a
  parquet column of any other type (text, dates, …) are ``metric_numeric``.
- Then the benchmark's scoring: NaN and ±inf are ``metric_finite``, values outside the scoring's
  range are ``metric_in_range``; nothing is clipped or imputed.

Metadata (extra columns)
------------------------
Every other column is kept, in file order (for jsonl: order of first appearance of its key), as
``meta.<name>``. It is metadata: shown, never rated, and it never rejects an upload by its
values. A column is kept with its type when every non-null value has one scalar type (jsonl:
all strings, all integers fitting int64, all floats or all booleans; csv: always text; parquet:
any scalar column type, dictionary columns decoded). Otherwise (a jsonl column mixing types,
lists, objects or huge integers; a parquet list, struct or map column) each non-null value is
kept as its JSON text (``"cat"`` → ``'"cat"'``, ``[1, 2]`` → ``'[1, 2]'``); missing values are
null.

CSV
---
Comma-separated, ``"`` quotes with ``""`` for a quote inside a quoted field; a quoted field may
span lines (line numbers count every line break: LF, CRLF or a lone CR). The first record is the
header; nothing is inferred (no index column, no types). An optional UTF-8 byte-order mark is
dropped; blank lines at the end of the file are ignored. A record with more or fewer fields than
the header is ``csv_row_width`` naming the line (an unquoted decimal comma, ``tc_1,87,5``, is the
usual cause); a record with only empty fields (a blank line inside the file) is
``csv_blank_row``; a repeated column name is ``unique_columns``; an empty column name is
``header_names``.

Limits
------
Checked before the rest of the file is parsed, each with its own rule: the csv header has at
most :data:`~.contract.MAX_COLUMNS` fields and :data:`~.contract.MAX_HEADER_BYTES` bytes
(``header_width``); a parquet file at most that many leaf columns (``header_width``, from the
footer), a footer of at most :data:`~.contract.MAX_PARQUET_FOOTER_BYTES` (``parquet_footer``),
at most one row per :data:`~.contract.MIN_ROW_BYTES` bytes of the upload limit and a decoded
size of at most :data:`~.contract.PARQUET_EXPANSION` times the limit (``log_size``: from the
footer, then the page headers, then measured batch by batch as it is read, never trusting the
footer alone; see :func:`_parquet_arrays`); a jsonl
file at most that many distinct keys (``header_width``) and arrays or objects nested at most
:data:`~.contract.MAX_JSON_DEPTH` deep (``jsonl_depth``); every file at most ``max_bytes``
(``log_size``). Memory is bounded by the data: the csv path is pyarrow's reader with explicit
text columns, then vectorized checks; jsonl is parsed line by line and turned into Arrow arrays
in chunks.
"""

from __future__ import annotations

import csv
import io
import json
import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from ...rating.scoring import ScoringError
from ..contract import (
    MAX_COLUMNS,
    MAX_HEADER_BYTES,
    MAX_JSON_DEPTH,
    MAX_LOG_BYTES,
    MAX_PARQUET_FOOTER_BYTES,
    MAX_QUOTED_CHARS,
    MAX_ROWS_NAMED,
    MIN_ROW_BYTES,
    PARQUET_EXPANSION,
    BenchmarkSpec,
    IngestError,
    Problems,
)
from ..layout import LOG_SUFFIXES

__all__ = ["ID_COLUMN", "read_rows", "read_upload"]

ID_COLUMN = "test_case_id"

_BOM = b"\xef\xbb\xbf"
_CSV_BLOCK_BYTES = 16 << 20
_JSONL_CHUNK_ROWS = 1 << 16
_JSONL_TEXT_BLOCK = 1 << 20
_PARQUET_BATCH_ROWS = 1 << 18
_PARQUET_PREFIX_BATCH_ROWS = 1 << 10  # text stored by prefix (DELTA_BYTE_ARRAY) is read plain: small batches
# Unicode White_Space (not RE2's ASCII \s); used for ids in every format
_WS = r"\x{9}-\x{d}\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_PADDED_RE = f"^[{_WS}]|[{_WS}]$"
_NUMBER_RE = r"^[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_WORD_RE = r"^[+-]?(?i:nan|inf|infinity)$"
_BLANK_ROW = "has no values (a blank line inside the file?); remove it"
_CONTENT = re.compile(rb"[^\r\n]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_PY_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


# -- public API --------------------------------------------------------------------------------


def read_upload(data: bytes, file: str, spec: BenchmarkSpec, *, max_bytes: int = MAX_LOG_BYTES) -> pa.Table:
    """Read and check one upload against the input contract.

    Returns a table with the columns ``test_case_id`` (string), ``metric`` (float64), ``score``
    (float64, ``spec.scoring.score(metric)``), then ``meta.<name>`` for every extra column of the
    upload in file order. Raises :class:`IngestError` for every problem, and nothing else.
    """
    _check_bytes(data)
    return _guarded(file, lambda: _read_upload(bytes(data), file, spec, max_bytes))


def read_rows(data: bytes, file: str, *, max_bytes: int = MAX_LOG_BYTES) -> pa.Table:
    """Read a csv, parquet or jsonl file into a table, without the upload contract.

    csv columns are text (exactly as written); jsonl and parquet columns keep their type under the
    metadata rule of the module docstring. Size, encoding, header width, unique and non-empty
    column names, row width and nesting are checked. Raises :class:`IngestError`, and nothing else.
    """
    _check_bytes(data)
    return _guarded(file, lambda: _read_rows(bytes(data), file, max_bytes))


# -- shared helpers ----------------------------------------------------------------------------


def _check_bytes(data: object) -> None:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected the file's bytes, got {type(data).__name__}")


def _guarded(file: str, read: Callable[[], pa.Table]) -> pa.Table:
    try:
        return read()
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of an upload must be a rejection, never a crash
        raise IngestError(file, "read_error", f"the file could not be read ({type(exc).__name__}: {_cut(str(exc))})") from None


def _cut(text: str, limit: int = MAX_QUOTED_CHARS * 3) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _q(value: object) -> str:
    """A value for a message: repr, cut to MAX_QUOTED_CHARS."""
    if isinstance(value, str):
        return repr(value if len(value) <= MAX_QUOTED_CHARS else value[:MAX_QUOTED_CHARS] + "…")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<an integer of {len(str(abs(value))) if value.bit_length() < 14000 else 'thousands of'} digits>"
    text = repr(value)
    return text if len(text) <= MAX_QUOTED_CHARS else text[:MAX_QUOTED_CHARS] + "…"


def _names(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(_q(n) for n in names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _format(file: str) -> str:
    suffix = file[file.rfind(".") :].lower() if "." in file.rsplit("/", 1)[-1] else ""
    if suffix not in LOG_SUFFIXES:
        raise IngestError(file, "log_format", f"unsupported file type {_q(suffix or '(none)')}; use {', '.join(LOG_SUFFIXES)}")
    return suffix[1:]


def _prelude(data: bytes, file: str, max_bytes: int) -> str:
    fmt = _format(file)
    if len(data) > max_bytes:
        raise IngestError(
            file, "log_size", f"file is {len(data):,} bytes; the limit is {max_bytes:,} (split it or raise the limit)"
        )
    if not data:
        raise IngestError(file, "log_not_empty", "file is empty")
    return fmt


def _decode(data: bytes, file: str) -> str:
    """The text of a csv or jsonl file; invalid UTF-8 is an error naming the byte and the line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = " (it looks like UTF-16)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise IngestError(
            file,
            "utf8",
            f"invalid UTF-8 at byte {exc.start} (line {line}): byte 0x{data[exc.start]:02X}{hint}; save the file as UTF-8",
            line=line,
        ) from None


def _check_names(names: Sequence[str], file: str, where: str) -> None:
    if len(names) > MAX_COLUMNS:
        raise IngestError(file, "header_width", f"{where} has {len(names):,} columns; at most {MAX_COLUMNS} are allowed")
    seen: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name == "":
            raise IngestError(file, "header_names", f"column {i} of {where} has no name (a trailing comma?); name every column")
        if name in seen:
            raise IngestError(
                file, "unique_columns", f"column {_q(name)} appears twice in {where} (columns {seen[name]} and {i}); rename one"
            )
        seen[name] = i


def _first(mask: pa.ChunkedArray | pa.Array) -> int:
    """Index of the first true value of a boolean array (nulls count as false), or -1."""
    if not pc.any(mask).as_py():
        return -1
    return pc.index(pc.fill_null(mask, False), True).as_py()


def _chunked(values: pa.Array | pa.ChunkedArray | np.ndarray) -> pa.ChunkedArray:
    if isinstance(values, pa.ChunkedArray):
        return values
    if isinstance(values, np.ndarray):
        values = pa.array(values)
    return pa.chunked_array([values], type=values.type)


@dataclass
class _Problem:
    """The wrong-typed values of a column: the first's 0-based row, rule and detail, and every bad row (0-based)."""

    row: int
    rule: str
    detail: str
    rows: array | np.ndarray = field(default_factory=lambda: array("q"))  # every bad row, the first included

    def __post_init__(self) -> None:
        if not len(self.rows):
            self.rows.append(self.row)

    def add_to(self, problems: Problems) -> None:
        """Named like every other rule: the first described, the next MAX_ROWS_NAMED numbered, the rest counted."""
        more = [int(r) for r in self.rows[1 : 1 + MAX_ROWS_NAMED]]
        problems.add(self.row, self.rule, self.detail, more, len(self.rows))


def _note(problems: dict, name: str, row: int, rule: str, detail: Callable[[], str]) -> None:
    """Record one wrong-typed value of a column (only the first is described)."""
    seen = problems.get(name)
    if seen is None:
        problems[name] = _Problem(row, rule, detail())
    else:
        seen.rows.append(row)


@dataclass
class _Frame:
    """A file as columns, before the contract: names in file order, arrays, and where rows live."""

    names: list[str]
    columns: dict[str, pa.ChunkedArray]
    rows: int
    line_of: Callable[[int], int | None]
    problems: dict[str, _Problem] = field(default_factory=dict)  # by column name: first bad id or metric value
    is_blank: Callable[[int], bool] | None = None  # csv: whether a row has only empty fields


# -- the contract ------------------------------------------------------------------------------


def _read_upload(data: bytes, file: str, spec: BenchmarkSpec, max_bytes: int) -> pa.Table:
    fmt = _prelude(data, file, max_bytes)
    metric_name = spec.metric

    def check_header(names: Sequence[str]) -> None:
        if ID_COLUMN not in names:
            hint = ""
            if len(names) == 1 and any(sep in names[0] for sep in ";\t|"):
                hint = " (wrong delimiter? CSV logs must be comma-separated)"
            else:
                near = [n for n in names if n.strip().lower() == ID_COLUMN]
                if near:
                    hint = f" (found {_q(near[0])}: column names are used exactly as written)"
            raise IngestError(file, "has_test_case_id", f"no test_case_id column; columns are {_names(names)}{hint}")
        if metric_name not in names:
            raise IngestError(
                file,
                "has_metric",
                f"no {_q(metric_name)} column (the metric named in benchmark.yaml); columns are {_names(names)}",
            )

    roles = {ID_COLUMN: "id", metric_name: "metric"}
    if fmt == "csv":
        frame = _read_csv(data, file, check_header)
        if frame.rows:
            metric, problem = _csv_metric(frame.columns[metric_name], metric_name)
            frame.columns[metric_name] = metric
            if problem:
                frame.problems[metric_name] = problem
    elif fmt == "jsonl":
        frame = _read_jsonl(data, file, roles, check_header)
    else:
        frame = _read_parquet(data, file, roles, check_header, max_bytes)
    return _contract(frame, file, spec)


def _contract(frame: _Frame, file: str, spec: BenchmarkSpec) -> pa.Table:
    if frame.rows == 0:
        raise IngestError(file, "has_rows", "the file has a header but no rows")
    # every rule is checked and every broken one named (Problems): a later row of one rule never hides
    # an earlier row of another
    problems = Problems(file, frame.line_of)

    ids = frame.columns[ID_COLUMN]
    lengths = pc.binary_length(ids)
    ids_missing = False
    if ids.null_count or ID_COLUMN in frame.problems or pc.min(lengths).as_py() == 0:
        ids_missing = True
        missing = pc.or_kleene(pc.is_null(ids), pc.equal(lengths, 0))
        _first_value_problem(
            frame,
            ID_COLUMN,
            missing,
            problems.add,
            lambda r, n: f"test_case_id is missing or empty ({n} row(s)); every row needs an id",
            problems,
        )
    padded = pc.fill_null(pc.match_substring_regex(ids, _PADDED_RE), False)
    problems.add_rows(
        _mask(padded),
        "test_case_id_trimmed",
        lambda r, n: (
            f"test_case_id {_q(ids[r].as_py())} has leading or trailing white space ({n} row(s)); ids are used as written"
        ),
    )
    if not ids_missing and len(pc.unique(ids)) != frame.rows:  # (count_distinct is about twice as slow)
        codes = ids.combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False)
        _, first_at = np.unique(codes, return_index=True)
        again = np.ones(len(codes), dtype=bool)
        again[first_at] = False
        problems.add_rows(
            again,
            "test_case_id_unique",
            lambda r, n: (
                f"test case {_q(ids[r].as_py())} appears again (first at data row {int(first_at[codes[r]]) + 1}); "
                f"{n} duplicate row(s)"
            ),
        )

    metric = frame.columns[spec.metric]
    if metric.null_count or spec.metric in frame.problems:
        _first_value_problem(
            frame,
            spec.metric,
            pc.is_null(metric),
            problems.add,
            lambda r, n: f"{spec.metric} is missing or empty ({n} row(s)); every row needs a metric value",
            problems,
        )
    values = metric.to_numpy()
    present = _mask(pc.is_valid(metric))
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values)
        outside = finite & ((values < spec.scoring.lo) | (values > spec.scoring.hi))  # binary: (-inf, inf), never
    problems.add_rows(
        present & ~finite,
        "metric_finite",
        lambda r, n: f"{spec.metric} {float(values[r])!r} is not a finite number ({n} value(s))",
    )
    problems.add_rows(
        outside,
        "metric_in_range",
        lambda r, n: (
            f"{spec.metric} {float(values[r])!r} is outside [{spec.scoring.lo:g}, {spec.scoring.hi:g}] "
            f"of scoring '{spec.scoring.name}' ({n} value(s))"
        ),
    )
    problems.raise_if_any()
    try:
        score = spec.scoring.score(values, source=file)
    except ScoringError as exc:  # the checks above are the scoring's own: kept as a guard
        r = exc.row if exc.row is not None else 0
        raise IngestError(file, exc.rule, str(exc), row=r + 1, line=frame.line_of(r)) from None

    names = [ID_COLUMN, "metric", "score"]
    arrays = [ids.cast(pa.string()), metric, _chunked(np.asarray(score, dtype=np.float64))]
    for name in frame.names:
        if name not in (ID_COLUMN, spec.metric):
            names.append(f"meta.{name}")
            arrays.append(frame.columns[name])
    return pa.Table.from_arrays(arrays, names=names)


def _mask(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy (nulls false)."""
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def _first_value_problem(frame: _Frame, column: str, missing, reject, describe_missing, problems: Problems | None = None) -> None:
    """Reject the rows whose value is of a bad type (per the reader) and those whose value is missing.

    With ``problems`` (which gathers instead of raising), every such row is recorded under its rule:
    the first described, the next ones numbered, the rest counted; without, the first is raised.
    """
    typed = frame.problems.get(column)
    if typed is not None:  # the reader nulls every value of a bad type: those rows are not also "missing"
        if problems is not None:
            typed.add_to(problems)
        else:
            reject(typed.row, typed.rule, typed.detail)
        ok = np.ones(len(missing), dtype=bool)
        ok[np.asarray(typed.rows, dtype=np.int64)] = False
        missing = pc.and_(missing, pa.array(ok))
    r = _first(missing)
    if r >= 0:
        if frame.is_blank is not None and frame.is_blank(r):
            reject(r, "csv_blank_row", _BLANK_ROW)
            return
        rule = "test_case_id_present" if column == ID_COLUMN else "metric_present"
        if problems is not None:
            problems.add_rows(_mask(missing), rule, describe_missing)
        else:
            reject(r, rule, describe_missing(r, pc.sum(missing).as_py()))


def _read_rows(data: bytes, file: str, max_bytes: int) -> pa.Table:
    fmt = _prelude(data, file, max_bytes)
    if fmt == "csv":
        frame = _read_csv(data, file, lambda names: None)
        if len(frame.names) > 1 and frame.rows:
            blank = None
            for column in frame.columns.values():
                empty = pc.equal(pc.binary_length(column), 0)
                blank = empty if blank is None else pc.and_(blank, empty)
            r = _first(blank)
            if r >= 0:
                raise IngestError(file, "csv_blank_row", _BLANK_ROW, row=r + 1, line=frame.line_of(r))
    elif fmt == "jsonl":
        frame = _read_jsonl(data, file, {}, lambda names: None)
    else:
        frame = _read_parquet(data, file, {}, lambda names: None, max_bytes)
    return pa.Table.from_arrays([frame.columns[n] for n in frame.names], names=list(frame.names))


# -- csv ---------------------------------------------------------------------------------------


def _header_end(data: bytes, start: int, file: str) -> tuple[int, int, int]:
    """Where the header record ends: (end of its text, start of the body, fields). Checks its width first."""
    limit = start + MAX_HEADER_BYTES
    head = data[start : limit + 1]
    nl = [i for i in (head.find(b"\n"), head.find(b"\r")) if i >= 0]
    first_break = min(nl) if nl else -1
    if b'"' not in (head if first_break < 0 else head[:first_break]):
        end, fields = first_break, head.count(b",", 0, first_break if first_break >= 0 else len(head)) + 1
    else:  # quoted names: a quote opens only at the start of a field, "" is a quote inside one
        end, fields, quoted, at_start, i = -1, 1, False, True, 0
        while i < len(head):
            c = head[i]
            if quoted:
                if c == 0x22:
                    if head[i + 1 : i + 2] == b'"':
                        i += 1
                    else:
                        quoted = False
            elif c == 0x22 and at_start:
                quoted = True
            elif c == 0x2C:
                fields += 1
                at_start = True
                i += 1
                continue
            elif c in (0x0A, 0x0D):
                end = i
                break
            at_start = False
            i += 1
    if fields > MAX_COLUMNS:
        more = "" if end >= 0 else " at least"
        raise IngestError(
            file, "header_width", f"the header has{more} {fields:,} columns; at most {MAX_COLUMNS} are allowed", line=1
        )
    if end < 0:
        if len(head) > MAX_HEADER_BYTES:
            raise IngestError(
                file,
                "header_width",
                f"the header (line 1) is longer than {MAX_HEADER_BYTES:,} bytes; is this a CSV file with a header line?",
                line=1,
            )
        return len(data), len(data), fields  # a header and nothing else
    end += start
    body = end + (2 if data[end : end + 2] == b"\r\n" else 1)
    return end, body, fields


def _line_breaks(text: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Line breaks (LF, CRLF or a lone CR) inside each value."""
    lf = pc.count_substring(text, "\n")
    cr = pc.count_substring(text, "\r")
    crlf = pc.count_substring(text, "\r\n")
    return pc.subtract(pc.add(lf, cr), crlf)


def _read_csv(data: bytes, file: str, check_header: Callable[[Sequence[str]], None]) -> _Frame:
    start = 3 if data.startswith(_BOM) else 0
    if _CONTENT.search(data, start) is None:
        raise IngestError(file, "log_not_empty", "file has no header and no rows")
    if data[start : start + 1] in (b"\n", b"\r"):
        raise IngestError(file, "header_names", "line 1 is empty; the first line must be the header", line=1)
    header_end, body_start, fields = _header_end(data, start, file)
    _decode(data, file)  # the whole file must be UTF-8 (naming the byte and line); pyarrow then skips the check
    header_text = data[start:header_end].decode("utf-8")
    try:
        names = next(csv.reader(io.StringIO(header_text, newline="")), [""])
    except csv.Error as exc:
        raise IngestError(file, "csv_parse", f"the header (line 1) is not well-formed CSV: {_cut(str(exc))}", line=1) from None
    if len(names) != fields:
        raise IngestError(file, "csv_parse", "the header (line 1) is not well-formed CSV (check its quotes)", line=1)
    _check_names(names, file, "the header")
    check_header(names)
    header_lines = 1 + sum(header_text.count(b) for b in ("\n", "\r")) - header_text.count("\r\n")

    end = len(data)
    while end > body_start and data[end - 1] in (0x0A, 0x0D):
        end -= 1
    body = memoryview(data)[body_start:end]
    if not body:
        empty = {n: pa.chunked_array([], pa.string()) for n in names}
        return _Frame(list(names), empty, 0, lambda r: None)
    quotes = data.find(b'"', body_start, end) >= 0
    synthetic = [f"c{i}" for i in range(len(names))]
    bad_row: list[tuple[int, int, str]] = []

    def on_invalid(row) -> str:
        if not bad_row:
            bad_row.append((row.number, row.actual_columns, row.text[: MAX_QUOTED_CHARS + 1]))
        return "skip" if quotes else "error"  # with quotes the line needs the rows before it

    block = _CSV_BLOCK_BYTES
    while True:
        bad_row.clear()
        try:
            table = pa_csv.read_csv(
                pa.BufferReader(pa.py_buffer(body)),
                read_options=pa_csv.ReadOptions(column_names=synthetic, use_threads=False, block_size=block),
                parse_options=pa_csv.ParseOptions(
                    delimiter=",",
                    quote_char='"',
                    double_quote=True,
                    escape_char=False,
                    newlines_in_values=quotes,
                    ignore_empty_lines=False,
                    invalid_row_handler=on_invalid,
                ),
                convert_options=pa_csv.ConvertOptions(
                    column_types=dict.fromkeys(synthetic, pa.string()),
                    null_values=[],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                    check_utf8=False,
                ),
            )
        except pa.ArrowInvalid as exc:
            if bad_row:
                table = None
            elif "straddl" in str(exc) and block < len(body) + 1:
                block = min(len(body) + 1, 2**31 - 1)  # one row longer than a block: read the file as one block
                continue
            else:
                raise IngestError(file, "csv_parse", f"not a well-formed CSV: {_cut(str(exc))}") from None
        break

    columns = {} if table is None else dict(zip(names, table.columns, strict=True))
    rows = 0 if table is None else table.num_rows
    cumulative: list[np.ndarray] = []

    def line_of(row0: int) -> int:
        if not quotes:
            return header_lines + row0 + 1
        if not cumulative:
            per_row = np.zeros(rows, dtype=np.int64)
            for column in columns.values():
                per_row += _line_breaks(column).to_numpy(zero_copy_only=False)
            cumulative.append(np.concatenate([[0], np.cumsum(per_row)]))
        return header_lines + row0 + 1 + int(cumulative[0][min(row0, rows)])

    if bad_row:
        number, actual, text = bad_row[0]
        row0 = number - 1
        shown = _q(text)
        fields = "field" if actual == 1 else "fields"
        hint = ""
        if actual > len(names):
            hint = " (an unquoted comma inside a value? write decimals with a point, e.g. 87.5, or quote the value)"
        elif text.startswith('"') and text.count('"') % 2:
            hint = " (a quote that is never closed?)"
        raise IngestError(
            file,
            "csv_row_width",
            f"has {actual} {fields} where the header has {len(names)}: {shown}{hint}",
            row=number,
            line=line_of(row0),
        )

    def is_blank(row0: int) -> bool:
        return len(names) > 1 and all(column[row0].as_py() == "" for column in columns.values())

    return _Frame(list(names), dict(columns), rows, line_of, is_blank=is_blank)  # the closures keep the text columns


def _csv_metric(text: pa.ChunkedArray, name: str) -> tuple[pa.ChunkedArray, _Problem | None]:
    """Parse csv metric text under the number grammar: float64 (null where empty or not a number)."""
    number = pc.match_substring_regex(text, _NUMBER_RE)
    if pc.all(number).as_py():
        return text.cast(pa.float64()), None
    word = pc.match_substring_regex(text, _WORD_RE)
    empty = pc.equal(pc.binary_length(text), 0)
    parsable = pc.or_(number, word)
    bad = pc.invert(pc.or_(parsable, empty))
    values = pc.if_else(parsable, text, pa.scalar(None, pa.string())).cast(pa.float64())
    r = _first(bad)
    problem = None
    if r >= 0:
        value = text[r].as_py()
        problem = _Problem(r, "metric_numeric", f"{name} {_q(value)} is not a number{_why_not_number(value)}")
    return _chunked(values), problem


def _why_not_number(value: str) -> str:
    """Why a csv value is not a number under the grammar (empty string when there is nothing to add)."""
    v = value[: MAX_QUOTED_CHARS * 4]
    stripped = v.strip()
    if stripped != v and _PY_NUMBER.fullmatch(stripped):
        return ": it has white space around it; write the number alone"
    if not v.isascii():
        if any(c.isdigit() for c in v):
            return ": it uses non-ASCII digits; write ASCII digits 0-9 (and a point for decimals)"
        return ": it has non-ASCII characters; write ASCII digits 0-9"
    if re.fullmatch(r"[+-]?[0-9]*,[0-9]+([.,][0-9]+)*", stripped):
        return ": it has a comma (a decimal comma or a thousands separator); write plain numbers such as 0.5 or 1000"
    if stripped.endswith("%") and _PY_NUMBER.fullmatch(stripped[:-1].strip()):
        return ": it is a percentage; write the fraction (0.5 for 50%) or declare the range in benchmark.yaml"
    if re.fullmatch(r"[+-]?[0-9]+\.([eE][+-]?[0-9]+)?", stripped):
        return ": a decimal point must be followed by a digit (write 1.0 or 1)"
    return ""


# -- jsonl -------------------------------------------------------------------------------------


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


# -- parquet -----------------------------------------------------------------------------------


def _read_parquet(
    data: bytes, file: str, roles: dict[str, str], check_header: Callable[[Sequence[str]], None], max_bytes: int
) -> _Frame:
    if len(data) < 12 or data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        raise IngestError(
            file, "parquet_parse", "not a parquet file (it must start and end with PAR1); truncated or another format?"
        )
    footer = int.from_bytes(data[-8:-4], "little")
    if footer > MAX_PARQUET_FOOTER_BYTES:
        raise IngestError(
            file,
            "parquet_footer",
            f"the parquet footer is {footer:,} bytes; at most {MAX_PARQUET_FOOTER_BYTES:,} (too many columns or row groups)",
        )
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        meta = parquet.metadata
        leaves = meta.num_columns
        declared_rows = meta.num_rows
        decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except Exception as exc:  # noqa: BLE001 - any footer failure is an unreadable file
        raise IngestError(
            file, "parquet_parse", f"not a readable parquet file (truncated or corrupt?): {_cut(str(exc))}"
        ) from None
    if leaves > MAX_COLUMNS:
        raise IngestError(file, "header_width", f"the parquet file has {leaves:,} columns; at most {MAX_COLUMNS} are allowed")
    max_rows = max(max_bytes // MIN_ROW_BYTES, 1)
    if declared_rows > max_rows or declared_rows < 0:
        raise IngestError(
            file,
            "log_size",
            f"the parquet file declares {declared_rows:,} rows; at most {max_rows:,} under the limit of {max_bytes:,} bytes",
        )
    if decoded > PARQUET_EXPANSION * max_bytes:
        raise IngestError(
            file,
            "log_size",
            f"the parquet file decodes to {decoded:,} bytes; at most {PARQUET_EXPANSION} times the limit of {max_bytes:,}",
        )
    try:
        names = list(parquet.schema_arrow.names)
    except Exception as exc:  # noqa: BLE001
        raise IngestError(file, "parquet_parse", f"the parquet schema is unreadable: {_cut(str(exc))}") from None
    _check_names(names, file, "the parquet schema")
    check_header(names)
    arrays = _parquet_arrays(data, file, parquet, meta, PARQUET_EXPANSION * max_bytes, max_bytes)
    rows = len(arrays[0]) if arrays else 0
    if rows != declared_rows or len(arrays) != len(names):
        raise IngestError(file, "parquet_parse", "the parquet data does not match its footer (corrupt?)")
    problems: dict[str, _Problem] = {}
    columns = {}
    for name, values in zip(names, arrays, strict=True):
        role = roles.get(name, "meta")
        if role == "id":
            columns[name] = _parquet_ids(values, problems, name)
        elif role == "metric":
            columns[name] = _parquet_metric(values, problems, name)
        else:
            columns[name] = _parquet_meta(values)
    return _Frame(names, columns, rows, lambda r: None, problems)


def _too_big(file: str, what: str, size: int, max_bytes: int) -> IngestError:
    return IngestError(
        file,
        "log_size",
        f"the parquet file {what} {size:,} bytes; at most {PARQUET_EXPANSION} times the limit of {max_bytes:,}",
    )


_BYTE_ARRAYS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)


def _parquet_arrays(
    data: bytes, file: str, parquet: pq.ParquetFile, meta: pq.FileMetaData, bound: int, max_bytes: int
) -> list[pa.ChunkedArray]:
    """Every column of a parquet file, decoded batch by batch and measured as it goes: at most ``bound`` bytes.

    The footer's own sizes are checked first (each column chunk's uncompressed pages, which a row
    group's ``total_byte_size`` may understate), then the page headers (:func:`_page_survey`: what
    decompression allocates, and which text columns could expand). Those are read as dictionaries
    (a repeated value held once), the others plain; every batch is measured as it will be once
    expanded, so reading stops at the first batch that brings the total past ``bound``, before the
    expansion is made.
    """
    chunks = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        chunks += sum(max(group.column(c).total_uncompressed_size, 0) for c in range(group.num_columns))
    if chunks > bound:
        raise _too_big(file, "declares column chunks of", chunks, max_bytes)
    pages, expanding, prefixed = _page_survey(data, meta, bound)
    if pages > bound:
        raise _too_big(file, "has pages that decompress to", pages, max_bytes)
    schema = parquet.schema_arrow
    as_dictionary, leaf = [], 0
    for f in schema:
        if any(is_type(f.type) for is_type in _BYTE_ARRAYS) and leaf in expanding and leaf not in prefixed:
            as_dictionary.append(f.name)
        leaf += _leaves(f.type)
    try:
        reader = pq.ParquetFile(pa.BufferReader(data), read_dictionary=as_dictionary) if as_dictionary else parquet
        types = list(reader.schema_arrow.types)
        pieces: list[list[pa.Array]] = [[] for _ in types]
        total = 0
        rows = _PARQUET_PREFIX_BATCH_ROWS if prefixed else _PARQUET_BATCH_ROWS
        for batch in reader.iter_batches(batch_size=rows, use_threads=False):
            for i, values in enumerate(batch.columns):
                total += _expanded_nbytes(values)
                pieces[i].append(values)
            if total > bound:
                raise _too_big(file, "decodes to more than", total, max_bytes)
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - corrupt pages, bad compression, …
        raise IngestError(
            file, "parquet_parse", f"not a readable parquet file (truncated or corrupt?): {_cut(str(exc))}"
        ) from None
    return [pa.chunked_array(p, type=p[0].type if p else t) for p, t in zip(pieces, types, strict=True)]


def _leaves(t: pa.DataType) -> int:
    """How many parquet leaf columns an Arrow field of type ``t`` is stored as."""
    if pa.types.is_dictionary(t) or not t.num_fields:
        return 1
    return sum(_leaves(t.field(i).type) for i in range(t.num_fields))


# data page encodings whose values are stored whole (decoded size = stored size): PLAIN, DELTA_LENGTH_BYTE_ARRAY
_WHOLE_VALUES = frozenset({0, 6})
_DICTIONARY_ENCODED = frozenset({2, 8})  # PLAIN_DICTIONARY, RLE_DICTIONARY
_CODECS = {"UNCOMPRESSED": None, "SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli", "LZ4_RAW": "lz4_raw"}


def _page_survey(data: bytes, meta: pq.FileMetaData, bound: int) -> tuple[int, set[int], set[int]]:
    """(bytes every page decompresses to, the leaf columns to read as dictionaries, those with text
    stored by prefix), from the page headers.

    Arrow allocates each page by its header's ``uncompressed_page_size`` (and fails a page that
    decompresses to anything else), so their sum bounds what decompression holds. A text column's
    dictionary-encoded pages expand to at most their values times the dictionary's longest value
    (read from the dictionary page); columns are read plain while these bounds add up to at most
    ``bound``. A column beyond that, or whose pages cannot be walked here, is read as a dictionary
    and measured expanded. Text stored by prefix (``DELTA_BYTE_ARRAY``, which Arrow cannot read as
    a dictionary) is read plain, in small batches.
    """
    total, expansion, expanding, prefixed = 0, 0, set(), set()
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            start = column.data_page_offset
            if column.has_dictionary_page and 0 < (column.dictionary_page_offset or 0) < start:
                start = column.dictionary_page_offset
            try:
                size, grows = _walk_pages(data, start, start + column.total_compressed_size, column)
            except (ValueError, IndexError, KeyError, pa.ArrowException):
                expanding.add(c)
                continue
            total += size
            if grows < 0:  # stored by prefix
                prefixed.add(c)
                continue
            expansion += grows
            if expansion > bound:
                expanding.add(c)
    return total, expanding, prefixed


def _walk_pages(data: bytes, pos: int, end: int, column: pq.ColumnChunkMetaData) -> tuple[int, int]:
    """The pages of one column chunk: (sum of uncompressed sizes, most bytes its dictionary-encoded values
    expand to, or -1 where text is stored by prefix)."""
    if pos < 0 or end > len(data) or pos >= end:
        raise ValueError("column chunk outside the file")
    total, longest, encoded, prefixed = 0, 0, 0, False
    while pos < end:
        reader = _Thrift(data, pos, end)
        header = reader.struct(0, wanted=(5, 7, 8))
        uncompressed, compressed, kind = header.get(2, -1), header.get(3, -1), header.get(1, -1)
        if uncompressed < 0 or compressed < 0:
            raise ValueError("page header without sizes")
        total += uncompressed
        values, encoding = header.get(5, header.get(8, {})).get(1, -1), header.get(5, {}).get(2, header.get(8, {}).get(4, -1))
        if kind == 2:
            if column.physical_type == "BYTE_ARRAY":
                longest = max(longest, _longest_value(data, reader.pos, compressed, uncompressed, column.compression))
        elif kind in (0, 3):
            if encoding in _DICTIONARY_ENCODED and column.physical_type == "BYTE_ARRAY":
                encoded += max(values, 0)
            elif encoding not in _WHOLE_VALUES and column.physical_type == "BYTE_ARRAY":
                prefixed = True
        pos = reader.pos + compressed
    return total, -1 if prefixed else encoded * longest


def _longest_value(data: bytes, pos: int, compressed: int, uncompressed: int, compression: str) -> int:
    """The longest value of a PLAIN byte-array dictionary page (4-byte length, then the bytes)."""
    codec = _CODECS[compression]
    page = memoryview(data)[pos : pos + compressed]
    if codec is not None:
        page = memoryview(pa.decompress(page, decompressed_size=uncompressed, codec=codec))
    longest, at, n = 0, 0, len(page)
    while at < n:
        length = int.from_bytes(page[at : at + 4], "little")
        longest = max(longest, length)
        at += 4 + length
    return longest


class _Thrift:
    """Just enough of Thrift's compact protocol to read a parquet page header (i32/i64 fields, nested structs)."""

    def __init__(self, data: bytes, pos: int, end: int):
        self.data, self.pos, self.end = data, pos, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise ValueError("page header runs past its column chunk")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        n = shift = 0
        while True:
            b = self.byte()
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def struct(self, depth: int, wanted: tuple[int, ...] = ()) -> dict:
        if depth > 8:
            raise ValueError("page header nested too deep")
        out: dict = {}
        field_id = 0
        while (head := self.byte()) != 0:
            kind, delta = head & 0x0F, head >> 4
            field_id = field_id + delta if delta else self.zigzag()
            if kind in (5, 6):
                out[field_id] = self.zigzag()
            elif kind == 12 and field_id in wanted:
                out[field_id] = self.struct(depth + 1)
            else:
                self.skip(kind, depth)
        return out

    def skip(self, kind: int, depth: int, in_list: bool = False) -> None:
        if kind in (1, 2):
            self.pos += 1 if in_list else 0
        elif kind == 3:
            self.pos += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.pos += 8
        elif kind == 8:
            length = self.varint()  # (not ``self.pos += self.varint()``: that adds to the position before the varint)
            self.pos += length
        elif kind in (9, 10):
            head = self.byte()
            size = self.varint() if head >> 4 == 15 else head >> 4
            for _ in range(size):
                self.skip(head & 0x0F, depth + 1, in_list=True)
        elif kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1, in_list=True)
                self.skip(types & 0x0F, depth + 1, in_list=True)
        elif kind == 12:
            self.struct(depth + 1)
        else:
            raise ValueError(f"unknown thrift type {kind}")
        if self.pos > self.end or depth > 8:
            raise ValueError("page header runs past its column chunk")


def _expanded_nbytes(values: pa.Array) -> int:
    """The bytes an array takes once its dictionary (if any) is expanded into plain values."""
    if not pa.types.is_dictionary(values.type):
        return values.nbytes
    value_type = values.type.value_type
    if any(is_type(value_type) for is_type in _BYTE_ARRAYS):
        lengths = pc.take(pc.binary_length(values.dictionary), values.indices)
        return int(pc.sum(lengths).as_py() or 0) + 9 * len(values)  # values, 8-byte offsets, validity
    width = value_type.bit_width // 8 if pa.types.is_primitive(value_type) else 8
    return (width + 1) * len(values) + values.dictionary.nbytes


def _decoded(values: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(values.type):
        return values.cast(values.type.value_type)
    return values


def _parquet_ids(values: pa.ChunkedArray, problems: dict, name: str) -> pa.ChunkedArray:
    values = _decoded(values)
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return values.cast(pa.string())
    if pa.types.is_integer(t):
        return values.cast(pa.string())
    r = _first(pc.is_valid(values)) if not pa.types.is_null(t) else -1
    if r >= 0:
        problems[name] = _Problem(
            r,
            "test_case_id_type",
            f"test_case_id is a parquet column of {_cut(str(t), 60)} ({_q(values[r].as_py())} in this row); ids must be strings or integers",
            np.flatnonzero(_mask(pc.is_valid(values))),
        )
    return pa.chunked_array([pa.nulls(len(values), pa.string())])


def _parquet_metric(values: pa.ChunkedArray, problems: dict, name: str) -> pa.ChunkedArray:
    values = _decoded(values)
    t = values.type
    if pa.types.is_decimal(t):
        # Arrow's decimal -> float64 cast divides by a power of ten in floating point (0.1 -> 0.09999999999999999);
        # the decimal's exact text parsed as a float64 (correctly rounded) is the nearest float64
        return values.cast(pa.string()).cast(pa.float64())
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return values.cast(pa.float64(), safe=False)
    if not pa.types.is_null(t):
        r = _first(pc.is_valid(values))
        if r >= 0:
            kind = "text" if pa.types.is_string(t) or pa.types.is_large_string(t) else _cut(str(t), 60)
            problems[name] = _Problem(
                r,
                "metric_numeric",
                f"{name} is a parquet column of {kind} ({_q(values[r].as_py())} in this row), not numbers; write plain numbers",
                np.flatnonzero(_mask(pc.is_valid(values))),
            )
    return pa.chunked_array([pa.nulls(len(values), pa.float64())])


def _parquet_meta(values: pa.ChunkedArray) -> pa.ChunkedArray:
    values = _decoded(values)
    t = values.type
    if not (pa.types.is_nested(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return values
    pieces = []
    for chunk in values.chunks:
        for offset in range(0, len(chunk), _JSONL_CHUNK_ROWS):
            part = chunk.slice(offset, _JSONL_CHUNK_ROWS)
            pieces.append(pa.array([None if v is None else _json_text(v) for v in part.to_pylist()], pa.string()))
    return pa.chunked_array(pieces, type=pa.string())
