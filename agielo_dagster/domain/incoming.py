"""Harness logs dropped under ``incoming/``, turned into ordinary uploads (``warehouse/derived/``).

A *drop* is what a harness wrote, as it wrote it (:mod:`agielo_dagster.domain.harness`): an lm-eval
``--output_path`` folder, an Inspect ``.eval`` log, a HELM run folder, an Every Eval Ever samples
file. Each (task, model) of a drop becomes a *derived upload*
``warehouse/derived/<benchmark>/<agent>.parquet`` beside an inferred
``warehouse/derived/<benchmark>/benchmark.yaml``; from there the benchmark's ledger takes them like
files under ``raw/<benchmark>/`` (a user-written ``raw/<benchmark>/benchmark.yaml`` overrides the
inferred one). Raw logs are never modified.

One record per drop in ``warehouse/incoming_ledger.parquet``: the digest of its files' versions,
the uploads it yields (with the original names) and its errors. Only drops whose files changed
are read again; a (benchmark, agent) claimed by drops of different harnesses is taken from the one the harness
precedence keeps (:data:`~.harness.registry.PRECEDENCE`) and refused for the others (``harness_duplicate``, naming the
one kept); claimed by two drops of one harness, it is refused for both until one goes.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

import pyarrow as pa

from .contract import IngestError
from .harness import DerivedUpload, HarnessResult, drops_of, merge_specs, read_drop, reader_environment, reader_version
from .harness.common import duplicate_message, kept_claim
from .harness.registry import PRECEDENCE
from .layout import DERIVED_ROOT, INCOMING_LEDGER, derived_folder, derived_path, derived_spec_path, in_folder
from .listing import cached_versions, write_fingerprints
from .parquet_io import parquet_bytes
from .store import StorageError, Store, StoredFile

__all__ = ["INCOMING_LEDGER", "INCOMING_SCHEMA", "IncomingUpdate", "read_incoming", "refresh_incoming", "renamed_benchmarks"]

INCOMING_CACHE = "_incoming"  # the fingerprint cache of incoming/
_CACHE = INCOMING_CACHE
INCOMING_SCHEMA = pa.schema(
    [
        ("harness", pa.string()),
        ("drop", pa.string()),
        ("files_digest", pa.string()),
        ("uploads", pa.string()),  # JSON: [{benchmark, agent, original_benchmark, original_agent, sources, spec_yaml, rows}]
        ("errors", pa.string()),  # JSON: [{file, rule, row, line, message}]
    ]
)


@dataclass(frozen=True)
class IncomingUpdate:
    records: list[dict]
    read: int  # drops read in this refresh
    written: list[str]  # derived files written or removed


def read_incoming(store: Store) -> list[dict]:
    """The incoming ledger's records (one per drop); [] when there is none or it cannot be read."""
    try:
        table = store.read_table(INCOMING_LEDGER)
    except StorageError:
        raise
    except Exception:  # noqa: BLE001 - missing or damaged: every drop is read again
        return []
    return table.to_pylist() if table.schema.remove_metadata() == INCOMING_SCHEMA else []


