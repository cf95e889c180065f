"""What to run now: the one question (is a benchmark stale?) asked of every benchmark, plus the run queue.

Shared by the sensor and ``agielo run`` so that both always agree.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import dagster as dg

from .assets.partitions import benchmark_partitions
from .domain.incoming import incoming_reason
from .domain.layout import warehouse_path
from .domain.lineage import PRESENTATION_VERSION, RATING_VERSION
from .domain.status import (
    DIGEST_KEY,
    BenchmarkOutputs,
    BenchmarkState,
    RawTopLevel,
    benchmark_state,
    known_benchmarks,
    present_benchmarks,
    quarantine_digest,
    scan_raw,
)
from .domain.store import Store
from .runs import BENCHMARK_TAG, STATE_TAG, WAITING

MAX_ATTEMPTS = 3  # failed runs on the same unchanged files before the sensor stops asking


@dataclass
class Plan:
    raw: RawTopLevel
    states: dict[str, BenchmarkState]
    to_rate: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)  # stale, with a run already queued or in progress
    given_up: list[str] = field(default_factory=list)  # stale, but its last runs on these very files failed
    new_partitions: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)  # partitions of benchmarks with nothing left
    quarantine_digest: str = ""
    quarantine_stale: bool = False
    incoming: str = ""  # why the harness logs under incoming/ need converting ('' when they do not)


def state_key(state: BenchmarkState) -> str:
    """Which situation a run was asked to resolve (the files as listed, the ledger, the outputs, the code)."""
    text = f"{state.listing_digest}|{state.inputs_digest}|{state.rated_digest}|{RATING_VERSION}|{PRESENTATION_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_selection(state: BenchmarkState) -> list[dg.AssetKey] | None:
    """What a benchmark's run must materialize: the whole rating job (None), or only outputs whose code changed."""
    return [dg.AssetKey(name) for name in state.redo] or None


def plan_runs(store: Store, instance: dg.DagsterInstance, outputs: BenchmarkOutputs) -> Plan:
    incoming = incoming_reason(store)
    raw = scan_raw(store)
    partitions = set(instance.get_dynamic_partitions(benchmark_partitions.name))
    states = {b: benchmark_state(store, b, outputs, RATING_VERSION, raw) for b in known_benchmarks(store, raw)}
    plan = Plan(raw, states, incoming=incoming)
    plan.vanished = _vanished(partitions, states.keys(), states)
    for benchmark, state in states.items():
        if state.raw_present and benchmark not in partitions:
            plan.new_partitions.append(benchmark)
        if not state.stale:
            continue
        records = list(instance.get_run_records(dg.RunsFilter(tags={BENCHMARK_TAG: benchmark}), limit=20))
        if any(r.dagster_run.status in WAITING for r in records):
            plan.busy.append(benchmark)
            continue
        key = state_key(state)
        failures = sum(
            r.dagster_run.status == dg.DagsterRunStatus.FAILURE and r.dagster_run.tags.get(STATE_TAG) == key for r in records
        )
        (plan.given_up if failures >= MAX_ATTEMPTS else plan.to_rate).append(benchmark)
    plan.quarantine_digest, plan.quarantine_stale = _quarantine(store, raw)
    return plan


def after_runs(store: Store, instance: dg.DagsterInstance, outputs: BenchmarkOutputs) -> Plan:
    """What is left once the runs are done: the partitions of benchmarks with nothing left, and whether the quarantine
    report is stale. A benchmark with inputs cannot have vanished, so only the others are asked: a tall benchmark's
    listing and ledger (200,000 files: 5 s) are not read again to learn that."""
    raw = scan_raw(store)
    partitions = set(instance.get_dynamic_partitions(benchmark_partitions.name))
    known, present = set(known_benchmarks(store, raw)), present_benchmarks(store, raw)
    states = {b: benchmark_state(store, b, outputs, RATING_VERSION, raw) for b in sorted(partitions & known) if b not in present}
    plan = Plan(raw, states)
    plan.vanished = _vanished(partitions, known, states)
    plan.quarantine_digest, plan.quarantine_stale = _quarantine(store, raw)
    return plan


def _vanished(partitions, known, states: dict[str, BenchmarkState]) -> list[str]:
    """Partitions of benchmarks unknown (no inputs, no ledger) or with nothing left."""
    return sorted(p for p in partitions if p not in known or (p in states and states[p].vanished))


def _quarantine(store: Store, raw: RawTopLevel) -> tuple[str, bool]:
    """The quarantine report's inputs digest now, and whether the report records another."""
    digest = quarantine_digest(store, raw)
    recorded = (store.parquet_metadata(warehouse_path("quarantine_report", None)) or {}).get(DIGEST_KEY)
    return digest, recorded != digest
