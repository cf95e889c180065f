"""Code versions and input digests: what every output records about where it came from.

One code version per concern, so that a change re-runs only what it can change:

- ``INGEST_VERSION``: the modules that decide whether an upload is accepted and how it is
  normalized; a change there re-validates every upload (and so re-rates).
- ``PRESENTATION_VERSION``: figures, the report and the explorer, and the asset that renders them;
  a change there re-renders the reports and re-rates nothing.
- ``RATING_VERSION``: every other module whose code can change an output: the engine
  (``agielo_dagster.rating``, recursively), the rest of the domain, the assets and the warehouse IO
  manager; a change there re-rates. It is part of every benchmark's inputs digest.

Each is the package version plus a hash of its files. Modules that only decide *when* work runs
(sensors, schedules, jobs, the CLI, storage access) are in none, so changing them re-runs nothing.
Files are located with ``importlib.util.find_spec``, which imports no Dagster code.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path

from .. import __version__

# modules and packages (recursively) whose source can change outputs: the rating concern, less presentation
OUTPUT_SOURCES: tuple[str, ...] = (
    "agielo_dagster.rating",
    "agielo_dagster.domain",
    "agielo_dagster.assets",
    "agielo_dagster.resources.warehouse",
)
PRESENTATION_SOURCES: tuple[str, ...] = (
    "agielo_dagster.domain.figures",
    "agielo_dagster.domain.histogram",
    "agielo_dagster.domain.report",
    "agielo_dagster.domain.explorer",
    "agielo_dagster.assets.reports",
)
INGEST_SOURCES: tuple[str, ...] = (
    "agielo_dagster.domain.contract",
    "agielo_dagster.domain.readers",
    "agielo_dagster.domain.quality",
    "agielo_dagster.domain.ledger",
    "agielo_dagster.domain.listing",
    "agielo_dagster.rating.scoring",
)
SOURCE_SUFFIXES = (".py", ".html", ".css", ".js")  # code, and the page files a module or package carries


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
            origin = Path(spec.origin)  # a module, and its page files beside it (explorer.py: explorer.js, …)
            files.update(p for p in origin.parent.glob(f"{origin.stem}.*") if p.suffix in SOURCE_SUFFIXES)
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


def rating_files() -> list[Path]:
    presentation = set(source_files(PRESENTATION_SOURCES))
    return [p for p in source_files(OUTPUT_SOURCES) if p not in presentation]


RATING_VERSION = f"{__version__}+{source_digest(rating_files())}"
PRESENTATION_VERSION = f"{__version__}+{source_digest(source_files(PRESENTATION_SOURCES))}"
INGEST_VERSION = f"{__version__}+{source_digest(source_files(INGEST_SOURCES))}"


def inputs_digest(paths_and_versions, *extra: str) -> str:
    """A short fingerprint of a set of (path, version) inputs, independent of their order, plus extra facts."""
    digest = hashlib.sha256()
    for path, version in sorted(set(map(tuple, paths_and_versions))):
        digest.update(f"{path}\0{version}\n".encode())
    for fact in extra:
        digest.update(f"\1{fact}\n".encode())
    return "sha256:" + digest.hexdigest()[:16]
