"""The read-only webserver refuses to launch runs; the ordinary one launches them. Real processes, no mocks.

Two ``dagster-webserver`` processes on 127.0.0.1 (free ports) over one temporary DAGSTER_HOME and the project's
workspace, as deploy/docker-compose.yaml runs them (``webserver`` and ``webserver-read-only``); they take about
50 s to start here, so they are ``slow`` (an in-process variant built Dagster's internal workspace context: the
project uses Dagster's public API only, ``tests/test_public_api.py``).
The instances queue runs (QueuedRunCoordinator, no daemon), so an accepted launch is a queued run; nothing executes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from ..devserver import REPO, DagsterDev

QUEUED = {"run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}}

LAUNCH = """
mutation ($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId status jobName } }
    ... on UnauthorizedError { message }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""
LOCATION = "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
RUNS = "{ runsOrError { ... on Runs { results { runId status jobName } } } }"


class Webserver(DagsterDev):
    """``dagster-webserver`` itself (what the deployment runs), optionally ``--read-only``."""

    what = "dagster-webserver"

    def __init__(self, dagster_home: Path, storage_root: Path, log_path: Path, read_only: bool):
        super().__init__(dagster_home, storage_root, log_path)
        self.read_only = read_only

    def command(self) -> list[str]:
        webserver = str(Path(sys.executable).parent / "dagster-webserver")
        command = [webserver, "-h", "127.0.0.1", "-p", str(self.port), "-w", str(REPO / "workspace.yaml")]
        return command + (["--read-only"] if self.read_only else [])


@pytest.fixture(scope="module")
def webservers(tmp_path_factory):
    base = tmp_path_factory.mktemp("webservers")
    home, root = base / "home", base / "storage"
    home.mkdir()
    (root / "raw").mkdir(parents=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump({"telemetry": {"enabled": False}, **QUEUED}))
    servers = {
        "read_only": Webserver(home, root, base / "read_only.log", read_only=True),
        "normal": Webserver(home, root, base / "normal.log", read_only=False),
    }
    started = []
    try:
        for server in servers.values():
            started.append(server.start(timeout=240))
        yield servers
    finally:
        for server in started:
            server.stop()


def launch(server: Webserver, job: str) -> dict:
    (repo,) = server.graphql(LOCATION)["data"]["repositoriesOrError"]["nodes"]
    selector = {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"], "jobName": job}
    answer = server.graphql(LAUNCH, {"params": {"selector": selector, "runConfigData": {}}})
    assert "errors" not in answer, answer
    return answer["data"]["launchRun"]


@pytest.mark.slow
def test_both_listen_only_on_the_loopback(webservers):
    for server in webservers.values():
        assert server.url.startswith("http://127.0.0.1:")
        assert server.graphql("{ version }")["data"]["version"]


@pytest.mark.slow
def test_the_read_only_webserver_refuses_a_launch(webservers):
    server = webservers["read_only"]
    before = server.graphql(RUNS)["data"]["runsOrError"]["results"]
    result = launch(server, "report_quarantine")
    assert result["__typename"] == "UnauthorizedError", result
    assert server.graphql(RUNS)["data"]["runsOrError"]["results"] == before  # no run was created


@pytest.mark.slow
def test_the_read_only_webserver_still_shows_the_ratings_graph(webservers):
    nodes = webservers["read_only"].graphql("{ assetNodes { assetKey { path } } }")["data"]["assetNodes"]
    assert {"agent_ratings", "test_case_ratings", "competency_gap_tables"} <= {n["assetKey"]["path"][0] for n in nodes}


@pytest.mark.slow
def test_the_ordinary_webserver_accepts_the_same_launch(webservers):
    result = launch(webservers["normal"], "report_quarantine")
    assert result["__typename"] == "LaunchRunSuccess", result
    assert result["run"]["status"] == "QUEUED"  # the queue takes it; no daemon here, so nothing runs
    # both servers read one instance: the read-only one sees the run the other launched, and still cannot launch
    runs = webservers["read_only"].graphql(RUNS)["data"]["runsOrError"]["results"]
    assert result["run"]["runId"] in {r["runId"] for r in runs}
    assert launch(webservers["read_only"], "report_quarantine")["__typename"] == "UnauthorizedError"
