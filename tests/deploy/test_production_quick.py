"""The production deployment's quick case: one small benchmark rated by the daemon on a Celery worker, runs in Postgres.

The quick pass (``-m 'not slow'``) keeps this one; ``test_production.py`` (slow) covers concurrency and a killed worker.
"""

from __future__ import annotations

import os

import dagster as dg
import pytest

from agielo_dagster.runs import BENCHMARK_TAG
from benchmarks.servers import deployed, missing_servers

from .test_production import celery_workers_of, instance, rating_runs, settled, wait_for, write_benchmark

pytestmark = [
    pytest.mark.component("postgres"),
    pytest.mark.component("redis"),
    pytest.mark.component("celery"),
    pytest.mark.component("daemon"),
    pytest.mark.skipif(bool(missing_servers()), reason=missing_servers() or "servers available"),
]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """The deployment, with the benchmark landing in raw/ as it starts.

    The benchmark is written before the servers start and moved in (atomically) right after: the daemon's first
    sensor tick, about 2 s later, finds it, instead of the next one 15 s on (building the logs takes seconds).
    """
    from agielo_dagster.demo import demo_logs

    staging = tmp_path_factory.mktemp("production_quick_upload")
    logs = {m: log.head(60) for m, log in sorted(demo_logs("breast_cancer").items())[:4]}
    write_benchmark(staging / "quick", logs)
    with deployed(tmp_path_factory.mktemp("production_quick"), workers=1) as deploy:
        (staging / "quick").rename(deploy.storage_root / "raw" / "quick")
        yield deploy


def test_one_benchmark_rated_by_the_daemon_on_a_worker_with_its_run_in_postgres(deployment):
    from dagster_postgres import PostgresRunStorage

    deploy, root = deployment, deployment.storage_root

    def rated():
        return settled(deploy) and [r for r in rating_runs(deploy) if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS]

    (record,) = wait_for(rated, "the daemon to rate the benchmark", deploy, timeout=300)
    assert record.dagster_run.tags[BENCHMARK_TAG] == "quick"
    assert record.dagster_run.tags.get("agielo/trigger") == "sensor"
    assert (root / "warehouse/benchmark_reports/quick.parquet").exists()
    with instance(deploy) as inst:
        assert isinstance(inst.run_storage, PostgresRunStorage)
    assert celery_workers_of(deploy, record.dagster_run.run_id) == {"agielo-w0@" + os.uname().nodename}
