"""``agielo``: the pipeline without the daemon, for CI jobs and notebooks.

    agielo run   [--storage URI] [--strict] [--create] [--instance DIR]   bring every stale benchmark up to date
    agielo demo  [--storage URI] [--instance DIR]                         write the embedded demo data, then run
    agielo query "subject == 'math' and rating > 1800" [--storage URI]    rank agents on the test cases a query selects
    agielo plan  --benchmark B --agent NAME [--budget N] [--storage URI]    the next test cases to evaluate a new model on

Runs go through Dagster on the same instance as the UI: ``--instance``, else ``DAGSTER_HOME``, else
``./.dagster_home``. The same assets, checks and storage as ``dagster dev``; the same question decides
what runs (Dagster's staleness, :mod:`agielo_dagster.pending`), so a run beside a running daemon rates nothing twice.

Exit codes: 0 done; 2 some upload is rejected or refused and ``--strict`` was given; 1 could not run
(storage unreachable or misconfigured, a run failed). One line per problem, no tracebacks
(``--debug`` shows them).
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import io
import os
import sys
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from . import allocator, threads  # noqa: F401 - first of the package: thread environment and allocator before numpy loads

if TYPE_CHECKING:
    import dagster as dg

    from .domain.store import Store
    from .resources.storage import ObjectStorage

# Dagster, pandas and the code location load only once the arguments are read: `agielo --help` and a mistyped
# command answer at once (the command line's own imports are the standard library's).


def elapsed() -> float:
    """Seconds since this process started (from /proc where there is one; else since this module was imported)."""
    try:
        with open("/proc/self/stat", "rb") as stat, open("/proc/uptime", "rb") as uptime:
            started = int(stat.read().rsplit(b")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
            return max(0.0, float(uptime.read().split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED


_IMPORTED = time.perf_counter()

DEFAULT_HOME = ".dagster_home"
# a new instance's settings: the run queue starts at most one run of a benchmark at a time, and looks every second
DEFAULT_INSTANCE_YAML = """telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
    tag_concurrency_limits:
      - key: agielo/benchmark
        value:
          applyLimitPerUniqueValue: true
        limit: 1
