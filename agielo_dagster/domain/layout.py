"""The storage layout: where every file lives under the storage root, in one place.

::

    raw/<benchmark>/<agent>.<csv|parquet|jsonl>   uploads (never modified or deleted by the pipeline)
    raw/<benchmark>/benchmark.yaml                how to score the benchmark
    incoming/<harness>/…                          harness logs as the harness wrote them (lm-eval, inspect, helm, eee)
    warehouse/derived/<benchmark>/…               uploads derived from those logs, and their inferred benchmark.yaml
    warehouse/<asset>/<benchmark>.parquet         outputs, written atomically
"""

from __future__ import annotations

from dataclasses import dataclass

from .contract import IngestError, check_name

__all__ = ["LOG_SUFFIXES", "RawPath", "classify_raw_path"]

LOG_SUFFIXES = (".csv", ".parquet", ".jsonl")
TAG_FILE_STEM = "test_cases"  # raw/<benchmark>/test_cases.<csv|parquet|jsonl>: tags of the test cases, not an upload
TAG_FILE_NAMES = tuple(f"{TAG_FILE_STEM}{suffix}" for suffix in LOG_SUFFIXES)


def is_tag_file(file_name: str) -> bool:
    """Whether a file name under ``raw/<benchmark>/`` is the benchmark's tag file (case-insensitive suffix)."""
    stem, dot, suffix = file_name.rpartition(".")
    return bool(dot) and stem == TAG_FILE_STEM and f"{stem}.{suffix.lower()}" in TAG_FILE_NAMES


@dataclass(frozen=True)
class RawPath:
    """What a file under ``raw/`` is: an upload of an agent, or a benchmark's ``benchmark.yaml``."""

    kind: str  # "upload" | "spec" | "tags"
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
    if is_tag_file(parts[2]):
        return RawPath("tags", benchmark)
    stem, dot, suffix = parts[2].rpartition(".")
    if not dot or f".{suffix.lower()}" not in LOG_SUFFIXES:
        raise IngestError(
            path,
            "log_format",
            f"unsupported file type; uploads are {', '.join(LOG_SUFFIXES)} (benchmark.yaml describes the benchmark)",
        )
    return RawPath("upload", benchmark, check_name(stem, "agent", path))


# -- where every derived file lives -------------------------------------------------------------


def raw_folder(benchmark: str) -> str:
    return f"raw/{benchmark}"


def spec_path(benchmark: str) -> str:
    return f"{raw_folder(benchmark)}/benchmark.yaml"


LEDGER_FOLDER = "warehouse/upload_ledger"


def ledger_path(benchmark: str) -> str:
    """The upload ledger: one row per file in ``raw/<benchmark>/``, accepted, rejected or refused."""
    return f"{LEDGER_FOLDER}/{benchmark}.parquet"


def fingerprint_path(benchmark: str) -> str:
    """A cache of (path, fingerprint) → version, so unchanged files are never read again."""
    return f"warehouse/cache/fingerprints/{benchmark}.parquet"


DERIVED_ROOT = "warehouse/derived"  # one folder per benchmark with uploads derived from harness logs


def derived_folder(benchmark: str) -> str:
    """Uploads derived from harness logs under incoming/ (the ledger takes them like raw/<benchmark>/ files)."""
    return f"{DERIVED_ROOT}/{benchmark}"


def derived_path(benchmark: str, agent: str) -> str:
    return f"{derived_folder(benchmark)}/{agent}.parquet"


def derived_spec_path(benchmark: str) -> str:
    """The benchmark.yaml inferred from harness logs; raw/<benchmark>/benchmark.yaml overrides it."""
    return f"{derived_folder(benchmark)}/benchmark.yaml"


