"""What every upload reader shares: the id column, the byte and text checks, messages, and how problems are noted."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..contract import (
    DECODE_MEMORY_FLOOR,
    MAX_COLUMNS,
    MAX_QUOTED_CHARS,
    MAX_ROWS_NAMED,
    PARQUET_EXPANSION,
    IngestError,
    Problems,
)
from ..layout import LOG_SUFFIXES

ID_COLUMN = "test_case_id"

_JSONL_CHUNK_ROWS = 1 << 16

# Unicode White_Space (not RE2's ASCII \s); used for ids in every format
_WS = r"\x{9}-\x{d}\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"

_PADDED_RE = f"^[{_WS}]|[{_WS}]$"


def _check_bytes(data: object) -> None:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected the file's bytes, got {type(data).__name__}")


def _guarded(file: str, read: Callable[[], pa.Table]) -> pa.Table:
    try:
        return read()
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of an upload must be a rejection, never a crash
        if _out_of_memory(exc):
            raise _memory_limit(file) from None
        raise IngestError(file, "read_error", f"the file could not be read ({type(exc).__name__}: {_cut(str(exc))})") from None


def _out_of_memory(exc: BaseException) -> bool:
    """Whether an exception is an allocation refused (the decoder's memory limit: Python, Arrow or C++'s bad_alloc)."""
    return isinstance(exc, MemoryError | pa.ArrowMemoryError) or "bad_alloc" in str(exc) or "malloc of size" in str(exc)


def _memory_limit(file: str) -> IngestError:
    return IngestError(
        file,
        "decode_limit",
        f"decoding it needs more memory than the decoder allows ({PARQUET_EXPANSION} × the upload limit, at least "
        f"{DECODE_MEMORY_FLOOR >> 20} MiB); split the file",
    )


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


def _mask(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy (nulls false)."""
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)
