"""The nightly job re-rates when launched by hand, as docs/pipeline.md says: ``dg launch --job rate_benchmarks_nightly
--partition <b>`` (what the UI's launchpad does too) on a benchmark whose outputs are current materializes every
rating output again, plus the nightly estimators. The meaning is the job's own (a job tag every run of it carries), not
the schedule's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from agielo_dagster.domain.parquet_io import parquet_bytes
from agielo_dagster.runs import RERATE_TAG

from ..devserver import REPO
from .conftest import BENCHMARK_OUTPUTS, NIGHTLY_OUTPUTS, write_benchmark

pytestmark = pytest.mark.component("dagster")


def latest_runs(home: Path, benchmark: str) -> dict[str, str]:
    """{asset: the run id of its latest materialization} for the benchmark's partition."""
    out = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for name in (*BENCHMARK_OUTPUTS, *NIGHTLY_OUTPUTS):
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=[benchmark]), limit=1
            ).records
            out[name] = records[0].run_id if records else ""
    return out


def test_the_nightly_job_launched_by_hand_re_rates(tmp_path):
    home, root = tmp_path / "home", tmp_path / "storage"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    write_benchmark(root, "quiz", [1300.0, 1600.0, 1900.0], test_cases=20)
    env = {**os.environ, "DAGSTER_HOME": str(home), "AGIELO_STORAGE": str(root)}
    rated = subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert "rated 1 benchmark(s)" in rated.stdout, rated.stdout + rated.stderr
    before = latest_runs(home, "quiz")

    config = {"ops": {"rating_uncertainty": {"config": {"resamples": 10}}}}  # a short bootstrap: the test is the launch
    dg_launch = [str(Path(sys.executable).with_name("dg")), "launch", "--job", "rate_benchmarks_nightly"]
    launched = subprocess.run(
        [*dg_launch, "--partition", "quiz", "--config-json", json.dumps(config)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert launched.returncode == 0 and "RUN_SUCCESS" in launched.stdout + launched.stderr, launched.stderr[-3000:]

    after = latest_runs(home, "quiz")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.get_run_by_id(after["agent_ratings"])
        assert run.job_name == "rate_benchmarks_nightly" and run.tags.get(RERATE_TAG) == "true"
    # every output (the report included) is re-materialized by that run, and the nightly estimators with it
    assert {name for name, run_id in after.items() if run_id != run.run_id} == set(), (before, after)
    assert all(before[name] != run.run_id for name in BENCHMARK_OUTPUTS)
    # the great_expectations suite over the accepted matches ran with it, and not with the run that rated them
    nightly, rating = (suite_evaluations(home, run_id) for run_id in (run.run_id, before["agent_ratings"]))
    assert rating == [] and len(nightly) == 1
    assert nightly[0].passed and nightly[0].metadata["matches"].value == 3 * 20
    assert nightly[0].description == "6 expectations met"


def suite_evaluations(home: Path, run_id: str) -> list:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
    evaluations = [r.event_log_entry.dagster_event.event_specific_data for r in records]
    return [e for e in evaluations if e.check_name == "upload_suite"]


def test_the_suite_fails_as_an_error_naming_each_offending_match(tmp_path):
    """What the contract should have refused, had it let it through: a score outside [0, 1], one agent's repeated test
    case. The check names the agent, test case and row of each."""
    from agielo_dagster.assets.quality import suite_result

    from agielo_dagster.domain.layout import warehouse_path
    from agielo_dagster.domain.store import Store
    from agielo_dagster.domain.stored import Stored

    store = Store(str(tmp_path))
    stored = [Stored.of(store, name, "quiz") for name in ("match_tables", "provisional_matches")]
    assert suite_result(store, "quiz", *stored).passed  # nothing stored: withdrawn
    matches = pa.table(
        {
            "test_case_id": ["t1", "t2", "t1", "t1"],
            "agent_id": ["a", "a", "b", "b"],
            "metric": [1.0, 0.0, 1.0, 1.0],
            "score": [1.0, 1.5, 1.0, 1.0],
        }
    )
    store.write_bytes(warehouse_path("match_tables", "quiz"), parquet_bytes(matches))
    result = suite_result(store, "quiz", *stored)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.ERROR
    assert "expect_column_values_to_be_between(score) failed on 1 match(es): row 2 (agent a, test case t2): 1.5" in (
        result.description
    )
    assert "expect_compound_columns_to_be_unique(agent+test_case_id) failed on 2 match(es)" in result.description
    assert "row 4 (agent b, test case t1)" in result.description and result.metadata["failed"].value == 2
