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

    what = "dagster dev"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "dagster",
            "dev",
            "-w",
            str(REPO / "workspace.yaml"),
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
                command, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
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
