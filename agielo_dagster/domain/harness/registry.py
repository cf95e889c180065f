"""The one registry of harness readers, and what follows from it: which drop a path belongs to, reading drops.

A new log format is a :class:`~.common.HarnessReader` subclass in a module of its own and one line in
:data:`READERS`; nothing else names the harnesses.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Iterable, Sequence

from ..contract import MAX_LOG_BYTES
from .common import Drop, HarnessReader, HarnessResult, Reader, check_duplicates
from .eee import Eee
from .helm import Helm
from .inspect_log import Inspect
from .lm_eval import LmEval

__all__ = ["PRECEDENCE", "READERS", "drops_of", "harness_of", "read_all", "read_drop", "reader_environment", "reader_version"]

READERS: dict[str, HarnessReader] = {reader.name: reader for reader in (LmEval(), Inspect(), Helm(), Eee())}
PRECEDENCE = tuple(READERS)
"""Which log is kept when logs of different harnesses claim one (model, task) (:func:`~.common.kept_claim`): the
harnesses' own logs (lm-eval, Inspect, HELM) before Every Eval Ever, which republishes other harnesses' results,
so a conversion never outvotes the run it was converted from; the one not kept is named (``harness_duplicate``)."""


def harness_of(path: str) -> Drop | None:
    """The reader and the drop of a relative path under the storage root, or None when it is no harness file.

    ``incoming/<harness>/...`` belongs to the reader of that name, which says which drop the file is part of
    (:meth:`~.common.HarnessReader.drop_of`): ``incoming/lm-eval/<folder>/**`` → the folder;
    ``incoming/inspect/**/<name>.eval`` (or ``.json``) → the file; ``incoming/helm/<folder>/**`` → the folder;
    ``incoming/eee/**/<name>_samples.jsonl`` → the file, and the aggregate ``<name>.json`` beside it → the same drop.
    Hidden names (a part starting with '.', as upload tools write while copying), empty parts, '..' and
    backslashes give None: such paths are never read.
    """
    if not isinstance(path, str) or "\\" in path or "\x00" in path:
        return None
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "incoming" or any(not p or p.startswith(".") for p in parts):
        return None
    reader = READERS.get(parts[1])
    drop = reader.drop_of(parts) if reader is not None else None
    return Drop(reader.name, drop) if drop is not None else None


def drops_of(paths: Iterable[str]) -> dict[Drop, list[str]]:
    """Group a storage listing into drops: each :class:`Drop` with its paths, sorted; other paths are left out."""
    groups: dict[Drop, list[str]] = {}
    for path in paths:
        drop = harness_of(path)
        if drop is not None:
            groups.setdefault(drop, []).append(path)
    return {drop: sorted(group) for drop, group in sorted(groups.items())}


def reader_version(harness: str) -> str:
    """The code version of a harness's reader (its module and what it imports): a drop is read again when it
    changes, and a change to another harness's reader leaves it alone."""
    from ..lineage import code_version

    reader = READERS.get(harness)
    return code_version(type(reader).__module__) if reader is not None else ""


def reader_environment(harness: str) -> str:
    """The optional packages the harness's reader needs, each ``name version`` or ``name absent`` ('' when none).

    A drop's outcome is reused only while its files *and* this stay the same: a log refused as
    ``inspect_not_installed`` is read again once inspect-ai is installed (or upgraded). Nothing is imported.
    """
    reader = READERS.get(harness)
    parts = []
    for module, distribution in reader.packages if reader is not None else ():
        try:
            present = sys.modules.get(module, True) is not None and importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            present = False
        version = "absent"
        if present:
            try:
                version = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                version = "present"
        parts.append(f"{module} {version}")
    return ", ".join(parts)


def read_drop(harness: str, paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
    """Read one drop with the reader named by :func:`harness_of`.

    ``max_bytes`` is the upload limit; Inspect's ``.eval`` archives are held to it uncompressed too.
    """
    if harness not in READERS:
        raise ValueError(f"unknown harness {harness!r}; known: {', '.join(READERS)}")
    return READERS[harness].read(list(paths), read, max_bytes=max_bytes)


def read_all(paths: Sequence[str], read: Reader, *, max_bytes: int = MAX_LOG_BYTES) -> HarnessResult:
    """Every drop of a storage listing, read, then :func:`check_duplicates` across drops (two logs, one claim), settled
    by :data:`PRECEDENCE`."""
    result = HarnessResult()
    for drop, group in drops_of(paths).items():
        result.extend(read_drop(drop.harness, group, read, max_bytes=max_bytes))
    result.uploads, duplicates = check_duplicates(result.uploads, PRECEDENCE)
    result.errors.extend(duplicates)
    return result
