"""Real production servers for tests and benchmarks: Debian's PostgreSQL and Redis, Celery workers, the daemon.

Each binds 127.0.0.1 on a free port, keeps its files in a given folder, runs in its own session (so
its whole process tree can be stopped) and is stopped by its owner. PostgreSQL refuses to run as
root: as root, its files belong to ``nobody`` and it runs as ``nobody`` (``runuser``).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
UNPRIVILEGED = "nobody"


def free_ports(n: int) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def missing_servers() -> str:
    """Why the real servers cannot run here ('' when they can)."""
    if postgres_bin() is None:
        return "Debian's postgresql is not installed (/usr/lib/postgresql/*/bin/initdb)"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: PostgreSQL cannot be started as another user"
    return ""


def stop_group(process: subprocess.Popen | None, signals=((signal.SIGTERM, 20), (signal.SIGKILL, 10))) -> None:
    """Stop a process started with ``start_new_session`` and everything it started."""
    if process is None:
        return
    for sig, wait in signals:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # children that outlived their parent stay in the group: end them too
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_for_port(port: int, process: subprocess.Popen, log: Path, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout} s:\n{log.read_text()[-3000:]}")


def _traversable(path: Path) -> None:
    """Let the unprivileged user reach ``path``: search (not read) permission on its ancestors in the temp dir."""
    top = Path(tempfile.gettempdir()).resolve()
    for folder in [path, *path.parents]:
        if folder == top or top not in folder.parents:
            break
        folder.chmod(folder.stat().st_mode | 0o001)


@dataclass
class Postgres:
    """A throwaway PostgreSQL cluster (initdb) with a password-protected user and database."""

    directory: Path
    user: str = "agielo"
    password: str = "pg-test-secret"
    database: str = "dagster"
    port: int = 0
    process: subprocess.Popen | None = None

    def _as_owner(self, command: list[str]) -> list[str]:
        return ["runuser", "-u", UNPRIVILEGED, "--", *command] if os.geteuid() == 0 else command

    def start(self, timeout: float = 60.0) -> Postgres:
        bin_dir = postgres_bin()
        self.directory.mkdir(parents=True, exist_ok=True)
        data, socket_dir, pwfile = self.directory / "data", self.directory / "socket", self.directory / "pwfile"
        socket_dir.mkdir(exist_ok=True)
        pwfile.write_text(self.password + "\n")
        if os.geteuid() == 0:
            _traversable(self.directory)
            for path in (self.directory, socket_dir, pwfile):
                shutil.chown(path, UNPRIVILEGED)
        log = self.directory / "postgres.log"
        init = subprocess.run(
            self._as_owner(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    self.user,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                    "--no-sync",
                ]
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{init.stdout}\n{init.stderr}")
        self.port = free_ports(1)[0]
        command = [
            str(bin_dir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(self.port),
            "-h",
            "127.0.0.1",
            "-k",
            str(socket_dir),
            "-c",
            "fsync=off",
            "-c",
            "max_connections=200",
        ]
        with open(log, "ab") as out:
            self.process = subprocess.Popen(self._as_owner(command), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_for_port(self.port, self.process, log, "postgres", timeout)
        deadline = time.monotonic() + timeout
        while True:  # listening is not accepting: wait until a query goes through
            ready = subprocess.run(
                [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user], capture_output=True
            )
            if ready.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not accept connections:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        created = subprocess.run(
            [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, self.database],
            env={**os.environ, "PGPASSWORD": self.password},
            capture_output=True,
            text=True,
        )
        if created.returncode != 0:
            raise RuntimeError(f"createdb failed: {created.stderr}")
        return self

    def env(self) -> dict[str, str]:
        """The variables deploy/dagster.yaml reads."""
        return {
            "DAGSTER_POSTGRES_HOST": "127.0.0.1",
            "DAGSTER_POSTGRES_PORT": str(self.port),
            "DAGSTER_POSTGRES_USER": self.user,
            "DAGSTER_POSTGRES_PASSWORD": self.password,
            "DAGSTER_POSTGRES_DB": self.database,
        }

    def stop(self) -> None:
        # SIGINT: PostgreSQL's fast shutdown
        stop_group(self.process, ((signal.SIGINT, 20), (signal.SIGKILL, 10)))
        self.process = None


@dataclass
class Redis:
    directory: Path
    port: int = 0
    process: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> Redis:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_ports(1)[0]
        log = self.directory / "redis.log"
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                command, cwd=self.directory, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        _wait_for_port(self.port, self.process, log, "redis-server", timeout)
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        stop_group(self.process)
        self.process = None


def production_home(path: Path) -> Path:
    """An empty DAGSTER_HOME with deploy/dagster.yaml copied in: all a deployment needs."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEPLOY / "dagster.yaml", path / "dagster.yaml")
    return path


