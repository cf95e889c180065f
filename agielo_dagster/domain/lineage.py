"""Code versions and input digests: what every output records about where it came from.

A code version is the package version plus a hash of the source files a module runs: the module itself and every
module of the package it imports or starts as a process, directly or through others (imports inside functions too),
with the page files beside them (``explorer.html``, ``.css``, ``.js``); a package that loads its modules lazily (the
engine's) counts whole. Each asset declares the code version of its own module
(:func:`code_version`), so a change re-runs only what runs the changed code: a figure's module re-renders the
reports, a harness reader re-reads that harness's logs, the engine re-rates. Modules that decide when work runs and
never what an output holds (:data:`SCHEDULING`) are in no code version. Modules are found and read as text; nothing
is imported (the engine's package would load numba).

- ``INGEST_VERSION``: what judges an upload (the ledger, the readers, the quality suite); each ledger row records
  it, and an upload is judged again when it changes.
- ``RATING_VERSION``: the engine's (``agielo_dagster.rating``); the rating outputs and the gap table's rows record it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

from .. import __version__

PACKAGE = "agielo_dagster"
SCHEDULING = frozenset(
    f"{PACKAGE}.{m}"
    for m in (
        "allocator",
        "cli",
        "definitions",
        "demo",
        "freshness",
        "housekeeping",
        "jobs",
        "pending",
        "runs",
        "schedules",
        "sensors",
        "threads",
    )
)
"""Modules that decide when work runs (or where it runs), never what an output holds."""
PAGE_SUFFIXES = (".html", ".css", ".js")  # files a module carries beside it (explorer.py: explorer.js, …)
DIGEST_KEY = "agielo.inputs_digest"  # in every output's parquet footer: the benchmark's accepted inputs it was made from
CODE_KEY = "agielo.code_version"  # and the code version of the asset that wrote it

_FROM = re.compile(r"^\s*from\s+(\.*[\w.]*)\s+import\s+(\([^)]*\)|[^\n#]+)", re.M)
_IMPORT = re.compile(r"^\s*import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)", re.M)
_STARTS = re.compile(rf'"-m",\s*"({PACKAGE}(?:\.\w+)+)"')  # a module started as a process (the decoder) runs too


@functools.cache
def module_file(name: str) -> Path | None:
    """The source file of a module or package of the project (None for anything else), found without importing it."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    if len(parts) == 1:
        return Path(__file__).resolve().parents[1] / "__init__.py"
    spec = importlib.util.find_spec(".".join(parts[:2]))  # imports the package's trivial __init__ only
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin)
    for part in parts[2:]:
        folder = path.parent
        path = folder / part / "__init__.py" if (folder / part / "__init__.py").exists() else folder / f"{part}.py"
        if not path.exists():
            return None
    return path


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def _source_file(name: str) -> Path | None:
    """A module's source file: the project's, or a module outside it that was registered (a harness reader, a
    scoring of one's own), found without importing it."""
    path = module_file(name)
    if path is None and name.split(".")[0] != PACKAGE:
        spec = importlib.util.find_spec(name)
        path = Path(spec.origin) if spec is not None and spec.origin and spec.origin.endswith(".py") else None
    return path


@functools.cache
def imported_modules(name: str) -> frozenset[str]:
    """The project's modules that a module imports anywhere in its source (relative imports resolved)."""
    path = _source_file(name)
    if path is None:
        return set()
    text = path.read_text()
    package = _package_of(name, path)
    found = set()
    for source, names in _FROM.findall(text):
        if source.startswith("."):
            level = len(source) - len(source.lstrip("."))
            base = package.split(".")[: len(package.split(".")) - level + 1]
            source = ".".join(base + ([source.lstrip(".")] if source.lstrip(".") else []))
        for imported in re.findall(r"\w+(?:\s+as\s+\w+)?", names.strip("()")):
            member = f"{source}.{imported.split()[0]}"
            found.add(member if module_file(member) is not None else source)
    for group in _IMPORT.findall(text):
        found.update(part.split()[0] for part in group.split(","))
    found.update(_STARTS.findall(text))
    if path.name == "__init__.py" and "def __getattr__" in text:  # a package that loads its modules lazily counts whole
        found.update(f"{name}.{p.stem if p.suffix else p.name}" for p in path.parent.iterdir() if _is_module(p))
    return frozenset(m for m in found if module_file(m) is not None)


def _is_module(path: Path) -> bool:
    return (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").exists()


@functools.cache
def closure(*modules: str) -> tuple[Path, ...]:
    """The files ``modules`` run: theirs and their imports' within the package, recursively, less :data:`SCHEDULING`."""
    seen, todo = set(), [m for m in modules if m not in SCHEDULING]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [m for m in imported_modules(name) if m not in seen and m not in SCHEDULING]
    files = set()
    for name in seen:
        path = _source_file(name)
        if path is None:
            continue
        files.add(path)
        files.update(p for p in path.parent.glob(f"{path.stem}.*") if p.suffix in PAGE_SUFFIXES)
    return tuple(sorted(files))


def source_digest(files: Iterable[Path]) -> str:
    """A short hash of files' names (relative to their package) and contents."""
    digest = hashlib.sha256()
    for label, path in sorted((_label(p), p) for p in files):  # by label: the same whether installed or editable
        digest.update(label.encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _label(path: Path) -> str:
    """The file's path from its top package folder (stable whether installed or editable)."""
    parts = path.parts
    for anchor in ("rating", "domain", "assets", "resources"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            return "/".join(parts[i:])
    return path.name


def code_version(*modules: str) -> str:
    """The code version of what ``modules`` run (see the module docstring)."""
    return f"{__version__}+{source_digest(closure(*modules))}"


INGEST_VERSION = code_version(f"{PACKAGE}.domain.ledger", f"{PACKAGE}.domain.readers", f"{PACKAGE}.domain.quality")
RATING_VERSION = code_version(f"{PACKAGE}.rating")


def inputs_digest(paths_and_versions, *extra: str) -> str:
    """A short fingerprint of a set of (path, version) inputs, independent of their order, plus extra facts."""
    digest = hashlib.sha256()
    for path, version in sorted(set(map(tuple, paths_and_versions))):
        digest.update(f"{path}\0{version}\n".encode())
    for fact in extra:
        digest.update(f"\1{fact}\n".encode())
    return "sha256:" + digest.hexdigest()[:16]
