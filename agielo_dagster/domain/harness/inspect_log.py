"""Inspect AI logs (``.eval``, or ``.json`` with ``--log-format json``) → uploads, through inspect_ai's own reader.

``inspect_ai`` is an optional dependency (``pip install 'agielo-dagster[harness]'``), imported only here and only
when a log is read; without it every Inspect log is one ``inspect_not_installed`` error.

- **Benchmark**: the task name (``log.eval.task``); **agent**: the model (``log.eval.model``, e.g.
  ``openai/gpt-4o``). Both go through :func:`safe_name`.
- **Test case**: the sample ``id``.
- **Metric**: the value of the first scorer: ``C``/``I``/``P``/``N`` (Inspect's correct, incorrect, partial,
  no answer) → 1/0/0.5/0, ``true``/``false`` → 1/0, numbers as they are. A scorer whose value is a mapping gives one
  column per key (``<scorer>.<key>``). Further scorers are kept as columns, for a ``benchmark.yaml`` you write.
  Inspect does not say whether higher is better; it is taken to be.
- **Epochs**: with ``epochs="mean"`` (the default, and what Inspect's default ``mean`` reducer reports) one test
  case per sample id, its metric the mean over the epochs, and an ``epochs`` column with their count. With
  ``epochs="separate"`` every (id, epoch) is its own test case ``<id>#<epoch>``, with ``sample_id`` and ``epoch``
  columns.
- Only logs with status ``success`` are rated; a sample without a score (it errored) is refused, naming it.
- An ``.eval`` is a zip archive: before inspect_ai opens it, :func:`~.archive.check_archive` holds its members,
  uncompressed, to the upload limit ``max_bytes`` (each and in total; rules ``archive_size``, ``archive_members``,
  ``archive_method``), so a small archive cannot expand to gigabytes in the ingest step.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Sequence
from typing import Any, Literal

from ..contract import MAX_LOG_BYTES, IngestError
from .archive import check_archive
from .common import (
    HarnessReader,
    HarnessResult,
    Reader,
    as_metric,
    build_upload,
    check_duplicates,
    error,
    guarded,
    quote,
    read_bytes,
)

__all__ = ["Inspect", "read_inspect", "score_value"]

HARNESS = "inspect"
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def score_value(value: Any) -> float | None:
    """An Inspect score value as a number: C/I/P/N → 1/0/0.5/0, booleans 1/0, numbers as they are, else None."""
    if isinstance(value, str):
        return _LETTERS.get(value)
    return as_metric(value)


def read_inspect(
    paths: Sequence[str], read: Reader, *, epochs: Literal["mean", "separate"] = "mean", max_bytes: int = MAX_LOG_BYTES
) -> HarnessResult:
    """Read Inspect logs: each path is one ``.eval`` (or ``.json``) log; other paths are listed in ``ignored``.

    ``max_bytes`` is the upload limit: of a file's bytes, and of an ``.eval`` archive's members uncompressed.
    """
    if epochs not in ("mean", "separate"):
        raise ValueError(f"epochs must be 'mean' or 'separate', got {epochs!r}")
    result = HarnessResult()
    uploads = []
    for path in sorted(set(paths)):
        if not path.endswith((".eval", ".json")):
            result.ignored.append(path)
            continue
        with guarded(path, result, "inspect_unreadable"):
            uploads.append(_read_one(read_bytes(read, path, max_bytes), path, epochs, max_bytes))
    kept, duplicates = check_duplicates(uploads)
    result.uploads.extend(kept)
    result.errors.extend(duplicates)
    return result


def _read_one(data: bytes, path: str, epochs: str, max_bytes: int):
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise IngestError(
            path, "inspect_not_installed", "reading Inspect logs needs inspect-ai: pip install 'agielo-dagster[harness]'"
        ) from None
    from pydantic import ValidationError

    fmt = "eval" if path.endswith(".eval") else "json"
    if fmt == "eval" and not zipfile.is_zipfile(io.BytesIO(data)):
        raise IngestError(
            path, "inspect_truncated", "not a readable .eval archive (a zip file): the log is truncated or is no Inspect log"
        )
    if fmt == "eval":
        check_archive(data, path, max_bytes)  # before inspect_ai decompresses anything
    try:
        log = read_eval_log(io.BytesIO(data), format=fmt)
    except ValidationError as exc:
        raise _diagnose(data, path, fmt, exc) from None
    except (zipfile.BadZipFile, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(path, "inspect_truncated", f"the log cannot be read to its end ({type(exc).__name__}: {exc})") from None
    if log.status != "success":
        raise IngestError(
            path, "inspect_log_status", f"log status is {log.status!r}; only complete runs (status 'success') are rated"
        )
    task, model = log.eval.task, log.eval.model
    if not task or not model:
        raise IngestError(path, "inspect_header", f"log names no task ({quote(task)}) or no model ({quote(model)})")
    samples = log.samples or []
    if not samples:
        raise IngestError(path, "log_not_empty", "the log has no samples")
    columns: list[str] | None = None
    per_case: dict[str, dict[str, Any]] = {}
    for index, sample in enumerate(samples, start=1):
        where = f"sample {quote(sample.id)} epoch {sample.epoch}"
        if sample.id is None or sample.id == "":
            raise IngestError(path, "sample_id_missing", f"sample {index} (epoch {sample.epoch}) has no id", row=index)
        if not sample.scores:
            why = f" (it errored: {sample.error.message})" if sample.error else ""
            raise IngestError(path, "inspect_score_missing", f"{where} has no score{why}", row=index)
        values = _flatten(sample.scores, path, where, index)
        if columns is None:
            columns = list(values)
        missing = [c for c in columns if c not in values]
        if missing:
            raise IngestError(path, "inspect_score_missing", f"{where} has no score {missing[0]!r}", row=index)
        key = str(sample.id) if epochs == "mean" else f"{sample.id}#{sample.epoch}"
        entry = per_case.setdefault(key, {"id": str(sample.id), "epochs": [], "values": {c: [] for c in columns}})
        if sample.epoch in entry["epochs"]:
            raise IngestError(path, "sample_id_duplicate", f"{where} appears twice", row=index)
        entry["epochs"].append(sample.epoch)
        for c in columns:
            entry["values"][c].append(values[c])
    assert columns is not None
    ids = list(per_case)
    metrics = {c: [sum(per_case[k]["values"][c]) / len(per_case[k]["values"][c]) for k in ids] for c in columns}
    if epochs == "mean":
        metadata: dict[str, list] = {"epochs": [len(per_case[k]["epochs"]) for k in ids]}
    else:
        metadata = {"sample_id": [per_case[k]["id"] for k in ids], "epoch": [per_case[k]["epochs"][0] for k in ids]}
    n_epochs = max(len(e["epochs"]) for e in per_case.values())
    return build_upload(
        harness=HARNESS,
        original_benchmark=str(task),
        original_agent=str(model),
        test_case_ids=ids,
        metrics=metrics,
        metadata=metadata,
        sources=(path,),
        higher_is_better=None,
        description=f"Inspect AI task {task!r}, scorer {columns[0]!r}, {n_epochs} epoch(s) ({epochs}), run {log.eval.run_id}.",
    )


def _flatten(scores: dict, path: str, where: str, index: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for scorer, score in scores.items():
        value = score.value
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, v in items:
            name = scorer if key is None else f"{scorer}.{key}"
            number = score_value(v)
            if number is None:
                raise IngestError(
                    path,
                    "inspect_score_value",
                    f"{where}: score {name!r} is {quote(v)}; expected C, I, P, N, true/false or a number",
                    row=index,
                )
            if not math.isfinite(number):
                raise IngestError(path, "metric_finite", f"{where}: score {name!r} is {number!r}", row=index)
            out[name] = number
    return out


def _diagnose(data: bytes, path: str, fmt: str, exc: Exception) -> IngestError:
    """Name the sample behind a validation error of inspect_ai's reader (an ``.eval`` validates sample by sample)."""
    from inspect_ai.log import EvalSample
    from pydantic import ValidationError

    if fmt == "eval":  # check_archive has held every member to its declared size, within the upload limit
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for member in archive.namelist():
                if not (member.startswith("samples/") and member.endswith(".json")):
                    continue
                raw = archive.read(member)
                try:
                    EvalSample.model_validate_json(raw)
                except ValidationError as sample_exc:
                    return _sample_error(path, member, sample_exc, raw)
    else:
        for item in getattr(exc, "errors", lambda: [])():
            loc = item.get("loc", ())
            if len(loc) >= 3 and loc[0] == "samples" and isinstance(loc[1], int):
                rule = "sample_id_missing" if loc[2:] == ("id",) and item.get("type") == "missing" else "inspect_sample_invalid"
                what = (
                    "has no id"
                    if rule == "sample_id_missing"
                    else f"is invalid at {'.'.join(map(str, loc[2:]))}: {item.get('msg')}"
                )
                return error(path, rule, f"sample {loc[1] + 1} {what}", row=loc[1] + 1)
    first = (getattr(exc, "errors", lambda: [{}])() or [{}])[0]
    return error(
        path,
        "inspect_log_invalid",
        f"not a valid Inspect log at {'.'.join(map(str, first.get('loc', ())))}: {first.get('msg', exc)}",
    )


def _sample_error(path: str, member: str, exc: Exception, raw: bytes) -> IngestError:
    item = (exc.errors() or [{}])[0]
    try:
        epoch = json.loads(raw).get("epoch")
    except (ValueError, AttributeError):
        epoch = None
    loc = tuple(item.get("loc", ()))
    if loc == ("id",) and item.get("type") == "missing":
        return error(path, "sample_id_missing", f"sample {member} (epoch {epoch}) has no id")
    return error(path, "inspect_sample_invalid", f"sample {member} is invalid at {'.'.join(map(str, loc))}: {item.get('msg')}")


class Inspect(HarnessReader):
    """Inspect AI: a drop is one log, ``incoming/inspect/**/<name>.eval`` (or ``.json``)."""

    name = HARNESS
    packages = (("inspect_ai", "inspect-ai"),)

    def drop_of(self, parts: Sequence[str]) -> str | None:
        return "/".join(parts) if parts[-1].endswith((".eval", ".json")) else None

    def read(self, paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
        # the only archives: the limit applies to their members' uncompressed sizes too
        return read_inspect(list(paths), read, max_bytes=max_bytes)
