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
header; nothing is inferred (no index column, no types). A UTF-8 byte-order mark at the file's start
is dropped; one anywhere else is ``csv_bom`` (two files joined together, usually), never kept in a value
nor dropped; blank lines at the end of the file are ignored. A record with more or fewer fields than
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
table of at most :data:`~.contract.PARQUET_EXPANSION` times the limit (``log_size``: measured batch
by batch as it is read, never trusted to the footer); a jsonl
file at most that many distinct keys (``header_width``) and arrays or objects nested at most
:data:`~.contract.MAX_JSON_DEPTH` deep (``jsonl_depth``); every file at most ``max_bytes``
(``log_size``). Memory is bounded by the data: the csv path is pyarrow's reader with explicit
text columns, then vectorized checks; jsonl is parsed line by line and turned into Arrow arrays
in chunks.

Isolation
---------
Every file is decoded in a process of its own (:mod:`.isolation`, :mod:`.worker`), under hard OS limits on its
memory, CPU seconds and wall time: a file that passes one is ``decode_limit``, one on which the decoder crashes or
aborts ``decode_crash``; either rejects that file alone. Tables come back as Arrow IPC.

Modules: :mod:`.upload` (the contract over a read table), :mod:`.csv_format`,
:mod:`.jsonl_format`, :mod:`.parquet_format`, :mod:`.common` (what they share: the id column, byte and
text checks, messages, problems), :mod:`.isolation` and :mod:`.worker` (the decoder process).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..contract import MAX_LOG_BYTES, BenchmarkSpec, IngestError
from .common import ID_COLUMN, _check_bytes, _guarded, _prelude
from .isolation import DecoderUnavailable, decode
from .parquet_format import _check_frame

__all__ = ["ID_COLUMN", "DecoderUnavailable", "read_isolated", "read_rows", "read_upload", "read_uploads"]


def read_upload(data: bytes, file: str, spec: BenchmarkSpec, *, max_bytes: int = MAX_LOG_BYTES) -> pa.Table:
    """Read and check one upload against the input contract.

    Returns a table with the columns ``test_case_id`` (string), ``metric`` (float64), ``score``
    (float64, ``spec.scoring.score(metric)``), then ``meta.<name>`` for every extra column of the
    upload in file order. Raises :class:`IngestError` for every problem, and nothing else.
    """
    (outcome,) = read_uploads([(data, file)], spec, max_bytes=max_bytes)
    if isinstance(outcome, IngestError):
        raise outcome
    return outcome


def read_uploads(
    uploads: Sequence[tuple[bytes, str]], spec: BenchmarkSpec, *, max_bytes: int = MAX_LOG_BYTES
) -> list[pa.Table | IngestError]:
    """:func:`read_upload` of several uploads of one benchmark, ``(data, file)`` each: its table, or the error it raises.

    The same outcomes, faster for many small files (a tall benchmark's 200,000 uploads of 5 rows): they travel to the
    decoder process together, each file is read alone, then the csv files of the same columns (of up to 1 MiB each)
    are checked together, in one pass of the contract's vectorized checks instead of one a file (about 0.3 ms each);
    where that pass finds a problem, each of them is checked alone, so that an error names its own file and rows.
    """
    if not uploads:
        return []
    kind = type(spec.scoring)  # by its class, not its registered name: a scoring registered here is one the decoder
    scoring = {"class": f"{kind.__module__}:{kind.__qualname__}", "params": spec.scoring.to_config()["params"]}
    params = {"name": spec.name, "metric": spec.metric, "scoring": scoring}
    return read_isolated("uploads", params, uploads, max_bytes)


def read_rows(data: bytes, file: str, *, max_bytes: int = MAX_LOG_BYTES) -> pa.Table:
    """Read a csv, parquet or jsonl file into a table, without the upload contract.

    csv columns are text (exactly as written); jsonl and parquet columns keep their type under the
    metadata rule of the module docstring. Size, encoding, header width, unique and non-empty
    column names, row width and nesting are checked. Raises :class:`IngestError`, and nothing else.
    """
    (outcome,) = read_isolated("rows", {}, [(data, file)], max_bytes)
    if isinstance(outcome, IngestError):
        raise outcome
    return outcome


def read_isolated(op: str, params: dict, items: Sequence[tuple[bytes, str]], max_bytes: int) -> list[pa.Table | IngestError]:
    """Each ``(data, file)`` read by the decoder process's ``op`` (:mod:`.isolation`), after the checks that need
    no parsing (type, size, emptiness, parquet's magic bytes and footer length), made here."""
    out: list[pa.Table | IngestError | None] = [None] * len(items)
    send = []
    for i, (data, file) in enumerate(items):
        _check_bytes(data)
        try:
            _guarded(file, lambda data=data, file=file: _precheck(data, file, max_bytes))
        except IngestError as err:
            out[i] = err
            continue
        send.append(i)
    if send:
        for i, outcome in zip(send, decode(op, params, [items[i] for i in send], max_bytes), strict=True):
            out[i] = outcome
    return out


def _precheck(data: bytes, file: str, max_bytes: int) -> None:
    if _prelude(data, file, max_bytes) == "parquet":
        _check_frame(data, file)
