"""The UI's server: `dagster dev` loads the code location, and GraphQL shows the graph and materializations."""

import os
import subprocess
import sys

import pytest

from ..devserver import REPO, DagsterDev
from .conftest import BENCHMARK_OUTPUTS, NIGHTLY_OUTPUTS, write_benchmark

# slow as a whole: the quick pass starts dagster dev in the browser tests, and checks the definitions with dg (test_project)
pytestmark = [pytest.mark.component("dagster"), pytest.mark.component("daemon"), pytest.mark.slow]

ASSETS = {
    "harness_uploads",
    "upload_ledger",
    *BENCHMARK_OUTPUTS,
    *NIGHTLY_OUTPUTS,
    "placement_plans",
    "raw_uploads",
    "incoming_logs",
    "upload_problems",
    "quarantine_report",
    "difficulty_judgments",
    "agent_leaderboard",  # the leaderboard across benchmarks, and its pages
    "benchmark_scales",
    "agent_benchmark_ratings",
    "leaderboard_pages",
}


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("dagster_dev")
    home, root = base / "home", base / "storage"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    write_benchmark(root, "quiz", [1300, 1600, 1900])
    # materialize through the one-shot CLI on the same instance the UI will read
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    cli = subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "ingested 3 upload(s); rated 1 benchmark(s)" in cli.stdout
    server = DagsterDev(home, root, base / "dagster_dev.log").start()
    try:
        yield server
    finally:
        server.stop()


def test_asset_graph(dev_server):
    data = dev_server.graphql("{ assetNodes { assetKey { path } groupName dependencyKeys { path } isPartitioned } }")
    nodes = {"/".join(n["assetKey"]["path"]): n for n in data["data"]["assetNodes"]}
    assert set(nodes) == ASSETS
    assert {"/".join(d["path"]) for d in nodes["match_tables"]["dependencyKeys"]} == {"upload_ledger"}
    assert {"/".join(d["path"]) for d in nodes["competency_gap_tables"]["dependencyKeys"]} == {
        "test_case_ratings",
        "agent_ratings",
        "input_manifests",
        "match_tables",  # the metric range it states
    }
    assert {"/".join(d["path"]) for d in nodes["benchmark_reports"]["dependencyKeys"]} == {
        "test_case_ratings",
        "agent_ratings",
        "input_manifests",
        "reliability_reports",
        "rating_snapshots",
        "competency_gap_tables",
        "match_tables",  # figures: snapshots, reliability and the binned calibration
        "test_case_tags",  # the explorer: tags, slices and ability masses
        "slice_ratings",
        "ability_masses",
    }
    assert nodes["upload_ledger"]["groupName"] == "ingest" and nodes["agent_ratings"]["groupName"] == "ratings"
    assert nodes["upload_ledger"]["isPartitioned"] and not nodes["quarantine_report"]["isPartitioned"]


def test_last_materializations(dev_server):
    query = """
    query ($path: [String!]!) {
      assetOrError(assetKey: {path: $path}) {
        ... on Asset {
          assetMaterializations(limit: 5) {
            partition runId
            metadataEntries { label ... on TextMetadataEntry { text } ... on MarkdownMetadataEntry { mdStr } }
          }
        }
      }
    }"""
    gaps = dev_server.graphql(query, {"path": ["competency_gap_tables"]})["data"]["assetOrError"]["assetMaterializations"]
    assert gaps and gaps[0]["partition"] == "quiz"
    entries = {e["label"]: e for e in gaps[0]["metadataEntries"]}
    assert entries["inputs_digest"]["text"].startswith("sha256:")
    assert {"top_agents_with_gaps", "dagster/row_count", "dagster/column_schema", "dagster/uri"} <= set(entries)
    ledger = dev_server.graphql(query, {"path": ["upload_ledger"]})["data"]["assetOrError"]["assetMaterializations"]
    assert [m["partition"] for m in ledger] == ["quiz"]  # one partition per benchmark, not per upload


def test_sensor_and_schedule_are_running(dev_server):
    data = dev_server.graphql(
        "{ repositoriesOrError { ... on RepositoryConnection { nodes { "
        "sensors { name sensorState { status } } schedules { name cronSchedule executionTimezone scheduleState { status } } } } } }"
    )
    repo = data["data"]["repositoriesOrError"]["nodes"][0]
    sensors = {s["name"]: s["sensorState"]["status"] for s in repo["sensors"]}
    assert sensors == {"benchmarks_sensor": "RUNNING", "judgments_sensor": "RUNNING"}
    (schedule,) = repo["schedules"]
    assert (schedule["name"], schedule["cronSchedule"], schedule["scheduleState"]["status"]) == (
        "nightly_rerate",
        "0 2 * * *",
        "RUNNING",
    )


def test_the_daemon_rates_a_new_upload_end_to_end(dev_server):
    """No in-process stand-in: dagster dev's own daemon runs the sensor and the runs."""
    import time
    from pathlib import Path

    import pandas as pd

    root = Path(dev_server.env["AGIELO_STORAGE"])
    log = pd.read_csv(root / "raw/quiz/agent_2.csv").assign(correct=1)
    log.to_csv(root / "raw/quiz/.newcomer.csv.part", index=False)
    (root / "raw/quiz/.newcomer.csv.part").rename(root / "raw/quiz/newcomer.csv")  # an atomic upload
    gaps = root / "warehouse/competency_gap_tables/quiz.parquet"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if "newcomer" in set(pd.read_parquet(gaps)["agent_id"]):
            break
        time.sleep(0.5)  # a cheap read: poll often, so the test ends as soon as the run does
    else:
        raise AssertionError(
            f"the daemon did not rate the new upload in time; log tail:\n{dev_server.log_path.read_text()[-3000:]}"
        )
    table = pd.read_parquet(gaps)
    assert table.iloc[0]["agent_id"] == "newcomer"  # it solved every test case
    assert table.loc[table["agent_id"] == "newcomer", "source_path"].item() == "raw/quiz/newcomer.csv"
