"""The csv reader: the header checked before the body, pyarrow's reader with text columns, the metric grammar."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ..contract import (
    MAX_COLUMNS,
    MAX_HEADER_BYTES,
    MAX_QUOTED_CHARS,
    IngestError,
)
from .common import _check_names, _chunked, _cut, _decode, _first, _Frame, _Problem, _q

_BOM = b"\xef\xbb\xbf"

_CSV_BLOCK_BYTES = 16 << 20

_SMALL_BODY_BYTES = 16 << 10  # bodies up to this size, without quotes, are split in Python (_split_small)

_LINE_BREAK = re.compile("\r\n|\r|\n")

_NUMBER_RE = r"^[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"

_WORD_RE = r"^[+-]?(?i:nan|inf|infinity)$"

_CONTENT = re.compile(rb"[^\r\n]")

_PY_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


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


@dataclass(frozen=True)
class _SmallCsv:
    """A small csv file's text, split in Python (:func:`_split_small`) and not yet made arrays: files of the same
    header are made arrays together (a ``pa.array`` costs about 25 µs however few its values)."""

    names: list[str]
    values: list[list[str]]  # a list of texts a column
    header_lines: int

    @property
    def rows(self) -> int:
        return len(self.values[0])

    def frame(self) -> _Frame:
        columns = {n: pa.chunked_array([pa.array(v, pa.string())]) for n, v in zip(self.names, self.values, strict=True)}
        header_lines = self.header_lines
        return _Frame(list(self.names), columns, self.rows, lambda r: header_lines + r + 1, is_blank=_blank(columns))


def _read_csv(
    data: bytes, file: str, check_header: Callable[[Sequence[str]], None], *, small_as_text: bool = False
) -> _Frame | _SmallCsv:
    """A csv file as text columns; with ``small_as_text``, a small body without quotes is returned as its text."""
    start = 3 if data.startswith(_BOM) else 0
    if (bom := data.find(_BOM, start)) >= 0:
        line = data.count(b"\n", 0, bom) + 1
        raise IngestError(
            file,
            "csv_bom",
            f"a byte-order mark (U+FEFF) on line {line}: only the file's first bytes may hold one (files joined together?); remove it",
            line=line,
        )
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
    if not quotes and len(body) <= _SMALL_BODY_BYTES and (small := _split_small(body, len(names))) is not None:
        text = _SmallCsv(list(names), small, header_lines)
        return text if small_as_text else text.frame()
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

    return _Frame(list(names), dict(columns), rows, line_of, is_blank=_blank(columns))  # the closures keep the text columns


def _blank(columns: dict[str, pa.ChunkedArray]) -> Callable[[int], bool]:
    """Whether a row has only empty fields (of a file of several columns), read from the text ``columns`` (kept
    here: the caller replaces the metric's text with its numbers)."""
    columns = dict(columns)
    return lambda row0: len(columns) > 1 and all(column[row0].as_py() == "" for column in columns.values())


def _split_small(body: memoryview, fields: int) -> list[list[str]] | None:
    """A small body without quotes as text columns, as pyarrow's reader reads it; None where a row is not ``fields`` wide.

    pyarrow's reader costs about 0.2 ms a file whatever its size; a tall benchmark's uploads are a few rows
    each. Lines end at LF, CRLF or a lone CR (the reader's rule), a value is whatever lies between commas.
    A row of another width is left to the reader, which names it.
    """
    rows = [line.split(",") for line in _LINE_BREAK.split(str(body, "utf-8"))]
    if any(len(row) != fields for row in rows):
        return None
    return [list(column) for column in zip(*rows, strict=True)]  # (a tuple converts to an array 4x slower)


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