def classify_input_path(path: str) -> RawPath | None:
    """Like :func:`classify_raw_path`, for the inputs of a benchmark: raw files and derived uploads."""
    if path.startswith(f"{DERIVED_ROOT}/"):
        parts = path.split("/")
        benchmark = check_name(parts[2], "benchmark", path)
        if parts[3] == "benchmark.yaml":
            return RawPath("spec", benchmark)
        return RawPath("upload", benchmark, check_name(parts[3].removesuffix(".parquet"), "agent", path))
    return classify_raw_path(path)


def tags_path(benchmark: str) -> str:
    """The benchmark's tag file, validated and normalized (``test_case_id`` + tag columns)."""
    return f"warehouse/tag_files/{benchmark}.parquet"


def accepted_path(benchmark: str, agent: str) -> str:
    """An accepted upload, normalized: test_case_id, metric, score, meta.*."""
    return f"{accepted_folder(benchmark)}/{agent}.parquet"


def accepted_folder(benchmark: str) -> str:
    return f"warehouse/accepted/{benchmark}"


def warehouse_folder(asset: str) -> str:
    """Where an asset's outputs lie, one file per partition (list it for the partitions written)."""
    return f"warehouse/{asset}"


def warehouse_path(asset: str, partition: str | None) -> str:
    """An asset's output: ``warehouse/<asset>/<partition>.parquet`` (``_all`` when unpartitioned)."""
    return f"{warehouse_folder(asset)}/{partition or '_all'}.parquet"


def in_folder(folder: str, name: str) -> str:
    """A file listed in a folder (``store.list_dir`` gives names)."""
    return f"{folder}/{name}"


def figure_path(benchmark: str, name: str) -> str:
    return f"{figures_folder(benchmark)}/{name}.png"


def figures_folder(benchmark: str) -> str:
    return f"warehouse/figures/{benchmark}"


INCOMING_LEDGER = "warehouse/incoming_ledger.parquet"  # one row per drop of harness logs under incoming/


def plan_path(benchmark: str, agent: str) -> str:
    """The next test cases to evaluate an agent on (written by `agielo plan`; for the user, not an input).

    A spreadsheet-safe CSV (:mod:`agielo_dagster.domain.exports`); :func:`plan_twin_path` has the exact ids.
    """
    return f"plans/{benchmark}/{agent}.csv"


def plan_twin_path(benchmark: str, agent: str) -> str:
    """The plan as JSON lines, every id exactly as the benchmark has it (for programs)."""
    return f"plans/{benchmark}/{agent}.jsonl"


JUDGMENTS_FOLDER = "judgments"  # judgments/<set>.csv: pairwise difficulty judgments


def judgment_path(name: str) -> str:
    """A judgment set's file (an input, never modified)."""
    return f"{JUDGMENTS_FOLDER}/{name}.csv"


def judgment_ledger_path(name: str) -> str:
    """The one recorded outcome (accepted or rejected) of a judgment set's file."""
    return f"warehouse/judgments_ledger/{name}.parquet"


def explorer_path(benchmark: str) -> str:
    """The interactive, self-contained HTML page of a benchmark."""
    return f"warehouse/explorer/{benchmark}.html"


def explorer_index_path() -> str:
    """The explorer's index: every benchmark on one scale, beside their pages (it links to them by file name).

    Its name starts with ``_``, which no benchmark name can (contract.check_name): no benchmark's page can take it.
    """
    return "warehouse/explorer/_index.html"


def report_path(benchmark: str) -> str:
    return f"warehouse/reports/{benchmark}.html"


def pool_report_path() -> str:
    """The report of the leaderboard across benchmarks (``_``: no benchmark's report can take its name)."""
    return "warehouse/reports/_leaderboard.html"


def suspects_path(benchmark: str) -> str:
    """The test cases that look wrong with each agent's score (:mod:`agielo_dagster.domain.suspects`): a
    spreadsheet-safe CSV for annotators; :func:`suspects_twin_path` has the exact values."""
    return f"warehouse/exports/suspects/{benchmark}.csv"


def suspects_twin_path(benchmark: str) -> str:
    return f"warehouse/exports/suspects/{benchmark}.jsonl"