"""


def get_instance(home: str | os.PathLike | None = None) -> dg.DagsterInstance:
    """The instance the UI uses: ``home``, ``DAGSTER_HOME``, or ``./.dagster_home`` (created if needed).

    The first start of a new instance creates its storage tables; two processes starting at once on
    one new home take turns (a file lock), so neither trips over the other's half-made tables.
    """
    import dagster as dg

    from .assets.partitions import benchmark_partitions

    path = Path(home or os.environ.get("DAGSTER_HOME") or DEFAULT_HOME).resolve()
    path.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(path)
    with _locked(path / ".agielo.lock"):
        if not (path / "dagster.yaml").exists():
            (path / "dagster.yaml").write_text(DEFAULT_INSTANCE_YAML)
        instance = dg.DagsterInstance.from_config(str(path))
        # touch every storage so its tables exist before the lock is released
        instance.get_runs(limit=1)
        instance.all_instigator_state()
        instance.get_dynamic_partitions(benchmark_partitions.name)
    return instance


@contextmanager
def _locked(path: Path):
    """An exclusive lock on a file, held until the block ends (or the process exits)."""
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass
class RunSummary:
    uploads_ingested: int = 0
    benchmarks_rated: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    not_rated: list[str] = field(default_factory=list)  # run, with nothing to rate and no ratings to withdraw
    new_agents: dict[str, list[str]] = field(default_factory=dict)  # agents a rated benchmark did not have before
    judgment_sets_read: list[str] = field(default_factory=list)
    failed_runs: list[str] = field(default_factory=list)
    leaderboard: bool = False  # re-fitted in this run
    seconds: float = 0.0


def _quiet(log_level: str) -> dict:
    return {"loggers": {"console": {"config": {"log_level": log_level}}}}


def _first_error(result) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error:
            error = event.step_failure_data.error
            while error.cause and error.cls_name in ("DagsterExecutionStepExecutionError", "RetryRequestedFromPolicy"):
                error = error.cause
            return error.message.strip().splitlines()[0][:300]
    return f"run {result.run_id} failed"


def _materialized(result, asset: str) -> dict | None:
    import dagster as dg

    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key == dg.AssetKey(asset):
            return {k: getattr(v, "value", v) for k, v in materialization.metadata.items()}
    return None


@functools.cache
def definitions_for(root: str, endpoint_url: str | None, max_upload_bytes: int) -> dg.Definitions:
    """The definitions over a storage root, every step in the run's process (``agielo run``'s executor); built once
    a process."""
    import dagster as dg

    from .definitions import build_definitions
    from .resources.storage import ObjectStorage

    storage = ObjectStorage(root=root, endpoint_url=endpoint_url, max_upload_bytes=max_upload_bytes)
    defs = build_definitions(storage, executor=dg.in_process_executor)
    with warnings.catch_warnings():  # Dagster warns on its own copy of the sensors (their `owners`) as it resolves them
        warnings.simplefilter("ignore", dg.BetaWarning)
        defs.resolve_all_asset_specs()
    return defs


def job_for(name: str, root: str, endpoint_url: str | None, max_upload_bytes: int) -> dg.JobDefinition:
    """A job of :func:`definitions_for`: what ``dg.execute_job`` reconstructs."""
    return definitions_for(root, endpoint_url, max_upload_bytes).resolve_job_def(name)


def execute(
    storage: ObjectStorage,
    instance: dg.DagsterInstance,
    job: str,
    *,
    log_level: str,
    partition: str | None = None,
    selection=None,
    tags: dict | None = None,
    config: dict | None = None,
):
    """Run a job of the code location in this process through Dagster's public API (``dg.execute_job``: step outputs
    are not kept in memory, the IO manager has written them)."""
    import dagster as dg

    from .runs import TRIGGER_TAG, process_tags

    recon = dg.build_reconstructable_job(
        "agielo_dagster.cli", "job_for", reconstructable_args=(job, storage.root, storage.endpoint_url, storage.max_upload_bytes)
    )
    run_tags = {TRIGGER_TAG: "cli", **process_tags(), **(tags or {}), **({"dagster/partition": partition} if partition else {})}
    return dg.execute_job(
        recon,
        instance=instance,
        run_config={**_quiet(log_level), **(config or {})},
        tags=run_tags,
        asset_selection=selection,
        raise_on_error=False,
    )


def _waited_for_other_runs(instance: dg.DagsterInstance, benchmark: str, timeout: float = 3600.0, poll: float = 0.5) -> bool:
    """Wait while a run of the benchmark started elsewhere (the daemon, another process) is queued or in progress;
    whether there was one."""
    from .runs import benchmark_runs_in_progress, fail_orphaned_runs

    deadline = time.monotonic() + timeout
    waited = False
    while benchmark_runs_in_progress(instance, benchmark) and time.monotonic() < deadline:
        waited = True
        time.sleep(poll)
        fail_orphaned_runs(instance, benchmark)
    return waited


@threads.one_blas_thread()
def run_pipeline(
    storage: ObjectStorage, instance: dg.DagsterInstance, *, log_level: str = "CRITICAL", create: bool = False
) -> RunSummary:
    """Bring every stale benchmark up to date, then the quarantine report, through Dagster jobs on ``instance``.

    What runs is what Dagster counts stale once the inputs are observed (:mod:`agielo_dagster.pending`). Two
    ``agielo run`` on one instance take turns (a lock in its folder), and each waits for a benchmark's runs started
    elsewhere (the daemon) before it asks about that benchmark.
    """
    started = time.perf_counter()
    from .assets.judgments import judgment_partitions
    from .assets.partitions import benchmark_partitions
    from .assets.sources import incoming_logs
    from .domain.judgments import stale_judgment_sets
    from .freshness import Records
    from .housekeeping import tidy
    from .pending import (
        assets_defs_of,
        graph_of,
        incoming_stale,
        leaderboard_selection,
        observe,
        observe_problems,
        quarantine_stale,
        rating_keys,
        rating_records,
        rating_selection,
    )
    from .runs import BENCHMARK_TAG, fail_orphaned_runs

    store = storage.store
    store.check_root(create=create)
    summary = RunSummary()
    with _locked(Path(instance.root_directory) / ".agielo-run.lock"):
        fail_orphaned_runs(instance)
        assets_defs = assets_defs_of(definitions_for(storage.root, storage.endpoint_url, storage.max_upload_bytes))
        graph, keys = graph_of(assets_defs), rating_keys(assets_defs)
        summary.withdrawn += tidy(store, instance)
        observed = observe(instance, store, problems=False)
        incoming = [e for e in observed.events if e.asset_key == incoming_logs.key]
        if incoming_stale(instance, graph, observed, store):  # harness logs first: they become uploads of their benchmarks
            for event in incoming:
                instance.report_runless_asset_event(event)
            result = execute(storage, instance, "convert_incoming", log_level=log_level)
            if not result.success:
                summary.failed_runs.append(f"harness logs: {_first_error(result)}")
            observed = observe(instance, store, problems=False)
        for event in observed.events:
            instance.report_runless_asset_event(event)
        known = set(instance.get_dynamic_partitions(benchmark_partitions.name))
        if new := sorted(set(observed.benchmarks) - known):
            instance.add_dynamic_partitions(benchmark_partitions.name, new)
        records = rating_records(instance, graph, keys, observed)
        for benchmark in observed.benchmarks:
            if _waited_for_other_runs(instance, benchmark):
                records = Records(instance)  # those runs wrote records: ask again
            selection = rating_selection(records, graph, keys, benchmark, observed)
            if not selection:
                continue
            before = _agent_ids(store, benchmark)
            result = execute(
                storage,
                instance,
                "rate_benchmarks",
                log_level=log_level,
                partition=benchmark,
                selection=selection,
                tags={BENCHMARK_TAG: benchmark},
            )
            if not result.success:
                summary.failed_runs.append(f"rate {benchmark}: {_first_error(result)}")
            ledger = _materialized(result, "upload_ledger") or {}
            summary.uploads_ingested += int(ledger.get("validated_in_this_run", 0))
            report = _materialized(result, "benchmark_reports")
            if report is not None and not report.get("withdrawn"):
                summary.benchmarks_rated.append(benchmark)
                if before is not None:  # a benchmark's first rating names its leaders, not every agent as new
                    summary.new_agents[benchmark] = sorted((_agent_ids(store, benchmark) or set()) - before)
            elif report is not None:
                (summary.withdrawn if before is not None else summary.not_rated).append(benchmark)
        if stale := leaderboard_selection(instance, graph, store):  # after the benchmarks: it reads every one's ratings
            result = execute(storage, instance, "rate_leaderboard", log_level=log_level, selection=stale)
            summary.leaderboard = result.success
            if not result.success:
                summary.failed_runs.append(f"leaderboard: {_first_error(result)}")
        judgment_sets = stale_judgment_sets(store)  # new or changed judgments/<set>.csv: read, ranked or rejected
        if judgment_sets:
            known = set(instance.get_dynamic_partitions(judgment_partitions.name))
            if [n for n in judgment_sets if n not in known]:
                instance.add_dynamic_partitions(judgment_partitions.name, [n for n in judgment_sets if n not in known])
            for name in judgment_sets:
                result = execute(storage, instance, "rank_judgments", log_level=log_level, partition=name)
                summary.judgment_sets_read.append(name)
                if not result.success:
                    summary.failed_runs.append(f"judgments {name}: {_first_error(result)}")
        problems = observe_problems(instance, store, observed.raw)
        for event in problems:
            instance.report_runless_asset_event(event)
        if quarantine_stale(instance, graph, problems):
            result = execute(storage, instance, "report_quarantine", log_level=log_level)
            if not result.success:
                summary.failed_runs.append(f"quarantine report: {_first_error(result)}")
    summary.seconds = time.perf_counter() - started
    return summary


def _agent_ids(store: Store, benchmark: str) -> set[str] | None:
    """The agents of a benchmark's stored ratings; None where it has none (never rated, or withdrawn)."""
    from .domain.layout import warehouse_path

    try:
        table = store.read_table(warehouse_path("agent_ratings", benchmark), columns=["agent_id"])
    except (OSError, ValueError):
        return None
    return {str(a) for a in table.column("agent_id").to_pylist()}


