"""Sensors: benchmarks whose outputs are stale get a run; new judgment sets get ranked.

``benchmarks_sensor`` asks every benchmark the one question (:mod:`agielo_dagster.domain.status`):
are its outputs current for its files? It reads listings, ledgers and one parquet footer per
benchmark, never an upload, and keeps no cursor: the warehouse is the state. A stale benchmark gets
one run of ``rate_benchmarks`` unless a run of it is already queued or in progress; a situation
whose runs failed three times is left alone (and logged) until its files or the code change. Its
cursor holds only the refused entries of ``raw/`` it has logged, so each is logged once per change.
"""

import json

import dagster as dg

from .assets.judgments import judgment_partitions
from .assets.partitions import benchmark_partitions
from .domain.judgments import judgment_sets
from .jobs import convert_incoming, rank_judgments, rate_benchmarks, report_quarantine
from .outputs import benchmark_outputs
from .planning import plan_runs, run_selection, state_key
from .resources.storage import ObjectStorage
from .runs import BENCHMARK_TAG, STATE_TAG, TRIGGER_TAG, WAITING, fail_orphaned_runs

QUARANTINE_TAG = "agielo/quarantine"


@dg.sensor(
    name="benchmarks_sensor",
    jobs=[convert_incoming, rate_benchmarks, report_quarantine],
    minimum_interval_seconds=15,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests a run for every benchmark whose outputs are stale for its files in <root>/raw/ "
    "(new, changed or removed uploads, a changed benchmark.yaml, new code, an interrupted run), and a conversion "
    "when harness logs under <root>/incoming/ changed.",
)
def benchmarks_sensor(context: dg.SensorEvaluationContext, storage: ObjectStorage) -> dg.SensorResult:
    instance = context.instance
    for run_id in fail_orphaned_runs(instance):
        context.log.warning(f"run {run_id} was left in progress by a process that is gone; marked failed")
    plan = plan_runs(storage.store, instance, benchmark_outputs(context.repository_def.asset_graph))
    requests = [
        dg.RunRequest(
            job_name=rate_benchmarks.name,
            partition_key=b,
            tags={BENCHMARK_TAG: b, TRIGGER_TAG: "sensor", STATE_TAG: state_key(plan.states[b])},
            asset_selection=run_selection(plan.states[b]),
        )
        for b in plan.to_rate
    ]
    for b in plan.given_up:
        context.log.warning(f"{b}: its last runs on these files failed; waiting for a change (or run `agielo run`)")
    # a refused entry is logged when it appears or its reason changes, not on every tick: the cursor holds
    # only what was logged (the warehouse, not the cursor, decides what runs)
    logged = _logged_refusals(context.cursor)
    refused = {err.file: str(err) for err in plan.raw.refused}
    for path, message in refused.items():
        if logged.get(path) != message:
            context.log.warning(f"refused: {message}")
    cursor = json.dumps({"refused": refused}, sort_keys=True)
    converting = instance.get_run_records(dg.RunsFilter(job_name=convert_incoming.name, statuses=WAITING), limit=1)
    if plan.incoming and not converting:
        requests.append(dg.RunRequest(job_name=convert_incoming.name, tags={TRIGGER_TAG: "sensor"}))
    settled = not plan.to_rate and not plan.busy and not plan.incoming
    quarantine_running = instance.get_run_records(dg.RunsFilter(job_name=report_quarantine.name, statuses=WAITING), limit=1)
    if settled and plan.quarantine_stale and not quarantine_running:
        requests.append(
            dg.RunRequest(job_name=report_quarantine.name, tags={TRIGGER_TAG: "sensor", QUARANTINE_TAG: plan.quarantine_digest})
        )
    partition_requests = []
    if plan.new_partitions:
        partition_requests.append(benchmark_partitions.build_add_request(plan.new_partitions))
    if plan.vanished:
        partition_requests.append(benchmark_partitions.build_delete_request(plan.vanished))
    if not requests and not partition_requests:
        stale = len(plan.busy) + len(plan.given_up)
        return dg.SensorResult(
            skip_reason=dg.SkipReason(f"{len(plan.states)} benchmark(s), {stale} stale with a run pending or held"),
            cursor=cursor,
        )
    return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=partition_requests, cursor=cursor)


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
