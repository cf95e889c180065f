"""lm-evaluation-harness ``--log_samples`` output → uploads.

What ``lm_eval --model … --tasks … --log_samples --output_path OUT`` writes, read as it is::

    OUT/<model_name_sanitized>/results_<timestamp>.json
    OUT/<model_name_sanitized>/samples_<task>_<timestamp>.jsonl     one per task, one line per (doc, filter)

- **Benchmark**: one per task; a task whose samples carry several filters (``strict-match``, ``flexible-extract``)
  gives one benchmark per filter, named ``<task>.<filter>``. Names go through :func:`safe_name`.
- **Agent**: ``model_name`` of the results file of the same timestamp (the folder name when the file has none).
- **Test case**: ``doc_id``; ``doc_hash``, ``prompt_hash``, ``target_hash`` and ``filter`` are kept as metadata.
- **Metric**: the first of the sample's ``metrics`` whose per-sample value is a number (``acc``, ``exact_match``);
  the other numeric ones (``acc_norm``) are kept as columns, so a ``benchmark.yaml`` you write can choose one of
  them. Corpus-level metrics whose per-sample value is not a number (``bleu``) are not per test case and are left
  out. ``higher_is_better`` comes from the results file.
- **Several timestamps** of one model and task in one folder (runs repeated into the same ``--output_path``): the
  latest timestamp wins; the older files are listed in ``HarnessResult.ignored``. Two folders of one drop that claim
  the same (model, task) are both refused (``harness_duplicate``).
"""

from __future__ import annotations

import math
import re
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
    folder_drop,
    guarded,
    jsonl_records,
    load_json,
    quote,
    read_bytes,
)

__all__ = ["LmEval", "read_lm_eval"]

HARNESS = "lm-eval"
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.-]+)\.jsonl$")
_RESULTS = re.compile(r"^results_(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.-]+)\.json$")
_META = ("doc_hash", "prompt_hash", "target_hash")


def read_lm_eval(paths: Sequence[str], read: Reader) -> HarnessResult:
    """Read one lm-eval drop: every file under ``incoming/lm-eval/<folder>/``, as relative paths.

    Files other than ``results_*.json`` and ``samples_*.jsonl`` are listed in ``ignored``. Never raises for a bad
    log: each bad file (or line) is one error, and the other files still give their uploads.
    """
    result = HarnessResult()
    folders: dict[str, dict[str, Any]] = {}
    for path in sorted(set(paths)):
        folder, _, name = path.rpartition("/")
        entry = folders.setdefault(folder, {"results": {}, "samples": {}})
        if m := _RESULTS.match(name):
            entry["results"][m["ts"]] = path
        elif m := _SAMPLES.match(name):
            entry["samples"].setdefault(m["task"], {})[m["ts"]] = path
        else:
            result.ignored.append(path)
    uploads = []
    for folder, entry in sorted(folders.items()):
        if not entry["samples"]:
            if entry["results"]:
                latest = entry["results"][max(entry["results"])]
                result.errors.append(
                    error(
                        latest,
                        "lm_eval_no_samples",
                        "results file without samples_<task>_<timestamp>.jsonl beside it: run lm_eval with --log_samples",
                    )
                )
                result.ignored.extend(p for ts, p in entry["results"].items() if p != latest)
            continue
        used: set[str] = set()
        results_cache: dict[str, dict | None] = {}
        for task, by_ts in sorted(entry["samples"].items()):
            ts = max(by_ts)
            result.ignored.extend(p for t, p in sorted(by_ts.items()) if t != ts)
            samples_path = by_ts[ts]
            results_path = entry["results"].get(ts)
            if results_path is None:
                result.errors.append(
                    error(
                        samples_path,
                        "lm_eval_results_missing",
                        f"no results_{ts}.json beside it (the model name and higher_is_better come from it); drop the whole --output_path folder",
                    )
                )
                continue
            used.add(results_path)
            if results_path not in results_cache:
                results_cache[results_path] = None
                with guarded(results_path, result, "lm_eval_unreadable"):
                    results_cache[results_path] = _load_results(read_bytes(read, results_path), results_path)
            results = results_cache[results_path]
            if results is None:
                continue  # its error is already reported, once
            with guarded(samples_path, result, "lm_eval_unreadable"):
                uploads.extend(
                    _read_samples(read_bytes(read, samples_path), samples_path, task, ts, results, results_path, folder)
                )
        result.ignored.extend(p for p in entry["results"].values() if p not in used)
    kept, duplicates = check_duplicates(uploads)
    result.uploads.extend(kept)
    result.errors.extend(duplicates)
    return result