def _not_rated_reason(store: Store, benchmark: str) -> str:
    """Why a benchmark present under raw/ has no ratings, in words: its uploads were all refused, or it has none."""
    from .domain.layout import raw_folder
    from .domain.ledger import read_summary

    ledger = read_summary(store, benchmark)
    refused = [r for r in (ledger.problems if ledger else ()) if r.get("kind") == "upload"]
    if refused:
        return f"none of its {len(refused)} upload{'s' if len(refused) > 1 else ''} is accepted: the reasons are below"
    holds = ", only its tag file and benchmark.yaml" if ledger and ledger.tag_file else ""
    return f"no upload yet{holds} in {raw_folder(benchmark)}/"


def print_summary(store: Store, summary: RunSummary, out: TextIO | None = None) -> int:
    """Print what the run did and where every benchmark stands; returns the number of rejected or refused files.

    To ``out``, or to ``sys.stdout`` as it is when called (so that a caller's ``redirect_stdout`` holds)."""
    from .assets.quarantine import read_quarantine
    from .domain.incoming import renamed_benchmarks
    from .domain.inputs import present_benchmarks
    from .domain.layout import raw_folder, suspects_path, warehouse_folder, warehouse_path
    from .domain.ledger import higher_is_better
    from .domain.meaning import level_words, negative_gap_line, rho_meaning
    from .domain.standing import MAX_NAMES, fragility_line, fragility_of, new_agent_lines, status_counts, unusual_agents
    from .domain.stored import Stored
    from .domain.suspects import mislabeled_ids, mislabeled_line, read_flags

    out = sys.stdout if out is None else out
    print(f"agielo: storage {store.where}", file=out)
    print(
        f"ingested {summary.uploads_ingested} upload(s); rated {len(summary.benchmarks_rated)} benchmark(s); "
        f"{summary.seconds:.1f} s in all (the command, from its start)",
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
            f"rho(test cases) {rel['rho_test_cases']:.2f} ({rho_meaning(rel['rho_test_cases'], higher_is_better(store, benchmark))}), "
            f"MAE {rel['mae']:.3f}",
            file=out,
        )
        fragility = fragility_of(store.parquet_metadata(warehouse_path("agent_ratings", benchmark)))
        if not str(fragility.get("fragility_method", "not computed")).startswith("not computed"):
            print(f"    {fragility_line(fragility)}", file=out)
        for line in [*unusual_agents(gaps), negative_gap_line(gaps)]:
            if line:
                print(f"    {line}", file=out)
        if summary.new_agents.get(benchmark):
            agents = store.read_table(warehouse_path("agent_ratings", benchmark)).to_pandas()
            for line in new_agent_lines(agents, summary.new_agents[benchmark], level_words()):
                print(f"    {line}", file=out)
        try:
            mislabeled = mislabeled_ids(read_flags(Stored.of(store, "test_case_ratings", benchmark)))
        except (OSError, ValueError):
            mislabeled = []  # being rewritten by another process: the next run shows it
        if mislabeled:
            print(f"    {mislabeled_line(mislabeled, store.uri(suspects_path(benchmark)))}", file=out)
    if line := leaderboard_line(store):
        print(f"  {line}", file=out)
    if renamed := renamed_benchmarks(store):  # a task that became two benchmarks, or a name made safe, said once
        names = [f"{b} ({o!r})" for b, o in sorted(renamed.items())]
        shown = ", ".join(names[:MAX_NAMES]) + (f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")
        print(
            f"  benchmarks named apart from their harness task: {shown} (each evaluation of a task, such as an lm-eval "
            "filter, is a benchmark of its own; a name that is not a safe one is made safe, with -<hash>)",
            file=out,
        )
    if summary.judgment_sets_read:
        print(f"  judgments: read {len(summary.judgment_sets_read)} set(s): {', '.join(summary.judgment_sets_read)}", file=out)
    present = present_benchmarks(store)
    for benchmark in summary.withdrawn:
        why = _not_rated_reason(store, benchmark) if benchmark in present else f"{raw_folder(benchmark)}/ is gone"
        print(f"  withdrawn: {benchmark} ({why}): its outputs are removed", file=out)
    for benchmark in summary.not_rated:
        print(f"  not rated: {benchmark} ({_not_rated_reason(store, benchmark)})", file=out)
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


def leaderboard_line(store: Store) -> str:
    """The leaderboard across benchmarks in one line ('' without one, or with one benchmark)."""
    from .domain.layout import warehouse_path
    from .domain.meaning import SATURATED
    from .domain.standing import MAX_NAMES

    try:
        agents = store.read_table(warehouse_path("agent_leaderboard", None)).to_pandas()
        scales = store.read_table(warehouse_path("benchmark_scales", None)).to_pandas()
    except (OSError, ValueError):
        return ""
    if len(scales) < 2:
        return ""
    top = agents[(agents["component"] == 0) & (agents["rank"] == 1)]["agent_id"].astype(str).tolist()
    shown = ", ".join(top[:MAX_NAMES]) + (f" and {len(top) - MAX_NAMES} more" if len(top) > MAX_NAMES else "")
    apart = int((agents["component"] > 0).sum())
    saturated = scales[scales["saturation"] >= SATURATED]["benchmark"].tolist()
    return (
        f"across {len(scales)} benchmarks: {len(agents)} agents on one scale; top tier {shown}"
        + (f"; {apart} agent(s) share no test case with them, ranked apart" if apart else "")
        + (f"; saturated (the best agent passes ≥ {SATURATED:.0%}): {', '.join(saturated)}" if saturated else "")
    )


def _leaders(gaps) -> str:
    """``best X rated R, gap …`` when X alone is first; the top tier and its range of gaps when it is tied."""
    from .domain.standing import headline
    from .rating.standing import top_tier

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


def console() -> None:
    """The ``agielo`` command: :func:`main`, then an exit that skips the interpreter's teardown of every module Dagster,
    pandas and matplotlib loaded (0.5–0.6 CPU-s and about 1 s of wall time after the summary is printed, on
    2026-11-28's 2-core machine); the summary's elapsed time is then the command's."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(code)


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
    q = sub.add_parser("query", help="select test cases across benchmarks by tags, rating, flag; rank the agents on them")
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
    from .domain.store import StorageError, default_root
    from .resources.storage import ObjectStorage

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
        summary.seconds = elapsed()  # what the command took, imports and instance included
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
    from .assets.partitions import benchmark_partitions
    from .domain.store import StorageError, default_root
    from .resources.storage import ObjectStorage

    try:
        storage = ObjectStorage(root=args.storage or default_root())
        storage.store.check_root()
        with get_instance(args.instance) as instance:
            if args.benchmark not in instance.get_dynamic_partitions(benchmark_partitions.name):
                print(f"agielo: error: no benchmark {args.benchmark!r} has been rated here (agielo run first)", file=sys.stderr)
                return 1
            config = {"ops": {"placement_plans": {"config": {"agent": args.agent, "budget": args.budget}}}}
            result = execute(storage, instance, "plan_placement", log_level="CRITICAL", partition=args.benchmark, config=config)
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
    from .domain.meaning import level_words
    from .domain.query import QueryError
    from .domain.store import StorageError, default_root
    from .resources.storage import ObjectStorage

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
        print("no ranking: no agent is evaluated on the selected test cases")
        return 0
    shown = result.ranking.head(args.top)
    scale = (
        "the leaderboard's scale (each benchmark's test cases moved onto it)"
        if result.linked
        else "each benchmark's own scale (no leaderboard links them yet: `agielo run`)"
    )
    print(f"ranking: each agent placed from its results on the selected test cases, on {scale}; {level_words()} intervals")
    print(f"{'rank':>9}  {'agent':<40} {'rating':>7}  {'interval':>15}  test cases")
    for row in shown.itertuples():
        if row.status != "rated":
            print(f"{'-':>9}  {str(row.agent_id)[:40]:<40} {'':>7}  {'':>15}  0 ({row.status_reason})")
            continue
        ranks = f"{row.rank}" if row.rank == row.rank_hi else f"{row.rank}-{row.rank_hi}"
        apart = f" (component {row.component}: not comparable with the others)" if row.component else ""
        print(
            f"{ranks:>9}  {str(row.agent_id)[:40]:<40} {row.rating:7.0f}  [{row.rating_lo:6.0f}, {row.rating_hi:6.0f}]  "
            f"{row.test_cases}{apart}"
        )
    if len(shown) < len(result.ranking):
        print(f"showing {len(shown)} of {len(result.ranking)} agents (use --top N)")
    return 0


if __name__ == "__main__":
    console()
