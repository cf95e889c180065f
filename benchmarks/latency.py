"""What a user waits for on a small benchmark: the command line's fixed cost, and a new model's way to its rating.

A benchmark of 4 agents x 40 test cases (CSV uploads), on a fresh storage root and a fresh Dagster instance.
Every figure is a whole process's wall time and CPU-seconds (user + system, with the children it waited for,
from the kernel), the best of ``--repeat`` tries (the daemon: the median):

(a) ``agielo --help``: target <= 0.5 CPU-s (the command line reads its arguments before it loads Dagster);
(b) a no-op ``agielo run`` on the rated benchmark: target <= 1.5 CPU-s;
(c) ``agielo run`` after one new 40-row upload: target <= 5 CPU-s; the line "ingested N upload(s)" says what it read;
    baseline in the same run: the first ``agielo run`` that rates the whole benchmark from scratch;
(d) with ``dagster dev`` (webserver and daemon) on the same instance and root, a new upload landing in
    ``raw/<benchmark>/`` until its agent is in ``agent_ratings``: target <= 10 s on an idle machine; the CPU-seconds
    are the whole ``dagster dev`` process tree's over that time (its run processes included).

The load average is printed beside the figures: on a shared machine, compare rows of one run only.

    python benchmarks/latency.py [--repeat 3] [--no-daemon] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
AGIELO = [sys.executable, "-m", "agielo_dagster.cli"]
BENCHMARK, AGENTS, TEST_CASES = "quiz", 4, 40


def run_timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU-seconds (the process and the children it waited for: this process's children totals before
    and after) and stdout of one command."""
    before = os.times()
    started = time.perf_counter()
    process = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = os.times()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{process.stdout[-2000:]}{process.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, process.stdout


def upload(root: Path, agent: str, seed: int) -> None:
    """One agent's 40 results (binary), written under a temporary name and renamed into place, as a sync tool does."""
    rng = np.random.default_rng(seed)
    folder = root / "raw" / BENCHMARK
    folder.mkdir(parents=True, exist_ok=True)
    difficulty = np.random.default_rng(0).normal(0, 1, TEST_CASES)
    p = 1 / (1 + np.exp(difficulty - rng.normal(0, 1)))
    body = "".join(f"t{i:03d},{int(c)}\n" for i, c in enumerate(rng.random(TEST_CASES) < p))
    staging = root / f".{agent}.csv.part"
    staging.write_text("test_case_id,correct\n" + body)
    os.replace(staging, folder / f"{agent}.csv")


def best(rows: list[tuple[float, float, str]]) -> tuple[float, float, str]:
    return min(rows, key=lambda r: r[1])


def ingested(out: str) -> str:
    found = re.search(r"ingested (\d+) upload", out)
    return found.group(1) if found else "?"


def printed_seconds(out: str) -> str:
    found = re.search(r"([\d.]+) s in all", out)
    return found.group(1) if found else "?"


# --- the daemon ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_cpu(session: int) -> float:
    """CPU-seconds of every live process of a session, with the children each has reaped (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:  # field 6 of stat: the session id
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return total / tick


def graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql", data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def agents_rated(root: Path) -> set[str]:
    import pyarrow.parquet as pq

    path = root / "warehouse" / "agent_ratings" / f"{BENCHMARK}.parquet"
    try:
        return {str(a) for a in pq.read_table(path, columns=["agent_id"]).column("agent_id").to_pylist()}
    except (OSError, ValueError):
        return set()


def daemon_latency(root: Path, env: dict[str, str], work: Path, repeat: int, first_seed: int) -> list[tuple[float, float]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(work / "dagster_dev.log", "wb")  # noqa: SIM115 - closed in finally
    command = [sys.executable, "-m", "dagster", "dev", "-w", str(REPO / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                data = graphql(url, "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }")
                entries = data["data"]["workspaceOrError"].get("locationEntries") or []
                if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        time.sleep(20)  # the daemon's first ticks on the settled benchmark
        figures = []
        for k in range(repeat):
            agent = f"daemon{k}"
            cpu_before = session_cpu(process.pid)
            landed = time.perf_counter()
            upload(root, agent, first_seed + k)
            while agent not in agents_rated(root):
                if time.perf_counter() - landed > 300:
                    raise SystemExit(f"{agent} not rated within 300 s: see {work / 'dagster_dev.log'}")
                time.sleep(0.1)
            seconds = time.perf_counter() - landed
            time.sleep(3)  # the run's process ends (its CPU is counted when its parent reaps it)
            figures.append((seconds, session_cpu(process.pid) - cpu_before))
        return figures
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
                process.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                break
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-daemon", action="store_true")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and leave it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="agielo-latency-"))
    work.mkdir(parents=True, exist_ok=True)
    root, home = work / "data", work / "home"
    home.mkdir(exist_ok=True)  # its dagster.yaml is the one `agielo run` writes into a new home
    env = {**os.environ, "DAGSTER_HOME": str(home), "AGIELO_STORAGE": str(root), "AGIELO_TIMEZONE": "Pacific/Kiritimati"}
    (root / "raw" / BENCHMARK).mkdir(parents=True, exist_ok=True)
    (root / "raw" / BENCHMARK / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    for a in range(AGENTS):
        upload(root, f"model{a}", a)
    load = os.getloadavg()
    rows = []
    try:
        helps = [run_timed([*AGIELO, "--help"], env) for _ in range(args.repeat)]
        rows.append(("agielo --help", *best(helps)[:2], "", "0.5 CPU-s"))
        first = run_timed([*AGIELO, "run"], env)
        rows.append(
            (
                "first agielo run (4 x 40, from scratch)",
                *first[:2],
                f"{ingested(first[2])} read; says {printed_seconds(first[2])} s",
                "baseline",
            )
        )
        noops = [run_timed([*AGIELO, "run"], env) for _ in range(args.repeat)]
        noop = best(noops)
        rows.append(("no-op agielo run", *noop[:2], f"{ingested(noop[2])} read; says {printed_seconds(noop[2])} s", "1.5 CPU-s"))
        news = []
        for k in range(args.repeat):
            upload(root, f"new{k}", 100 + k)
            news.append(run_timed([*AGIELO, "run"], env))
        new = best(news)
        rows.append(
            (
                "agielo run after one new 40-row upload",
                *new[:2],
                f"{ingested(new[2])} read; says {printed_seconds(new[2])} s",
                "5 CPU-s",
            )
        )
        if not args.no_daemon:
            figures = daemon_latency(root, env, work, args.repeat, 200)
            seconds, cpu = sorted(figures)[len(figures) // 2]  # the median try: a tick's phase makes the spread
            shown = ", ".join(f"{s:.1f}" for s, _ in figures)
            rows.append(
                ("dagster dev: upload landed -> agent in agent_ratings (median)", seconds, cpu, f"tries {shown} s", "10 s idle")
            )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    after = os.getloadavg()
    print(
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} before, {after[0]:.1f} {after[1]:.1f} {after[2]:.1f} after;"
        f" {os.cpu_count()} cores; best of {args.repeat}"
    )
    print("| what | wall s | CPU-s | note | target |")
    print("|---|---|---|---|---|")
    for what, wall, cpu, note, target in rows:
        print(f"| {what} | {wall:.1f} | {cpu:.1f} | {note} | {target} |")


if __name__ == "__main__":
    main()
