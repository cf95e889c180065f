"""Fair to a busy machine: thread pools sized to the cores the process may use, and no spinning BLAS or OpenMP."""

import json
import os
import subprocess
import sys

import pytest

from agielo_dagster.rating.cores import cgroup_cpu_limit, usable_cores


def test_cgroup_v2_quota(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_limit(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_limit(tmp_path) is None


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_limit(tmp_path) == 3.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_limit(tmp_path) is None
    assert cgroup_cpu_limit(tmp_path / "absent") is None


def test_usable_cores_within_the_affinity_and_overridable(monkeypatch):
    monkeypatch.delenv("AGIELO_THREADS", raising=False)
    assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))
    monkeypatch.setenv("AGIELO_THREADS", "3")
    assert usable_cores() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("AGIELO_THREADS", bad)
        with pytest.raises(ValueError, match="AGIELO_THREADS"):
            usable_cores()


def _in_a_new_process(code: str, **env: str) -> dict:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT")
    }
    out = subprocess.run([sys.executable, "-c", code], env=clean | env, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


BLAS_THREADS = "[i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas']"


def test_entry_points_set_the_environment_before_numpy_loads():
    code = (
        "import json, os, agielo_dagster.cli, numpy, threadpoolctl; "
        f"print(json.dumps({{'omp': os.environ['GOMP_SPINCOUNT'], 'timeout': os.environ['OPENBLAS_THREAD_TIMEOUT'], 'blas': {BLAS_THREADS}}}))"
    )
    seen = _in_a_new_process(code)
    assert seen == {"omp": "10000", "timeout": "4", "blas": [1]}
    # what the user sets is kept
    assert _in_a_new_process(code, OPENBLAS_NUM_THREADS="2", GOMP_SPINCOUNT="300000")["omp"] == "300000"


def test_the_pipeline_limits_blas_where_numpy_was_loaded_first():
    code = (
        "import json, numpy, threadpoolctl; before = " + BLAS_THREADS + "; "
        "from agielo_dagster.threads import one_blas_thread\n"
        "with one_blas_thread():\n    inside = " + BLAS_THREADS + "\n"
        "print(json.dumps({'before': before, 'inside': inside}))"
    )
    seen = _in_a_new_process(code)
    assert seen == {"before": [os.cpu_count()], "inside": [1]}  # OpenBLAS's own default is the host's count