def _drops(store: Store, listing: list[StoredFile]) -> dict[tuple[str, str], tuple[list[str], str]]:
    """(harness, drop) → (paths, digest of the files' versions, of the reader's code and of its optional packages).

    The reader's code version (:func:`reader_version`) is in the digest so that a changed reader reads its harness's
    drops again, and only those; its optional packages (:func:`reader_environment`) so that an outcome caused by the
    environment (``inspect_not_installed``) is not kept as if it were the file's: installing or upgrading the
    package makes the drop new again, and the next run reads it.
    """
    version = {f.path: f.version for f in listing}
    environments: dict[str, str] = {}
    out = {}
    for drop, paths in drops_of([f.path for f in listing if not f.kind]).items():
        if drop.harness not in environments:
            environments[drop.harness] = reader_environment(drop.harness)
        text = "\n".join([f"\0reader\0{reader_version(drop.harness)}", *(f"{p}\0{version[p]}" for p in paths)])
        if environments[drop.harness]:
            text += f"\n\0environment\0{environments[drop.harness]}"
        out[(drop.harness, drop.drop)] = (paths, "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16])
    return out


def _listing(store: Store) -> list[StoredFile]:
    files = cached_versions(store, _CACHE, store.list_files("incoming"))
    return [f if f.version or f.kind else StoredFile(f.path, f.size, f.fingerprint, store.hash_file(f.path)) for f in files]


def _record(harness: str, drop: str, digest: str, result: HarnessResult) -> dict:
    uploads = [
        {
            "benchmark": u.benchmark,
            "agent": u.agent,
            "original_benchmark": u.original_benchmark,
            "original_agent": u.original_agent,
            "sources": list(u.sources),
            "spec_yaml": u.spec_yaml,
            "rows": u.rows.num_rows,
        }
        for u in result.uploads
    ]
    errors = [{"file": e.file, "rule": e.rule, "row": e.row, "line": e.line, "message": str(e)} for e in result.errors]
    return {
        "harness": harness,
        "drop": drop,
        "files_digest": digest,
        "uploads": json.dumps(uploads, sort_keys=True),
        "errors": json.dumps(errors, sort_keys=True),
    }


def renamed_benchmarks(store: Store) -> dict[str, str]:
    """{benchmark: the task as the harness wrote it} for the benchmarks of harness logs named otherwise: one per
    filter of an lm-eval task with several (``<task>.<filter>``), or a name made safe (``-<hash>``)."""
    return {
        u["benchmark"]: u["original_benchmark"]
        for record in read_incoming(store)
        for u in json.loads(record["uploads"])
        if u["benchmark"] != u["original_benchmark"]
    }


def refresh_incoming(store: Store) -> IncomingUpdate:
    """Bring ``warehouse/derived/`` and the incoming ledger up to date with ``incoming/`` (see the module docstring)."""
    listed_at_ns = time.time_ns()
    listing = _listing(store)
    drops = _drops(store, listing)
    previous = {(r["harness"], r["drop"]): r for r in read_incoming(store)}
    results: dict[tuple[str, str], HarnessResult] = {}
    records: dict[tuple[str, str], dict] = {}
    for key, (paths, digest) in drops.items():
        before = previous.get(key)
        if before is not None and before["files_digest"] == digest:
            records[key] = before
            continue
        results[key] = read_drop(
            key[0], paths, lambda p: store.read_bytes(p, limit=store.max_upload_bytes), max_bytes=store.max_upload_bytes
        )
        records[key] = _record(*key, digest, results[key])

    # a (benchmark, agent) claimed by two drops is refused for both; a drop whose claim was refused
    # before and is free now is read again, so that its rows can be written
    claims: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key, record in records.items():
        for u in json.loads(record["uploads"]):
            claims.setdefault((u["benchmark"], u["agent"]), []).append(key)
    clashing = {claim for claim, keys in claims.items() if len(keys) > 1}
    # of the drops that claim one (benchmark, agent), the one the harness precedence keeps (None: all are refused)
    kept = {claim: kept_claim([h for h, _ in claims[claim]], PRECEDENCE) for claim in clashing}
    refused = {(claim, key) for claim in clashing for i, key in enumerate(claims[claim]) if i != kept[claim]}
    for key, record in records.items():
        if key in results:
            continue
        before_clashing = any(e["rule"] == "harness_duplicate" for e in json.loads(record["errors"]))
        now_clashing = any((u["benchmark"], u["agent"]) in clashing for u in json.loads(record["uploads"]))
        if before_clashing or now_clashing:
            results[key] = read_drop(
                key[0],
                drops[key][0],
                lambda p: store.read_bytes(p, limit=store.max_upload_bytes),
                max_bytes=store.max_upload_bytes,
            )
    for key, result in results.items():
        mine = [u for u in result.uploads if ((u.benchmark, u.agent), key) in refused]
        for u in mine:
            claim = (u.benchmark, u.agent)
            others = sorted(d for _, d in claims[claim] if d != key[1])
            taken = None if kept[claim] is None else claims[claim][kept[claim]][1]
            message = duplicate_message(u.original_agent, u.original_benchmark, others, taken, PRECEDENCE)
            result.errors.append(IngestError(u.sources[0], "harness_duplicate", message))
        records[key] = _record(*key, drops[key][1], HarnessResult(result.uploads, result.errors, result.ignored))

    wanted: dict[str, str] = {}  # derived path → the drop's upload to write (rows from results)
    specs: dict[str, list[str]] = {}
    for key, record in records.items():
        for u in json.loads(record["uploads"]):
            if ((u["benchmark"], u["agent"]), key) in refused:
                continue
            wanted[derived_path(u["benchmark"], u["agent"])] = key
            specs.setdefault(u["benchmark"], []).append(u["spec_yaml"])
    written = []
    for key, result in results.items():
        for u in result.uploads:
            if ((u.benchmark, u.agent), key) not in refused:
                written.append(_write_upload(store, u))
    for benchmark, spec_yamls in specs.items():
        try:
            text = merge_specs(spec_yamls).encode()
        except ValueError as exc:
            text = None
            first = next(k for k, r in records.items() if any(u["benchmark"] == benchmark for u in json.loads(r["uploads"])))
            errors = json.loads(records[first]["errors"])
            errors.append(
                {
                    "file": first[1],
                    "rule": "harness_spec_conflict",
                    "row": None,
                    "line": None,
                    "message": f"{first[1]}: benchmark {benchmark!r}: {exc} (rule: harness_spec_conflict)"[:300],
                }
            )
            records[first] = {**records[first], "errors": json.dumps(errors, sort_keys=True)}
        path = derived_spec_path(benchmark)
        if text is None:
            store.remove(path)
        elif not store.exists(path) or store.read_bytes(path) != text:
            store.write_bytes(path, text)
            written.append(path)
    for benchmark in store.list_folders(DERIVED_ROOT):
        for name in store.list_dir(derived_folder(benchmark)):
            path = in_folder(derived_folder(benchmark), name)
            stale_spec = name == "benchmark.yaml" and benchmark not in specs
            if (name.endswith(".parquet") and path not in wanted) or stale_spec:
                store.remove(path)
                written.append(path)
        store.remove_empty_folder(derived_folder(benchmark))
    table = pa.Table.from_pylist([records[k] for k in sorted(records)], schema=INCOMING_SCHEMA)
    if [records[k] for k in sorted(records)] != [previous[k] for k in sorted(previous)]:
        store.write_bytes(INCOMING_LEDGER, parquet_bytes(table))
    write_fingerprints(store, _CACHE, listing, listed_at_ns)
    return IncomingUpdate([records[k] for k in sorted(records)], len(results), written)


def _write_upload(store: Store, upload: DerivedUpload) -> str:
    """The derived upload's rows, with its lineage (original names, source files) in the file's metadata."""
    meta = {
        "harness": upload.harness,
        "original_benchmark": upload.original_benchmark,
        "original_agent": upload.original_agent,
        "sources": list(upload.sources),
    }
    table = upload.rows.replace_schema_metadata({b"agielo.derived": json.dumps(meta, sort_keys=True).encode()})
    data = parquet_bytes(table)
    path = derived_path(upload.benchmark, upload.agent)
    if not store.exists(path) or store.read_bytes(path) != data:
        store.write_bytes(path, data)
    return path


def incoming_problems(store: Store) -> list[dict]:
    """Every error of every drop: file, rule, row, line, message."""
    return [e for r in read_incoming(store) for e in json.loads(r["errors"])]
