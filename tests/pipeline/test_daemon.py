"""The real daemon (`dagster dev`) at a thousand uploads: every benchmark rated exactly once per change.

1,000 uploads land across 5 benchmarks while the daemon runs; then one more; then another while an
`agielo run` works on the same instance. Counts come from the instance's own records: the
materializations of ``benchmark_reports`` (written once per rating) and the sensor's ticks.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from ..devserver import REPO, DagsterDev

pytestmark = [pytest.mark.slow, pytest.mark.component("dagster"), pytest.mark.component("daemon")]  # quick: test_dagster_dev.py

BENCHMARKS, AGENTS, TEST_CASES = 5, 200, 20


def land(root: Path, benchmark: str, agent: str, seed: int) -> None:
    """An atomic upload: written under a hidden name, then renamed into place."""
    rng = np.random.default_rng(seed)
    folder = root / "raw" / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame({"test_case_id": [f"q{i}" for i in range(TEST_CASES)], "correct": rng.integers(0, 2, TEST_CASES)})
    hidden = folder / f".{agent}.csv.part"
    frame.to_csv(hidden, index=False)
    hidden.rename(folder / f"{agent}.csv")


def ratings_per_benchmark(home: Path) -> dict[str, int]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.fetch_materializations(dg.AssetKey("benchmark_reports"), limit=10_000).records
        counts: dict[str, int] = {}
        for record in records:
            counts[record.partition_key] = counts.get(record.partition_key, 0) + 1
        return counts


def wait_for(condition, what: str, server: DagsterDev, timeout: float = 300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"timed out waiting for {what}; log tail:\n{server.log_path.read_text()[-3000:]}")


def settled(home: Path) -> bool:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return not instance.get_runs(
            dg.RunsFilter(
                statuses=[
                    dg.DagsterRunStatus.QUEUED,
                    dg.DagsterRunStatus.STARTED,
                    dg.DagsterRunStatus.STARTING,
                    dg.DagsterRunStatus.NOT_STARTED,
                ]
            )
        )


def sensor_tick_seconds(home: Path) -> list[float]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (state,) = [s for s in instance.all_instigator_state() if s.instigator_name == "benchmarks_sensor"]
        ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=1000)
        return [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("daemon")
    home, root = base / "home", base / "storage"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (root / "raw").mkdir(parents=True)
    server = DagsterDev(home, root, base / "dagster_dev.log").start()
    try:
        yield server, home, root
    finally:
        server.stop()


def test_a_thousand_uploads_then_one_more_then_one_beside_agielo_run(daemon):
    server, home, root = daemon
    names = [f"bench_{b}" for b in range(BENCHMARKS)]
    for b, benchmark in enumerate(names):
        (root / "raw" / benchmark).mkdir(parents=True)
        (root / "raw" / benchmark / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
        for a in range(AGENTS):
            land(root, benchmark, f"org__model-{a:04d}", seed=1000 * b + a)

    def all_rated():
        counts = ratings_per_benchmark(home)
        if set(counts) == set(names) and settled(home):
            table = pd.read_parquet(root / "warehouse/upload_ledger/bench_0.parquet")
            return counts if len(table) == AGENTS else None
        return None

    counts = wait_for(all_rated, "every benchmark to be rated", server, timeout=600)
    assert counts == dict.fromkeys(names, 1), counts  # 1,000 uploads: each benchmark rated exactly once

    land(root, "bench_2", "late-model", seed=7)
    wait_for(lambda: ratings_per_benchmark(home).get("bench_2") == 2 and settled(home), "the new upload to be rated", server)
    time.sleep(20)  # another sensor tick or two: nothing more may happen
    assert ratings_per_benchmark(home) == {**dict.fromkeys(names, 1), "bench_2": 2}

    # a change, and `agielo run` started on it at once, beside the daemon: still one rating
    land(root, "bench_4", "cli-model", seed=8)
    cli = subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    wait_for(lambda: ratings_per_benchmark(home).get("bench_4") == 2 and settled(home), "bench_4 to be rated", server)
    time.sleep(20)
    assert ratings_per_benchmark(home) == {**dict.fromkeys(names, 1), "bench_2": 2, "bench_4": 2}
    ledger = pd.read_parquet(root / "warehouse/upload_ledger/bench_4.parquet")
    assert "raw/bench_4/cli-model.csv" in set(ledger["path"])

    # the daemon ticked throughout (tick durations are measured in benchmarks/scale.py, not asserted here)
    assert len(sensor_tick_seconds(home)) >= 5
