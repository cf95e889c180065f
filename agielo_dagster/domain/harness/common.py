"""What every harness reader shares: the result types, safe names, the inferred ``benchmark.yaml``, jsonl lines.

Pure functions over paths and bytes: no Dagster, no storage. A reader gets the relative paths of one drop and
a ``read(path) -> bytes`` callable, and answers a :class:`HarnessResult`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pyarrow as pa
import yaml

from ..contract import MAX_LOG_BYTES, MAX_NAME_LENGTH, IngestError, check_name, parse_benchmark_spec

__all__ = [
    "MAX_DETAIL_CHARS",
    "MAX_METRIC_COLUMNS",
    "DerivedUpload",
    "Drop",
    "HarnessResult",
    "Reader",
    "HarnessReader",
    "check_duplicates",
    "duplicate_message",
    "kept_claim",
    "folder_drop",
    "infer_spec",
    "merge_specs",
    "safe_name",
]

Reader = Callable[[str], bytes]

MAX_DETAIL_CHARS = 240  # the sentence of a message; with the file and the rule it stays near 300 characters
MAX_DESCRIPTION_CHARS = 2000  # the description of an inferred benchmark.yaml (names from a log are untrusted)
MAX_METRIC_COLUMNS = 128  # metric columns kept per upload, the metric first (an upload may have 256 columns)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_HASH_CHARS = 8


@dataclass(frozen=True)
class DerivedUpload:
    """One (benchmark, agent) upload derived from a harness log, as if a user had written ``raw/<benchmark>/<agent>``.

    ``rows`` has ``test_case_id`` (string, unique), the metric column named in ``spec_yaml`` (float64), further
    per-test-case metric columns (float64) and metadata columns. ``spec_yaml`` is the inferred ``benchmark.yaml``
    (it parses with :func:`~agielo_dagster.domain.contract.parse_benchmark_spec`); a user-written one overrides it.
    ``sources`` are the relative paths of the files the rows came from. ``benchmark`` and ``agent`` are safe names
    (:func:`safe_name`) of ``original_benchmark`` and ``original_agent``, the names as the harness wrote them.
    """

    benchmark: str
    agent: str
    rows: pa.Table
    spec_yaml: str
    sources: tuple[str, ...]
    original_benchmark: str
    original_agent: str
    harness: str = ""

    @property
    def metric(self) -> str:
        """The metric column named in ``spec_yaml``."""
        return yaml.safe_load(self.spec_yaml)["metric"]


@dataclass
class HarnessResult:
    """What one drop yields: uploads, errors (one :class:`IngestError` per bad file, line or sample), ignored files."""

    uploads: list[DerivedUpload] = field(default_factory=list)
    errors: list[IngestError] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # files of the drop that no reader uses (superseded runs, other files)

    def extend(self, other: HarnessResult) -> None:
        self.uploads.extend(other.uploads)
        self.errors.extend(other.errors)
        self.ignored.extend(other.ignored)


class Drop(NamedTuple):
    """Which reader a file under ``incoming/`` belongs to, and the drop (a folder or one file) it is part of."""

    harness: str  # a HarnessReader's name: "lm-eval", "inspect", "helm", "eee"
    drop: str  # the relative path that identifies the drop: pass every file under it (or the file) to the reader


class HarnessReader(ABC):
    """One harness's log format: which files under ``incoming/<name>/`` make one drop, and how a drop is read.

    A new format is a subclass in a module of its own plus one line in
    :data:`~agielo_dagster.domain.harness.registry.READERS`; :func:`~agielo_dagster.domain.harness.harness_of`
    and :func:`~agielo_dagster.domain.harness.read_drop` find it there.
    """

    name: ClassVar[str]  # the folder under incoming/, and the Drop's harness
    packages: ClassVar[tuple[tuple[str, str], ...]] = ()  # optional (module, distribution) the reader imports

    @abstractmethod
    def drop_of(self, parts: Sequence[str]) -> str | None:
        """The drop of the path ``incoming/<name>/...`` split at '/', or None when the file is none of this harness's.

        ``parts`` has at least three parts, none empty, hidden ('.' first) or with a backslash.
        """

    @abstractmethod
    def read(self, paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
        """Every file of one drop, read: uploads, one error per bad file, line or sample; never raises for a bad log."""


def folder_drop(parts: Sequence[str]) -> str | None:
    """``incoming/<name>/<folder>/**`` → ``incoming/<name>/<folder>``: a drop that is one folder (a run, a suite)."""
    return "/".join(parts[:3]) if len(parts) >= 4 else None


def safe_name(original: str) -> str:
    """A benchmark or agent name accepted by :func:`~agielo_dagster.domain.contract.check_name`, from any text.

    A name that is already safe is kept as it is. Any other is mapped to ASCII (accents dropped), '/' becomes '__'
    (as lm-eval names its model folders), every other run of characters outside ``A-Z a-z 0-9 . _ + -`` becomes
    '_', '..' becomes '.', leading punctuation is dropped, and ``-`` plus 8 hex digits of the SHA-256 of the
    original is appended. So two different originals never share a name (up to a 32-bit hash collision), and the
    same original always gets the same one. Examples: ``mmlu_abstract_algebra`` → itself;
    ``EleutherAI/pythia-160m`` → ``EleutherAI__pythia-160m-<hash>``; ``../etc`` → ``etc-<hash>``.
    """
    text = str(original)
    if len(text) <= MAX_NAME_LENGTH and _NAME.match(text) and ".." not in text:
        return text
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    base = re.sub(r"[^A-Za-z0-9._+-]+", "_", ascii_text.replace("/", "__"))
    base = re.sub(r"\.{2,}", ".", base).lstrip("._+-").rstrip("._+-")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    base = (base or "unnamed")[: MAX_NAME_LENGTH - _HASH_CHARS - 1].rstrip(".")
    return check_name(f"{base}-{digest}", "derived", "(safe_name)")


def infer_spec(
    values: Any,
    metric: str,
    *,
    higher_is_better: bool | None = True,
    declared: tuple[float, float] | None = None,
    description: str = "",
) -> str:
    """The ``benchmark.yaml`` text for one metric column, inferred from its values and what the log declares.

    The rule, in order:

    1. a range declared by the log (``declared = (lo, hi)``; Every Eval Ever's ``min_score``/``max_score``):
       ``[0, 1]`` and higher is better → ``identity``; otherwise ``minmax`` over the declared range;
    2. every value in [0, 1] (0/1 accuracy, pass@1, exact match, C/I/P/N scores): higher is better →
       ``identity``; lower is better → ``minmax {lo: 0, hi: 1, higher_is_better: false}``;
    3. otherwise ``minmax`` over the observed range widened to include 0: ``lo = min(0, min)``,
       ``hi = max(0, max)`` (BLEU in [0, 100], a log-probability in [-5, 0]).

    ``higher_is_better`` comes from the log (lm-eval's ``higher_is_better``, Every Eval Ever's ``lower_is_better``);
    None (not declared) is taken as true and said so in the description. Values must be finite. A range inferred from
    one agent's values may be narrower than the benchmark's: :func:`merge_specs` widens it over several uploads.
    """
    m = np.asarray(values, dtype=np.float64)
    if m.size == 0 or not np.isfinite(m).all():
        raise ValueError("infer_spec needs at least one value, all finite")
    notes = [description.strip()] if description.strip() else []
    if higher_is_better is None:
        higher_is_better = True
        notes.append("The log does not say whether higher is better; assumed it is.")
    lo, hi = float(m.min()), float(m.max())
    if declared is not None:
        dlo, dhi = float(declared[0]), float(declared[1])
        if not (math.isfinite(dlo) and math.isfinite(dhi) and dlo < dhi):
            raise ValueError(f"declared range [{dlo}, {dhi}] is not a finite interval")
        rng, how = (dlo, dhi), "declared by the log"
    elif lo >= 0.0 and hi <= 1.0:
        rng, how = (0.0, 1.0), "all observed values are in [0, 1]"
    else:
        rng, how = (min(0.0, lo), max(0.0, hi)), f"observed values span [{lo:g}, {hi:g}]; range widened to include 0"
    notes.append(
        f"Inferred: {how}; {'higher' if higher_is_better else 'lower'} is better. A benchmark.yaml you write overrides this."
    )
    return _spec_text(metric, rng, higher_is_better, " ".join(notes))


def _spec_text(metric: str, rng: tuple[float, float], higher_is_better: bool, description: str) -> str:
    if rng == (0.0, 1.0) and higher_is_better:
        scoring, params = "identity", {}
    else:
        scoring, params = "minmax", {"lo": _num(rng[0]), "hi": _num(rng[1]), "higher_is_better": bool(higher_is_better)}
    if len(description) > MAX_DESCRIPTION_CHARS:  # names from a log are untrusted: keep benchmark.yaml small
        description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
    spec = {"metric": metric, "scoring": scoring, "params": params, "description": description}
    text = yaml.safe_dump(spec, sort_keys=False, allow_unicode=False, width=1000)
    parse_benchmark_spec(text, "inferred", "benchmark.yaml (inferred)")  # the contract's own parser accepts it
    return text


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def merge_specs(spec_yamls: Sequence[str]) -> str:
    """One ``benchmark.yaml`` for several inferred ones of the same benchmark (one per agent's upload).

    The metric must be the same; so must the direction (higher or lower is better). The range is the union of the
    ranges (``identity`` counts as [0, 1]); the result is ``identity`` when that union is [0, 1] and higher is
    better, else ``minmax``. The description is the first one's. Raises ``ValueError`` naming the disagreement.
    """
    if not spec_yamls:
        raise ValueError("merge_specs needs at least one spec")
    specs = [parse_benchmark_spec(text, "merged", "benchmark.yaml (inferred)") for text in spec_yamls]
    metrics = {s.metric for s in specs}
    if len(metrics) > 1:
        raise ValueError(f"the uploads name different metric columns: {', '.join(sorted(metrics))}")
    if any(s.scoring.name not in ("identity", "minmax") for s in specs):
        raise ValueError("merge_specs merges identity and minmax specs only")
    directions = {s.scoring.higher_is_better for s in specs}
    if len(directions) > 1:
        raise ValueError(f"the uploads disagree on whether higher {specs[0].metric} is better")
    lo, hi = min(s.scoring.lo for s in specs), max(s.scoring.hi for s in specs)
    return _spec_text(specs[0].metric, (float(lo), float(hi)), directions.pop(), specs[0].description)


def kept_claim(harnesses: Sequence[str], precedence: Sequence[str]) -> int | None:
    """Of the logs that claim one (benchmark, agent), given by their harnesses, the index of the one kept: the only
    log of the first harness of ``precedence`` among them. None when that harness wrote two of them (or ``precedence``
    ranks none): both are refused, since which run is right is the user's call, never the order of a listing."""
    rank = [precedence.index(h) if h in precedence else len(precedence) for h in harnesses]
    best = min(rank)
    return rank.index(best) if rank.count(best) == 1 and best < len(precedence) else None


def duplicate_message(agent: str, task: str, others: Sequence[str], kept: str | None, precedence: Sequence[str]) -> str:
    """Why a log's (model, task) is not used: another log is kept by the harness precedence, or the clash is the user's."""
    if kept is None:
        return f"also claimed by {', '.join(others)}: agent {agent!r}, task {task!r}; keep one"
    return f"agent {agent!r}, task {task!r}: the harness precedence {' > '.join(precedence)} takes it from {kept}, not this log"


def check_duplicates(
    uploads: Iterable[DerivedUpload], precedence: Sequence[str] = ()
) -> tuple[list[DerivedUpload], list[IngestError]]:
    """Keep the uploads whose (benchmark, agent) no other upload claims; one ``harness_duplicate`` error per log not kept.

    Logs of different harnesses that claim the same (model, task) are settled by ``precedence`` (:func:`kept_claim`):
    one is kept, the others are named. Two logs of one harness, in one drop or across drops, are both refused.
    """
    by_key: dict[tuple[str, str], list[DerivedUpload]] = {}
    for up in uploads:
        by_key.setdefault((up.benchmark, up.agent), []).append(up)
    kept, errors = [], []
    for group in by_key.values():
        if len(group) == 1:
            kept.append(group[0])
            continue
        winner = kept_claim([up.harness for up in group], precedence)
        files = sorted({s for up in group for s in up.sources[:1]})
        for i, up in enumerate(group):
            if i == winner:
                kept.append(up)
                continue
            others = [f for f in files if f != up.sources[0]] or files
            taken = None if winner is None else group[winner].sources[0]
            message = duplicate_message(up.original_agent, up.original_benchmark, others, taken, precedence)
            errors.append(error(up.sources[0], "harness_duplicate", message))
    return kept, errors


# -- helpers for the readers ---------------------------------------------------------------------------------------


def error(file: str, rule: str, detail: str, row: int | None = None, line: int | None = None) -> IngestError:
    """An :class:`IngestError` whose sentence is at most :data:`MAX_DETAIL_CHARS` characters."""
    detail = " ".join(str(detail).split())
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
    return IngestError(file, rule, detail, row=row, line=line)


def quote(value: Any, limit: int = 40) -> str:
    """``repr`` of a value from a log, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def read_bytes(read: Reader, path: str, max_bytes: int = MAX_LOG_BYTES) -> bytes:
    """``read(path)``, refusing files above the upload limit (rule ``log_size``) and empty ones (``log_not_empty``)."""
    data = read(path)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise IngestError(path, "harness_unreadable", f"read() gave {type(data).__name__}, not bytes")
    data = bytes(data)
    if len(data) > max_bytes:
        raise IngestError(path, "log_size", f"file is {len(data):,} bytes; the limit is {max_bytes:,}")
    if not data.strip():
        raise IngestError(path, "log_not_empty", "file is empty")
    return data


def decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(path, "utf8", f"invalid UTF-8 at byte {exc.start} (line {line})", line=line) from None


def load_json(data: bytes, path: str, rule: str) -> Any:
    """A whole JSON document; a cut-off or malformed one is ``rule`` with the line and column."""
    text = decode(data, path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        body = text.strip()
        cut = exc.pos >= len(body) or (body[:1] in ("{", "[") and body[-1:] != {"{": "}", "[": "]"}[body[:1]])
        why = "the file ends in the middle of the document (truncated?)" if cut else exc.msg
        raise IngestError(
            path, rule, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {why}", line=exc.lineno
        ) from None


def jsonl_records(data: bytes, path: str, truncated_rule: str, parse_rule: str) -> Iterator[tuple[int, int, dict]]:
    """``(record number, line number, object)`` for every non-blank line of a jsonl file.

    A last line that does not parse and has no newline after it is ``truncated_rule`` (the file was cut while being
    written or copied); any other line that is not a JSON object is ``parse_rule``.
    """
    text = decode(data, path)
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    record = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record += 1
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines) and not ends_with_newline:
                raise IngestError(
                    path,
                    truncated_rule,
                    f"the last line is cut off after {len(line):,} characters ({exc.msg}): the file is truncated",
                    row=record,
                    line=number,
                ) from None
            raise IngestError(
                path, parse_rule, f"not a JSON object: {exc.msg} at column {exc.colno}", row=record, line=number
            ) from None
        if not isinstance(obj, dict):
            raise IngestError(path, parse_rule, f"a {type(obj).__name__}, not a JSON object", row=record, line=number)
        yield record, number, obj


def as_metric(value: Any) -> float | None:
    """A per-sample metric value as a float: numbers as they are, booleans 1/0; None for anything else."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def build_upload(
    *,
    harness: str,
    original_benchmark: str,
    original_agent: str,
    test_case_ids: Sequence[str],
    metrics: dict[str, Sequence[float]],
    metadata: dict[str, Sequence[Any]] | None = None,
    sources: Sequence[str],
    higher_is_better: bool | None = True,
    declared: tuple[float, float] | None = None,
    description: str = "",
    benchmark: str | None = None,
) -> DerivedUpload:
    """Assemble a :class:`DerivedUpload`: the first entry of ``metrics`` is the metric of the inferred spec.

    At most :data:`MAX_METRIC_COLUMNS` metric columns are kept, in the order given.
    """
    metrics = dict(list(metrics.items())[:MAX_METRIC_COLUMNS])
    metric = next(iter(metrics))
    columns: dict[str, pa.Array] = {"test_case_id": pa.array([str(t) for t in test_case_ids], pa.string())}
    for name, values in metrics.items():
        columns[name] = pa.array(np.asarray(values, dtype=np.float64), pa.float64())
    for name, values in (metadata or {}).items():
        if name in columns:
            raise ValueError(f"metadata column {name!r} clashes with a metric column")
        columns[name] = pa.array(list(values))
    spec = infer_spec(
        columns[metric].to_numpy(), metric, higher_is_better=higher_is_better, declared=declared, description=description
    )
    return DerivedUpload(
        benchmark=benchmark or safe_name(original_benchmark),
        agent=safe_name(original_agent),
        rows=pa.table(columns),
        spec_yaml=spec,
        sources=tuple(sources),
        original_benchmark=original_benchmark,
        original_agent=original_agent,
        harness=harness,
    )


def guarded(file: str, result: HarnessResult, rule: str = "harness_unreadable"):
    """A context manager: an :class:`IngestError` or any other exception inside becomes one error of ``file``."""
    return _Guard(file, result, rule)


class _Guard:
    def __init__(self, file: str, result: HarnessResult, rule: str):
        self.file, self.result, self.rule = file, result, rule

    def __enter__(self) -> _Guard:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            return False
        if isinstance(exc, IngestError):
            self.result.errors.append(exc)
        elif isinstance(exc, Exception):
            self.result.errors.append(error(self.file, self.rule, f"could not be read: {type(exc).__name__}: {exc}"))
        else:
            return False  # KeyboardInterrupt, SystemExit: not ours to swallow
        return True
