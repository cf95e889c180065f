"""``agielo``: the pipeline without the daemon, for CI jobs and notebooks.

    agielo run   [--storage URI] [--strict] [--create] [--instance DIR]   bring every stale benchmark up to date
    agielo demo  [--storage URI] [--instance DIR]                         write the embedded demo data, then run
    agielo query "subject == 'math' and rating > 1800" [--storage URI]    rank agents on the test cases a query selects
    agielo plan  --benchmark B --agent NAME [--budget N] [--storage URI]    the next test cases to evaluate a new model on

Runs go through Dagster on the same instance as the UI: ``--instance``, else ``DAGSTER_HOME``, else
``./.dagster_home``. The same assets, checks and storage as ``dagster dev``; the same question decides
what runs (:mod:`agielo_dagster.planning`), so a run beside a running daemon rates nothing twice.

Exit codes: 0 done; 2 some upload is rejected or refused and ``--strict`` was given; 1 could not run
(storage unreachable or misconfigured, a run failed). One line per problem, no tracebacks
(``--debug`` shows them).
"""

from __future__ import annotations

import argparse
import fcntl
import io
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import dagster as dg

from . import allocator, threads  # noqa: F401 - first of the package: thread environment and allocator before numpy loads
from .assets.judgments import judgment_partitions
from .assets.partitions import benchmark_partitions
from .assets.quarantine import read_quarantine
from .definitions import build_definitions
from .domain.incoming import incoming_reason
from .domain.judgments import stale_judgment_sets
from .domain.layout import raw_folder, warehouse_folder, warehouse_path
from .domain.lineage import RATING_VERSION
from .domain.standing import fragility_line, fragility_of, headline, status_counts, unusual_agents
from .domain.status import benchmark_state, present_benchmarks
from .domain.store import StorageError, Store, default_root
from .inprocess import execute_in_process_without_outputs
from .outputs import benchmark_outputs
from .planning import after_runs, plan_runs, run_selection, state_key
from .rating.standing import top_tier
from .resources.storage import ObjectStorage
from .runs import BENCHMARK_TAG, STATE_TAG, TRIGGER_TAG, fail_orphaned_runs, process_tags

DEFAULT_HOME = ".dagster_home"
DEFAULT_INSTANCE_YAML = "telemetry:\n  enabled: false\n"


