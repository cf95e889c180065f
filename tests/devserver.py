"""``dagster dev`` started headless for tests, and a GraphQL helper."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .s3server import free_ports

REPO = Path(__file__).resolve().parents[1]


class DagsterDev:
    """``dagster dev`` on a free port, in its own session so the whole tree can be stopped."""

    def __init__(self, dagster_home: Path, storage_root: Path, log_path: Path):
        self.port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "AGIELO_STORAGE": str(storage_root)}
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.cwd = REPO  # the project (its workspace.yaml, and first on the code server's sys.path)

    what = "dagster dev"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "dagster",
            "dev",
            "-w",
            str(self.cwd / "workspace.yaml"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
        ]

    def start(self, timeout: float = 180.0) -> "DagsterDev":
        command = self.command()
        with open(self.log_path, "ab") as log:
            # started with '&' from a non-interactive shell it would ignore SIGINT/SIGTERM: own session instead
            self.process = subprocess.Popen(
                command, cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.what} exited with {self.process.returncode}:\n{self.log_path.read_text()[-4000:]}")
            try:
                if self.graphql("{ version }").get("data", {}).get("version"):
                    if self._location_loaded():
                        return self
            except OSError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"{self.what} did not come up on {self.url} within {timeout} s:\n{self.log_path.read_text()[-4000:]}")

    def _location_loaded(self) -> bool:
        data = self.graphql("{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }")
        entries = data["data"]["workspaceOrError"].get("locationEntries") or []
        return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            # an idle dagster dev exits within 2 s of SIGINT; one busy with runs may not: do not wait long for it
            for sig, wait in ((signal.SIGINT, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.process.pid, sig)
                    self.process.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
        self.process = None


class Webserver(DagsterDev):
    """``dagster-webserver`` alone: the UI and its GraphQL API, without a daemon (nothing runs unless asked)."""

    what = "dagster-webserver"

    def command(self) -> list[str]:
        webserver = str(Path(sys.executable).parent / "dagster-webserver")
        return [webserver, "-h", "127.0.0.1", "-p", str(self.port), "-w", str(self.cwd / "workspace.yaml")]

    def reload(self, timeout: float = 120.0) -> None:
        """Reload the code location (as the UI's "Reload" does) and wait until it is loaded again."""
        location = self.graphql("{ repositoriesOrError { ... on RepositoryConnection { nodes { location { name } } } } }")
        (name,) = {n["location"]["name"] for n in location["data"]["repositoriesOrError"]["nodes"]}
        self.graphql(
            "mutation ($name: String!) { reloadRepositoryLocation(repositoryLocationName: $name) { __typename } }", {"name": name}
        )
        deadline = time.monotonic() + timeout
        while not self._location_loaded():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the code location did not load again:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.5)
