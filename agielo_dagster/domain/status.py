"""The one question everything asks: is a benchmark's output current for its inputs?

A benchmark is **stale** exactly when

- its raw folder no longer matches its ledger (a file is new, changed or gone, ``benchmark.yaml``
  changed, or the ingest code changed), or
- it has accepted uploads and the digest recorded in its final outputs differs from the ledger's
  inputs digest (accepted uploads' versions, ``benchmark.yaml``'s version, rating code version), or
- it has no accepted upload left but still has outputs (they must be withdrawn), or
- its inputs digest is current but a final output was made by other code than it is now declared
  with (its own concern's code version, e.g. the report's presentation): then only those outputs
  are redone (``BenchmarkState.redo``); nothing is re-rated.

The sensor, the CLI and the runs themselves ask this through :func:`benchmark_state`. Nothing is
read but listings, the ledger, the fingerprint cache and the final outputs' parquet footers (one
today); no upload is read or hashed (a local file whose fingerprint is not in the cache counts as
changed).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .contract import IngestError, check_name
from .copies import AcceptedCopies
from .judgments import judgment_problems
from .layout import (
    DERIVED_ROOT,
    INCOMING_LEDGER,
    LEDGER_FOLDER,
    accepted_folder,
    derived_spec_path,
    explorer_path,
    figures_folder,
    fingerprint_path,
    in_folder,
    ledger_path,
    raw_folder,
    report_path,
    spec_path,
    tags_path,
    warehouse_path,
)
from .ledger import Ledger, read_ledger, spec_file_of
from .lineage import INGEST_VERSION
from .listing import input_files
from .store import StorageError, Store

__all__ = [
    "CODE_KEY",
    "DIGEST_KEY",
    "BenchmarkOutputs",
    "BenchmarkState",
    "benchmark_state",
    "RawTopLevel",
    "known_benchmarks",
    "present_benchmarks",
    "quarantine_digest",
    "scan_raw",
]


@dataclass(frozen=True)
class BenchmarkOutputs:
    """A benchmark's outputs, as the layer that declares them names them (the domain names none).

    ``rated``: what every rating run writes, in an order a run writes them; ``finals``: those of them
    written after all the others they depend on (each records the inputs digest, so a benchmark is
    current only when every final output is); ``other``: what nightly and on-demand runs write.
    """

    rated: tuple[str, ...]
    finals: tuple[str, ...]
    other: tuple[str, ...] = ()
    code_versions: tuple[tuple[str, str], ...] = ()  # (output, the code version it is declared with)

    def code_version(self, name: str) -> str | None:
        return dict(self.code_versions).get(name)

    def __post_init__(self):
        if not self.rated or not set(self.finals) <= set(self.rated) or not self.finals:
            raise ValueError(f"final outputs {self.finals} must be among the rated ones {self.rated}")


DIGEST_KEY = "agielo.inputs_digest"
CODE_KEY = "agielo.code_version"
SMALL_FILE_BYTES = 64 * 1024


@dataclass(frozen=True)
class BenchmarkState:
    benchmark: str
    raw_present: bool
    needs_ingest: bool
    accepted: int
    inputs_digest: str | None  # from the ledger; None without one
    rated_digest: str | None  # recorded in the final output; None without one
    outputs_present: bool
    reason: str  # why it is stale ('' when current)
    listing_digest: str = ""  # fingerprints of the raw folder: which state of the files this is
    redo: tuple[str, ...] = ()  # when stale and not empty: only these outputs' code changed, a run of them suffices

    @property
    def stale(self) -> bool:
        return bool(self.reason)

    @property
    def vanished(self) -> bool:
        """Nothing left: no raw folder, no ledger, no outputs (its partition can go)."""
        return not self.raw_present and self.inputs_digest is None and not self.outputs_present


@dataclass(frozen=True)
class RawTopLevel:
    """What ``raw/`` holds directly: benchmark folders, and entries that are refused (with why)."""

    benchmarks: list[str]
    refused: list[IngestError]


def scan_raw(store: Store) -> RawTopLevel:
    """Benchmark folders under ``raw/`` (safe names), and the refused entries beside them."""
    benchmarks, refused = [], []
    for name, kind in store.list_entries("raw"):
        path = raw_folder(name)
        if kind == "symlink":
            refused.append(IngestError(path, "symlink", "a symbolic link; links are never followed"))
        elif kind == "file":
            refused.append(
                IngestError(
                    path,
                    "layout",
                    "files belong at raw/<benchmark>/<agent>.<csv|parquet|jsonl> or raw/<benchmark>/benchmark.yaml",
                )
            )
        else:
            try:
                benchmarks.append(check_name(name, "benchmark", path))
            except IngestError as err:
                refused.append(err)
    return RawTopLevel(benchmarks, refused)


def present_benchmarks(store: Store, raw: RawTopLevel | None = None) -> set[str]:
    """Benchmarks with inputs: a folder under raw/, or uploads derived from harness logs."""
    return set((raw or scan_raw(store)).benchmarks) | set(store.list_folders(DERIVED_ROOT))


def known_benchmarks(store: Store, raw: RawTopLevel | None = None) -> list[str]:
    """Benchmarks with inputs or a ledger (a removed folder's ledger still needs its outputs withdrawn)."""
    names = present_benchmarks(store, raw)
    names |= {n.removesuffix(".parquet") for n in store.list_dir(LEDGER_FOLDER) if n.endswith(".parquet")}
    return sorted(names)


def _local_versions(store: Store, benchmark: str) -> dict[tuple[str, str], str]:
    try:
        table = store.read_table(fingerprint_path(benchmark))
        return {(r["path"], r["fingerprint"]): r["version"] for r in table.to_pylist()}
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - no cache: every file counts as changed
        return {}


def _ingest_reason(store: Store, benchmark: str, ledger: Ledger | None, raw_present: bool, listing) -> str:
    """Why the raw folder no longer matches the ledger ('' when it matches)."""
    if ledger is None:
        return "no ledger yet" if raw_present else ""
    if not raw_present:
        return "the raw folder is gone"
    cache = _local_versions(store, benchmark) if store.is_local else {}
    current = {}
    for f in listing:
        version = f.version or cache.get((f.path, f.fingerprint))
        if version is None and f.size <= SMALL_FILE_BYTES:
            try:  # new, changed or just written: a small file is cheaper to hash than to re-run for
                version = store.hash_file(f.path)
            except FileNotFoundError:
                return f"{f.path} is gone"
        if version is None:
            return f"{f.path} is new or changed"
        current[f.path] = version
    spec_version = current.get(spec_file_of(benchmark, current), "")
    current.pop(spec_path(benchmark), None)
    current.pop(derived_spec_path(benchmark), None)
    if spec_version != ledger.spec_version and not (spec_version == "" and ledger.spec_version == ""):
        return "benchmark.yaml changed"
    recorded = {r["path"]: r["version"] for r in ledger.rows}
    if current != recorded:
        changed = sorted(set(current.items()) ^ set(recorded.items()))
        return f"{changed[0][0]} is new, changed or gone"
    if any(r["ingest_version"] != INGEST_VERSION for r in ledger.rows):
        return "the ingest code changed"
    copies = AcceptedCopies.read(store, benchmark)  # the listing alone: the next ingest checks each copy's source
    if not all(copies.listed(r) for r in ledger.accepted):
        return "an accepted upload's normalized copy is missing"
    if ledger.tag_file and not store.exists(tags_path(benchmark)):
        return "the validated tag file is missing"
    return ""


def benchmark_state(
    store: Store, benchmark: str, outputs: BenchmarkOutputs, code_version: str, raw: RawTopLevel | None = None
) -> BenchmarkState:
    """Where a benchmark stands (see the module docstring); ``outputs`` name what its runs write."""
    raw_present = benchmark in present_benchmarks(store, raw)
    ledger = read_ledger(store, benchmark)
    listing = input_files(store, benchmark) if raw_present else []
    ingest_reason = _ingest_reason(store, benchmark, ledger, raw_present, listing)
    seen = hashlib.sha256("\n".join(f"{f.path}\0{f.fingerprint}" for f in listing).encode()).hexdigest()[:16]
    footers = final_footers(store, benchmark, outputs)
    rated = rated_digest(footers)
    accepted = len(ledger.accepted) if ledger else 0
    digest = ledger.inputs_digest(code_version) if ledger else None
    outputs_present = rated is not None or store.exists(warehouse_path(outputs.rated[0], benchmark))
    if ingest_reason:
        reason = ingest_reason
    elif accepted and rated != digest:
        reason = "outputs were computed from other inputs or code" if rated else "outputs are missing"
    elif not accepted and outputs_present:
        reason = "no accepted upload left: outputs must be withdrawn"
    else:
        reason = ""
    redo = () if reason or not accepted else other_code(footers, outputs)
    if redo:
        reason = f"the code of {', '.join(redo)} changed (its inputs did not)"
    return BenchmarkState(
        benchmark, raw_present, bool(ingest_reason), accepted, digest, rated, outputs_present, reason, seen, redo
    )


def final_footers(store: Store, benchmark: str, outputs: BenchmarkOutputs) -> dict[str, dict | None]:
    """The key-value metadata of each final output (None for a missing one)."""
    return {name: store.parquet_metadata(warehouse_path(name, benchmark)) for name in outputs.finals}


def rated_digest(footers: dict[str, dict | None]) -> str | None:
    """The inputs digest every final output records; None when one is missing, '' when they disagree
    (an interrupted run: stale either way)."""
    if any(meta is None for meta in footers.values()):
        return None
    digests = {meta.get(DIGEST_KEY, "") for meta in footers.values()}
    return digests.pop() if len(digests) == 1 else ""


def other_code(footers: dict[str, dict | None], outputs: BenchmarkOutputs) -> tuple[str, ...]:
    """The final outputs made by other code than they are declared with."""
    return tuple(name for name, meta in footers.items() if (meta or {}).get(CODE_KEY) != outputs.code_version(name))


def quarantine_digest(store: Store, raw: RawTopLevel) -> str:
    """What the quarantine report is built from: every ledger's content and the refused entries of raw/."""
    digest = hashlib.sha256()
    for benchmark in known_benchmarks(store, raw):
        meta = store.parquet_metadata(ledger_path(benchmark)) or {}
        digest.update(f"{benchmark}\0{meta.get('agielo', '')}\n".encode())
    for err in raw.refused:
        digest.update(f"raw\0{err}\n".encode())
    digest.update(store.read_bytes(INCOMING_LEDGER) if store.exists(INCOMING_LEDGER) else b"")
    for problem in judgment_problems(store):
        digest.update(f"judgments\0{problem['file']}\0{problem['message']}\n".encode())
    return "sha256:" + digest.hexdigest()[:16]


def withdraw(store: Store, benchmark: str, outputs: BenchmarkOutputs, *, everything: bool = False) -> list[str]:
    """Remove a benchmark's outputs (the final ones first, so an interrupted withdrawal still reads as stale).

    With ``everything`` (its raw folder is gone) the ledger, the fingerprint cache and the accepted
    uploads go too, the ledger last. Returns the removed paths.
    """
    names = [*outputs.finals, *(n for n in reversed(outputs.rated) if n not in outputs.finals), *outputs.other]
    paths = [warehouse_path(n, benchmark) for n in names]
    paths += [in_folder(figures_folder(benchmark), n) for n in store.list_dir(figures_folder(benchmark))]
    paths += [report_path(benchmark), explorer_path(benchmark)]
    if everything:
        paths += [in_folder(accepted_folder(benchmark), n) for n in store.list_dir(accepted_folder(benchmark))]
        paths += [fingerprint_path(benchmark), ledger_path(benchmark)]
    removed = []
    for path in paths:
        if store.exists(path):
            store.remove(path)
            removed.append(path)
    for folder in (figures_folder(benchmark), accepted_folder(benchmark)):
        store.remove_empty_folder(folder)
    return removed
