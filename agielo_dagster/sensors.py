"""Sensors: benchmarks whose assets Dagster counts stale get a run; new judgment sets get ranked.

``benchmarks_sensor`` observes the inputs (a listing of every benchmark's files, the harness logs and what the
quarantine report shows: :mod:`agielo_dagster.pending`), records the observations that changed as data versions
of the source assets, and asks Dagster which of each benchmark's assets are missing or stale
(:mod:`agielo_dagster.freshness`). It reads listings and the instance's records, never an upload. A stale
benchmark gets one run of ``rate_benchmarks`` selecting its stale assets and what lies downstream, unless a run of
it is already queued or in progress; a situation whose runs failed three times is left alone (and logged) until
its files or the code change. It requests the conversion of changed harness logs, the tidying of the warehouse
(``housekeeping.py``) and, once the benchmarks are settled, the leaderboard across benchmarks and the quarantine
report. Its cursor holds only the
refused entries of ``raw/`` it has logged, so each is logged once per change.
"""

import hashlib
import json

import dagster as dg

from .assets.judgments import judgment_partitions
from .assets.partitions import benchmark_partitions
from .domain.judgments import judgment_sets
from .housekeeping import has_temporaries, tidy_warehouse, vanished
from .jobs import convert_incoming, rank_judgments, rate_benchmarks, rate_leaderboard, report_quarantine
from .pending import (
    graph_of,
    incoming_stale,
    leaderboard_selection,
    observe,
    quarantine_stale,
    rating_keys,
    rating_records,
    rating_selection,
)
from .resources.storage import ObjectStorage
from .runs import BENCHMARK_TAG, STATE_TAG, TRIGGER_TAG, WAITING, fail_orphaned_runs

MAX_ATTEMPTS = 3  # failed runs on the same files and code before the sensor stops asking
TICK_SECONDS = 5  # the daemon evaluates sensors every 5 s at most


