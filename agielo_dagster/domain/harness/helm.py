"""HELM run folders (``helm-run`` output: ``benchmark_output/runs/<suite>/<run>/``) → uploads.

Read from each run folder: ``run_spec.json`` and ``per_instance_stats.json`` (both required; the other files HELM
writes there are ignored). A drop is one run folder, or a suite folder holding several.

- **Benchmark**: the run spec's ``name`` without its ``model=``/``model_deployment=`` arguments
  (``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2`` → ``mmlu:subject=anatomy,method=
  multiple_choice_joint``), through :func:`safe_name`, so every model's run of one scenario is one benchmark.
- **Agent**: ``adapter_spec.model`` (e.g. ``openai/gpt2``).
- **Test case**: ``instance_id``. Only unperturbed instances are rated (robustness and fairness perturbations are
  other test conditions); several train trials (``train_trial_index``) are averaged, with a ``trials`` column.
- **Metric**: the first name listed in the run spec's ``metric_specs`` (``exact_match`` for HELM's generation
  metrics) that every instance has, else the first of exact_match, quasi_exact_match, prefix_exact_match,
  quasi_prefix_exact_match, f1_score, rouge_l, bleu_4, math_equiv. A stat's value is its ``mean``. Every other stat
  that every instance has is kept as a column (``num_prompt_tokens``, ``inference_runtime``, …). A run folder does not
  say which direction a stat goes; higher is taken to be better (a ``benchmark.yaml`` you write overrides it).
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
    build_upload,
    check_duplicates,
    folder_drop,
    guarded,
    load_json,
    quote,
    read_bytes,
)

__all__ = ["Helm", "read_helm"]

HARNESS = "helm"
_PREFERRED = (
    "exact_match",
    "quasi_exact_match",
    "prefix_exact_match",
    "quasi_prefix_exact_match",
    "f1_score",
    "rouge_l",
    "bleu_4",
    "math_equiv",
)
_MODEL_ARGS = ("model", "model_deployment")


def read_helm(paths: Sequence[str], read: Reader) -> HarnessResult:
    """Read one HELM drop: every file under ``incoming/helm/<folder>/``, as relative paths."""
    result = HarnessResult()
    runs: dict[str, dict[str, str]] = {}
    for path in sorted(set(paths)):
        folder, _, name = path.rpartition("/")
        if name in ("run_spec.json", "per_instance_stats.json"):
            runs.setdefault(folder, {})[name] = path
        else:
            result.ignored.append(path)
    uploads = []
    for folder, files in sorted(runs.items()):
        spec_path = files.get("run_spec.json", f"{folder}/run_spec.json")
        stats_path = files.get("per_instance_stats.json", f"{folder}/per_instance_stats.json")
        if "run_spec.json" not in files:
            result.errors.append(
                IngestError(
                    stats_path, "helm_run_spec_missing", "no run_spec.json beside it (the model and scenario come from it)"
                )
            )
            continue
        if "per_instance_stats.json" not in files:
            result.errors.append(
                IngestError(spec_path, "helm_stats_missing", "no per_instance_stats.json beside it (the per-instance results)")
            )
            continue
        with guarded(stats_path, result, "helm_unreadable"):
            run_spec = load_json(read_bytes(read, spec_path), spec_path, "helm_json")
            stats = load_json(read_bytes(read, stats_path), stats_path, "helm_json")
            uploads.append(_read_run(run_spec, stats, spec_path, stats_path))
    kept, duplicates = check_duplicates(uploads)
    result.uploads.extend(kept)
    result.errors.extend(duplicates)
    return result


def benchmark_of_run(name: str) -> str:
    """A HELM run name without its model arguments: the scenario and its settings."""
    scenario, colon, args = name.partition(":")
    if not colon:
        return name
    kept = [a for a in args.split(",") if a and a.partition("=")[0] not in _MODEL_ARGS]
    return f"{scenario}:{','.join(kept)}" if kept else scenario


def _read_run(run_spec: Any, stats: Any, spec_path: str, stats_path: str):
    if not isinstance(run_spec, dict) or not isinstance(run_spec.get("name"), str) or not run_spec["name"]:
        raise IngestError(spec_path, "helm_run_spec", "run_spec.json has no name")
    adapter = run_spec.get("adapter_spec") or {}
    model = adapter.get("model") or adapter.get("model_deployment")
    if not isinstance(model, str) or not model:
        raise IngestError(spec_path, "helm_run_spec", "run_spec.json names no model (adapter_spec.model)")
    if not isinstance(stats, list):
        raise IngestError(stats_path, "helm_stats", "per_instance_stats.json is not a list of instances")
    listed = [
        n
        for ms in run_spec.get("metric_specs") or []
        if isinstance(ms, dict)
        for n in ((ms.get("args") or {}).get("names") or [])
        if isinstance(n, str)
    ]
    per_case: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(stats, start=1):
        if not isinstance(entry, dict):
            raise IngestError(stats_path, "helm_stats", f"instance {index} is not an object", row=index)
        if entry.get("perturbation"):
            continue
        instance = entry.get("instance_id")
        if instance is None or instance == "":
            raise IngestError(stats_path, "sample_id_missing", f"instance {index} has no instance_id", row=index)
        trial = entry.get("train_trial_index", 0)
        values, split = _stat_values(entry.get("stats"), stats_path, index, instance)
        case = per_case.setdefault(str(instance), {"trials": {}, "split": split})
        if trial in case["trials"]:
            raise IngestError(
                stats_path, "sample_id_duplicate", f"instance {quote(instance)} trial {trial} appears twice", row=index
            )
        case["trials"][trial] = values
    if not per_case:
        raise IngestError(stats_path, "log_not_empty", "per_instance_stats.json has no unperturbed instances")
    all_trials = [v for case in per_case.values() for v in case["trials"].values()]
    common = [n for n in all_trials[0] if all(n in v for v in all_trials)]
    order = [n for n in (*listed, *_PREFERRED) if n in all_trials[0]]
    if not order:
        raise IngestError(
            stats_path,
            "helm_metric_missing",
            f"no instance stat is a known per-instance metric (looked for {', '.join((*listed, *_PREFERRED)[:6])}, …)",
            row=1,
        )
    main = order[0]
    for case_id, case in per_case.items():
        for trial, values in case["trials"].items():
            if main not in values:
                raise IngestError(
                    stats_path, "helm_metric_missing", f"instance {quote(case_id)} trial {trial} has no stat {main!r}"
                )
    columns = [main, *[n for n in common if n != main]]
    ids = list(per_case)
    metrics = {c: [_mean([t[c] for t in per_case[k]["trials"].values()]) for k in ids] for c in columns}
    name = run_spec["name"]
    return build_upload(
        harness=HARNESS,
        original_benchmark=benchmark_of_run(name),
        original_agent=model,
        test_case_ids=ids,
        metrics=metrics,
        metadata={"trials": [len(per_case[k]["trials"]) for k in ids], "split": [per_case[k]["split"] for k in ids]},
        sources=(stats_path, spec_path),
        higher_is_better=None,
        description=f"HELM run {name!r}, stat {main!r} (mean per instance, unperturbed instances).",
    )


def _stat_values(stats: Any, path: str, index: int, instance: Any) -> tuple[dict[str, float], str | None]:
    if not isinstance(stats, list):
        raise IngestError(path, "helm_stats", f"instance {quote(instance)} has no stats list", row=index)
    values: dict[str, float] = {}
    split = None
    for stat in stats:
        name = stat.get("name") if isinstance(stat, dict) else None
        if not isinstance(name, dict) or not isinstance(name.get("name"), str):
            raise IngestError(path, "helm_stats", f"instance {quote(instance)} has a stat without a name", row=index)
        if name.get("perturbation") or not stat.get("count"):
            continue
        mean = stat.get("mean")
        if mean is None and isinstance(stat.get("sum"), (int, float)):
            mean = stat["sum"] / stat["count"]
        if isinstance(mean, bool) or not isinstance(mean, (int, float)):
            raise IngestError(
                path, "helm_stats", f"instance {quote(instance)} stat {name['name']!r} has mean {quote(mean)}", row=index
            )
        if not math.isfinite(mean):
            raise IngestError(path, "metric_finite", f"instance {quote(instance)} stat {name['name']!r} is {mean!r}", row=index)
        values[name["name"]] = float(mean)
        split = split or name.get("split")
    return values, split


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


class Helm(HarnessReader):
    """HELM: a drop is one folder under ``incoming/helm/``, a run folder or a suite folder of run folders."""

    name = HARNESS

    def drop_of(self, parts: Sequence[str]) -> str | None:
        return folder_drop(parts)

    def read(self, paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
        return read_helm(paths, read)
