"""A real ephemeral Dagster instance over a real local storage root, driven as the daemon would."""

import io
import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest
from agielo_dagster.assets.common import RUN_TAG
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.definitions import build_definitions, defs
from agielo_dagster.domain.inputs import RACY_NS
from agielo_dagster.pending import assets_defs_of, rating_keys
from agielo_dagster.rating import simulate_matches
from agielo_dagster.sensors import benchmarks_sensor

# what every rating run writes (the ledger aside), in the order a run writes them: the report last
BENCHMARK_OUTPUTS = tuple(k.to_user_string() for k in rating_keys(assets_defs_of(defs)) if k.to_user_string() != "upload_ledger")
NIGHTLY_OUTPUTS = tuple(
    sorted(s.key.to_user_string() for s in defs.resolve_all_asset_specs() if s.tags.get(RUN_TAG) == "nightly")
)
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def write_benchmark(
    root: Path, benchmark: str, agent_ratings, *, test_cases: int = 60, seed: int = 0, spec: str | None = None
) -> pd.DataFrame:
    """Raw logs of simulated agents (one CSV each) plus benchmark.yaml; returns the matches."""
    folder = Path(root) / "raw" / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "benchmark.yaml").write_text(spec or "metric: correct\nscoring: identity\n")
    truth = np.random.default_rng(seed).normal(1500, 300, test_cases)
    matches = simulate_matches(truth, agent_ratings, seed=seed)
    for agent, rows in matches.groupby("agent_id"):
        write_log(root, benchmark, agent, rows.rename(columns={"metric": "correct"})[["test_case_id", "correct"]])
    return matches


def write_log(root: Path, benchmark: str, agent: str, frame: pd.DataFrame) -> Path:
    path = Path(root) / "raw" / benchmark / f"{agent}.csv"
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    path.write_text(buffer.getvalue())
    return path


def accepted_copy(root: Path, benchmark: str, agent: str) -> pd.DataFrame | None:
    """The accepted copy of an agent's upload (None when the ledger accepts none), as the match table reads it."""
    from agielo_dagster.domain.copies import AcceptedCopies
    from agielo_dagster.domain.ledger import read_ledger
    from agielo_dagster.domain.store import Store

    store = Store(str(root))
    ledger = read_ledger(store, benchmark)
    row = next((r for r in ledger.accepted if r["agent"] == agent), None) if ledger else None
    copies = AcceptedCopies.read(store, benchmark)
    if row is None:
        assert copies.member(agent) is None and f"{agent}.parquet" not in copies.files, f"{agent} has a stale copy"
        return None
    return copies.read_one(row).to_pandas()


def failures(result: dg.ExecuteInProcessResult) -> list[str]:
    """Each failed step of a run, ``job step: message`` with the error under Dagster's wrapper."""
    out = []
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            while error.cause is not None:
                error = error.cause
            out.append(f"{result.dagster_run.job_name} {event.step_key}: {error.message.strip()}")
    return out


def wait_until_settled(root: Path) -> None:
    """Sleep until every benchmark's newest file is older than the sensor's settling time."""
    newest = max(
        (p.stat().st_mtime for top in ("raw", "warehouse/derived") for p in (root / top).rglob("*") if p.is_file()),
        default=0.0,
    )
    time.sleep(max(0.0, newest + RACY_NS / 1e9 + 0.05 - time.time()))


def _first_failure(result: dg.ExecuteInProcessResult) -> str:
    error = next((e.event_specific_data.error for e in result.all_events if e.is_step_failure), None)
    while error is not None and error.cause is not None:
        error = error.cause
    return "" if error is None else error.message.strip()


class Daemon:
    """Plays the Dagster daemon in-process: sensor ticks, and the runs they request executed here."""

    def __init__(self, storage: ObjectStorage, instance: dg.DagsterInstance):
        self.storage = storage
        self.instance = instance
        self.defs = build_definitions(storage)
        self.runs: list[dg.ExecuteInProcessResult] = []

    def sensor_tick(self, *, execute: bool = True) -> dg.SensorResult:
        """One evaluation of benchmarks_sensor, once the files just written have settled (the sensor leaves a benchmark
        whose files are still being written for its next tick); its runs are executed unless ``execute=False``."""
        wait_until_settled(Path(self.storage.root))
        context = dg.build_sensor_context(instance=self.instance, resources={"storage": self.storage}, definitions=self.defs)
        result = benchmarks_sensor(context)
        for event in result.asset_events or []:  # as the daemon does: observations first, then partitions, then runs
            self.instance.report_runless_asset_event(event)
        for request in result.dynamic_partitions_requests or []:
            if isinstance(request, dg.AddDynamicPartitionsRequest):
                self.instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
            else:
                for key in request.partition_keys:
                    self.instance.delete_dynamic_partition(request.partitions_def_name, key)
        if execute:
            self.execute(result.run_requests or [])
        return result

    def execute(self, requests) -> list[dg.ExecuteInProcessResult]:
        results = []
        for request in requests:
            job = self.defs.resolve_job_def(request.job_name)
            results.append(
                job.execute_in_process(
                    run_config=QUIET,
                    instance=self.instance,
                    partition_key=request.partition_key,
                    tags=request.tags,
                    raise_on_error=False,
                    asset_selection=request.asset_selection,
                )
            )
        self.runs.extend(results)
        return results

    def settle(self, max_ticks: int = 6) -> list[dg.ExecuteInProcessResult]:
        """Sensor ticks until one requests nothing; returns the runs executed."""
        executed = []
        for _ in range(max_ticks):
            result = self.sensor_tick(execute=False)
            if not result.run_requests:
                return executed
            executed += self.execute(result.run_requests)
        asked = [
            (r.job_name, r.partition_key, [k.to_user_string() for k in r.asset_selection or []]) for r in result.run_requests
        ]
        failed = [_first_failure(r) for r in executed[-len(result.run_requests) :] if not r.success]
        raise AssertionError(f"still requesting runs after {max_ticks} ticks: {asked}; failures: {failed}")


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "storage"


@pytest.fixture
def storage(root) -> ObjectStorage:
    root.mkdir(parents=True, exist_ok=True)
    return ObjectStorage(root=str(root))


@pytest.fixture
def daemon(storage):
    with dg.instance_for_test() as instance:
        yield Daemon(storage, instance)
