"""The input contract: benchmark and agent names, ``benchmark.yaml``, limits, and the rejection type.

``benchmark.yaml``::

    metric: correct            # the metric column
    scoring: identity          # identity | binary | minmax
    params: {}                 # e.g. {lo: 0, hi: 10, higher_is_better: false}
    description: free text     # optional
    model: rasch               # optional: rasch (the default) | 2pl | glicko (the AGI-Elo paper's)
    exclude: [likely_mislabeled, q17]  # optional: flags and test-case ids the ratings leave out

Every rejection is an :class:`IngestError` naming the file, the row (1-based data row; for
csv and jsonl also the line) and the rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from ..rating.scoring import Scoring, ScoringError, make_scoring
from ..rating.settings import DEFAULT_MODEL, MODELS

__all__ = [
    "DECODE_CPU_SECONDS",
    "DECODE_CPU_SECONDS_PER_MIB",
    "DECODE_MEMORY_FLOOR",
    "DECODE_WALL_FACTOR",
    "MAX_COLUMNS",
    "MAX_HEADER_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_LOG_BYTES",
    "MAX_MESSAGE_CHARS",
    "MAX_NAME_LENGTH",
    "MAX_PARQUET_FOOTER_BYTES",
    "MAX_QUOTED_CHARS",
    "MAX_REPORT_CHARS",
    "MAX_ROWS_NAMED",
    "MAX_SPEC_BYTES",
    "MIN_ROW_BYTES",
    "PARQUET_EXPANSION",
    "BenchmarkSpec",
    "IngestError",
    "Problems",
    "check_name",
    "parse_benchmark_spec",
]

MAX_SPEC_BYTES = 64 * 1024
MAX_LOG_BYTES = 256 * 1024 * 1024
MAX_NAME_LENGTH = 128

# Limits of the upload readers (agielo_dagster.domain.readers); each has its own rule.
MAX_COLUMNS = 256  # csv header fields, parquet leaf columns, distinct jsonl keys (rule header_width)
MAX_HEADER_BYTES = 64 * 1024  # the csv header record, checked before anything else is parsed (rule header_width)
MAX_JSON_DEPTH = 32  # nesting of arrays and objects on one jsonl line, the line's object included (rule jsonl_depth)
MAX_PARQUET_FOOTER_BYTES = 16 * 1024 * 1024  # the parquet footer (schema and row-group index) (rule parquet_footer)
PARQUET_EXPANSION = 8  # a parquet upload may decode to at most this many times the upload limit (rule log_size)
# The decoder process (readers.isolation), rule decode_limit: its writable memory beyond a request's start and bytes is
# PARQUET_EXPANSION times the upload limit, at least DECODE_MEMORY_FLOOR; a file's CPU seconds are DECODE_CPU_SECONDS
# plus DECODE_CPU_SECONDS_PER_MIB a MiB of it (jsonl, the slowest format, reads at about 0.04 s a MiB), and its wall
# time DECODE_WALL_FACTOR times that, plus 10 s
DECODE_MEMORY_FLOOR = 64 * 1024 * 1024
DECODE_CPU_SECONDS = 10
DECODE_CPU_SECONDS_PER_MIB = 0.5
DECODE_WALL_FACTOR = 3
MIN_ROW_BYTES = 4  # a parquet upload may declare at most (upload limit / 4) rows, as many as the densest csv (rule log_size)
MAX_MESSAGE_CHARS = 300  # a rejection message, file path included (a longer detail is cut with an ellipsis)
MAX_QUOTED_CHARS = 40  # a value quoted in a message (longer values are cut with an ellipsis)
MAX_REPORT_CHARS = 1000  # a rejection naming several rules (one problem of each, in file order)
MAX_ROWS_NAMED = 3  # more rows breaking a rule, named by number after the first (the rest are counted)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_SPEC_KEYS = {"metric", "scoring", "params", "description", "full_coverage", "model", "exclude"}
MAX_EXCLUDED = 100_000  # entries of exclude: a list of ids, typed or generated, stays a short file
DEFAULT_FULL_COVERAGE = 0.8  # an upload covering less than this share of the largest upload is provisional


class IngestError(ValueError):
    """An upload that breaks the input contract.

    Attributes: ``file`` (the path as uploaded), ``rule`` (short name), ``row``
    (1-based data row or ``None``), ``line`` (1-based file line or ``None``), ``detail``
    (the sentence without the prefix), ``problems`` (every problem the file was rejected for, this
    one first; see :class:`Problems`). The message is at most :data:`MAX_MESSAGE_CHARS`
    characters (unless the file path alone is longer): a longer detail is cut with an ellipsis.
    A file rejected for several rules names each in one message of at most :data:`MAX_REPORT_CHARS`.
    """

    def __init__(self, file: str, rule: str, detail: str, row: int | None = None, line: int | None = None):
        where = _where(row, line)
        prefix, suffix, detail = f"{file}:{where} ", f" (rule: {rule})", str(detail)
        budget = max(MAX_MESSAGE_CHARS - len(prefix) - len(suffix), 80)
        if len(detail) > budget:
            detail = detail[: budget - 1] + "…"
        super().__init__(f"{prefix}{detail}{suffix}")
        self.file, self.rule, self.detail, self.row, self.line = file, rule, detail, row, line
        self.problems: tuple[IngestError, ...] = (self,)


def _where(row: int | None, line: int | None) -> str:
    return "" if row is None else f" data row {row}" + ("" if line is None else f" (line {line})") + ":"


class Problems:
    """Every problem of one file, gathered check by check, then raised as one :class:`IngestError`.

    ``add(row0, rule, detail)`` records a problem at a 0-based data row (``None``: the whole file);
    ``add_rows(mask, rule, detail_of)`` records every row where ``mask`` is true: the first is
    described by ``detail_of(row0, count)``, the next :data:`MAX_ROWS_NAMED` are named by number and
    the rest counted. :meth:`raise_if_any` raises nothing when the file is clean; otherwise one
    error whose rule, row and line are those of the first problem in the file, and whose message
    names one problem per rule, in file order: ``f: data row 6 (line 7): … (rule: metric_in_range);
    data row 11 (line 12): … (also data rows 14, 20 and 3 more) (rule: test_case_id_unique)``.
    """

    def __init__(self, file: str, line_of=lambda row0: None):
        self.file = file
        self.line_of = line_of
        self.found: dict[str, tuple[int | None, str, list[int], int]] = {}  # rule -> (row0, detail, more rows, count)

    def add(self, row0: int | None, rule: str, detail: str, more: list[int] | None = None, count: int = 1) -> None:
        if rule not in self.found:  # the first problem of a rule is the one described
            self.found[rule] = (row0, detail, list(more or []), count)

    def add_rows(self, mask, rule: str, detail_of) -> None:
        import numpy as np

        rows = np.flatnonzero(np.asarray(mask, dtype=bool))
        if len(rows):
            first = int(rows[0])
            self.add(first, rule, detail_of(first, len(rows)), [int(r) for r in rows[1 : 1 + MAX_ROWS_NAMED]], len(rows))

    def __bool__(self) -> bool:
        return bool(self.found)

    def raise_if_any(self) -> None:
        if not self.found:
            return
        order = sorted(self.found.items(), key=lambda kv: -1 if kv[1][0] is None else kv[1][0])
        errors = []
        for rule, (row0, detail, more, count) in order:
            if more:
                left = count - 1 - len(more)
                named = ", ".join(str(r + 1) for r in more) + (f" and {left:,} more" if left > 0 else "")
                detail = f"{detail} (also data row{'s' if count > 2 else ''} {named})"
            row = None if row0 is None else row0 + 1
            errors.append(IngestError(self.file, rule, detail, row=row, line=None if row0 is None else self.line_of(row0)))
        first = errors[0]
        if len(errors) > 1:
            parts = [str(first)] + [f"{_where(e.row, e.line).strip()} {e.detail} (rule: {e.rule})".strip() for e in errors[1:]]
            text = "; ".join(parts)
            if len(text) > MAX_REPORT_CHARS:
                text = text[: MAX_REPORT_CHARS - 1] + "…"
            first.args = (text,)
        first.problems = tuple(errors)
        raise first


def check_name(name: str, what: str, file: str) -> str:
    """Refuse benchmark and agent names that could escape the storage root or confuse a path."""
    if not isinstance(name, str) or not name:
        raise IngestError(file, "safe_name", f"{what} name is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise IngestError(file, "safe_name", f"{what} name is {len(name)} characters long; at most {MAX_NAME_LENGTH}")
    if not _NAME.match(name) or ".." in name:
        shown = name if len(name) <= MAX_QUOTED_CHARS else name[:MAX_QUOTED_CHARS] + "…"
        found = "it has non-ASCII characters; " if not name.isascii() else ""
        raise IngestError(
            file,
            "safe_name",
            f"{what} name {shown!r} is refused: {found}names may hold only ASCII letters A-Z a-z, digits 0-9 "
            "and . _ + - (not first), and no '..'",
        )
    return name


@dataclass(frozen=True)
class BenchmarkSpec:
    """How to score a benchmark, from its ``benchmark.yaml``."""

    name: str
    metric: str
    scoring: Scoring
    description: str = ""
    full_coverage: float = DEFAULT_FULL_COVERAGE
    model: str = DEFAULT_MODEL
    exclude: tuple[str, ...] = ()  # flags (likely_mislabeled, …) and test-case ids the ratings leave out
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
    problems = Problems(file)  # every key it gets wrong is named, not only the first
    unknown = set(map(str, spec)) - _SPEC_KEYS
    if unknown:
        problems.add(
            None,
            "spec_keys",
            f"benchmark.yaml has unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_SPEC_KEYS))}",
        )
    metric = spec.get("metric")
    if not isinstance(metric, str) or not metric or metric == "test_case_id":
        problems.add(
            None, "spec_metric", f"benchmark.yaml must name the metric column (a string other than test_case_id), got {metric!r}"
        )
    params = spec.get("params") or {}
    if not isinstance(params, dict):
        problems.add(None, "spec_params", f"benchmark.yaml params must be a mapping, got {params!r}")
        params = {}
    description = spec.get("description") or ""
    if not isinstance(description, str):
        problems.add(None, "spec_description", "benchmark.yaml description must be text")
        description = ""
    scoring = None
    if "spec_params" not in problems.found:
        try:
            scoring = make_scoring(str(spec.get("scoring", "")), params)
        except ScoringError as exc:
            problems.add(None, exc.rule, f"benchmark.yaml: {exc}")
    full_coverage = spec.get("full_coverage", DEFAULT_FULL_COVERAGE)
    if isinstance(full_coverage, bool) or not isinstance(full_coverage, (int, float)) or not 0 < full_coverage <= 1:
        problems.add(
            None, "spec_full_coverage", f"benchmark.yaml full_coverage must be a number in (0, 1], got {full_coverage!r}"
        )
    model = spec.get("model", DEFAULT_MODEL)
    if model not in MODELS:
        problems.add(None, "spec_model", f"benchmark.yaml model must be one of {', '.join(MODELS)}, got {model!r}")
    exclude = spec.get("exclude") or []
    if not isinstance(exclude, list) or len(exclude) > MAX_EXCLUDED or not all(isinstance(e, str) and e for e in exclude):
        problems.add(
            None,
            "spec_exclude",
            "benchmark.yaml exclude must be a list of flags (likely_mislabeled, saturated, unsolved, uninformative) or "
            f"test-case ids, each a non-empty string, at most {MAX_EXCLUDED:,}; got {str(exclude)[:80]}",
        )
        exclude = []
    problems.raise_if_any()
    return BenchmarkSpec(
        name=benchmark,
        metric=metric,
        scoring=scoring,
        description=description.strip(),
        full_coverage=float(full_coverage),
        model=model,
        exclude=tuple(dict.fromkeys(exclude)),
        raw=spec,
    )
