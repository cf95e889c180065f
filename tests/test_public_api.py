"""Dagster's public API only: no module of the project, its benchmarks or its tests imports a private module of
Dagster or of its libraries (``dagster._core``, ``dagster_postgres._…``): those change without notice between releases.

An instance's ``dagster.yaml`` still names its run coordinator by module and class (``dagster._core.run_coordinator``):
that is Dagster's documented configuration, a string, not an import.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("agielo_dagster", "assets", "resources", "benchmarks", "tests")


def private_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of a private Dagster module in a source file."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            top, *rest = name.split(".")
            if top.startswith("dagster") and any(part.startswith("_") for part in rest):
                found.append((node.lineno, name))
    return found


def test_no_module_imports_a_private_dagster_module():
    files = [p for folder in FOLDERS for p in sorted((REPO / folder).rglob("*.py"))]
    assert len(files) > 100
    found = [f"{p.relative_to(REPO)}:{line} imports {name}" for p in files for line, name in private_imports(p.read_text())]
    assert found == []


def test_the_check_finds_a_private_import():
    source = "import dagster as dg\nfrom dagster._core.definitions import data_version\nimport dagster_postgres._x\n"
    assert private_imports(source) == [
        (2, "dagster._core.definitions"),
        (2, "dagster._core.definitions.data_version"),
        (3, "dagster_postgres._x"),
    ]
