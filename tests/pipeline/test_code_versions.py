"""Code versions decide what re-runs: a change of presentation re-renders the report and re-rates nothing; a change
of the engine re-rates. Staleness is Dagster's own rule (asset code versions, data versions), asked through
``agielo_dagster.freshness``."""

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest
from agielo_dagster.assets.common import RUN_TAG

from agielo_dagster.definitions import defs
from agielo_dagster.domain.layout import warehouse_path
from agielo_dagster.domain.lineage import CODE_KEY, DIGEST_KEY
from agielo_dagster.freshness import why_stale
from agielo_dagster.pending import assets_defs_of, graph_of

from ..devserver import REPO
from .conftest import BENCHMARK_OUTPUTS, write_benchmark

REPORT = "benchmark_reports"
RATINGS = [n for n in BENCHMARK_OUTPUTS if n != REPORT]


def with_code_version(defs: dg.Definitions, selection: dg.AssetSelection, version: str) -> dg.Definitions:
    """The same definitions, the selected assets declared with another code version (as after a code change)."""
    return defs.map_resolved_asset_specs(func=lambda spec: spec.replace_attributes(code_version=version), selection=selection)


def stale(defs: dg.Definitions, instance) -> set[str]:
    """The outputs of ``quiz`` that Dagster counts stale or missing."""
    graph = graph_of(assets_defs_of(defs))
    return {n for n in BENCHMARK_OUTPUTS if why_stale(instance, graph, dg.AssetKey(n), "quiz")}


def footer(root, name: str) -> dict:
    return {k.decode(): v.decode() for k, v in (pq.read_schema(root / warehouse_path(name, "quiz")).metadata or {}).items()}


def code_version(defs: dg.Definitions, name: str) -> str:
    return next(s.code_version for s in defs.resolve_all_asset_specs() if s.key == dg.AssetKey(name))


@pytest.mark.slow  # one rating run and one re-rendering (about 10 s alone)
def test_presentation_changes_re_render_and_engine_changes_re_rate(daemon, root):
    write_benchmark(root, "quiz", [1300.0, 1600.0], test_cases=20)
    assert all(r.success for r in daemon.settle())
    instance = daemon.instance
    assert stale(daemon.defs, instance) == set()
    # lineage: every output records its inputs digest and its own code version
    assert {n: footer(root, n)[CODE_KEY] for n in BENCHMARK_OUTPUTS} == {n: code_version(defs, n) for n in BENCHMARK_OUTPUTS}
    digest = footer(root, REPORT)[DIGEST_KEY]
    assert {footer(root, n).get(DIGEST_KEY, digest) for n in RATINGS} == {digest}
    rated = {n: (root / warehouse_path(n, "quiz")).read_bytes() for n in RATINGS}

    # presentation: the report is stale, the ratings are not; the run re-renders the report alone
    daemon.defs = with_code_version(daemon.defs, dg.AssetSelection.assets(REPORT), "presentation-2")
    assert stale(daemon.defs, instance) == {REPORT}
    runs = daemon.settle()
    assert [r.success for r in runs] == [True]
    written = {e.asset_key.to_user_string() for r in runs for e in r.get_asset_materialization_events()}
    assert written == {REPORT}
    assert {n: (root / warehouse_path(n, "quiz")).read_bytes() for n in RATINGS} == rated
    assert footer(root, REPORT)[CODE_KEY] == "presentation-2" and footer(root, REPORT)[DIGEST_KEY] == digest
    assert stale(daemon.defs, instance) == set()

    # the engine: every rating asset is stale; a run re-rates them, and the report after them
    engine = dg.AssetSelection.tag(RUN_TAG, "rating") - dg.AssetSelection.assets(REPORT)
    daemon.defs = with_code_version(daemon.defs, engine, "engine-2")
    assert stale(daemon.defs, instance) == set(RATINGS)
    runs = daemon.settle()
    written = {e.asset_key.to_user_string() for r in runs for e in r.get_asset_materialization_events()}
    assert written == set(BENCHMARK_OUTPUTS) and stale(daemon.defs, instance) == set()


# --- the code itself changed, in a copy of the package: what re-runs ------------------------------------------------


