"""Tidying the warehouse: the one owner of what no asset writes.

- leftover temporary files (a crash inside a write): those whose writer on this host has exited go at once,
  any other after ten minutes (``Store.remove_temporaries``);
- a benchmark with no inputs left (its raw folder and its derived uploads gone): every file of it in the warehouse,
  its ledger last (an interrupted tidy is taken up again), and its partition.

``agielo run`` tidies before it runs anything; ``benchmarks_sensor`` requests the ``tidy_warehouse`` job when there
is something to tidy.
"""

import os

import dagster as dg

from .assets.partitions import benchmark_partitions
from .domain.inputs import known_benchmarks, present_benchmarks
from .domain.layout import (
    accepted_folder,
    explorer_path,
    figures_folder,
    fingerprint_path,
    in_folder,
    ledger_path,
    report_path,
    suspects_path,
    suspects_twin_path,
    warehouse_folder,
)
from .domain.store import TEMP_SUFFIX, Store
from .resources.storage import ObjectStorage


def vanished(store: Store, instance: dg.DagsterInstance) -> list[str]:
    """Benchmarks with a partition or a ledger but no inputs left."""
    known = set(known_benchmarks(store)) | set(instance.get_dynamic_partitions(benchmark_partitions.name))
    return sorted(known - present_benchmarks(store))


def has_temporaries(store: Store) -> bool:
    """Whether any temporary file lies under the warehouse (locally; S3 writes leave none)."""
    if not store.is_local:
        return False
    for _, _, names in os.walk(store.full_path("warehouse")):
        if any(n.startswith(".") and n.endswith(TEMP_SUFFIX) for n in names):
            return True
    return False


NOT_PER_BENCHMARK = {"difficulty_judgments", "judgments_ledger", "upload_ledger"}
"""Warehouse folders whose files are not named by benchmark (judgment sets), or that go last (the ledger)."""


def forget(store: Store, benchmark: str) -> list[str]:
    """Remove every file of a benchmark from the warehouse, whatever asset wrote it, the ledger last."""
    folders = [f for f in store.list_folders("warehouse") if f not in NOT_PER_BENCHMARK]
    paths = [in_folder(warehouse_folder(f), f"{benchmark}.parquet") for f in folders]
    paths += [in_folder(figures_folder(benchmark), n) for n in store.list_dir(figures_folder(benchmark))]
    paths += [report_path(benchmark), explorer_path(benchmark), suspects_path(benchmark), suspects_twin_path(benchmark)]
    paths += [in_folder(accepted_folder(benchmark), n) for n in store.list_dir(accepted_folder(benchmark))]
    paths += [fingerprint_path(benchmark), ledger_path(benchmark)]
    removed = []
    for path in paths:
        if store.exists(path):
            store.remove(path)
            removed.append(path)
    for folder in (figures_folder(benchmark), accepted_folder(benchmark)):
        store.remove_empty_folder(folder)
    return removed


def tidy(store: Store, instance: dg.DagsterInstance, log=None) -> list[str]:
    """Remove leftover temporary files and the benchmarks with no inputs left (files and partition); returns the
    benchmarks removed."""
    for path in store.remove_temporaries("warehouse"):
        if log:
            log(f"removed a leftover temporary file {path}")
    gone = vanished(store, instance)
    partitions = set(instance.get_dynamic_partitions(benchmark_partitions.name))
    for benchmark in gone:
        removed = forget(store, benchmark)
        if benchmark in partitions:
            instance.delete_dynamic_partition(benchmark_partitions.name, benchmark)
        if log:
            log(f"{benchmark} has no inputs left: removed {len(removed)} file(s) and its partition")
    return gone


@dg.op(description="Remove leftover temporary files, and every file and the partition of a benchmark with no inputs left.")
def tidy_op(context: dg.OpExecutionContext, storage: ObjectStorage) -> None:
    tidy(storage.store, context.instance, log=context.log.info)


@dg.job(description="Tidy the warehouse: leftover temporary files, benchmarks with no inputs left.")
def tidy_warehouse():
    tidy_op()
