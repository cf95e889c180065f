"""Inputs at and beyond the limits: refused by their listed size, links never followed, memory bounded by the data."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ..devserver import REPO
from .conftest import write_benchmark


def ledger(root, benchmark):
    return pd.read_parquet(root / "warehouse/upload_ledger" / f"{benchmark}.parquet").set_index("path")


def agielo(root, home, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return path


def test_oversize_files_are_refused_by_their_listed_size_unread(daemon, root):
    write_benchmark(root, "quiz", [1300, 1600])
    with open(root / "raw/quiz/huge.csv", "wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse: reading it would take seconds and a gigabyte
    write_benchmark(root, "specs", [1400])
    with open(root / "raw/specs/benchmark.yaml", "ab") as f:
        f.truncate(50 * 1024 * 1024)  # a 50 MB benchmark.yaml
    daemon.settle()
    row = ledger(root, "quiz").loc["raw/quiz/huge.csv"]
    assert row["rule"] == "log_size" and "file is 1,073,741,824 bytes; the limit is 268,435,456" in row["message"]
    assert row["version"].startswith("size:")  # identified by its listing, never hashed
    spec = ledger(root, "specs").loc["raw/specs/agent_0.csv"]
    assert spec["rule"] == "spec_size" and "benchmark.yaml is 52,428,800 bytes" in spec["message"]
    runs = len(daemon.runs)
    assert not daemon.sensor_tick().run_requests and len(daemon.runs) == runs  # never re-processed while unchanged


def test_symbolic_links_are_refused_and_never_followed(daemon, root, tmp_path):
    write_benchmark(root, "quiz", [1300, 1600])
    outside = tmp_path / "outside.csv"
    outside.write_text("test_case_id,correct\nsecret_case,1\n")
    (root / "raw/quiz/to_outside.csv").symlink_to(outside)
    (root / "raw/quiz/to_passwd.csv").symlink_to("/etc/passwd")
    (root / "raw/quiz/to_folder.csv").symlink_to(tmp_path)
    (root / "raw/linked_benchmark").symlink_to(root / "raw/quiz")
    daemon.settle()
    rows = ledger(root, "quiz")
    for name in ("to_outside.csv", "to_passwd.csv", "to_folder.csv"):
        row = rows.loc[f"raw/quiz/{name}"]
        assert row["status"] == "refused" and row["rule"] == "symlink", row.to_dict()
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    assert "raw/linked_benchmark" in set(report["file"])
    assert not (root / "warehouse/upload_ledger/linked_benchmark.parquet").exists()
    matches = pd.read_parquet(root / "warehouse/match_tables/quiz.parquet")
    assert "secret_case" not in set(matches["test_case_id"]) and "root:x" not in " ".join(report["message"])


@pytest.mark.slow  # the quick pass keeps the small wide benchmark's memory test
def test_a_hundred_megabyte_line_gives_a_short_message(tmp_path, home):
    root = tmp_path / "storage"
    write_benchmark(root, "quiz", [1300, 1600])
    with open(root / "raw/quiz/one_line.csv", "wb") as f:
        f.write(b"test_case_id;correct;" + b"x" * (100 * 1024 * 1024) + b"\n")
    result = agielo(root, home)
    assert result.returncode == 0, result.stderr[-2000:]
    row = ledger(root, "quiz").loc["raw/quiz/one_line.csv"]
    assert row["status"] == "rejected" and len(row["message"]) <= 300
    assert len(result.stdout) < 5_000 and len(result.stderr) < 5_000
    size = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
    assert size < 20 * 1024 * 1024, f"DAGSTER_HOME grew to {size:,} bytes"


@pytest.mark.slow  # the quick pass keeps the small wide benchmark's memory test
def test_memory_of_a_two_million_match_upload_is_bounded_by_the_data(tmp_path, home):
    """Peak RSS of `agielo run` at most 300 bytes per match + 1 GB (the contract of issue 10), measured.

    This machine: 1,280-1,300 MiB against 1,596 MiB. An earlier version allowed 10% over the bound
    (it measured 1,370-1,400 here and ~8% more on CI): since then GX no longer keeps the validated
    upload alive for the rest of the process, and the calibration converts only the columns it reads.
    """
    root = tmp_path / "storage"
    folder = root / "raw/big"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    rng = np.random.default_rng(0)
    n_cases, agents = 400_000, 5  # 2,000,000 matches, one upload of 400,000 rows per agent
    ids = np.char.add("case-", np.arange(n_cases).astype(str))
    for a in range(agents):
        pd.DataFrame({"test_case_id": ids, "correct": rng.integers(0, 2, n_cases)}).to_csv(folder / f"model_{a}.csv", index=False)
    peak = peak_rss_of_run(root, home)
    nominal = 300 * agents * n_cases + (1 << 30)
    assert peak <= nominal, f"peak RSS {peak / 2**20:.0f} MiB > {nominal / 2**20:.0f} MiB"


# the process's own high-water RSS (VmHWM). Not ru_maxrss: a child started by vfork and exec inherits the
# parent's high-water mark in it, so a run started from a test process already at 1.3 GB reported 1.3 GB
PEAK_KIB = "int(next(line for line in open('/proc/self/status') if line.startswith('VmHWM:')).split()[1])"


def peak_rss_of_run(root, home) -> int:
    """Peak RSS in bytes of one `agielo run` over ``root``, in a fresh process (which must rate one benchmark)."""
    code = (
        "import sys; from agielo_dagster.cli import main; code = main(['run', '--storage', sys.argv[1]]); "
        f"print('peak_kib', {PEAK_KIB}); sys.exit(code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "rated 1 benchmark(s)" in result.stdout
    return int(result.stdout.split("peak_kib")[1].split()[0]) * 1024


def write_wide(root, n_cases: int, partial_rows: int = 20, partial_uploads: int = 3) -> int:
    """A wide benchmark: one agent on ``n_cases`` test cases, and partial uploads of ``partial_rows`` of them; its matches."""
    folder = root / "raw/wide"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    rng = np.random.default_rng(1)
    ids = np.char.add("case-", np.arange(n_cases).astype(str))
    pd.DataFrame({"test_case_id": ids, "correct": rng.integers(0, 2, n_cases)}).to_csv(folder / "model_full.csv", index=False)
    for k in range(partial_uploads):
        pick = rng.choice(n_cases, partial_rows, replace=False)
        pd.DataFrame({"test_case_id": ids[pick], "correct": rng.integers(0, 2, partial_rows)}).to_csv(
            folder / f"partial_{k}.csv", index=False
        )
    return n_cases + partial_uploads * partial_rows


@pytest.mark.slow
def test_memory_of_a_wide_benchmark_with_partial_uploads_is_bounded_by_the_data(tmp_path, home):
    """1 agent × 2,000,000 test cases + 3 partial uploads of 20 rows (provisional agents): the same bound (issue 25).

    The placement, the snapshot table and the reports step no longer copy every test case's rows,
    freed memory goes back to the system (``agielo_dagster/allocator.py``), and the orders keep no
    second copy of the test cases' final ratings (2,628 MiB before, measured with ``ru_maxrss``). Then
    1,714-1,822 MiB (VmHWM), until the orders' test-case snapshots were dropped once read, the report stopped
    converting test-case rows it does not draw, and the calibration ran before the test cases were converted:
    1,581 MiB of 1,596 here (the orders the peak), and 1,663 on CI: it failed there. Then the orders kept
    snapshots and histories only for test cases of two or more matches, the first order's σ once summed, one
    temporary at a time; `agielo run` stopped keeping every step's outputs (``inprocess.py``), freed the
    previous steps' garbage as a step starts, and streams parquet to the file: 1,495-1,524 MiB (VmHWM, load 3);
    with the ten hardest test cases picked in Arrow, 1,360 MiB at load 1.
    """
    matches = write_wide(tmp_path / "storage", 2_000_000)
    peak = peak_rss_of_run(tmp_path / "storage", home)
    nominal = 300 * matches + (1 << 30)
    assert peak <= nominal, f"peak RSS {peak / 2**20:.0f} MiB > {nominal / 2**20:.0f} MiB"


@pytest.mark.slow  # 37 s at load 6
def test_memory_of_a_small_wide_benchmark_with_partial_uploads_is_bounded_by_the_data(tmp_path, home):
    """The quick variant: 1 agent × 200,000 test cases + 3 partial uploads, where the fixed 1 GiB is most of the bound."""
    matches = write_wide(tmp_path / "storage", 200_000)
    peak = peak_rss_of_run(tmp_path / "storage", home)
    nominal = 300 * matches + (1 << 30)
    assert peak <= nominal, f"peak RSS {peak / 2**20:.0f} MiB > {nominal / 2**20:.0f} MiB"
