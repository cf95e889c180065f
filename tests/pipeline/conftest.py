"""A real ephemeral Dagster instance over a real local storage root, driven as the daemon would."""

import io
import warnings
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.definitions import build_definitions
from agielo_dagster.rating import simulate_matches
from agielo_dagster.sensors import raw_uploads_sensor

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@pytest.fixture(autouse=True)
def _no_beta_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        yield


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


class Daemon:
    """Plays the Dagster daemon in-process: sensor ticks and automation ticks, runs executed here."""

    def __init__(self, storage: ObjectStorage, instance: dg.DagsterInstance):
        self.storage = storage
        self.instance = instance
        self.defs = build_definitions(storage)
        self.sensor_cursor = None
        self.automation_cursor = dg.evaluate_automation_conditions(defs=self.defs, instance=instance).cursor
        self.runs: list[dg.ExecuteInProcessResult] = []

    def sensor_tick(self, *, execute: bool = True) -> dg.SensorResult:
        """One sensor evaluation; its runs are executed unless ``execute=False`` (then call :meth:`execute`)."""
        context = dg.build_sensor_context(
            instance=self.instance, cursor=self.sensor_cursor, resources={"storage": self.storage}, definitions=self.defs
        )
        result = raw_uploads_sensor(context)
        self.sensor_cursor = result.cursor
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
                )
            )
        self.runs.extend(results)
        return results

    def automation_tick(self) -> dict[str, set]:
        """Evaluate declarative automation once and run what it requests; returns {asset: partitions}."""
        result = dg.evaluate_automation_conditions(defs=self.defs, instance=self.instance, cursor=self.automation_cursor)
        self.automation_cursor = result.cursor
        requested = {}
        for key in self.defs.resolve_asset_graph().get_all_asset_keys():
            partitions = result.get_requested_partitions(key)
            if partitions:
                requested[key.to_user_string()] = partitions
        by_partition: dict = {}
        for name, partitions in requested.items():
            for p in partitions:
                by_partition.setdefault(p, []).append(dg.AssetKey(name))
        for partition, keys in by_partition.items():
            job = self.defs.resolve_job_def("rate_benchmarks" if partition else "report_quarantine")
            self.runs.append(
                job.execute_in_process(
                    run_config=QUIET, instance=self.instance, partition_key=partition, asset_selection=keys, raise_on_error=False
                )
            )
        return requested

    def settle(self) -> dict[str, set]:
        """Sensor tick, then automation ticks until nothing more is requested; returns all requests."""
        self.sensor_tick()
        seen: dict[str, set] = {}
        for _ in range(5):
            requested = self.automation_tick()
            if not requested:
                break
            for name, partitions in requested.items():
                seen.setdefault(name, set()).update(partitions)
        return seen


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
