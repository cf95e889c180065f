import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings

DATA = Path(__file__).parent / "data"

# no per-example deadline: the default 200 ms fails a property on a busy machine (the full run shares 2 cores among
# 3 workers and their servers); a property test's own settings may still set one
settings.register_profile("agielo", deadline=None)
settings.load_profile("agielo")


def far_from_nightly_timezone(now: datetime | None = None) -> str:
    """A fixed-offset zone whose 02:00, the nightly re-rating's hour, is about 12 hours from ``now``.

    Every daemon the tests start (dagster dev, dagster-daemon) runs the nightly schedule: a run across 02:00 UTC saw
    it re-rate every benchmark in the middle of a test that counts ratings."""
    hour = (now or datetime.now(UTC)).hour
    offset = (14 - hour) % 24  # local time about 14:00
    offset = offset - 24 if offset > 14 else offset
    return "Etc/GMT" if offset == 0 else f"Etc/GMT{'-' if offset > 0 else '+'}{abs(offset)}"  # Etc/GMT-5 is UTC+5


os.environ.setdefault("AGIELO_TIMEZONE", far_from_nightly_timezone())

# the real components the tests start, named by @pytest.mark.component(name); the quick pass keeps one test of each
COMPONENTS = {
    "s3": "SeaweedFS's S3 server (tests/s3server.py)",
    "dagster": "a Dagster instance on disk, jobs executed on it",
    "daemon": "the Dagster daemon (dagster dev or dagster-daemon) ticking the sensors",
    "postgres": "Debian's PostgreSQL as Dagster's storage",
    "redis": "Redis as the Celery broker",
    "celery": "Celery workers executing steps",
    "browser": "headless Chromium on the Dagster UI or the explorer",
    "lm_eval": "lm-evaluation-harness producing logs (lm_eval --model dummy)",
    "inspect": "Inspect AI producing logs (inspect eval, mockllm)",
}


# session fixtures that start a component: a test using one (directly or through another fixture) runs it
COMPONENT_FIXTURES = {
    "s3_server": "s3",
    "chromium": "browser",
    "browser": "browser",
    "lm_eval_logs": "lm_eval",
    "inspect_logs": "inspect",
}


def components_of(item) -> set[str]:
    return {name for mark in item.iter_markers("component") for name in mark.args}


# The modules that take minutes, longest first (summed test time on a 2-core machine, 2026-11-27): collected first, so
# that pytest-xdist (-n 3, --dist loadscope in pyproject) starts them first and packs the short modules around them,
# instead of ending the run on one of them alone. An order only; no test depends on it.
LONG_MODULES = (
    "tests/pipeline/test_state_machine.py",
    "tests/pipeline/test_healing.py",
    "tests/pipeline/test_daemon.py",
    "tests/deploy/test_production.py",
    "tests/docs/test_code_blocks.py",
    "tests/harness/test_pipeline.py",
    "tests/cli/test_cli.py",
    "tests/pipeline/test_consistency.py",
    "tests/pipeline/test_limits.py",
    "tests/ui/test_browser.py",
    "tests/pipeline/test_placement_flow.py",
    "tests/pipeline/test_dagster_dev.py",
    "tests/rating/test_selection.py",
    "tests/pipeline/test_capabilities.py",
    "tests/pipeline/test_column_schema.py",
    "tests/cli/test_cli_errors.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {module: i for i, module in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: modules stay whole
    for item in items:
        for fixture in set(COMPONENT_FIXTURES) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.component(COMPONENT_FIXTURES[fixture]))
        unknown = components_of(item) - set(COMPONENTS)
        if unknown:
            raise pytest.UsageError(f"{item.nodeid}: unknown component(s) {sorted(unknown)}; known: {sorted(COMPONENTS)}")


def pytest_collection_finish(session):
    """With AGIELO_COMPONENTS_REPORT set, write which selected tests run each component (tests/test_quick_pass.py)."""
    report = os.environ.get("AGIELO_COMPONENTS_REPORT")
    if report:
        selected = {name: [i.nodeid for i in session.items if name in components_of(i)] for name in COMPONENTS}
        Path(report).write_text(json.dumps(selected, indent=1))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A SeaweedFS S3 server for the whole session; credentials exported for s3fs."""
    from .s3server import ACCESS_KEY, SECRET_KEY, SeaweedS3

    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs")).start()
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_DEFAULT_REGION="us-east-1")
    try:
        yield server
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def built_once(tmp_path_factory, name: str, build) -> Path:
    """A folder that ``build(folder)`` fills once for the whole test run.

    Under pytest-xdist every worker would build its own (the demo: minutes of scikit-learn on a busy
    machine, once per worker): the first worker to ask builds it in the run's shared temporary folder,
    the others wait on a lock and read it. A failed build leaves no mark, so the next worker tries again.
    """
    import fcntl
    import shutil

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    folder = tmp_path_factory.getbasetemp().parent / f"built-once-{name}"
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


def demo_match_table(tmp_path_factory, benchmark: str):
    """One of the embedded demo's real benchmarks (scikit-learn classifiers' p_true), as a match table."""
    import pandas as pd

    def build(folder: Path) -> None:
        from agielo_dagster.demo import demo_logs

        logs = demo_logs(benchmark)
        table = pd.concat(
            [log.assign(agent_id=agent, metric=log["p_true"], score=log["p_true"]) for agent, log in logs.items()],
            ignore_index=True,
        )[["test_case_id", "agent_id", "metric", "score"]]
        table.to_parquet(folder / "matches.parquet")

    return pd.read_parquet(built_once(tmp_path_factory, f"demo-{benchmark}", build) / "matches.parquet")


@pytest.fixture(scope="session")
def demo_digits(tmp_path_factory):
    """The embedded demo's real digits benchmark (20 scikit-learn classifiers), as a match table."""
    return demo_match_table(tmp_path_factory, "digits")


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """`agielo demo` run once, as a user would: a subprocess on a fresh storage root and DAGSTER_HOME.

    Built once for the run (:func:`built_once`); each worker gets its own copy of the storage and the
    instance, which its tests may change (the UI tests start dagster dev on them)."""
    import shutil
    import subprocess
    import sys

    def build(folder: Path) -> None:
        home, root = folder / "home", folder / "storage"
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        out = subprocess.run(
            [sys.executable, "-m", "agielo_dagster.cli", "demo", "--storage", str(root)],
            cwd=Path(__file__).resolve().parents[1],
            env={**os.environ, "DAGSTER_HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=900,
        )
        (folder / "out.json").write_text(
            json.dumps({"args": out.args, "returncode": out.returncode, "stdout": out.stdout, "stderr": out.stderr})
        )

    built = built_once(tmp_path_factory, "demo-run", build)
    base = tmp_path_factory.mktemp("demo")
    home, root = base / "home", base / "storage"
    shutil.copytree(built / "home", home)
    if (built / "storage").exists():
        shutil.copytree(built / "storage", root)
    out = subprocess.CompletedProcess(**json.loads((built / "out.json").read_text()))
    return {"root": root, "home": home, "out": out}
