"""What runs next (agielo_dagster.planning): the plan before the runs and what is left after them agree."""

import shutil

from agielo_dagster.assets.partitions import benchmark_partitions

from agielo_dagster.cli import run_pipeline
from agielo_dagster.outputs import benchmark_outputs
from agielo_dagster.planning import after_runs, plan_runs

from .conftest import write_benchmark


def _agree(daemon) -> tuple[list[str], bool]:
    """after_runs's answer, checked against a full plan's."""
    store, outputs = daemon.storage.store, benchmark_outputs(daemon.defs.resolve_asset_graph())
    full, after = plan_runs(store, daemon.instance, outputs), after_runs(store, daemon.instance, outputs)
    assert (after.vanished, after.quarantine_digest, after.quarantine_stale) == (
        full.vanished,
        full.quarantine_digest,
        full.quarantine_stale,
    )
    return after.vanished, after.quarantine_stale


def test_after_runs_finds_what_a_full_plan_finds_without_reading_present_benchmarks(daemon, root):
    write_benchmark(root, "quiz", [1300, 1600, 1900])
    write_benchmark(root, "gone", [1400, 1700])
    assert _agree(daemon) == ([], True)  # nothing rated yet: no partition, no quarantine report
    assert not run_pipeline(daemon.storage, daemon.instance).failed_runs
    assert _agree(daemon) == ([], False)
    store, listed = daemon.storage.store, []
    store.list_files = lambda folder, real=store.list_files: listed.append(folder) or real(folder)
    after_runs(store, daemon.instance, benchmark_outputs(daemon.defs.resolve_asset_graph()))
    assert [f for f in listed if f.startswith("raw")] == []  # a benchmark with inputs has not vanished: not listed
    del store.list_files
    daemon.instance.add_dynamic_partitions(benchmark_partitions.name, ["ghost"])  # a partition of nothing at all
    assert _agree(daemon) == (["ghost"], False)

    shutil.rmtree(root / "raw/gone")  # its ledger and outputs remain until a run withdraws them: not vanished yet
    (root / "raw/quiz/typo.csv").write_text("test_case_id,correct\nq1,yes\n")
    assert _agree(daemon) == (["ghost"], False)  # the typo is not in a ledger yet
    summary = run_pipeline(daemon.storage, daemon.instance)
    assert not summary.failed_runs and summary.withdrawn == ["gone"]
    assert sorted(daemon.instance.get_dynamic_partitions(benchmark_partitions.name)) == ["quiz"]
    assert _agree(daemon) == ([], False)  # the typo's rejection is in the quarantine report

    (root / "warehouse/upload_ledger/quiz.parquet").unlink()  # a lost ledger: rebuilt by the next run
    assert _agree(daemon) == ([], True)
