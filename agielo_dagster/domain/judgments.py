"""Pairwise difficulty judgments: the input contract of ``judgments/<set>.csv`` and its ledger.

A judgment set is a CSV file ``judgments/<set>.csv`` (a safe name, as benchmarks and agents have),
one judgment per row: ``item_a, item_b`` and either ``winner`` (``a`` when item_a is the harder,
``b``, or ``tie``; any case) or a numeric ``margin``; optional ``weight`` and ``rater``. The file is
read as uploads are (:func:`~.readers.read_rows`: UTF-8, a header, rows as wide as it, the size
limit), then every row is checked, and every rule a file breaks is named at once (the first row
breaking each rule described, the next ones numbered, the rest counted: :class:`~.contract.Problems`),
with 1-based data rows and file lines:

- ``judgment_columns``: the columns ``item_a`` and ``item_b``, and ``winner`` or ``margin``;
- ``has_rows``: at least one judgment;
- ``item_present``: both items given (an empty cell is not an item called ``''``);
- ``item_length``: an item name has at most :data:`~.contract.MAX_NAME_LENGTH` characters (the
  limit of benchmark and agent names);
- ``item_trimmed``: no leading or trailing white space (items are used as written, as ids are);
- ``distinct_items``: an item is not compared with itself;
- ``winner_known``: ``winner`` is ``a``, ``b`` or ``tie``;
- ``margin_finite``: ``margin`` is a finite number (the upload metrics' grammar, ``[+-]?D+(.D+)?…``);
- ``weight_positive``: ``weight``, where given, is a finite number greater than 0 (``inf``,
  ``nan``, ``0``, ``-1`` and an empty cell are refused: they would make every score NaN).

The **judgments ledger** holds one outcome per set, ``warehouse/judgments_ledger/<set>.parquet``
(``accepted`` or ``rejected``, with the rule, row, line and message, and the file's version and
fingerprint), written by the ``difficulty_judgments`` asset each time it reads the file. Files
that are not judgment sets at all (another place or suffix, an unsafe name, a link) are
``refused``, found by listing. :func:`judgment_problems` lists every rejected or refused file
present now; the quarantine report and ``agielo run`` show them.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .contract import MAX_LOG_BYTES, MAX_NAME_LENGTH, IngestError, Problems, check_name
from .layout import JUDGMENTS_FOLDER, judgment_ledger_path, judgment_path
from .listing import unread
from .parquet_io import parquet_bytes
from .readers import read_rows
from .readers.common import _PADDED_RE, _check_bytes, _guarded, _q
from .readers.csv_format import _NUMBER_RE
from .store import StorageError, Store, StoredFile

__all__ = [
    "JUDGMENTS_FOLDER",
    "judgment_ledger_path",
    "judgment_path",
    "judgment_problems",
    "judgment_sets",
    "read_judgment_outcome",
    "read_judgments",
    "write_judgment_outcome",
]

_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("set", pa.string()),
        ("status", pa.string()),  # accepted | rejected
        ("version", pa.string()),
        ("fingerprint", pa.string()),
        ("rows", pa.int64()),
        ("rule", pa.string()),
        ("row", pa.int64()),
        ("line", pa.int64()),
        ("message", pa.string()),
    ]
)


# -- the contract ------------------------------------------------------------------------------


def read_judgments(data: bytes, file: str, *, max_bytes: int = MAX_LOG_BYTES) -> pd.DataFrame:
    """The judgments of one file, checked: ``item_a, item_b`` (text), ``winner`` or ``margin``, ``weight`` (float64).

    Extra columns (``rater``, …) are kept as text. Raises one :class:`IngestError` naming every rule the
    file breaks, and nothing else (an unforeseen failure is the rule ``read_error``).
    """
    _check_bytes(data)
    return _guarded(file, lambda: _read_judgments(bytes(data), file, max_bytes))


def _read_judgments(data: bytes, file: str, max_bytes: int) -> pd.DataFrame:
    table = read_rows(data, file, max_bytes=max_bytes)
    lines = _line_numbers(data, table.num_rows)
    problems = Problems(file, lambda r: lines[r] if 0 <= r < len(lines) else None)
    names = table.column_names
    missing = [c for c in ("item_a", "item_b") if c not in names]
    if missing or not ({"winner", "margin"} & set(names)):
        need = missing + ([] if {"winner", "margin"} & set(names) else ["winner (or margin)"])
        problems.add(None, "judgment_columns", f"no {', '.join(need)} column; columns are {', '.join(map(_q, names[:12]))}")
        problems.raise_if_any()
    if table.num_rows == 0:
        problems.add(None, "has_rows", "the file has a header but no judgments")
        problems.raise_if_any()
    columns = {n: _text(table.column(n)) for n in names}
    a, b = columns["item_a"], columns["item_b"]
    for name, items in (("item_a", a), ("item_b", b)):
        empty = pc.fill_null(pc.equal(pc.utf8_length(items), 0), True)
        problems.add_rows(
            _np(empty), "item_present", lambda r, n, name=name: f"{name} is empty ({n} row(s)); every judgment names two items"
        )
        long = pc.fill_null(pc.greater(pc.utf8_length(items), MAX_NAME_LENGTH), False)
        problems.add_rows(
            _np(long),
            "item_length",
            lambda r, n, name=name, items=items: (
                f"{name} is {len(items[r].as_py()):,} characters long; at most {MAX_NAME_LENGTH} ({n} row(s))"
            ),
        )
        padded = pc.fill_null(pc.match_substring_regex(items, _PADDED_RE), False)
        problems.add_rows(
            _np(padded),
            "item_trimmed",
            lambda r, n, name=name, items=items: (
                f"{name} {_q(items[r].as_py())} has leading or trailing white space ({n} row(s)); items are used as written"
            ),
        )
    same = pc.fill_null(pc.and_(pc.equal(a, b), pc.greater(pc.utf8_length(a), 0)), False)
    problems.add_rows(_np(same), "distinct_items", lambda r, n: f"item {_q(a[r].as_py())} is compared with itself ({n} row(s))")
    frame = pd.DataFrame({n: columns[n].to_pylist() for n in names})
    if "margin" in names:
        frame["margin"], bad = _numbers(columns["margin"])
        problems.add_rows(
            bad,
            "margin_finite",
            lambda r, n: f"margin {_q(columns['margin'][r].as_py())} is not a finite number ({n} row(s))",
        )
    else:
        winner = pc.utf8_lower(pc.fill_null(columns["winner"], ""))
        known = pc.is_in(winner, value_set=pa.array(["a", "b", "tie"]))
        problems.add_rows(
            ~_np(known),
            "winner_known",
            lambda r, n: f"winner {_q(columns['winner'][r].as_py())} is not a, b or tie ({n} row(s))",
        )
    if "weight" in names:
        frame["weight"], bad = _numbers(columns["weight"])
        bad |= ~(frame["weight"].to_numpy() > 0)
        problems.add_rows(
            bad,
            "weight_positive",
            lambda r, n: f"weight {_q(columns['weight'][r].as_py())} is not a finite number greater than 0 ({n} row(s))",
        )
    problems.raise_if_any()
    return frame


def _text(values: pa.ChunkedArray) -> pa.Array:
    values = values.combine_chunks()
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values.cast(pa.string())
    return pa.array([None if v is None else str(v) for v in values.to_pylist()], pa.string())


def _np(mask) -> object:
    import numpy as np

    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def _numbers(text: pa.Array):
    """(float64 values, mask of cells that are not a finite number), under the upload metrics' grammar."""
    import numpy as np

    ok = _np(pc.match_substring_regex(pc.fill_null(text, ""), _NUMBER_RE))
    values = np.full(len(text), np.nan)
    if ok.any():
        values[ok] = pc.cast(pc.filter(text, pa.array(ok)), pa.float64()).to_numpy(zero_copy_only=False)
    return values, ~np.isfinite(values)


