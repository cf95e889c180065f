"""``agielo``: the pipeline without the daemon, for CI jobs and notebooks.

    agielo run  [--storage URI] [--strict]   ingest new or changed uploads, re-rate what is stale
    agielo demo [--storage URI]              write the embedded demo data, then run

Runs go through Dagster on the same instance as the UI: ``DAGSTER_HOME`` when set, else
``./.dagster_home``. The same assets, checks and storage as ``dagster dev``.
"""

import argparse
import io
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pandas as pd

from agielo_dagster.assets.matches import current_uploads
from agielo_dagster.assets.quarantine import read_quarantine
from agielo_dagster.resources.storage import ObjectStorage, default_root, is_upload
from agielo_dagster.resources.warehouse import warehouse_path

from .definitions import build_definitions
from .sensors import already_seen, plan_ingest


def get_instance() -> dg.DagsterInstance:
    """The instance the UI uses: ``DAGSTER_HOME``, or ``./.dagster_home`` (created if needed)."""
    if not os.environ.get("DAGSTER_HOME"):
        home = Path(".dagster_home").resolve()
        home.mkdir(exist_ok=True)
        (home / "dagster.yaml").touch()
        os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.get()


def stale_benchmarks(storage: ObjectStorage, benchmarks: set[str]) -> set[str]:
    """Benchmarks whose outputs are missing or were rated from other inputs than their current uploads."""
    stale = set()
    for benchmark in sorted(benchmarks):
        manifest = warehouse_path("input_manifests", benchmark)
        if not storage.exists(warehouse_path("competency_gap_tables", benchmark)) or not storage.exists(manifest):
            stale.add(benchmark)
            continue
        try:
            uploads, _ = current_uploads(storage, benchmark)
        except dg.Failure:
            stale.add(benchmark)  # the run reports why
            continue
        rated = pd.read_parquet(io.BytesIO(storage.read_bytes(manifest)), columns=["source_path", "source_version"])
        if set(rated.itertuples(index=False, name=None)) != {(u.source_path, u.source_version) for u in uploads}:
            stale.add(benchmark)
    return stale


@dataclass
class RunSummary:
    uploads_ingested: int = 0
    benchmarks_rated: list[str] = field(default_factory=list)
    failed_runs: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_pipeline(storage: ObjectStorage, instance: dg.DagsterInstance, *, log_level: str = "WARNING") -> RunSummary:
    """Ingest what changed and re-rate what is stale, through Dagster jobs on ``instance``."""
    started = time.perf_counter()
    quiet = {"loggers": {"console": {"config": {"log_level": log_level}}}}
    defs = build_definitions(storage)
    files = storage.list_raw()
    plan = plan_ingest(instance, files, already_seen(storage, files))
    summary = RunSummary(uploads_ingested=len(plan.uploads), refused=plan.refused)
    ingest = defs.resolve_job_def("ingest_uploads")
    for request in plan.run_requests:
        if request.job_name != "ingest_uploads":
            continue
        result = ingest.execute_in_process(
            run_config=quiet, instance=instance, partition_key=request.partition_key, tags=request.tags, raise_on_error=False
        )
        if not result.success and not _only_rejections(result):
            summary.failed_runs.append(f"ingest {request.tags.get('agielo/benchmark')}: {_first_error(result)}")
    benchmarks = {f.benchmark for f in files if is_upload(f)} & set(instance.get_dynamic_partitions("benchmarks"))
    rate = defs.resolve_job_def("rate_benchmarks")
    for benchmark in sorted(stale_benchmarks(storage, benchmarks)):
        result = rate.execute_in_process(run_config=quiet, instance=instance, partition_key=benchmark, raise_on_error=False)
        (summary.benchmarks_rated if result.success else summary.failed_runs).append(
            benchmark if result.success else f"rate {benchmark}: {_first_error(result)}"
        )
    if plan.run_requests or summary.benchmarks_rated or not storage.exists(warehouse_path("quarantine_report", None)):
        defs.resolve_job_def("report_quarantine").execute_in_process(run_config=quiet, instance=instance, raise_on_error=False)
    summary.seconds = time.perf_counter() - started
    return summary


def _step_errors(result: dg.ExecuteInProcessResult) -> list:
    return [e.step_failure_data.error for e in result.all_events if e.is_step_failure and e.step_failure_data.error]


def _only_rejections(result: dg.ExecuteInProcessResult) -> bool:
    """The run failed only because the blocking quality check stopped rejected uploads (listed separately)."""
    errors = _step_errors(result)
    return bool(errors) and all(e.cls_name == "DagsterAssetCheckFailedError" for e in errors)


def _first_error(result: dg.ExecuteInProcessResult) -> str:
    errors = _step_errors(result)
    return errors[0].message.strip().splitlines()[0] if errors else f"run {result.run_id} failed"


def print_summary(storage: ObjectStorage, summary: RunSummary, out=sys.stdout) -> None:
    print(f"agielo: storage {storage.root}", file=out)
    print(
        f"ingested {summary.uploads_ingested} upload(s); rated {len(summary.benchmarks_rated)} benchmark(s) in {summary.seconds:.1f} s",
        file=out,
    )
    for benchmark in sorted(storage.list_dir("warehouse/competency_gap_tables")):
        name = benchmark.removesuffix(".parquet")
        gaps = pd.read_parquet(io.BytesIO(storage.read_bytes(warehouse_path("competency_gap_tables", name))))
        rel = pd.read_parquet(io.BytesIO(storage.read_bytes(warehouse_path("reliability_reports", name)))).iloc[-1]
        best = gaps.iloc[0]
        print(
            f"  {name}: {len(gaps)} agents; best {best['agent_id']} rated {best['rating']:.0f}, "
            f"gap to oracle@50% {best['gap_50']:.0f}, @99% {best['gap_99']:.0f}; "
            f"rho(test cases) {rel['rho_test_cases']:.2f}, MAE {rel['mae']:.3f}",
            file=out,
        )
    rejected = read_quarantine(storage)
    for row in rejected.itertuples():
        print(f"  {'refused' if not row.agent else 'rejected'}: {row.message}", file=out)
    for failure in summary.failed_runs:
        print(f"  FAILED {failure}", file=out)
    print(f"outputs: {storage.uri('warehouse')}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agielo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("run", "ingest new or changed uploads and re-rate stale benchmarks"),
        ("demo", "write the demo data, then run"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument(
            "--storage",
            default=None,
            help="storage root: a folder or s3://bucket/prefix (default: AGIELO_STORAGE or ./agielo_data)",
        )
        p.add_argument("--strict", action="store_true", help="exit 2 if any upload is rejected or any run fails")
        p.add_argument("--verbose", action="store_true", help="show Dagster's run logs")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    storage = ObjectStorage(root=args.storage or default_root())
    if args.command == "demo":
        from .demo import write_demo_data

        print("agielo: evaluating the demo classifiers (about 30 s on 2 cores)…", flush=True)
        write_demo_data(storage.root)
    summary = run_pipeline(storage, get_instance(), log_level="DEBUG" if args.verbose else "WARNING")
    print_summary(storage, summary)
    problems = summary.failed_runs or summary.refused or len(read_quarantine(storage))
    return 2 if (args.strict and problems) or summary.failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
