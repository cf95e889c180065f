"""Logs produced by the real tools, once per test session, offline.

- lm-evaluation-harness: ``lm_eval --model dummy`` on the local JSON Lines tasks of ``tests/data/harness/lm_eval_tasks``
  (``dataset_path: json`` with ``data_files``), with ``--log_samples``. Three runs: EleutherAI/pythia-160m into
  ``run1`` (seed 1), acme/parrot-7b into ``run2`` (seed 2, "a new model's run folder dropped later"), and
  pythia-160m again into ``run1`` (seed 3), so ``run1`` holds two timestamps of one model.
- Inspect AI: ``inspect eval`` on ``tests/data/harness/inspect_tasks/quiz_tasks.py`` with ``mockllm/<name>`` models;
  the solvers set ``state.output`` themselves. ``logs``: arith_quiz and graded for alpha and beta; ``later``:
  arith_quiz, flaky and broken for gamma.

HELM and Every Eval Ever do not install into this environment; their fixtures were written once by the tools
themselves (``tests/data/harness/make_fixtures.sh``) and are read from ``tests/data/harness/{helm,eee}``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import built_once

DATA = Path(__file__).resolve().parents[1] / "data" / "harness"
BIN = Path(sys.executable).parent
OFFLINE = {
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "TQDM_DISABLE": "1",
}


def _tool(name: str) -> str:
    """The console script of a tool installed beside this Python (the test extra installs lm-eval and inspect-ai)."""
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return str(found)


def lm_eval_command(model: str, seed: int, output_path: str, tasks: str = "quiz_mc,quiz_gen") -> list[str]:
    """The exact lm_eval command line of the test logs (run in a copy of tests/data/harness/lm_eval_tasks)."""
    return [
        _tool("lm_eval"),
        "--model", "dummy",
        "--model_args", f"pretrained={model}",
        "--tasks", tasks,
        "--include_path", ".",
        "--log_samples",
        "--output_path", output_path,
        "--seed", str(seed),
    ]  # fmt: skip


def inspect_command(tasks: list[str], models: str, log_dir: str) -> list[str]:
    """The exact ``inspect eval`` command line of the test logs (run in a copy of tests/data/harness/inspect_tasks)."""
    return [
        _tool("inspect"),
        "eval",
        *tasks,
        "--model",
        models,
        "--log-dir",
        log_dir,
        "--display",
        "none",
        "--log-format",
        "eval",
    ]


def _run(commands: list[list[str]], cwd: Path, env: dict, what: str) -> None:
    """Run commands concurrently and fail with their output if one fails."""
    procs = []
    for cmd in commands:
        time.sleep(0.2 if procs else 0)
        procs.append((cmd, subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for cmd, proc in procs:
        try:
            out, _ = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        if proc.returncode != 0:
            pytest.fail(f"{what} failed ({proc.returncode}): {' '.join(cmd)}\n{out[-3000:]}")


@pytest.fixture(scope="session")
def lm_eval_logs(tmp_path_factory) -> Path:
    """A folder with ``run1/`` (pythia-160m, two runs) and ``run2/`` (parrot-7b), each an lm-eval ``--output_path``.

    Built once for all test workers (``built_once``): the tests only read it (they copy what they upload)."""

    def build(work: Path) -> None:
        for f in (DATA / "lm_eval_tasks").iterdir():
            shutil.copy(f, work / f.name)
        # the datasets cache beside the folder, not in it: each run walks its include path (".") for task configs, and
        # a concurrent run's cache renames its "….incomplete" folders meanwhile (a FileNotFoundError mid-walk)
        hf = work.parent / f"{work.name}.hf"
        env = {**os.environ, **OFFLINE, "HF_HOME": str(hf), "HF_DATASETS_CACHE": str(hf / "datasets")}
        # concurrently: each run spends most of its ~8 s indexing lm-eval's built-in task configs. The two runs into
        # run1 get distinct timestamps (microseconds); the reader keeps the later one, whichever finished first.
        _run(
            [
                lm_eval_command("EleutherAI/pythia-160m", 1, "run1"),
                lm_eval_command("acme/parrot-7b", 2, "run2"),
                lm_eval_command("EleutherAI/pythia-160m", 3, "run1"),
            ],
            work,
            env,
            "lm_eval",
        )

    return built_once(tmp_path_factory, "lm_eval_logs", build)


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory) -> Path:
    """A folder with ``logs/`` (4 ``.eval`` logs: 2 tasks × alpha, beta) and ``later/`` (gamma: 3 tasks), built once."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is an optional dependency: pip install -e '.[test]'")

    def build(work: Path) -> None:
        shutil.copy(DATA / "inspect_tasks" / "quiz_tasks.py", work / "quiz_tasks.py")
        env = {**os.environ, **OFFLINE, "INSPECT_LOG_DIR": str(work / "logs")}
        _run(
            [
                inspect_command(["quiz_tasks.py@arith_quiz", "quiz_tasks.py@graded"], "mockllm/alpha,mockllm/beta", "logs"),
                inspect_command(
                    ["quiz_tasks.py@arith_quiz", "quiz_tasks.py@flaky", "quiz_tasks.py@broken"], "mockllm/gamma", "later"
                ),
            ],
            work,
            env,
            "inspect eval",
        )

    return built_once(tmp_path_factory, "inspect_logs", build)


