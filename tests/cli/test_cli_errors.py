"""What `agielo run` says when it cannot run: one line naming the place and the fix, exit code 1, no traceback."""

import os
import subprocess
import sys

import pytest

from ..devserver import REPO
from ..pipeline.conftest import write_benchmark
from ..s3server import ACCESS_KEY, SECRET_KEY, free_ports


def agielo(*args, home, env=None, timeout=300):
    environment = {**os.environ, "DAGSTER_HOME": str(home), "AWS_EC2_METADATA_DISABLED": "true", **(env or {})}
    for key, value in list(environment.items()):
        if value is None:
            del environment[key]
    return subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", *args],
        cwd=REPO,
        env=environment,
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


def one_clean_line(result) -> str:
    """The single error line; nothing that looks like a traceback or a Dagster stack trace."""
    assert "Traceback" not in result.stderr and "Stack Trace" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agielo: error: ")
    return lines[0]


@pytest.mark.parametrize("uri", ["ftp://host/evals", "gs://bucket/evals", "http://example.org/x"])
def test_unknown_schemes_are_refused(home, uri):
    result = agielo("run", "--storage", uri, home=home)
    assert result.returncode == 1
    assert "unknown scheme" in one_clean_line(result)


def test_a_missing_local_root_is_an_error_unless_create(home, tmp_path):
    root = tmp_path / "nowhere" / "evals"
    result = agielo("run", "--storage", str(root), home=home)
    assert result.returncode == 1
    assert f"storage root {root} does not exist" in one_clean_line(result) and "--create" in result.stderr
    assert not root.exists()  # never created silently
    created = agielo("run", "--storage", str(root), "--create", home=home)
    assert created.returncode == 0, created.stderr and root.is_dir()


def test_rejections_are_one_line_each_and_exit_2_only_with_strict(home, tmp_path):
    root = tmp_path / "storage"
    write_benchmark(root, "quiz", [1300, 1600])
    (root / "raw/quiz/typo.csv").write_text("test_case_id,correct\nq1,0.5\nq2,yes\n")
    (root / "raw/quiz/notes.txt").write_text("free text")
    result = agielo("run", "--storage", str(root), home=home)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Stack Trace" not in result.stderr and "FAILED" not in result.stdout
    assert result.stdout.count("  rejected: raw/quiz/typo.csv") == 1 and result.stdout.count("  refused: raw/quiz/notes.txt") == 1
    strict = agielo("run", "--storage", str(root), "--strict", home=home)
    assert strict.returncode == 2 and "Traceback" not in strict.stderr


def test_debug_shows_the_traceback(home):
    result = agielo("run", "--storage", "ftp://host/x", "--debug", home=home)
    assert result.returncode == 1 and "Traceback" in result.stderr and "unknown scheme" in result.stderr


class TestS3:
    """Against the real SeaweedFS server: every storage error is one line naming the endpoint."""

    def test_wrong_credentials(self, s3_server, home):
        env = {"AWS_ACCESS_KEY_ID": "not-a-key", "AWS_SECRET_ACCESS_KEY": "wrong"}
        result = agielo("run", "--storage", "s3://agielo/x", home=home, env={**env, "AWS_ENDPOINT_URL": s3_server.endpoint})
        assert result.returncode == 1
        line = one_clean_line(result)
        assert "access denied" in line and s3_server.endpoint in line and "AWS_ACCESS_KEY_ID" in line
        assert "wrong" not in line and SECRET_KEY not in result.stderr + result.stdout

    @pytest.mark.slow  # the quick pass keeps test_wrong_credentials
    def test_missing_credentials(self, s3_server, home, tmp_path):
        env = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}
        env |= {"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_ENDPOINT_URL": s3_server.endpoint}
        result = agielo("run", "--storage", "s3://agielo/x", home=home, env=env)
        assert result.returncode == 1
        line = one_clean_line(result)
        assert ("no credentials" in line or "access denied" in line) and s3_server.endpoint in line

    @pytest.mark.slow  # the quick pass keeps test_wrong_credentials
    def test_endpoint_down(self, s3_server, home):
        (port,) = free_ports(1)
        endpoint = f"http://127.0.0.1:{port}"
        result = agielo("run", "--storage", "s3://agielo/x", home=home, env={"AWS_ENDPOINT_URL": endpoint})
        assert result.returncode == 1
        line = one_clean_line(result)
        assert "unreachable" in line and endpoint in line

    @pytest.mark.slow
    def test_missing_bucket_is_an_error_unless_create(self, s3_server, home):
        env = {"AWS_ENDPOINT_URL": s3_server.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        result = agielo("run", "--storage", "s3://no-such-bucket/evals", home=home, env=env)
        assert result.returncode == 1
        line = one_clean_line(result)
        assert "bucket 'no-such-bucket' does not exist" in line and "--create" in line
        created = agielo("run", "--storage", "s3://no-such-bucket/evals", "--create", home=home, env=env)
        assert created.returncode == 0, created.stderr
        assert "ingested 0 upload(s)" in created.stdout
