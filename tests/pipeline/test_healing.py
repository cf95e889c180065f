"""Kill it, change it, break it: the next `agielo run` always leaves the warehouse a clean run would.

Every check compares the whole warehouse, byte for byte, with a clean run (fresh root, fresh instance)
on the final raw files. Only the fingerprint cache differs by design (it holds inodes and times).
Kills are exact, never timed: the killed run SIGKILLs itself at a named write (``KILL_AT``).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from agielo_dagster.domain.copies import bucket_file

from ..devserver import REPO
from ..warehouse_files import warehouse
from .conftest import BENCHMARK_OUTPUTS

pytestmark = [pytest.mark.component("dagster")]

AGENTS, TEST_CASES = 6, 400  # the kill points are exact: a small benchmark is enough


def agielo(root: Path, home: Path, *extra: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root), *extra],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# `agielo run` that SIGKILLs itself at a named write: right after the write, or between writing the
# temporary file and renaming it into place (which leaves the .tmp a crash inside a write leaves)
KILL_AT = """
import os, signal, sys
from agielo_dagster.cli import main
from agielo_dagster.domain import store

moment, target = sys.argv[1:3]
if moment == "after":

    def dying(write):
        def write_then_die(self, path, *args, **kwargs):
            write(self, path, *args, **kwargs)
            if path == target:
                os.kill(os.getpid(), signal.SIGKILL)

        return write_then_die

    # every way a file lands: its bytes, or a table streamed to it (the warehouse's outputs, locally)
    store.Store.write_bytes = dying(store.Store.write_bytes)
    store.Store.write_parquet = dying(store.Store.write_parquet)
else:
    replace = os.replace

    def die_before_rename(src, dst, *args, **kwargs):
        if str(dst).endswith("/" + target):
            os.kill(os.getpid(), signal.SIGKILL)
        return replace(src, dst, *args, **kwargs)

    os.replace = die_before_rename