def _line_numbers(data: bytes, rows: int) -> list[int | None]:
    """The file line of each data row, for the common case of one line per record; None where quoted breaks make it unsure."""
    if b'"' in data:
        return [None] * rows
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = text.splitlines()
    numbers = [i + 1 for i, line in enumerate(lines) if i > 0 and line != ""]
    return numbers[:rows] if len(numbers) >= rows else [None] * rows


# -- the ledger --------------------------------------------------------------------------------


def judgment_sets(store: Store) -> tuple[list[tuple[str, StoredFile]], list[IngestError]]:
    """([(set name, listed file)], refused files) under ``judgments/``."""
    sets, refused = [], []
    for f in store.list_files(JUDGMENTS_FOLDER):
        if f.name.startswith("."):
            continue
        try:
            if f.kind:
                raise unread(f)[1]
            if f.path.count("/") != 1 or not f.path.endswith(".csv"):
                raise IngestError(f.path, "layout", "judgment sets belong at judgments/<set>.csv")
            sets.append((check_name(f.path.removeprefix("judgments/").removesuffix(".csv"), "judgment set", f.path), f))
        except IngestError as err:
            refused.append(err)
    return sets, refused


def write_judgment_outcome(
    store: Store, name: str, version: str, fingerprint: str, *, rows: int = 0, error: IngestError | None = None
) -> dict:
    """Record the one outcome of a judgment set's file (replacing the last); returns the ledger row."""
    row = {
        "path": judgment_path(name),
        "set": name,
        "status": "rejected" if error else "accepted",
        "version": version,
        "fingerprint": fingerprint,
        "rows": rows,
        "rule": error.rule if error else "",
        "row": error.row if error else None,
        "line": error.line if error else None,
        "message": str(error) if error else "",
    }
    store.write_bytes(judgment_ledger_path(name), parquet_bytes(pa.Table.from_pylist([row], schema=_SCHEMA)))
    return row


def read_judgment_outcome(store: Store, name: str) -> dict | None:
    """The last recorded outcome of a judgment set, or None (never read, or an unreadable ledger file)."""
    path = judgment_ledger_path(name)
    try:
        if not store.exists(path):
            return None
        rows = store.read_table(path).to_pylist()
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - damaged: the set is read again on its next run
        return None
    return rows[0] if rows else None


def judgment_problems(store: Store) -> list[dict]:
    """Every judgments file present now that is refused, or whose current version was rejected: file, version, status, rule, message."""
    sets, refused = judgment_sets(store)
    out = [{"file": e.file, "version": "", "status": "refused", "rule": e.rule, "message": str(e)} for e in refused]
    for name, f in sets:
        outcome = read_judgment_outcome(store, name)
        if outcome and outcome["status"] == "rejected" and outcome["fingerprint"] == f.fingerprint:
            out.append(
                {
                    "file": f.path,
                    "version": outcome["version"],
                    "status": "rejected",
                    "rule": outcome["rule"],
                    "message": outcome["message"],
                }
            )
    return out


def stale_judgment_sets(store: Store) -> list[str]:
    """Judgment sets whose file has no outcome for its current listing (new or changed since last read)."""
    sets, _ = judgment_sets(store)
    stale = []
    for name, f in sets:
        outcome = read_judgment_outcome(store, name)
        if outcome is None or outcome["fingerprint"] != f.fingerprint:
            stale.append(name)
    return stale
