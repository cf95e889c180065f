"""What `agielo` prints: each rejection once, and a quiet exit when the reader of its output goes away."""

import os
import subprocess
import sys

import pytest

from ..devserver import REPO
from ..pipeline.conftest import write_benchmark
from .test_cli_errors import agielo, home  # noqa: F401 - the fixture


def test_a_rejected_benchmark_yaml_is_printed_once(home, tmp_path):  # noqa: F811
    root = tmp_path / "storage"
    write_benchmark(root, "quiz", [1300, 1500, 1700], spec="metric: correct\nscoring: bogus\n")
    result = agielo("run", "--storage", str(root), home=home)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "raw/quiz/benchmark.yaml" in line]
    assert len(lines) == 1, result.stdout
    assert "scoring_known" in lines[0] and "3 uploads" in lines[0], lines[0]
    strict = agielo("run", "--storage", str(root), "--strict", home=home)
    assert strict.returncode == 2  # the count of rejected files is unchanged: three uploads are rejected


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(home, tmp_path):  # noqa: F811
    """`agielo run … | head -1`: the reader is gone before agielo prints; exit 0, nothing on stderr."""
    root = tmp_path / "storage"
    write_benchmark(root, "quiz", [1300, 1600])
    (root / "raw/quiz/typo.csv").write_text("test_case_id,correct\nq1,0.5\nq2,yes\n")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    read, write = os.pipe()
    os.close(read)  # the reader has gone: every write to the pipe is EPIPE
    try:
        process = subprocess.run(
            [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
            cwd=REPO,
            env=env,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert process.returncode == 0, process.stderr
    assert process.stderr == "", process.stderr
    assert (root / "warehouse/benchmark_reports/quiz.parquet").exists()  # the run itself went through


def test_a_declared_lower_is_better_metric_is_explained_without_a_warning(home, tmp_path):  # noqa: F811
    """benchmark.yaml declares an error metric (lower is better): harder test cases have a higher one and stronger
    agents a lower one, so ρ(test cases) > 0 and ρ(agents) < 0 are the expected outcome, said as such by the run
    summary, the report and the explorer; no warning about the direction."""
    root = tmp_path / "storage"
    spec = "metric: correct\nscoring: minmax\nparams: {lo: 0, hi: 1, higher_is_better: false}\n"
    write_benchmark(root, "errors", [1200, 1400, 1600, 1800], spec=spec)
    result = agielo("run", "--storage", str(root), home=home)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("  errors:"))
    assert "harder test cases, higher metric: as expected where lower is better" in line, line
    pages = [(root / "warehouse" / folder / "errors.html").read_text() for folder in ("reports", "explorer")]
    for page in pages:
        assert "check the metric" not in page
        assert "stronger agents, lower metric: as expected where lower is better" in page


def test_the_summary_names_new_agents_and_says_why_a_benchmark_is_not_rated(home, tmp_path):  # noqa: F811
    """A benchmark that holds only its tag file (as docs/uploads.md has one write it first) is not rated, and
    the summary says so in words, not as a withdrawal; an agent uploaded to a rated benchmark is named with its rank
    and interval; a benchmark whose uploads are all rejected says so."""
    import pandas as pd

    from agielo_dagster.domain.meaning import level_words

    root = tmp_path / "storage"
    matches = write_benchmark(root, "quiz", [1200, 1500, 1800], test_cases=30)
    (root / "raw/tagged").mkdir(parents=True)
    (root / "raw/tagged/benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    (root / "raw/tagged/test_cases.csv").write_text("test_case_id,subject\nt1,math\n")
    first = agielo("run", "--storage", str(root), home=home)
    assert first.returncode == 0, first.stderr
    assert "withdrawn: tagged" not in first.stdout and "not rated: tagged (no upload yet" in first.stdout, first.stdout
    assert "new agent" not in first.stdout  # a benchmark's first rating: its line names the leaders

    newcomer = matches[matches["agent_id"] == "agent_2"].rename(columns={"metric": "correct"})[["test_case_id", "correct"]]
    newcomer.to_csv(root / "raw/quiz/newcomer.csv", index=False)
    second = agielo("run", "--storage", str(root), home=home)
    assert second.returncode == 0, second.stderr
    line = next((s for s in second.stdout.splitlines() if "new agent" in s), "")
    ratings = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet").set_index("agent_id").loc["newcomer"]
    assert line.strip().startswith("new agent: newcomer, rank "), second.stdout
    assert f"rated {ratings['mu']:.0f} [{ratings['mu_lo']:.0f}, {ratings['mu_hi']:.0f}] ({level_words()} interval)" in line

    (root / "raw/quiz/benchmark.yaml").write_text("metric: accuracy\nscoring: identity\n")  # no upload has it
    third = agielo("run", "--storage", str(root), home=home)
    assert "withdrawn: quiz (none of its 4 uploads is accepted: the reasons are below)" in third.stdout, third.stdout