sys.exit(main(sys.argv[3:]))
"""


def killed_at(root: Path, home: Path, moment: str, target: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`agielo run` killed (SIGKILL) by itself ``moment`` ("after" or "during") its write of ``target``."""
    return subprocess.run(
        [sys.executable, "-c", KILL_AT, moment, target, "run", "--storage", str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def new_home(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return path


def clean_warehouse(root: Path, tmp: Path) -> dict[str, object]:
    """The warehouse of a fresh root and instance that only ever saw ``root``'s raw files."""
    fresh = tmp / f"clean_{time.monotonic_ns()}"
    shutil.copytree(root / "raw", fresh / "raw")
    result = agielo(fresh, new_home(fresh.parent / f"{fresh.name}_home"))
    assert result.returncode == 0, result.stdout + result.stderr
    return warehouse(fresh)


def write_benchmark(root: Path, name: str, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    folder = root / "raw" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    difficulty = rng.normal(0, 1, TEST_CASES)
    ids = np.array([f"q{i:05d}" for i in range(TEST_CASES)])
    for a in range(AGENTS):
        p = 1 / (1 + np.exp(difficulty - rng.normal(0, 1)))
        correct = (rng.random(TEST_CASES) < p).astype(np.int64)
        frame = pd.DataFrame({"test_case_id": ids, "correct": correct})
        if a == 0:  # a metadata column: its copy is a file of its own, the others share files (copies.is_small)
            frame["split"] = "dev"
        frame.to_parquet(folder / f"model_{a:02d}.parquet", index=False)


POINTS = {
    # name: (moment, the write it is measured against); each stage of a benchmark's run once
    "ingest": ("after", "warehouse/accepted/big/model_00.parquet"),  # one upload accepted, no ledger yet
    "ingest_mid_write": ("during", f"warehouse/accepted/big/{bucket_file('model_01')}"),  # a shared copy, half written
    "match_table": ("after", "warehouse/upload_ledger/big.parquet"),
    "ratings": ("after", "warehouse/match_tables/big.parquet"),
    "gaps_and_figures": ("after", "warehouse/agent_ratings/big.parquet"),
    "report_mid_write": ("during", "warehouse/benchmark_reports/big.parquet"),
}
QUICK_POINT = "ingest_mid_write"  # the quick pass keeps the one that failed on a leftover .tmp (issue 24)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    base = tmp_path_factory.mktemp("healing")
    source = base / "source"
    write_benchmark(source, "big")
    return {"base": base, "source": source, "clean": clean_warehouse(source, base)}


@pytest.mark.parametrize("point", [p if p == QUICK_POINT else pytest.param(p, marks=pytest.mark.slow) for p in POINTS])
def test_a_run_killed_at_any_point_heals_on_the_next_run(big, point):
    moment, target = POINTS[point]
    root = big["base"] / f"kill_{point}"
    shutil.copytree(big["source"] / "raw", root / "raw")
    home = new_home(big["base"] / f"kill_{point}_home")
    killed = killed_at(root, home, moment, target)
    assert killed.returncode == -signal.SIGKILL, f"the run never wrote {target}:\n{killed.stdout}{killed.stderr}"
    folder = (root / target).parent
    leftovers = list(folder.glob(f".{(root / target).name}.*.tmp"))
    assert (root / target).exists() != (moment == "during") and bool(leftovers) == (moment == "during")
    rerun = agielo(root, home)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "rated 1 benchmark(s)" in rerun.stdout
    assert warehouse(root) == big["clean"]  # leftover .tmp files included: none is left
    with dg.DagsterInstance.from_config(str(home)) as instance:
        statuses = [r.status for r in instance.get_runs()]
        # the killed run was found orphaned and marked failed; nothing is left in progress
        assert dg.DagsterRunStatus.FAILURE in statuses and dg.DagsterRunStatus.STARTED not in statuses
    again = agielo(root, home)
    assert "ingested 0 upload(s); rated 0 benchmark(s)" in again.stdout


@pytest.mark.slow  # 15 agielo runs
def test_an_interruption_between_any_two_outputs_heals(big, tmp_path):
    """Every boundary between output writes of a re-rating, constructed on disk: outputs 1..k new, the rest old, with
    the instance as the run before left it (each case on its own copy of it): what the next run reuses of the files
    (the previous match table's rows, the copies) never makes it differ from a clean run."""
    old = tmp_path / "old"
    shutil.copytree(big["source"] / "raw", old / "raw")
    home = new_home(tmp_path / "home")
    assert agielo(old, home).returncode == 0
    new = tmp_path / "new"
    shutil.copytree(old, new)
    frame = pd.read_parquet(new / "raw/big/model_00.parquet").assign(correct=1)
    frame.to_parquet(new / "raw/big/model_00.parquet", index=False)
    assert agielo(new, new_home(tmp_path / "home_new")).returncode == 0
    expected = clean_warehouse(new, tmp_path)
    assert warehouse(new) == expected
    for k in range(len(BENCHMARK_OUTPUTS)):
        root = tmp_path / f"crash_{k}"
        shutil.copytree(old, root)
        shutil.copy2(new / "raw/big/model_00.parquet", root / "raw/big/model_00.parquet")
        for folder in ("upload_ledger", "accepted/big"):  # ingest had finished
            shutil.rmtree(root / "warehouse" / folder)
            shutil.copytree(new / "warehouse" / folder, root / "warehouse" / folder)
        for asset in BENCHMARK_OUTPUTS[:k]:
            shutil.copy2(new / f"warehouse/{asset}/big.parquet", root / f"warehouse/{asset}/big.parquet")
        result = agielo(root, shutil.copytree(home, tmp_path / f"home_{k}"))
        assert result.returncode == 0, result.stdout + result.stderr
        assert warehouse(root) == expected, f"after an interruption following {BENCHMARK_OUTPUTS[:k]}"


@pytest.fixture
def small(tmp_path):
    root = tmp_path / "root"
    for name, seed in (("quiz", 1), ("vision", 2)):
        folder = root / "raw" / name
        folder.mkdir(parents=True)
        (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
        rng = np.random.default_rng(seed)
        for a in range(4):
            pd.DataFrame({"test_case_id": [f"t{i}" for i in range(40)], "correct": rng.random(40).round(3)}).to_csv(
                folder / f"m{a}.csv", index=False
            )
    home = new_home(tmp_path / "home")
    assert agielo(root, home).returncode == 0
    return root, home, tmp_path


@pytest.mark.slow  # the quick pass keeps the ingest_mid_write kill
def test_a_scoring_change_re_rates(small):
    root, home, tmp = small
    (root / "raw/quiz/benchmark.yaml").write_text("metric: correct\nscoring: binary\nparams: {threshold: 0.5}\n")
    out = agielo(root, home)
    assert "rated 1 benchmark(s)" in out.stdout
    assert warehouse(root) == clean_warehouse(root, tmp)


@pytest.mark.slow  # the quick pass keeps the ingest_mid_write kill
def test_a_metric_rename_withdraws_the_ratings_and_says_so(small):
    root, home, tmp = small
    (root / "raw/quiz/benchmark.yaml").write_text("metric: accuracy\nscoring: identity\n")
    out = agielo(root, home)
    assert "withdrawn: quiz (none of its 4 uploads is accepted: the reasons are below): its outputs are removed" in out.stdout
    assert "quiz: 4 agents" not in out.stdout and "(rule: has_metric)" in out.stdout
    assert warehouse(root) == clean_warehouse(root, tmp)
    assert "rated 0 benchmark(s)" in agielo(root, home).stdout


@pytest.mark.slow
@pytest.mark.parametrize("change", ["delete", "rename"])
def test_a_deleted_or_renamed_benchmark_folder(small, change):
    root, home, tmp = small
    if change == "delete":
        shutil.rmtree(root / "raw/quiz")
    else:
        (root / "raw/quiz").rename(root / "raw/quiz2")
    out = agielo(root, home)
    assert out.returncode == 0 and "  quiz: " not in out.stdout  # no ratings shown as current
    assert "withdrawn: quiz (raw/quiz/ is gone): its outputs are removed" in out.stdout
    assert warehouse(root) == clean_warehouse(root, tmp)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert "quiz" not in instance.get_dynamic_partitions("benchmarks")


@pytest.mark.slow  # the quick pass keeps the ingest_mid_write kill (a leftover .tmp)
def test_leftover_temporary_files_and_a_damaged_ledger(small):
    """Leftover temporary files go at the next run; a damaged ledger is rebuilt from the raw files when its benchmark
    next runs (Dagster's records, not the warehouse's files, say what is current: a change, the nightly job)."""
    root, home, tmp = small
    leftover = root / "warehouse/agent_ratings/.quiz.parquet.0123456789abcdef.tmp"
    leftover.write_bytes(b"half a parquet file")
    old = time.time() - 3600
    os.utime(leftover, (old, old))  # a crash an hour ago
    (root / "warehouse/upload_ledger/vision.parquet").write_bytes(b"PAR1 truncated")
    (root / "raw/quiz/m0.csv").write_text("test_case_id,correct\nt0,1\n")
    (root / "raw/vision/m1.csv").write_text("test_case_id,correct\nt0,1\nt1,0\n")  # vision runs: its ledger is rebuilt
    out = agielo(root, home)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not leftover.exists()
    assert warehouse(root) == clean_warehouse(root, tmp)


@pytest.mark.slow  # the quick pass keeps the ingest_mid_write kill
def test_two_runs_at_once_on_a_new_instance(small):
    root, _, tmp = small
    (root / "raw/quiz/m1.csv").write_text("test_case_id,correct\nt0,1\nt1,0\n")
    home = tmp / "fresh_home"  # no dagster.yaml yet: both create the instance
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
            cwd=REPO,
            env={**os.environ, "DAGSTER_HOME": str(home)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, out + err
        assert "Traceback" not in err and "OperationalError" not in err
    # between them, each benchmark was rated once: both, since a new instance has seen neither (its records, not the
    # warehouse's files, say what is current)
    rated = sum(int(out.split("rated ")[1].split(" ")[0]) for out, _ in outputs)
    assert rated == 2
    assert warehouse(root) == clean_warehouse(root, tmp)


def test_a_run_its_killed_process_created_but_never_started_does_not_block_the_next(tmp_path):
    """``agielo run`` creates a run, then starts it: killed between the two, it leaves the run ``NOT_STARTED`` under a
    process that is gone, and the next ``agielo run`` waited an hour for it (a crossed-features run of 2026-11-29)."""
    from agielo_dagster.runs import BENCHMARK_TAG, benchmark_runs_in_progress, fail_orphaned_runs

    code = "import json; from agielo_dagster.runs import process_tags; print(json.dumps(process_tags()))"
    gone = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    with dg.DagsterInstance.from_config(str(new_home(tmp_path / "home"))) as instance:
        run = dg.DagsterRun(job_name="rate_benchmarks", status=dg.DagsterRunStatus.NOT_STARTED, tags={BENCHMARK_TAG: "b", **gone})
        instance.add_run(run)
        assert fail_orphaned_runs(instance, "b") == [run.run_id]
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
        assert not benchmark_runs_in_progress(instance, "b")