@dataclass
class Deployment:
    """Postgres, Redis, Celery workers and the Dagster daemon over one storage root, as deploy/ describes."""

    directory: Path
    storage_root: Path
    workers: int = 2
    postgres: Postgres | None = None
    redis: Redis | None = None
    worker_processes: list[subprocess.Popen] = field(default_factory=list)
    daemon: subprocess.Popen | None = None

    @property
    def home(self) -> Path:
        return self.directory / "dagster_home"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            **self.postgres.env(),
            "DAGSTER_HOME": str(self.home),
            "AGIELO_STORAGE": str(self.storage_root),
            "AGIELO_EXECUTOR": "celery",
            "AGIELO_CELERY_BROKER": self.redis.url,
            # dagster-celery starts `celery` by name: this interpreter's scripts first
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def start(self) -> Deployment:
        try:
            production_home(self.home)
            self.postgres = Postgres(self.directory / "postgres").start()
            self.redis = Redis(self.directory / "redis").start()
            self.init_instance()
            for n in range(self.workers):
                self.start_worker(n)
            self.start_daemon()
        except BaseException:
            self.stop()
            raise
        return self

    def init_instance(self) -> None:
        """Create Dagster's tables once, before several processes race to."""
        code = "import dagster as dg; dg.DagsterInstance.get().get_runs(limit=1)"
        result = subprocess.run([sys.executable, "-c", code], env=self.env(), timeout=120, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"the instance in {self.home} did not start:\n{result.stderr[-3000:]}")

    def log(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    def start_worker(self, n: int) -> subprocess.Popen:
        command = [
            str(Path(sys.executable).parent / "dagster-celery"),
            "worker",
            "start",
            "-A",
            "dagster_celery.app",
            "-y",
            str(DEPLOY / "celery.yaml"),
            "--name",
            f"agielo-w{n}",
            "--",
            "--concurrency=1",
            "--without-gossip",
            "--without-mingle",
        ]
        log = self.log(f"worker{n}")
        offset = log.stat().st_size if log.exists() else 0
        with open(log, "ab") as out:
            process = subprocess.Popen(
                command, cwd=self.directory, env=self.env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.worker_processes.append(process)
        deadline = time.monotonic() + 120
        while "ready." not in log.read_text(errors="replace")[offset:]:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"celery worker {n} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)
        return process

    def start_daemon(self) -> None:
        command = [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(REPO / "workspace.yaml")]
        with open(self.log("daemon"), "ab") as out:
            self.daemon = subprocess.Popen(
                command, cwd=REPO, env=self.env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def pool_processes(self) -> list[int]:
        """The pids of the Celery pool processes (the ones that execute steps) of every worker."""
        roots = {p.pid for p in self.worker_processes if p.poll() is None}
        tree: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                tree.setdefault(parent, []).append(int(entry.name))
        # dagster-celery -> celery main -> pool processes
        return [pool for root in roots for main in tree.get(root, []) for pool in tree.get(main, [])]

    def tail(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-2500:]}" for path in sorted(self.directory.glob("*.log"))
        )

    def stop(self) -> None:
        stop_group(self.daemon, ((signal.SIGINT, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 5)))
        self.daemon = None
        for process in self.worker_processes:
            stop_group(process)
        self.worker_processes = []
        if self.redis:
            self.redis.stop()
        if self.postgres:
            self.postgres.stop()


@contextmanager
def deployed(base: Path, workers: int) -> Iterator[Deployment]:
    """A started Deployment over ``base/storage`` (raw/ created); this process may open its instance meanwhile."""
    root = base / "storage"
    (root / "raw").mkdir(parents=True)
    deploy = Deployment(base / "servers", root, workers=workers)
    saved = dict(os.environ)
    try:
        deploy.start()
        os.environ.update(deploy.postgres.env())
        yield deploy
    finally:
        deploy.stop()
        os.environ.clear()
        os.environ.update(saved)
