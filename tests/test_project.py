"""The repository is a `dg` project on one Dagster release: `dg check defs`, `dg list defs` and `dg launch` work
from the project root, as README documents them, without a SupersessionWarning."""

import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import dagster as dg
import pytest
from agielo_dagster.resources.storage import ObjectStorage
from packaging.requirements import Requirement

from agielo_dagster.definitions import build_definitions
from tests.pipeline.conftest import write_benchmark

ROOT = Path(__file__).resolve().parents[1]
DG = Path(sys.executable).with_name("dg")


def run_dg(*args: str, home: Path, storage: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """`dg ARGS` from the project root, in this virtual environment, over its own instance and storage root."""
    env = os.environ | {
        "DAGSTER_HOME": str(home),
        "AGIELO_STORAGE": str(storage),
        "VIRTUAL_ENV": sys.prefix,
        "PATH": f"{DG.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }
    (home / "dagster.yaml").touch()
    return subprocess.run([str(DG), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, storage = tmp_path / "home", tmp_path / "root"
    home.mkdir()
    storage.mkdir()
    return home, storage


def test_dg_check_defs(places):
    result = run_dg("check", "defs", home=places[0], storage=places[1])
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "All definitions loaded successfully" in output
    assert "SupersessionWarning" not in output


def test_dg_list_defs_shows_every_asset_of_the_definitions(places):
    result = run_dg("list", "defs", "--json", home=places[0], storage=places[1])
    assert result.returncode == 0, result.stderr
    listed = {asset["asset_key"] for asset in json.loads(result.stdout)["assets"]}
    defined = {key.to_user_string() for key in build_definitions().resolve_asset_graph().get_all_asset_keys()}
    assert listed == defined


@pytest.mark.slow
def test_dg_launch_rates_a_benchmark(places):
    """docs/pipeline.md's `dg launch --job rate_benchmarks --partition <benchmark>`: validate, then rate, one benchmark.

    (Not `--assets 'upload_ledger*'`: everything downstream of the ledger includes the placement plans, which need an
    agent in their config.)"""
    home, storage = places
    write_benchmark(storage, "quiz", [1300, 1500, 1700], test_cases=30)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        instance.add_dynamic_partitions("benchmarks", ["quiz"])
    result = run_dg("launch", "--job", "rate_benchmarks", "--partition", "quiz", home=home, storage=storage)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "RUN_SUCCESS" in output and "SupersessionWarning" not in output
    agents = ObjectStorage(root=str(storage)).store.read_table("warehouse/agent_ratings/quiz.parquet")
    assert sorted(agents.column("agent_id").to_pylist()) == ["agent_0", "agent_1", "agent_2"]

    # the nightly re-rating by hand re-rates, though the inputs did not change (it used to log "nothing to do"), and
    # runs the estimators, which the rating job leaves to it
    result = run_dg("launch", "--job", "rate_benchmarks_nightly", "--partition", "quiz", home=home, storage=storage)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for asset, count in (("agent_ratings", 2), ("benchmark_reports", 2), ("estimator_comparison", 1)):
            records = instance.fetch_materializations(dg.AssetKey(asset), limit=10).records
            assert len(records) == count, (asset, len(records))


DAGSTER_LIBRARIES = ("dagster-celery", "dagster-postgres")


def _library_release(core: str) -> str:
    """The integration libraries' version released with a core version: 1.13.27 <-> 0.29.27."""
    major, minor, patch = core.split(".")
    assert major == "1"
    return f"0.{int(minor) + 16}.{patch}"


def test_one_dagster_release_for_the_base_install_and_every_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    requirements += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    pins = {r.name.split("[")[0]: str(r.specifier) for r in requirements if r.name.startswith("dagster")}
    core = version("dagster")
    for name, specifier in pins.items():
        expected = _library_release(core) if name in DAGSTER_LIBRARIES else core
        assert specifier == f"=={expected}", f"{name} {specifier}: expected =={expected}"
        assert version(name) == expected
    for installed in ("dagster-webserver", "dagster-graphql", "dagster-pipes", "dagster-shared", "dagster-dg-core"):
        assert version(installed) == core


def test_a_regular_install_ships_every_package_and_page_file():
    """`pip install .` (the Dockerfile's) installs only what `[tool.setuptools]` names: every folder holding an
    `__init__.py` under the three package roots must be listed, and every non-Python file the package reads."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {"agielo_dagster": ROOT / "agielo_dagster"} | {
        name: ROOT / folder for name, folder in setuptools["package-dir"].items()
    }
    found = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            relative = init.parent.relative_to(folder).parts
            found.add(".".join((name, *relative)))
    assert set(setuptools["packages"]) == found
    data = {f"{package}/{pattern}" for package, patterns in setuptools["package-data"].items() for pattern in patterns}
    for package in found:
        folder = roots[package] if package in roots else ROOT / package.replace(".", "/")
        for path in folder.iterdir():
            if path.is_file() and path.suffix not in (".py", ".pyc"):
                shipped = any(fnmatch.fnmatchcase(f"{package}/{path.name}", pattern) for pattern in data)  # setuptools' globs
                assert shipped, f"{path} is not package data: a regular install leaves it out"