def drop_of(folder: Path, prefix: str) -> dict[str, bytes]:
    """Every file under ``folder`` as it would be listed under ``prefix`` in storage: relative path → bytes."""
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


class Store(dict):
    """An in-memory drop: ``paths`` and ``read`` as a reader gets them from the storage layer."""

    @property
    def paths(self) -> list[str]:
        return sorted(self)

    def read(self, path: str) -> bytes:
        return self[path]


def store(*drops: dict[str, bytes]) -> Store:
    out = Store()
    for d in drops:
        out.update(d)
    return out


def only_error(result):
    """The one error of a result, checked for the message form: file first, rule last, about 300 characters at most."""
    assert len(result.errors) == 1, [str(e) for e in result.errors]
    err = result.errors[0]
    assert len(str(err)) <= 320 and str(err).startswith(err.file) and str(err).endswith(f"(rule: {err.rule})")
    return err


def edit_record(drop: Store, path: str, index: int, edit) -> Store:
    """The drop with line ``index`` (0-based) of the jsonl file ``path`` parsed, changed by ``edit(obj)`` and written back."""
    import json

    lines = drop.read(path).decode().splitlines(keepends=True)
    obj = json.loads(lines[index])
    edit(obj)
    lines[index] = json.dumps(obj) + "\n"
    return store(drop, {path: "".join(lines).encode()})


def assert_ordinary_uploads(uploads, suffix: str) -> None:
    """Every upload is accepted by the ordinary upload contract, written as ``suffix``."""
    assert uploads
    for up in uploads:
        as_ordinary_upload(up, suffix)


def as_ordinary_upload(up, suffix: str):
    """A derived upload written as ``raw/<benchmark>/<agent><suffix>`` and read back by the ordinary upload contract.

    Asserts that the contract accepts it with the same ids and metric values, and scores it with the inferred spec.
    Returns the contract's table (``test_case_id, metric, score, meta.*``).
    """
    import io

    import numpy as np
    import pyarrow.parquet as pq

    from agielo_dagster.domain.contract import parse_benchmark_spec
    from agielo_dagster.domain.readers import read_upload

    spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, f"raw/{up.benchmark}/benchmark.yaml")
    if suffix == ".csv":
        data = up.rows.to_pandas().to_csv(index=False).encode()
    else:
        buf = io.BytesIO()
        pq.write_table(up.rows, buf)
        data = buf.getvalue()
    table = read_upload(data, f"raw/{up.benchmark}/{up.agent}{suffix}", spec)
    assert table.column("test_case_id").to_pylist() == up.rows.column("test_case_id").to_pylist()
    metric = up.rows.column(spec.metric).to_numpy()
    np.testing.assert_array_equal(table.column("metric").to_numpy(), metric)
    np.testing.assert_array_equal(table.column("score").to_numpy(), spec.scoring.score(metric))
    return table
