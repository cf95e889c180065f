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
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import yaml

from .rating.scoring import Scoring, ScoringError, make_scoring

__all__ = [
    "LOG_SUFFIXES",
    "MAX_LOG_BYTES",
    "MAX_SPEC_BYTES",
    "BenchmarkSpec",
    "IngestError",
    "check_name",
    "classify_raw_path",
    "log_to_matches",
    "parse_benchmark_spec",
    "read_log",
]

LOG_SUFFIXES = (".csv", ".parquet", ".jsonl")
MAX_SPEC_BYTES = 64 * 1024
MAX_LOG_BYTES = 256 * 1024 * 1024
MAX_NAME_LENGTH = 128
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_SPEC_KEYS = {"metric", "scoring", "params", "description"}


class IngestError(ValueError):
    """An upload that breaks the input contract.

    Attributes: ``file`` (the path as uploaded), ``rule`` (short name), ``row``
    (1-based data row or ``None``), ``detail`` (the sentence without the prefix).
    """

    def __init__(self, file: str, rule: str, detail: str, row: int | None = None, line: int | None = None):
        where = "" if row is None else f" data row {row}" + ("" if line is None else f" (line {line})") + ":"
        super().__init__(f"{file}:{where} {detail} (rule: {rule})")
        self.file, self.rule, self.detail, self.row, self.line = file, rule, detail, row, line


def check_name(name: str, what: str, file: str) -> str:
    """Refuse benchmark and agent names that could escape the storage root or confuse a path."""
    if not isinstance(name, str) or not name:
        raise IngestError(file, "safe_name", f"{what} name is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise IngestError(file, "safe_name", f"{what} name is {len(name)} characters long; at most {MAX_NAME_LENGTH}")
    if not _NAME.match(name) or ".." in name:
        raise IngestError(
            file,
            "safe_name",
            f"{what} name {name!r} may hold only letters, digits and . _ + - (not first), and no '..'",
        )
    return name


@dataclass(frozen=True)
class RawPath:
    """What a file under ``raw/`` is: an upload of an agent, or a benchmark's ``benchmark.yaml``."""

    kind: str  # "upload" | "spec"
    benchmark: str
    agent: str = ""


def classify_raw_path(path: str) -> RawPath | None:
    """Classify a path relative to the storage root, refusing anything outside the contract.

    Returns None for hidden files (a name starting with '.'), which upload tools use while a
    file is still being written. Raises :class:`IngestError` (rule ``layout``, ``safe_name`` or
    ``log_format``) for everything else that is not ``raw/<benchmark>/<agent>.<csv|parquet|jsonl>``
    or ``raw/<benchmark>/benchmark.yaml``; names are checked before any path is built from them.
    """
    parts = path.split("/")
    if parts[-1].startswith("."):
        return None
    if len(parts) != 3 or parts[0] != "raw":
        raise IngestError(
            path, "layout", "files belong at raw/<benchmark>/<agent>.<csv|parquet|jsonl> or raw/<benchmark>/benchmark.yaml"
        )
    benchmark = check_name(parts[1], "benchmark", path)
    if parts[2] == "benchmark.yaml":
        return RawPath("spec", benchmark)
    stem, dot, suffix = parts[2].rpartition(".")
    if not dot or f".{suffix.lower()}" not in LOG_SUFFIXES:
        raise IngestError(
            path,
            "log_format",
            f"unsupported file type; uploads are {', '.join(LOG_SUFFIXES)} (benchmark.yaml describes the benchmark)",
        )
    return RawPath("upload", benchmark, check_name(stem, "agent", path))


@dataclass(frozen=True)
class BenchmarkSpec:
    """How to score a benchmark, from its ``benchmark.yaml``."""

    name: str
    metric: str
    scoring: Scoring
    description: str = ""
    raw: dict = field(default_factory=dict, compare=False, repr=False)


def parse_benchmark_spec(text: bytes | str, benchmark: str, file: str) -> BenchmarkSpec:
    """Parse and validate a ``benchmark.yaml`` (``yaml.safe_load``, no anchors or aliases)."""
    data = text.encode() if isinstance(text, str) else text
    if len(data) > MAX_SPEC_BYTES:
        raise IngestError(file, "spec_size", f"benchmark.yaml is {len(data):,} bytes; at most {MAX_SPEC_BYTES:,}")
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(file, "utf8", f"benchmark.yaml is not valid UTF-8 (byte {exc.start})") from None
    try:
        # aliases can expand a small file into a huge object (a 'billion laughs' bomb): refuse them outright
        for event in yaml.parse(source, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise IngestError(file, "spec_no_aliases", "benchmark.yaml uses YAML anchors or aliases, which are not allowed")
        spec = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise IngestError(file, "spec_yaml", f"benchmark.yaml is not valid YAML{at}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(spec, dict):
        raise IngestError(file, "spec_mapping", "benchmark.yaml must be a mapping with keys metric and scoring")
    unknown = set(map(str, spec)) - _SPEC_KEYS
    if unknown:
        raise IngestError(
            file,
            "spec_keys",
            f"benchmark.yaml has unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_SPEC_KEYS))}",
        )
    metric = spec.get("metric")
    if not isinstance(metric, str) or not metric or metric == "test_case_id":
        raise IngestError(
            file, "spec_metric", f"benchmark.yaml must name the metric column (a string other than test_case_id), got {metric!r}"
        )
    params = spec.get("params") or {}
    if not isinstance(params, dict):
        raise IngestError(file, "spec_params", f"benchmark.yaml params must be a mapping, got {params!r}")
    description = spec.get("description") or ""
    if not isinstance(description, str):
        raise IngestError(file, "spec_description", "benchmark.yaml description must be text")
    try:
        scoring = make_scoring(str(spec.get("scoring", "")), params)
    except ScoringError as exc:
        raise IngestError(file, exc.rule, f"benchmark.yaml: {exc}") from None
    return BenchmarkSpec(name=benchmark, metric=metric, scoring=scoring, description=description.strip(), raw=spec)


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
