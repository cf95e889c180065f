"""The code version recorded with every output: package version plus a hash of the code that computes."""

from __future__ import annotations

import hashlib
from pathlib import Path

from . import __version__

_PACKAGE = Path(__file__).parent


def _source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([*(_PACKAGE / "rating").glob("*.py"), _PACKAGE / "ingest.py"]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = f"{__version__}+{_source_digest()}"


def inputs_digest(paths_and_versions) -> str:
    """A short fingerprint of a set of (path, version) inputs, independent of their order."""
    digest = hashlib.sha256()
    for path, version in sorted(set(paths_and_versions)):
        digest.update(f"{path}\0{version}\n".encode())
    return "sha256:" + digest.hexdigest()[:16]
