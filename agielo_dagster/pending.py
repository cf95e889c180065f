"""What is pending, for ``benchmarks_sensor`` and ``agielo run`` alike: observe the inputs, then ask Dagster what is stale.

1. :func:`observe`: each benchmark's files, the harness logs and the quarantine report's inputs, as data versions of
   the source assets (``assets/sources.py``); the ones that changed are recorded before any run starts, so that a
   run reads the observation it was started for;
2. :func:`rating_selection`: a benchmark's rating-job assets that Dagster counts missing or stale
   (:mod:`agielo_dagster.freshness`), and everything downstream of them;
3. :func:`vanished`: partitions of benchmarks with no inputs left (``housekeeping.py`` tidies them away).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dagster as dg

from .assets.common import RUN_TAG
from .assets.partitions import benchmark_partitions
from .assets.sources import SOURCES, incoming_logs, raw_uploads, upload_problems
from .domain.inputs import NO_LOGS, Listing, RawTopLevel, benchmark_listings, incoming_digest, problems_digest, scan_raw
from .domain.layout import INCOMING_LEDGER
from .domain.store import Store
from .domain.stored import Stored
from .freshness import CODE_VERSION, DATA_VERSION, Graph, Records, latest_data_version, why_stale

LEDGER = dg.AssetKey("upload_ledger")


@dataclass
class Observed:
    raw: RawTopLevel
    benchmarks: dict[str, Listing]  # every benchmark present: the digest of its files
    incoming: str = NO_LOGS  # the digest of the harness logs
    events: list[dg.AssetObservation] = field(default_factory=list)  # the observations that changed, to record

    def changed(self, benchmark: str) -> bool:
        return any(e.asset_key == raw_uploads.key and e.partition == benchmark for e in self.events)


def _observed(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None, version: str) -> list[dg.AssetObservation]:
    """The observation to record, when ``version`` is not the one last recorded."""
    if latest_data_version(instance, key, partition, source=True) == version:
        return []
    return [dg.AssetObservation(asset_key=key, partition=partition, tags={DATA_VERSION: version})]


def observe(instance: dg.DagsterInstance, store: Store, *, problems: bool = True, settled_only: bool = False) -> Observed:
    """The inputs now: every benchmark's files and the harness logs (and, with ``problems``, the quarantine report's
    inputs), with the observations that changed. With ``settled_only`` (the sensor), a benchmark whose files are still
    being written is left for a later look."""
    raw = scan_raw(store)
    listings = benchmark_listings(store, raw)
    observed = Observed(raw, listings)
    for benchmark, listing in listings.items():
        if not (settled_only and listing.settling):
            observed.events += _observed(instance, raw_uploads.key, benchmark, listing.digest)
    observed.incoming = incoming_digest(store)
    observed.events += _observed(instance, incoming_logs.key, None, observed.incoming)
    if problems:
        observed.events += observe_problems(instance, store, raw)
    return observed


def observe_problems(instance: dg.DagsterInstance, store: Store, raw: RawTopLevel | None = None) -> list[dg.AssetObservation]:
    return _observed(instance, upload_problems.key, None, problems_digest(store, raw))


def assets_defs_of(defs: dg.Definitions) -> list[dg.AssetsDefinition]:
    """The assets definitions of a ``Definitions`` (a sensor has its repository's ``assets_defs_by_key``)."""
    return list({id(a): a for a in (defs.resolve_assets_def(s.key) for s in defs.resolve_all_asset_specs())}.values())


def graph_of(assets_defs) -> Graph:
    return Graph.of(assets_defs, SOURCES)


def rating_keys(assets_defs) -> list[dg.AssetKey]:
    """The assets of a benchmark's rating run (``rate_benchmarks``), dependencies first."""
    specs = [s for a in assets_defs for s in a.specs]
    chosen = {s.key for s in specs if s.key == LEDGER or s.tags.get(RUN_TAG) == "rating"}
    return graph_of(assets_defs).ordered(chosen)


def rating_records(instance: dg.DagsterInstance, graph: Graph, keys: list[dg.AssetKey], observed: Observed) -> Records:
    """The instance's records that the rating selections of every observed benchmark ask, fetched together."""
    records = Records(instance)
    records.prefetch([*keys, raw_uploads.key], sorted(observed.benchmarks), graph.sources)
    return records


def rating_selection(
    records: Records, graph: Graph, keys: list[dg.AssetKey], benchmark: str, observed: Observed
) -> list[dg.AssetKey]:
    """What a run of ``benchmark`` materializes: its stale and missing assets and everything downstream of them ([]
    when it is current). Asked in dependency order, and only of assets not already downstream of a stale one."""
    chosen: set[dg.AssetKey] = {LEDGER} if observed.changed(benchmark) else set()
    for key in keys:
        if key in chosen or chosen & set(graph.deps.get(key, ())) or why_stale(records, graph, key, benchmark):
            chosen |= {key, *graph.together.get(key, ())}  # a multi-asset runs whole
    return [k for k in keys if k in chosen]


def incoming_stale(instance: dg.DagsterInstance, graph: Graph, observed: Observed, store: Store) -> bool:
    """Whether the harness logs need converting (never while there are none, and none were ever converted)."""
    if observed.incoming == NO_LOGS and not store.exists(INCOMING_LEDGER):
        return False
    return any(e.asset_key == incoming_logs.key for e in observed.events) or bool(
        why_stale(instance, graph, dg.AssetKey("harness_uploads"), None)
    )


def quarantine_stale(instance: dg.DagsterInstance, graph: Graph, events: list[dg.AssetObservation]) -> bool:
    return any(e.asset_key == upload_problems.key for e in events) or bool(
        why_stale(instance, graph, dg.AssetKey("quarantine_report"), None)
    )


LEADERBOARD = dg.AssetKey("agent_leaderboard")
POOL_KEYS = [dg.AssetKey(n) for n in ("agent_leaderboard", "benchmark_scales", "agent_benchmark_ratings")]
PAGES = dg.AssetKey("leaderboard_pages")


def leaderboard_selection(instance: dg.DagsterInstance, graph: Graph, store: Store) -> list[dg.AssetKey]:
    """What of the leaderboard across benchmarks needs a run: all of it when it was never made while some benchmark is
    rated, when its code changed or its data version (the digest of the benchmarks' inputs) is not today's; its pages
    alone when only theirs changed; nothing when it is current."""
    from .assets.leaderboard import NO_BENCHMARKS, pool_digest

    records = Records(instance)

    def new_code(key: dg.AssetKey) -> bool:
        record = records.latest(key, None, source=False)
        declared = graph.code_versions.get(key)
        return record is None or bool(declared and record.asset_materialization.tags.get(CODE_VERSION) != declared)

    digest = pool_digest(
        {b: Stored.of(store, "agent_ratings", b) for b in instance.get_dynamic_partitions(benchmark_partitions.name)}
    )
    record = records.latest(LEADERBOARD, None, source=False)
    if record is None and digest == NO_BENCHMARKS:
        return []
    if record is None or new_code(LEADERBOARD) or record.asset_materialization.tags.get(DATA_VERSION) != digest:
        return [*POOL_KEYS, PAGES]
    return [PAGES] if new_code(PAGES) else []


def vanished(instance: dg.DagsterInstance, observed: Observed) -> list[str]:
    """Partitions of benchmarks with no inputs left."""
    return sorted(set(instance.get_dynamic_partitions(benchmark_partitions.name)) - set(observed.benchmarks))
