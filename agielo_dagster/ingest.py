"""From uploaded raw logs to match tables: the input contract, enforced.

Pure functions over bytes and data frames (no Dagster, no storage): the assets
read bytes through the storage resource and call these.

Contract
--------
``<root>/raw/<benchmark>/<agent>.<csv|parquet|jsonl>``: one row per test case,
a ``test_case_id`` column, the metric column named in ``benchmark.yaml``, and
any extra columns (kept as test-case metadata). ``benchmark.yaml``::

    metric: correct            # the metric column
    scoring: identity          # identity | binary | minmax
    params: {}                 # e.g. {lo: 0, hi: 10, higher_is_better: false}
    description: free text     # optional

Every rejection is an :class:`IngestError` naming the file, the row (1-based
data row; for csv and jsonl also the line) and the rule.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

from .domain.contract import MAX_LOG_BYTES, BenchmarkSpec, IngestError, check_name, parse_benchmark_spec  # noqa: F401
from .domain.layout import LOG_SUFFIXES, RawPath, classify_raw_path  # noqa: F401
from .rating.scoring import ScoringError


def read_log(data: bytes, file: str, *, max_bytes: int = MAX_LOG_BYTES) -> pd.DataFrame:
    """Parse one raw log (csv, parquet or jsonl by suffix) into a data frame of its rows.

    ``test_case_id`` is read as text; nothing is dropped or rewritten.
    """
    suffix = file[file.rfind(".") :].lower() if "." in file else ""
    if suffix not in LOG_SUFFIXES:
        raise IngestError(file, "log_format", f"unsupported file type {suffix or '(none)'}; use {', '.join(LOG_SUFFIXES)}")
    if len(data) > max_bytes:
        raise IngestError(
            file, "log_size", f"file is {len(data):,} bytes; the limit is {max_bytes:,} (split it or raise the limit)"
        )
    if len(data) == 0:
        raise IngestError(file, "log_not_empty", "file is empty")
    if suffix == ".parquet":
        return _read_parquet(data, file)
    try:
        text = data.decode("utf-8-sig")  # a UTF-8 byte-order mark (as some spreadsheets write) is accepted
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(file, "utf8", f"invalid UTF-8 at byte {exc.start} (line {line})") from None
    if suffix == ".csv":
        return _read_csv(text, file)
    return _read_jsonl(text, file)


def _read_csv(text: str, file: str) -> pd.DataFrame:
    try:
        df = pd.read_csv(io.StringIO(text), dtype={"test_case_id": str}, keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:
        raise IngestError(file, "log_not_empty", "file has no header and no rows") from None
    except pd.errors.ParserError as exc:
        raise IngestError(file, "csv_parse", f"not a well-formed CSV: {exc}") from None
    return df


def _read_jsonl(text: str, file: str) -> pd.DataFrame:
    import json

    rows = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, parse_constant=lambda c: float(c))
        except json.JSONDecodeError as exc:
            raise IngestError(file, "jsonl_parse", f"line {line_no} is not a JSON object: {exc.msg}", line=line_no) from None
        if not isinstance(row, dict):
            raise IngestError(file, "jsonl_parse", f"line {line_no} is a JSON {type(row).__name__}, not an object")
        rows.append(row)
    if not rows:
        raise IngestError(file, "log_not_empty", "file has no rows")
    df = pd.DataFrame.from_records(rows)
    if "test_case_id" in df.columns:
        df["test_case_id"] = df["test_case_id"].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return df


def _read_parquet(data: bytes, file: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowInvalid, pa.ArrowException, OSError) as exc:
        raise IngestError(file, "parquet_parse", f"not a readable parquet file (truncated or corrupt?): {exc}") from None
    df = table.to_pandas()
    if "test_case_id" in df.columns and not pd.api.types.is_string_dtype(df["test_case_id"]):
        df["test_case_id"] = df["test_case_id"].astype(str)
    return df


def _reject_rows(file: str, bad: np.ndarray, rule: str, describe) -> None:
    """Raise for the first row where ``bad`` holds; ``describe(row0, count)`` words the problem."""
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise IngestError(file, rule, describe(r, int(bad.sum())), row=r + 1, line=_line(file, r))


def _line(file: str, row0: int) -> int | None:
    """The file line of a 0-based data row (header on line 1 for csv)."""
    return row0 + 2 if file.lower().endswith(".csv") else None


def log_to_matches(
    log: pd.DataFrame, *, file: str, agent: str, spec: BenchmarkSpec, version: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Validate a parsed raw log and turn it into matches.

    Returns
    -------
    (matches, metadata)
        ``matches``: ``test_case_id, agent_id, metric, score, source_path, source_version``;
        ``metadata``: ``test_case_id`` plus the log's extra columns.
    """
    if "test_case_id" not in log.columns:
        hint = ""
        if len(log.columns) == 1 and any(sep in str(log.columns[0]) for sep in ";\t|"):
            hint = " (wrong delimiter? CSV logs must be comma-separated)"
        raise IngestError(
            file, "has_test_case_id", f"no test_case_id column; columns are {', '.join(map(str, log.columns))}{hint}"
        )
    if spec.metric not in log.columns:
        raise IngestError(
            file,
            "has_metric",
            f"no {spec.metric!r} column (the metric named in benchmark.yaml); columns are {', '.join(map(str, log.columns))}",
        )
    if len(log) == 0:
        raise IngestError(file, "has_rows", "the file has a header but no rows")
    ids = log["test_case_id"]
    _reject_rows(
        file,
        ids.isna().to_numpy() | (ids.astype(str).str.strip() == "").to_numpy(),
        "test_case_id_present",
        lambda r, n: f"test_case_id is empty ({n} row(s))",
    )
    ids = ids.astype(str)
    _reject_rows(
        file,
        (ids != ids.str.strip()).to_numpy(),
        "test_case_id_trimmed",
        lambda r, n: f"test_case_id {ids.iloc[r]!r} has leading or trailing white space ({n} row(s)); ids are used as written",
    )
    _reject_rows(
        file,
        ids.duplicated(keep="first").to_numpy(),
        "test_case_id_unique",
        lambda r, n: (
            f"test case {ids.iloc[r]!r} appears again (first at data row "
            f"{int(np.flatnonzero((ids == ids.iloc[r]).to_numpy())[0]) + 1}); {n} duplicate row(s)"
        ),
    )
    metric = _numeric_metric(log[spec.metric], file, spec.metric)
    try:
        score = spec.scoring.score(metric, source=file)
    except ScoringError as exc:
        r = exc.row if exc.row is not None else 0
        value = float(metric[r])
        bounds = f"[{spec.scoring.lo:g}, {spec.scoring.hi:g}]"
        detail = f"{spec.metric} {value!r} is " + (
            "not a finite number" if not math.isfinite(value) else f"outside {bounds} of scoring '{spec.scoring.name}'"
        )
        raise IngestError(file, exc.rule, f"{detail} ({exc.count} value(s))", row=r + 1, line=_line(file, r)) from None
    matches = pd.DataFrame(
        {
            "test_case_id": ids.to_numpy(dtype=object),
            "agent_id": agent,
            "metric": metric,
            "score": score,
            "source_path": file,
            "source_version": version,
        }
    )
    metadata = log.drop(columns=[spec.metric]).assign(test_case_id=ids.to_numpy(dtype=object))
    return matches, metadata


def _numeric_metric(column: pd.Series, file: str, name: str) -> np.ndarray:
    """The metric as float64; NaN and ±inf pass through (the scoring's finite rule names them)."""
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    from_text = file.lower().endswith(".csv")  # in CSV every value is text
    out = np.empty(len(column))
    for r, value in enumerate(column.tolist()):
        if value is None or isinstance(value, (bool, int, float, np.integer, np.floating)):
            out[r] = np.nan if value is None else float(value)
            continue
        if isinstance(value, str) and from_text:
            try:
                out[r] = float(value.strip())
                continue
            except ValueError:
                pass
            raise IngestError(file, "metric_numeric", f"{name} {value!r} is not a number", row=r + 1, line=_line(file, r))
        raise IngestError(
            file,
            "metric_numeric",
            f"{name} {value!r} is {type(value).__name__} in a column of numbers (mixed types); write plain numbers",
            row=r + 1,
            line=_line(file, r),
        )
    return out
