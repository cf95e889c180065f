import json
import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

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


def pytest_collection_modifyitems(config, items):
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


@pytest.fixture(scope="session")
def demo_digits():
    """The embedded demo's real digits benchmark (20 scikit-learn classifiers), as a match table."""
    import pandas as pd

    from agielo_dagster.demo import demo_logs

    logs = demo_logs("digits")
    return pd.concat(
        [log.assign(agent_id=agent, metric=log["p_true"], score=log["p_true"]) for agent, log in logs.items()], ignore_index=True
    )[["test_case_id", "agent_id", "metric", "score"]]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """`agielo demo` run once, as a user would: a subprocess on a fresh storage root and DAGSTER_HOME."""
    import os
    import subprocess
    import sys

    base = tmp_path_factory.mktemp("demo")
    home, root = base / "home", base / "storage"
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
    return {"root": root, "home": home, "out": out}