def _load_results(data: bytes, path: str) -> dict:
    results = load_json(data, path, "lm_eval_results_json")
    if not isinstance(results, dict):
        raise IngestError(path, "lm_eval_results_json", "the results file is not a JSON object")
    name = results.get("model_name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise IngestError(path, "lm_eval_model_name", f"model_name must be a non-empty string, got {quote(name)}")
    return results


def _metrics_from_results(results: dict, task: str, filter_name: str) -> list[str]:
    """Metric names of one task and filter from the results file (``"acc,none"`` keys), for samples without ``metrics``."""
    task_results = (results.get("results") or {}).get(task) or {}
    names = []
    for key in task_results:
        metric, sep, flt = str(key).partition(",")
        if sep and flt == filter_name and not metric.endswith("_stderr"):
            names.append(metric)
    return names


def _read_samples(data: bytes, path: str, task: str, ts: str, results: dict, results_path: str, folder: str) -> list:
    model = results.get("model_name") or folder.rpartition("/")[2] or "unknown"
    hib_all = (results.get("higher_is_better") or {}).get(task) or {}
    by_filter: dict[str, dict[str, Any]] = {}
    for record, line, obj in jsonl_records(data, path, "lm_eval_truncated", "lm_eval_json"):
        doc_id = obj.get("doc_id")
        if doc_id is None or doc_id == "":
            raise IngestError(path, "sample_id_missing", "sample has no doc_id (the test case id)", row=record, line=line)
        if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
            raise IngestError(
                path, "sample_id_type", f"doc_id {quote(doc_id)} is not an integer or a string", row=record, line=line
            )
        filter_name = obj.get("filter", "none")
        if not isinstance(filter_name, str) or not filter_name:
            raise IngestError(path, "lm_eval_filter", f"filter {quote(filter_name)} is not a name", row=record, line=line)
        group = by_filter.get(filter_name)
        if group is None:
            group = by_filter[filter_name] = {
                "metrics": _choose_metrics(obj, path, record, line, task, filter_name, results),
                "rows": {},
            }
        test_case = str(doc_id)
        if test_case in group["rows"]:
            first = group["rows"][test_case]["line"]
            raise IngestError(
                path,
                "sample_id_duplicate",
                f"doc_id {quote(doc_id)} of filter {filter_name!r} already on line {first}",
                row=record,
                line=line,
            )
        values = {}
        for metric in group["metrics"]:
            if metric not in obj:
                raise IngestError(
                    path,
                    "lm_eval_metric_missing",
                    f"doc_id {quote(doc_id)} lists metric {metric!r} but has no {metric!r} key",
                    row=record,
                    line=line,
                )
            value = as_metric(obj[metric])
            if value is None:
                raise IngestError(
                    path,
                    "lm_eval_metric_numeric",
                    f"metric {metric!r} of doc_id {quote(doc_id)} is {quote(obj[metric])}, not a number",
                    row=record,
                    line=line,
                )
            if not math.isfinite(value):
                raise IngestError(
                    path, "metric_finite", f"metric {metric!r} of doc_id {quote(doc_id)} is {value!r}", row=record, line=line
                )
            values[metric] = value
        meta = {k: (None if obj.get(k) is None else str(obj.get(k))) for k in _META}
        group["rows"][test_case] = {"line": line, "values": values, "meta": meta}
    if not by_filter:
        raise IngestError(path, "log_not_empty", "the samples file has no samples")
    uploads = []
    several = len(by_filter) > 1
    for filter_name, group in by_filter.items():
        rows = list(group["rows"].items())
        metrics = {m: [r["values"][m] for _, r in rows] for m in group["metrics"]}
        metadata = {k: [r["meta"][k] for _, r in rows] for k in _META}
        metadata["filter"] = [filter_name] * len(rows)
        main = group["metrics"][0]
        original = f"{task}.{filter_name}" if several else task
        uploads.append(
            build_upload(
                harness=HARNESS,
                original_benchmark=original,
                original_agent=str(model),
                test_case_ids=[t for t, _ in rows],
                metrics=metrics,
                metadata=metadata,
                sources=(path, results_path),
                higher_is_better=hib_all.get(main) if isinstance(hib_all.get(main), bool) else None,
                description=f"lm-evaluation-harness task {task!r}, filter {filter_name!r}, metric {main!r}, run {ts}.",
            )
        )
    return uploads


def _choose_metrics(obj: dict, path: str, record: int, line: int, task: str, filter_name: str, results: dict) -> list[str]:
    listed = obj.get("metrics")
    if listed is None:
        listed = _metrics_from_results(results, task, filter_name)
    if not isinstance(listed, list) or not listed or not all(isinstance(m, str) for m in listed):
        raise IngestError(
            path,
            "lm_eval_metric_missing",
            f"sample lists no metrics ({quote(listed)}) and the results file names none for this task",
            row=record,
            line=line,
        )
    for metric in listed:
        if metric not in obj:
            raise IngestError(
                path,
                "lm_eval_metric_missing",
                f"doc_id {quote(obj.get('doc_id'))} lists metric {metric!r} but has no {metric!r} key",
                row=record,
                line=line,
            )
    numeric = [m for m in listed if as_metric(obj[m]) is not None and m not in ("doc_id", "test_case_id", "filter", *_META)]
    if not numeric:
        raise IngestError(
            path,
            "lm_eval_metric_numeric",
            f"none of the metrics {', '.join(listed)} has a number per sample (corpus-level metrics cannot rate test cases)",
            row=record,
            line=line,
        )
    return numeric


class LmEval(HarnessReader):
    """lm-evaluation-harness: a drop is one ``--output_path`` folder, ``incoming/lm-eval/<folder>/``."""

    name = HARNESS

    def drop_of(self, parts: Sequence[str]) -> str | None:
        return folder_drop(parts)

    def read(self, paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
        return read_lm_eval(paths, read)
