"""Layers point one way (engine ← domain ← Dagster layer), packages install under the project's name,
and the code version follows every module that changes outputs."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agielo_dagster.domain import lineage

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "agielo_dagster"
DAGSTER_LAYER = ("dagster", "agielo_dagster.assets", "agielo_dagster.resources", "agielo_dagster.cli", "agielo_dagster.sensors")
DAGSTER_LAYER += ("agielo_dagster.definitions", "agielo_dagster.jobs", "agielo_dagster.schedules", "agielo_dagster.runs")
DAGSTER_LAYER += ("agielo_dagster.pending", "agielo_dagster.freshness", "agielo_dagster.housekeeping")


def imports_of(path: Path, package: str) -> set[str]:
    """Absolute names of every module a source file imports (relative imports resolved)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{a.name}" for a in node.names)
    return names


def layer_files(folder: str) -> list[tuple[Path, str]]:
    out = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        package = ".".join(parts[:-1]) if path.name != "__init__.py" else ".".join(parts[:-1])
        out.append((path, package))
    return out


@pytest.mark.parametrize("folder", ["rating", "domain"])
def test_engine_and_domain_import_no_dagster_layer(folder):
    offenders = []
    for path, package in layer_files(folder):
        for name in imports_of(path, package):
            if any(name == layer or name.startswith(layer + ".") for layer in DAGSTER_LAYER):
                offenders.append(f"{path.relative_to(REPO)} imports {name}")
    assert offenders == []
    assert len(layer_files(folder)) > 5


def test_engine_imports_nothing_of_the_domain():
    offenders = [
        f"{p.relative_to(REPO)} imports {n}"
        for p, pkg in layer_files("rating")
        for n in imports_of(p, pkg)
        if n.startswith("agielo_dagster.") and not n.startswith("agielo_dagster.rating")
    ]
    assert offenders == []


