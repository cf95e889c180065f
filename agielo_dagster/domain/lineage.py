"""Code versions and input digests: what every output records about where it came from.

``CODE_VERSION`` is the package version plus a hash of every module whose code can change an
output: the engine (``agielo_dagster.rating``, recursively), the domain (contract, readers,
ledger, figures, reports) and the Dagster layer's assets and warehouse IO manager. Modules that
only decide *when* work runs (sensors, schedules, jobs, the CLI, storage access) are left out, so
changing them re-rates nothing. ``INGEST_VERSION`` covers the modules that decide whether an upload
is accepted and how it is normalized: a change there re-validates every upload.

Files are located with ``importlib.util.find_spec``, which imports no Dagster code.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path

from .. import __version__

# modules and packages (recursively) whose source can change outputs
OUTPUT_SOURCES: tuple[str, ...] = (
    "agielo_dagster.rating",
    "agielo_dagster.domain",
    "agielo_dagster.assets",
    "agielo_dagster.resources.warehouse",
)
INGEST_SOURCES: tuple[str, ...] = (
    "agielo_dagster.domain.contract",
    "agielo_dagster.domain.readers",
    "agielo_dagster.domain.quality",
    "agielo_dagster.domain.ledger",
    "agielo_dagster.rating.scoring",
)
# the explorer page's package files are code too
SOURCE_SUFFIXES = frozenset({".py", ".css", ".html", ".js"})


def source_files(modules: Iterable[str]) -> list[Path]:
    """The source files (:data:`SOURCE_SUFFIXES`) of modules and packages (packages recursively), sorted, without importing them."""
    files: set[Path] = set()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue  # a module planned but not (yet) present
        if spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                files.update(p for p in Path(folder).rglob("*") if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts)
        elif spec.origin and spec.origin.endswith(".py"):
            files.add(Path(spec.origin))
    return sorted(files)


def source_digest(files: Iterable[Path]) -> str:
    """A short hash of files' names (relative to their package) and contents."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(_label(path).encode() + b"\0")
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


CODE_VERSION = f"{__version__}+{source_digest(source_files(OUTPUT_SOURCES))}"
INGEST_VERSION = f"{__version__}+{source_digest(source_files(INGEST_SOURCES))}"


def inputs_digest(paths_and_versions, *extra: str) -> str:
    """A short fingerprint of a set of (path, version) inputs, independent of their order, plus extra facts."""
    digest = hashlib.sha256()
    for path, version in sorted(set(map(tuple, paths_and_versions))):
        digest.update(f"{path}\0{version}\n".encode())
    for fact in extra:
        digest.update(f"\1{fact}\n".encode())
    return "sha256:" + digest.hexdigest()[:16]
