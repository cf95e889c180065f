"""Every Eval Ever instance-level files (``<uuid>_samples.jsonl``, schema ``instance_level_eval``) → uploads.

Each line is one (model, evaluation, sample) record. Read from it: ``model_id``, ``evaluation_name``,
``evaluation_result_id`` (optional), ``sample_id``, ``evaluation.score`` and ``evaluation.is_correct``. When the
aggregate file of the same evaluation (``<uuid>.json``, schema ``eval``) is dropped beside it, its
``metric_config`` (``lower_is_better``, ``min_score``, ``max_score``) sets the direction and the range.

- **Benchmark**: ``evaluation_name`` (e.g. ``mmlu_physics``, ``gsm8k/strict-match``); **agent**: ``model_id``
  (e.g. ``meta-llama/Llama-3.2-1B-Instruct``). Both through :func:`safe_name`.
- **Test case**: ``sample_id``; ``sample_hash`` is kept as metadata.
- **Metric**: ``evaluation.score`` (``is_correct`` as 1/0 when a record has no score). One evaluation reported by
  several results (EEE emits one record per result, e.g. ``acc`` and ``acc_norm``) gives one column per
  ``evaluation_result_id``; the first one is the metric, the others are kept for a ``benchmark.yaml`` you write.
  The first result's ``is_correct`` is kept as a column too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..contract import MAX_LOG_BYTES, IngestError
from .common import (
    HarnessReader,
    HarnessResult,
    Reader,
    as_metric,
    build_upload,
    check_duplicates,
    error,
    guarded,
    jsonl_records,
    load_json,
    quote,
    read_bytes,
)

__all__ = ["Eee", "read_eee"]

HARNESS = "eee"
_SUFFIX = "_samples.jsonl"


def read_eee(paths: Sequence[str], read: Reader) -> HarnessResult:
    """Read Every Eval Ever drops: ``*_samples.jsonl`` files, each with its optional aggregate ``<uuid>.json``."""
    result = HarnessResult()
    wanted = set(paths)
    uploads = []
    used: set[str] = set()
    for path in sorted(wanted):
        if not path.endswith(_SUFFIX):
            continue
        aggregate = path[: -len(_SUFFIX)] + ".json"
        configs: dict[str, dict] = {}
        if aggregate in wanted:
            used.add(aggregate)
            with guarded(aggregate, result, "eee_unreadable"):
                configs = _metric_configs(load_json(read_bytes(read, aggregate), aggregate, "eee_json"), aggregate)
        with guarded(path, result, "eee_unreadable"):
            uploads.extend(_read_samples(read_bytes(read, path), path, configs, aggregate if configs else None))
        used.add(path)
    for path in sorted(wanted - used):
        if path.endswith(".json"):
            result.errors.append(
                error(
                    path,
                    "eee_no_samples",
                    f"aggregate results without their instance-level file {path.rpartition('/')[2][:-5]}{_SUFFIX}: "
                    "ratings need a result per sample",
                )
            )
        else:
            result.ignored.append(path)
    kept, duplicates = check_duplicates(uploads)
    result.uploads.extend(kept)
    result.errors.extend(duplicates)
    return result


def _metric_configs(doc: Any, path: str) -> dict[str, dict]:
    """``metric_config`` per ``evaluation_result_id`` (and per ``evaluation_name``) of an aggregate file."""
    if not isinstance(doc, dict) or not isinstance(doc.get("evaluation_results"), list):
        raise IngestError(path, "eee_aggregate", "the aggregate file has no evaluation_results list")
    configs: dict[str, dict] = {}
    for item in doc["evaluation_results"]:
        if not isinstance(item, dict) or not isinstance(item.get("metric_config"), dict):
            continue
        for key in (item.get("evaluation_result_id"), item.get("evaluation_name")):
            if isinstance(key, str) and key not in configs:
                configs[key] = item["metric_config"]
    return configs


def _read_samples(data: bytes, path: str, configs: dict[str, dict], aggregate: str | None) -> list:
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for record, line, obj in jsonl_records(data, path, "eee_truncated", "eee_json"):
        sample_id = obj.get("sample_id")
        if sample_id is None or sample_id == "":
            raise IngestError(path, "sample_id_missing", "record has no sample_id", row=record, line=line)
        if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)):
            raise IngestError(path, "sample_id_type", f"sample_id {quote(sample_id)} is not a string", row=record, line=line)
        model, name = obj.get("model_id"), obj.get("evaluation_name")
        for field, value, rule in (("model_id", model, "eee_model_missing"), ("evaluation_name", name, "eee_name_missing")):
            if not isinstance(value, str) or not value.strip():
                raise IngestError(path, rule, f"record has no {field} ({quote(value)})", row=record, line=line)
        result_id = obj.get("evaluation_result_id")
        column = result_id if isinstance(result_id, str) and result_id else "score"
        evaluation = obj.get("evaluation")
        if not isinstance(evaluation, dict):
            raise IngestError(
                path, "eee_metric_missing", f"sample {quote(sample_id)} has no evaluation object", row=record, line=line
            )
        value = as_metric(evaluation.get("score")) if evaluation.get("score") is not None else None
        correct = evaluation.get("is_correct")
        if value is None:
            value = as_metric(correct) if isinstance(correct, bool) else None
        if value is None:
            raise IngestError(
                path,
                "eee_metric_missing",
                f"sample {quote(sample_id)} has neither a numeric evaluation.score ({quote(evaluation.get('score'))}) nor a boolean is_correct",
                row=record,
                line=line,
            )
        if not math.isfinite(value):
            raise IngestError(path, "metric_finite", f"sample {quote(sample_id)} has score {value!r}", row=record, line=line)
        group = groups.setdefault((model, name), {"columns": {}, "meta": {}})
        col = group["columns"].setdefault(column, {})
        if str(sample_id) in col:
            raise IngestError(
                path,
                "sample_id_duplicate",
                f"sample {quote(sample_id)} of {name!r} result {column!r} already on line {col[str(sample_id)][1]}",
                row=record,
                line=line,
            )
        col[str(sample_id)] = (value, line, record)
        if column == next(iter(group["columns"])):
            group["meta"][str(sample_id)] = (
                None if obj.get("sample_hash") is None else str(obj["sample_hash"]),
                correct if isinstance(correct, bool) else None,
            )
    if not groups:
        raise IngestError(path, "log_not_empty", "the samples file has no records")
    uploads = []
    for (model, name), group in groups.items():
        first, *others = group["columns"]
        ids = list(group["columns"][first])
        metrics = {first: [group["columns"][first][i][0] for i in ids]}
        for other in others:  # a result that covers other samples than the first cannot share its rows
            if set(group["columns"][other]) == set(ids):
                metrics[other] = [group["columns"][other][i][0] for i in ids]
        config = configs.get(first) or configs.get(name) or {}
        lower = config.get("lower_is_better")
        lo, hi = config.get("min_score"), config.get("max_score")
        declared = None
        if as_metric(lo) is not None and as_metric(hi) is not None and not isinstance(lo, bool) and lo < hi:
            declared = (float(lo), float(hi))
            bad = [i for i in ids if not lo <= group["columns"][first][i][0] <= hi]
            if bad:
                v, line, record = group["columns"][first][bad[0]]
                raise error(
                    path,
                    "metric_in_range",
                    f"sample {quote(bad[0])} score {v!r} is outside [{lo:g}, {hi:g}] declared by {aggregate} ({len(bad)} value(s))",
                    row=record,
                    line=line,
                )
        uploads.append(
            build_upload(
                harness=HARNESS,
                original_benchmark=name,
                original_agent=model,
                test_case_ids=ids,
                metrics=metrics,
                metadata={"sample_hash": [group["meta"][i][0] for i in ids], "is_correct": [group["meta"][i][1] for i in ids]},
                sources=(path, aggregate) if aggregate else (path,),
                higher_is_better=None if not isinstance(lower, bool) else not lower,
                declared=declared,
                description=f"Every Eval Ever evaluation {name!r}, result {first!r}.",
            )
        )
    return uploads


class Eee(HarnessReader):
    """Every Eval Ever: a drop is one ``**/<name>_samples.jsonl``, with the aggregate ``<name>.json`` beside it."""

    name = HARNESS

    def drop_of(self, parts: Sequence[str]) -> str | None:
        folder, name = list(parts[:-1]), parts[-1]
        if name.endswith(_SUFFIX) and len(name) > len(_SUFFIX):
            return "/".join(parts)
        if name.endswith(".json") and len(name) > len(".json"):
            return "/".join([*folder, name[: -len(".json")] + _SUFFIX])
        return None

    def read(self, paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
        return read_eee(paths, read)
