"""Files written for people to open: spreadsheet-safe CSV, with the exact values in a jsonl twin.

A spreadsheet evaluates a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, after a
tab or a carriage return) as a formula: a test-case id ``=HYPERLINK(…)`` or ``+cmd|' /C calc'!A0``
written as is into a CSV runs when the file is opened (CSV injection). As OWASP recommends, every
**text** cell starting with one of those characters is written with a single quote in front
(``=1+1`` → ``'=1+1``), and cells are quoted as CSV needs. Numbers are data, not formulas: a
numeric column is written as numbers (``-0.5`` stays ``-0.5``). The neutralized CSV is for
people; programs read the **jsonl twin** written beside it, which holds every value exactly (ids
as written, floats to the last bit).
"""

from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd

__all__ = ["FORMULA_STARTS", "jsonl_bytes", "spreadsheet_cell", "spreadsheet_csv"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: a leading ``= + - @``, tab or CR gets a single quote before it."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _is_text(column: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column))


def spreadsheet_csv(frame: pd.DataFrame) -> bytes:
    """``frame`` as UTF-8 CSV with its text cells (column names included) neutralized; numbers as written by pandas."""
    safe = frame.copy()
    for name in safe.columns:
        if _is_text(safe[name]):
            safe[name] = safe[name].map(lambda v: spreadsheet_cell(v) if isinstance(v, str) else v)
    safe.columns = [spreadsheet_cell(str(c)) for c in safe.columns]
    # CRLF ends records (RFC 4180), so a CR or LF inside a cell is quoted and stays in its cell
    return safe.to_csv(index=False, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n").encode("utf-8")


def _exact(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _exact(value.item())
    return value


def jsonl_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as JSON lines, one object per row, every value exact (floats round-trip; NaN and ±inf as null)."""
    out = io.StringIO()
    for record in frame.to_dict("records"):
        out.write(json.dumps({str(k): _exact(v) for k, v in record.items()}, ensure_ascii=False, allow_nan=False))
        out.write("\n")
    return out.getvalue().encode("utf-8")