def package_copy(tmp_path: Path) -> Path:
    """The package as installed (assets/ and resources/ inside it), copied with the project's files: a project folder
    to run in, and to put first on PYTHONPATH."""
    copy = tmp_path / "code"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "agielo_dagster", copy / "agielo_dagster", ignore=ignore)
    for folder in ("assets", "resources"):
        shutil.copytree(REPO / folder, copy / "agielo_dagster" / folder, ignore=ignore)
    for name in ("pyproject.toml", "workspace.yaml"):
        shutil.copy2(REPO / name, copy / name)
    return copy


def edit(copy: Path, module: str) -> None:
    """A change to a module of the copy (a comment: its code version changes, its behaviour does not)."""
    path = copy / "agielo_dagster" / module
    path.write_text(path.read_text() + "\n# changed\n")


def agielo_run(root: Path, home: Path, code: Path | None = None) -> str:
    env = {**os.environ, "DAGSTER_HOME": str(home), **({"PYTHONPATH": str(code)} if code else {})}
    command = [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)]
    out = subprocess.run(command, cwd=code or REPO, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def materializations(home: Path) -> Counter:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return Counter({n: len(instance.fetch_materializations(dg.AssetKey(n), limit=1000).records) for n in ASSET_NAMES})


ASSET_NAMES = [s.key.to_user_string() for s in defs.resolve_all_asset_specs()]
LEADERBOARD = {s.key.to_user_string() for s in defs.resolve_all_asset_specs() if s.group_name == "leaderboard"}


@pytest.fixture
def rated(tmp_path):
    root, home = tmp_path / "storage", tmp_path / "home"
    write_benchmark(root, "quiz", [1300.0, 1600.0, 1800.0], test_cases=20)
    home.mkdir()
    assert "rated 1 benchmark(s)" in agielo_run(root, home)
    return root, home


def test_a_presentation_change_re_renders_the_reports_alone(rated, tmp_path):
    root, home = rated
    copy = package_copy(tmp_path)
    before = materializations(home)
    edit(copy, "domain/report.py")
    out = agielo_run(root, home, copy)
    assert "rated 1 benchmark(s)" in out  # re-rendered
    # the leaderboard's pages share the report's pieces: re-rendered too, the leaderboard itself not re-fitted
    assert materializations(home) - before == Counter({"benchmark_reports": 1, "leaderboard_pages": 1})
    assert "rated 0 benchmark(s)" in agielo_run(root, home, copy)


@pytest.mark.slow  # four more runs
def test_an_engine_change_re_rates_and_a_harness_reader_change_re_reads_its_logs_alone(rated, tmp_path):
    root, home = rated
    copy = package_copy(tmp_path)
    before = materializations(home)
    edit(copy, "rating/logistic.py")
    agielo_run(root, home, copy)
    # the steps that run the engine, not the ledger nor the match table (which do not), and the leaderboard across
    # benchmarks, which runs it too
    tables = {"match_tables", "provisional_matches", "input_manifests"}
    assert set(materializations(home) - before) == set(BENCHMARK_OUTPUTS) - tables | LEADERBOARD

    shutil.copytree(REPO / "tests/data/harness/eee", root / "incoming/eee")  # 3 logs of two tasks: two more benchmarks
    agielo_run(root, home, copy)
    before = materializations(home)
    edit(copy, "domain/harness/helm.py")  # another harness's reader: nothing to read again, nothing re-rated
    agielo_run(root, home, copy)
    assert set(materializations(home) - before) <= {"harness_uploads", "quarantine_report"}
    assert drops_read(home) == 0
    edit(copy, "domain/harness/eee.py")  # its own reader: its logs are read again, to the same uploads
    agielo_run(root, home, copy)
    assert set(materializations(home) - before) <= {"harness_uploads", "quarantine_report"}
    assert drops_read(home) == len(list((root / "incoming/eee").rglob("*_samples.jsonl")))  # every drop of it: 3


def drops_read(home: Path) -> int:
    """How many harness drops the last conversion read."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (last,) = instance.fetch_materializations(dg.AssetKey("harness_uploads"), limit=1).records
    return last.asset_materialization.metadata["drops_read_in_this_run"].value