def get_instance(home: str | os.PathLike | None = None) -> dg.DagsterInstance:
    """The instance the UI uses: ``home``, ``DAGSTER_HOME``, or ``./.dagster_home`` (created if needed).

    The first start of a new instance creates its storage tables; two processes starting at once on
    one new home take turns (a file lock), so neither trips over the other's half-made tables.
    """
    path = Path(home or os.environ.get("DAGSTER_HOME") or DEFAULT_HOME).resolve()
    path.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(path)
    with open(path / ".agielo.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (path / "dagster.yaml").exists():
                (path / "dagster.yaml").write_text(DEFAULT_INSTANCE_YAML)
            instance = dg.DagsterInstance.from_config(str(path))
            # touch every storage so its tables exist before the lock is released
            instance.get_runs(limit=1)
            instance.all_instigator_state()
            instance.get_dynamic_partitions(benchmark_partitions.name)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return instance


@dataclass
class RunSummary:
    uploads_ingested: int = 0
    benchmarks_rated: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    judgment_sets_read: list[str] = field(default_factory=list)
    failed_runs: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _quiet(log_level: str) -> dict:
    return {"loggers": {"console": {"config": {"log_level": log_level}}}}


def _first_error(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error:
            error = event.step_failure_data.error
            while error.cause and error.cls_name in ("DagsterExecutionStepExecutionError", "RetryRequestedFromPolicy"):
                error = error.cause
            return error.message.strip().splitlines()[0][:300]
    return f"run {result.run_id} failed"


def _materialized(result: dg.ExecuteInProcessResult, asset: str) -> dict | None:
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key == dg.AssetKey(asset):
            return {k: getattr(v, "value", v) for k, v in materialization.metadata.items()}
    return None


@threads.one_blas_thread()
def run_pipeline(
    storage: ObjectStorage, instance: dg.DagsterInstance, *, log_level: str = "CRITICAL", create: bool = False
) -> RunSummary:
    """Bring every stale benchmark up to date, then the quarantine report, through Dagster jobs on ``instance``."""
    started = time.perf_counter()
    store = storage.store
    store.check_root(create=create)
    defs = build_definitions(storage)
    fail_orphaned_runs(instance)
    summary = RunSummary()
    if incoming_reason(store):  # harness logs first: they become uploads of their benchmarks
        result = execute_in_process_without_outputs(
            defs.resolve_job_def("convert_incoming"),
            run_config=_quiet(log_level),
            instance=instance,
            tags={TRIGGER_TAG: "cli"},
            raise_on_error=False,
        )
        if not result.success:
            summary.failed_runs.append(f"harness logs: {_first_error(result)}")
    outputs = benchmark_outputs(defs.resolve_asset_graph())
    plan = plan_runs(store, instance, outputs)
    if plan.new_partitions:
        instance.add_dynamic_partitions(benchmark_partitions.name, plan.new_partitions)
    job = defs.resolve_job_def("rate_benchmarks")
    # benchmarks with a run in progress elsewhere are run too: the run waits for the other, then finds them current
    to_run = sorted({*plan.to_rate, *plan.busy, *plan.given_up})
    for benchmark in to_run:
        tags = {BENCHMARK_TAG: benchmark, TRIGGER_TAG: "cli", STATE_TAG: state_key(plan.states[benchmark]), **process_tags()}
        result = execute_in_process_without_outputs(
            job,
            run_config=_quiet(log_level),
            instance=instance,
            partition_key=benchmark,
            tags=tags,
            raise_on_error=False,
            asset_selection=run_selection(plan.states[benchmark]),
        )
        if not result.success:
            summary.failed_runs.append(f"rate {benchmark}: {_first_error(result)}")
        ledger = _materialized(result, "upload_ledger") or {}
        summary.uploads_ingested += int(ledger.get("validated_in_this_run", 0))
        if _materialized(result, "benchmark_reports") is not None:
            summary.benchmarks_rated.append(benchmark)
        elif result.success and not benchmark_state(store, benchmark, outputs, RATING_VERSION).accepted:
            summary.withdrawn.append(benchmark)
    judgment_sets = stale_judgment_sets(store)  # new or changed judgments/<set>.csv: read, ranked or rejected
    if judgment_sets:
        known = set(instance.get_dynamic_partitions(judgment_partitions.name))
        if [n for n in judgment_sets if n not in known]:
            instance.add_dynamic_partitions(judgment_partitions.name, [n for n in judgment_sets if n not in known])
        ranking = defs.resolve_job_def("rank_judgments")
        for name in judgment_sets:
            result = execute_in_process_without_outputs(
                ranking,
                run_config=_quiet(log_level),
                instance=instance,
                partition_key=name,
                tags={TRIGGER_TAG: "cli"},
                raise_on_error=False,
            )
            summary.judgment_sets_read.append(name)
            if not result.success:
                summary.failed_runs.append(f"judgments {name}: {_first_error(result)}")
    # what the runs changed: vanished benchmarks, rejections
    after = after_runs(store, instance, outputs) if to_run or judgment_sets else plan
    for benchmark in after.vanished:
        instance.delete_dynamic_partition(benchmark_partitions.name, benchmark)
    if after.quarantine_stale:
        result = execute_in_process_without_outputs(
            defs.resolve_job_def("report_quarantine"),
            run_config=_quiet(log_level),
            instance=instance,
            tags={TRIGGER_TAG: "cli"},
            raise_on_error=False,
        )
        if not result.success:
            summary.failed_runs.append(f"quarantine report: {_first_error(result)}")
    summary.seconds = time.perf_counter() - started
    return summary


def print_summary(store: Store, summary: RunSummary, out: TextIO | None = None) -> int:
    """Print what the run did and where every benchmark stands; returns the number of rejected or refused files.

    To ``out``, or to ``sys.stdout`` as it is when called (so that a caller's ``redirect_stdout`` holds)."""
    out = sys.stdout if out is None else out
    print(f"agielo: storage {store.where}", file=out)
    print(
        f"ingested {summary.uploads_ingested} upload(s); rated {len(summary.benchmarks_rated)} benchmark(s) "
        f"in {summary.seconds:.1f} s",
        file=out,
    )
    for benchmark in sorted(n.removesuffix(".parquet") for n in store.list_dir(warehouse_folder("competency_gap_tables"))):
        try:
            gaps = store.read_table(warehouse_path("competency_gap_tables", benchmark)).to_pandas()
            rel = store.read_table(warehouse_path("reliability_reports", benchmark)).to_pandas().iloc[-1]
        except (OSError, ValueError):
            continue  # being rewritten by another process: the next run shows it
        counts = status_counts(gaps)
        kinds = ""
        if counts and counts["rated"] < len(gaps):
            kinds = " (" + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ")"
        print(
            f"  {benchmark}: {len(gaps)} agents{kinds}; {_leaders(gaps)}; "
            f"rho(test cases) {rel['rho_test_cases']:.2f} ({rho_meaning(rel['rho_test_cases'])}), MAE {rel['mae']:.3f}",
            file=out,
        )
        fragility = fragility_of(store.parquet_metadata(warehouse_path("agent_ratings", benchmark)))
        if not str(fragility.get("fragility_method", "not computed")).startswith("not computed"):
            print(f"    {fragility_line(fragility)}", file=out)
        for line in unusual_agents(gaps):
            print(f"    {line}", file=out)
    if summary.judgment_sets_read:
        print(f"  judgments: read {len(summary.judgment_sets_read)} set(s): {', '.join(summary.judgment_sets_read)}", file=out)
    present = present_benchmarks(store)
    for benchmark in summary.withdrawn:
        why = "no accepted upload" if benchmark in present else f"{raw_folder(benchmark)}/ is gone"
        print(f"  withdrawn: {benchmark} ({why}): its outputs are removed", file=out)
    report = warehouse_path("quarantine_report", None)
    problems = store.read_table(report).to_pandas() if store.exists(report) else read_quarantine(store)
    # one line per problem; an invalid benchmark.yaml rejects every upload of its benchmark with the same
    # message: printed once, with the number of uploads it rejects
    files: dict[tuple[str, str], list[str]] = {}
    for row in problems.itertuples():
        files.setdefault((row.status if row.status in ("refused", "skipped") else "rejected", row.message), []).append(row.file)
    for (status, message), paths in files.items():
        also = f" ({len(paths)} uploads: {', '.join(paths[:3])}{', …' if len(paths) > 3 else ''})" if len(paths) > 1 else ""
        print(f"  {status}: {message}{also}", file=out)
    for failure in summary.failed_runs:
        print(f"  FAILED {failure}", file=out)
    print(f"outputs: {store.uri('warehouse')}", file=out)
    return int((problems["status"] != "skipped").sum())


def rho_meaning(rho: float) -> str:
    """The sign of rho(test cases) in one phrase: Spearman's rho of the test-case ratings against their mean metric."""
    if rho != rho:
        return "not measured: too few matches"
    if rho < 0:
        return "harder test cases, lower scores: as expected"
    return "harder test cases, not lower scores: check the metric's direction in benchmark.yaml"


def _leaders(gaps) -> str:
    """``best X rated R, gap …`` when X alone is first; the top tier and its range of gaps when it is tied."""
    tier = top_tier(gaps.rename(columns={"rating": "mu"}))
    if not tier:
        return "no agent rated in the main component"
    first = gaps.set_index(gaps["agent_id"].astype(str)).loc[tier]
    if len(tier) == 1:
        best = first.iloc[0]
        return f"best {tier[0]} rated {best['rating']:.0f}, gap to oracle@50% {best['gap_50']:.0f}, @99% {best['gap_99']:.0f}"
    lo, hi = first["gap_50"].min(), first["gap_50"].max()
    top, bottom = first["rating"].max(), first["rating"].min()
    return f"{headline(gaps)}; rated {top:.0f} to {bottom:.0f}, gap to oracle@50% {lo:.0f} to {hi:.0f}"


def main(argv: list[str] | None = None) -> int:
    """The command line; a closed stdout (``agielo run | head``) ends it quietly with the run's own exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        _drop_stdout()
        return 0


def _drop_stdout() -> None:
    """The reader of stdout has gone: send what is left to /dev/null, so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _print_summary(store: Store, summary: RunSummary) -> int:
    """print_summary to stdout; when the reader has gone, the same count of problems, printed nowhere."""
    try:
        problems = print_summary(store, summary)
        sys.stdout.flush()
        return problems
    except BrokenPipeError:
        _drop_stdout()
        return print_summary(store, summary, out=io.StringIO())


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agielo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("run", "ingest new or changed uploads and re-rate stale benchmarks"),
        ("demo", "write the demo data, then run"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument(
            "--storage", default=None, help="a folder or s3://bucket/prefix (default: AGIELO_STORAGE or ./agielo_data)"
        )
        p.add_argument("--instance", default=None, help="the Dagster instance folder (default: DAGSTER_HOME or ./.dagster_home)")
        p.add_argument("--strict", action="store_true", help="exit 2 if any upload is rejected or any file refused")
        p.add_argument("--create", action="store_true", help="create the storage root (folder or bucket) if it does not exist")
        p.add_argument("--verbose", action="store_true", help="show Dagster's run logs")
        p.add_argument("--debug", action="store_true", help="show tracebacks")
    q = sub.add_parser("query", help="select test cases across benchmarks by tags and rating; rank the agents on them")
    q.add_argument("text", help="the query, e.g. \"subject == 'math' and rating > 1800\" (docs/capabilities.md: Queries)")
    q.add_argument("--storage", default=None, help="a folder or s3://bucket/prefix (default: AGIELO_STORAGE or ./agielo_data)")
    q.add_argument("--top", type=int, default=20, help="agents shown (default 20; the output says when more exist)")
    q.add_argument("--debug", action="store_true", help="show tracebacks")
    pl = sub.add_parser("plan", help="write <root>/plans/<B>/<NAME>.csv: the next test cases to evaluate a new model on")
    pl.add_argument("--benchmark", required=True)
    pl.add_argument("--agent", required=True, help="the new model's name (its upload will be raw/<B>/<NAME>.csv)")
    pl.add_argument("--budget", type=int, default=50, help="test cases to plan (default 50)")
    pl.add_argument("--storage", default=None, help="a folder or s3://bucket/prefix (default: AGIELO_STORAGE or ./agielo_data)")
    pl.add_argument("--instance", default=None, help="the Dagster instance folder (default: DAGSTER_HOME or ./.dagster_home)")
    pl.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)
    if args.command == "query":
        return run_query(args)
    if args.command == "plan":
        return run_plan(args)
    try:
        storage = ObjectStorage(root=args.storage or default_root())
        store = storage.store
        if args.command == "demo":
            from .demo import write_demo_data

            store.check_root(create=True)
            try:
                print("agielo: evaluating the demo classifiers (about 30 s on 2 cores)…", flush=True)
            except BrokenPipeError:
                _drop_stdout()  # nobody reads the progress line: the demo still runs
            write_demo_data(store.root)
        with get_instance(args.instance) as instance:
            summary = run_pipeline(storage, instance, log_level="DEBUG" if args.verbose else "CRITICAL", create=args.create)
        problems = _print_summary(store, summary)
    except StorageError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"agielo: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        raise  # the reader of stdout has gone (main ends quietly)
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback, unless --debug
        if args.debug:
            traceback.print_exc()
        print(f"agielo: error: {type(exc).__name__}: {str(exc)[:300]} (--debug shows the traceback)", file=sys.stderr)
        return 1
    if summary.failed_runs:
        return 1
    return 2 if args.strict and problems else 0


def run_plan(args) -> int:
    """`agielo plan`: materialize placement_plans for one benchmark and agent, through Dagster."""
    try:
        storage = ObjectStorage(root=args.storage or default_root())
        storage.store.check_root()
        with get_instance(args.instance) as instance:
            if args.benchmark not in instance.get_dynamic_partitions(benchmark_partitions.name):
                print(f"agielo: error: no benchmark {args.benchmark!r} has been rated here (agielo run first)", file=sys.stderr)
                return 1
            config = {"ops": {"placement_plans": {"config": {"agent": args.agent, "budget": args.budget}}}}
            result = (
                build_definitions(storage)
                .resolve_job_def("plan_placement")
                .execute_in_process(
                    run_config={**_quiet("CRITICAL"), **config},
                    instance=instance,
                    partition_key=args.benchmark,
                    tags={TRIGGER_TAG: "cli"},
                    raise_on_error=False,
                )
            )
    except StorageError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"agielo: error: {exc}", file=sys.stderr)
        return 1
    if not result.success:
        print(f"agielo: error: {_first_error(result)}", file=sys.stderr)
        return 1
    meta = _materialized(result, "placement_plans") or {}
    print(
        f"planned {meta.get('planned')} test case(s) for {meta.get('agent')} on {args.benchmark} "
        f"(current rating: {meta.get('current_rating')}; already evaluated: {meta.get('already_evaluated')})"
    )
    print(f"plan: {meta.get('plan_file')} (for spreadsheets; exact ids for programs: {meta.get('plan_ids_file')})")
    return 0


def run_query(args) -> int:
    """`agielo query`: the selected test cases across benchmarks and the agents ranked on them."""
    from .domain.capability_query import query_warehouse
    from .domain.query import QueryError

    if args.top < 1:
        print(f"agielo: error: --top must be at least 1, got {args.top}", file=sys.stderr)
        return 1
    try:
        store = ObjectStorage(root=args.storage or default_root()).store
        store.check_root()
        result = query_warehouse(store, args.text)
    except QueryError as exc:
        print(f"agielo: error: {exc}", file=sys.stderr)
        return 1
    except StorageError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"agielo: error: {exc}", file=sys.stderr)
        return 1
    chosen = result.test_cases
    print(f"query: {result.query}")
    counts = chosen.groupby("benchmark").size() if len(chosen) else {}
    print(f"selected {len(chosen)} test case(s)" + "".join(f"; {b}: {n}" for b, n in dict(counts).items()))
    if result.ranking.empty:
        print("no ranking: fewer than two agents measured on the selected test cases")
        return 0
    shown = result.ranking.head(args.top)
    print(
        "ranking: Plackett-Luce on the selected test cases, 90% intervals; its own Elo-like scale "
        "(agents' mean 1500), not comparable with AGI-Elo ratings"
    )
    print(f"{'rank':>9}  {'agent':<40} {'rating':>7}  {'interval':>15}  test cases")
    for row in shown.itertuples():
        ranks = f"{row.rank}" if row.rank == row.rank_hi else f"{row.rank}-{row.rank_hi}"
        print(
            f"{ranks:>9}  {str(row.agent_id)[:40]:<40} {row.rating:7.0f}  [{row.rating_lo:6.0f}, {row.rating_hi:6.0f}]  {row.test_cases}"
        )
    if len(shown) < len(result.ranking):
        print(f"showing {len(shown)} of {len(result.ranking)} agents (use --top N)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