def test_the_domain_imports_without_dagster_loaded():
    code = "import sys, agielo_dagster.domain.ledger, agielo_dagster.domain.inputs, agielo_dagster.rating; print('dagster' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_command_line_reads_its_arguments_before_it_loads_dagster():
    """`agielo --help` and a mistyped command answer at once: Dagster, pandas and great_expectations (about 4.5 CPU-s
    together) load only for a command that runs."""
    code = (
        "import sys\nfrom agielo_dagster.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('dagster', 'pandas', 'great_expectations', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_command_line_and_the_code_location_load_without_numba():
    """numba and its compiler (about 0.6 s and 60 MB per process) load only when a step rates or checks a match table."""
    code = "import sys, agielo_dagster.cli, agielo_dagster.definitions; print(sorted(m for m in ('numba', 'llvmlite', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    # and the engine still loads it where it rates
    code = "import sys, numpy as np; from agielo_dagster.rating.frames import check_floats; check_floats(np.ones(3), 'x', 'y'); print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_assets_and_resources_install_under_the_project_namespace(tmp_path):
    """A real (non-editable) wheel: no generic top-level `assets` or `resources` package lands in site-packages."""
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("*.whl")
    import zipfile

    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist() if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"agielo_dagster"}
    names = zipfile.ZipFile(wheel).namelist()
    for module in ("assets/ledger.py", "resources/storage.py", "domain/harness/__init__.py", "rating/glicko.py"):
        assert f"agielo_dagster/{module}" in names
    for page in PAGE_FILES:  # package data, read with importlib.resources
        assert f"agielo_dagster/domain/{page}" in names
    # installed (here: editable), outside the repository the generic names resolve to nothing
    code = (
        "import importlib.util as u; import agielo_dagster.assets.ledger; print(u.find_spec('assets'), u.find_spec('resources'))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None None"


PAGE_FILES = ("explorer.css", "explorer.html", "explorer.js", "explorer.kit.js")
PAGE_FILES += ("explorer_index.css", "explorer_index.html", "explorer_index.js")
COMMAND_LINE_ONLY = {"domain/query.py", "domain/capability_query.py"}  # `agielo query`: reads the warehouse, writes nothing


def asset_closures() -> dict[str, set[Path]]:
    """Each asset module's code: the files its code version is a hash of (the observed sources have none)."""
    from agielo_dagster.definitions import MODULE_OF

    modules = [m for m in MODULE_OF.values() if m != "agielo_dagster.assets.sources"]
    return {m: {p.resolve() for p in lineage.closure(m, "agielo_dagster.resources.warehouse")} for m in modules}


def test_every_module_that_can_change_an_output_is_in_an_asset_code_version():
    covered = set().union(*asset_closures().values())
    scheduling = {name.rsplit(".", 1)[1] + ".py" for name in lineage.SCHEDULING}
    for path in PACKAGE.glob("*.py"):
        if path.name != "__init__.py":
            assert path.resolve() in covered or path.name in scheduling, (
                f"{path.name}: import it from an asset, or list it in lineage.SCHEDULING"
            )
    for folder in ("rating", "domain", "assets"):
        for path, _ in layer_files(folder):
            relative = str(path.relative_to(PACKAGE))
            trivial = path.name == "__init__.py" and not path.read_text().replace('"""', "").strip().count("\n")
            assert path.resolve() in covered or relative in COMMAND_LINE_ONLY or trivial, path
    for page in ("explorer.css", "explorer.html", "explorer.js", "explorer.kit.js"):  # the explorer's files change its output
        assert (PACKAGE / "domain" / page).resolve() in covered, page


def test_each_asset_runs_its_own_code():
    """A figure's module is in the report's code alone; the engine is in the ratings' and not in the ledger's; a
    harness reader is in the harness conversion's and in no rating asset's."""
    closures = {
        m.rsplit(".", 1)[1]: {p.relative_to(p.parents[1]).as_posix() for p in files} for m, files in asset_closures().items()
    }
    presentation = {"domain/figures.py", "domain/report.py", "domain/explorer.py", "domain/explorer.js"}
    # the leaderboard's pages share the report's and the explorer's pieces
    assert sorted(m for m, files in closures.items() if presentation & files) == ["leaderboard_pages", "reports"]
    assert not presentation & closures["leaderboard"]  # a page's change never re-fits the leaderboard
    engine = {f"rating/{p.name}" for p in (PACKAGE / "rating").glob("*.py")}
    assert engine <= closures["ratings"] and engine <= closures["reports"]
    assert not {"rating/glicko.py", "rating/refine.py"} & closures["ledger"]
    reader = "harness/lm_eval.py"
    assert [m for m, files in closures.items() if reader in files] == ["incoming", "quarantine"]


def test_benchmarks_import_nothing_from_the_tests():
    """Benchmarks run on their own: what they share with the tests lives in benchmarks/ (servers, crafted, graded).
    Read as text, so the code that benchmarks run in a fresh process (in a string) is held to it too."""
    importing = re.compile(r"^\s*(from\s+tests[.\s]|import\s+tests\b)", re.M)
    offenders = [p.name for p in sorted((REPO / "benchmarks").glob("*.py")) if importing.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    assert len(list((REPO / "benchmarks").glob("*.py"))) > 10


def _engine_imports() -> dict[str, set[str]]:
    """Each engine module's imports of sibling engine modules, at module level or inside functions."""
    folder = PACKAGE / "rating"
    names = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                found |= {t for t in targets if t in names and t != path.stem}
        graph[path.stem] = found
    return graph


def test_engine_modules_import_each_other_without_a_cycle():
    """Not even through an import inside a function (glicko and reliability once imported each other that way)."""
    graph = _engine_imports()
    assert "order_reliability" in graph["glicko"] and "ratings" in graph["reliability"] and "glicko" in graph["ratings"]
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())


def test_assets_load_their_inputs_one_way():
    """Every asset reads what it takes as an input (a parameter named after the asset) through the IO manager's
    handle (``domain/stored.py``), never by path; it builds a handle only to its own previous output, which Dagster
    cannot declare as an input (no self-dependency), in a ``previous_*`` function."""
    from agielo_dagster.definitions import defs

    own: dict[str, set[str]] = {}
    for spec in defs.resolve_all_asset_specs():
        for reference in getattr(spec.metadata.get("dagster/code_references"), "code_references", []):
            own.setdefault(Path(reference.file_path).name, set()).add(spec.key.to_user_string())
    for path in sorted((REPO / "assets").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b(warehouse_path|read_table|read_parts|read_schema|parquet_\w+)\(", text), path.name
        for function in (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)):
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call) and ast.unparse(n.func) == "Stored.of"):
                named = {a.value for a in call.args if isinstance(a, ast.Constant)}
                assert function.name.startswith("previous_") and named <= own[path.name], (path.name, function.name)