def state_key(digest: str, selection: list[dg.AssetKey], code_versions) -> str:
    """Which situation a run was asked to resolve: the benchmark's files, the assets selected and their code."""
    text = "|".join([digest, *(f"{k.to_user_string()}={code_versions.get(k)}" for k in selection)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _waiting(instance: dg.DagsterInstance, job_name: str) -> bool:
    return bool(instance.get_run_records(dg.RunsFilter(job_name=job_name, statuses=WAITING), limit=1))


@dg.sensor(
    name="benchmarks_sensor",
    jobs=[convert_incoming, rate_benchmarks, rate_leaderboard, report_quarantine, tidy_warehouse],
    minimum_interval_seconds=TICK_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Observes <root>/raw/ and <root>/incoming/, and requests a run for every benchmark whose assets "
    "Dagster counts stale or missing (new, changed or removed uploads, a changed benchmark.yaml, new code, an "
    "interrupted run), a conversion when harness logs changed, and the quarantine report.",
)
def benchmarks_sensor(context: dg.SensorEvaluationContext, storage: ObjectStorage) -> dg.SensorResult:
    instance, store = context.instance, storage.store
    for run_id in fail_orphaned_runs(instance):
        context.log.warning(f"run {run_id} was left in progress by a process that is gone; marked failed")
    observed = observe(instance, store, settled_only=True)
    assets_defs = set(context.repository_def.assets_defs_by_key.values())
    graph, keys = graph_of(assets_defs), rating_keys(assets_defs)
    requests, busy = [], 0
    records = rating_records(instance, graph, keys, observed)
    for benchmark, listing in observed.benchmarks.items():
        if listing.settling:
            busy += 1
            continue
        selection = rating_selection(records, graph, keys, benchmark, observed)
        if not selection:
            continue
        runs = list(instance.get_run_records(dg.RunsFilter(tags={BENCHMARK_TAG: benchmark}), limit=20))
        if any(r.dagster_run.status in WAITING for r in runs):
            busy += 1
            continue
        key = state_key(listing.digest, selection, graph.code_versions)
        failed = sum(
            r.dagster_run.status == dg.DagsterRunStatus.FAILURE and r.dagster_run.tags.get(STATE_TAG) == key for r in runs
        )
        if failed >= MAX_ATTEMPTS:
            busy += 1
            context.log.warning(f"{benchmark}: its last runs on these files failed; waiting for a change (or run `agielo run`)")
            continue
        requests.append(
            dg.RunRequest(
                job_name=rate_benchmarks.name,
                partition_key=benchmark,
                tags={BENCHMARK_TAG: benchmark, TRIGGER_TAG: "sensor", STATE_TAG: key},
                asset_selection=selection,
            )
        )
    # a refused entry is logged when it appears or its reason changes, not on every tick: the cursor holds
    # only what was logged (the instance's records, not the cursor, decide what runs)
    logged = _logged_refusals(context.cursor)
    refused = {err.file: str(err) for err in observed.raw.refused}
    for path, message in refused.items():
        if logged.get(path) != message:
            context.log.warning(f"refused: {message}")
    cursor = json.dumps({"refused": refused}, sort_keys=True)
    converting = incoming_stale(instance, graph, observed, store)
    if converting and not _waiting(instance, convert_incoming.name):
        requests.append(dg.RunRequest(job_name=convert_incoming.name, tags={TRIGGER_TAG: "sensor"}))
    if (vanished(store, instance) or has_temporaries(store)) and not _waiting(instance, tidy_warehouse.name):
        requests.append(dg.RunRequest(job_name=tidy_warehouse.name, tags={TRIGGER_TAG: "sensor"}))
    settled = not requests and not busy and not converting
    stale = leaderboard_selection(instance, graph, store) if settled and not _waiting(instance, rate_leaderboard.name) else []
    if stale:
        requests.append(dg.RunRequest(job_name=rate_leaderboard.name, tags={TRIGGER_TAG: "sensor"}, asset_selection=stale))
    if settled and quarantine_stale(instance, graph, observed.events) and not _waiting(instance, report_quarantine.name):
        requests.append(dg.RunRequest(job_name=report_quarantine.name, tags={TRIGGER_TAG: "sensor"}))
    partitions = set(instance.get_dynamic_partitions(benchmark_partitions.name))
    new = sorted(set(observed.benchmarks) - partitions)
    partition_requests = [benchmark_partitions.build_add_request(new)] if new else []
    if not requests and not partition_requests:
        return dg.SensorResult(
            skip_reason=dg.SkipReason(f"{len(observed.benchmarks)} benchmark(s), {busy} stale with a run pending or held"),
            asset_events=observed.events,
            cursor=cursor,
        )
    return dg.SensorResult(
        run_requests=requests, dynamic_partitions_requests=partition_requests, asset_events=observed.events, cursor=cursor
    )


def _logged_refusals(cursor: str | None) -> dict[str, str]:
    """{path: message} of the refused entries the last tick logged (none for a missing or unreadable cursor)."""
    try:
        logged = json.loads(cursor or "{}").get("refused", {})
    except (ValueError, AttributeError):
        return {}
    return logged if isinstance(logged, dict) else {}


@dg.sensor(
    name="judgments_sensor",
    jobs=[rank_judgments],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches <root>/judgments/<set>.csv for new or changed sets of pairwise difficulty judgments.",
)
def judgments_sensor(context: dg.SensorEvaluationContext, storage: ObjectStorage) -> dg.SensorResult:
    seen = json.loads(context.cursor) if context.cursor else {}
    sets, refused = judgment_sets(storage.store)
    for err in refused:
        if seen.get(err.file) != str(err):  # logged once per change of the refusal
            context.log.warning(f"refused judgments: {err}")
    changed = [(n, f) for n, f in sets if seen.get(f.path) != f.fingerprint]
    known = set(context.instance.get_dynamic_partitions(judgment_partitions.name))
    new = [n for n, _ in changed if n not in known]
    cursor = json.dumps({**{f.path: f.fingerprint for _, f in sets}, **{e.file: str(e) for e in refused}}, sort_keys=True)
    requests = [dg.RunRequest(run_key=f"{n}:{f.fingerprint}", partition_key=n) for n, f in changed]
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[judgment_partitions.build_add_request(new)] if new else [],
        cursor=cursor,
    )
