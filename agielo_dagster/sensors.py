"""The uploads sensor: new or changed files under ``<root>/raw/`` become partitions and runs.

The cursor maps every raw file to its version (ETag on S3, content hash locally), never to a
modification time, so two uploads in the same second are both seen. An upload is requested
again when its file or its benchmark's ``benchmark.yaml`` changed.

Bursts are batched: the new agents of a benchmark are registered together, so they are
contiguous in the agent dimension, and each contiguous run of them is one run over a partition
range (at most ``MAX_UPLOADS_PER_RUN``), not one run per file.
"""

import hashlib
import io
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import dagster as dg
import pyarrow.parquet as pq

from agielo_dagster.assets.judgments import judgment_partitions
from agielo_dagster.assets.partitions import agent_partitions, benchmark_partitions, upload_key
from agielo_dagster.assets.raw import AcceptedUpload, accepted_path, quarantine_path
from agielo_dagster.ingest import IngestError, check_name
from agielo_dagster.resources.storage import ObjectStorage, StoredFile, is_spec, is_upload, refusals

from .jobs import ingest_uploads, rank_judgments, rate_benchmarks

MAX_UPLOADS_PER_RUN = 500
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


@dataclass(frozen=True)
class IngestPlan:
    """What to run for a set of changed uploads."""

    run_requests: list[dg.RunRequest]
    uploads: list[StoredFile]  # requested uploads
    refused: list[str]  # messages for files whose names are refused
    removed_benchmarks: list[str]  # benchmarks that lost an upload: re-rate without it


def register_partitions(instance: dg.DagsterInstance, uploads: Iterable[StoredFile]) -> None:
    """Add the benchmarks and agents of ``uploads`` (in path order) to the dynamic partitions."""
    uploads = sorted(uploads, key=lambda f: f.path)
    for definition, names in (
        (benchmark_partitions, [f.benchmark for f in uploads]),
        (agent_partitions, [f.agent for f in uploads]),
    ):
        known = set(instance.get_dynamic_partitions(definition.name))
        new = list(dict.fromkeys(n for n in names if n not in known))
        if new:
            instance.add_dynamic_partitions(definition.name, new)


def upload_runs(instance: dg.DagsterInstance, uploads: Iterable[StoredFile]) -> list[dg.RunRequest]:
    """One run per contiguous range of agents of a benchmark (partitions must be registered)."""
    order = {agent: i for i, agent in enumerate(instance.get_dynamic_partitions(agent_partitions.name))}
    by_benchmark: dict[str, list[StoredFile]] = defaultdict(list)
    for f in uploads:
        by_benchmark[f.benchmark].append(f)
    requests = []
    for benchmark, files in sorted(by_benchmark.items()):
        files = sorted(files, key=lambda f: order[f.agent])
        batch: list[StoredFile] = []
        for f in files:
            contiguous = batch and order[f.agent] == order[batch[-1].agent] + 1 and len(batch) < MAX_UPLOADS_PER_RUN
            if batch and not contiguous:
                requests.append(_range_request(benchmark, batch))
                batch = []
            batch.append(f)
        if batch:
            requests.append(_range_request(benchmark, batch))
    return requests


def _range_request(benchmark: str, batch: list[StoredFile]) -> dg.RunRequest:
    run_key = hashlib.sha256("\n".join(f"{f.path}\0{f.version}" for f in batch).encode()).hexdigest()[:24]
    tags = {"agielo/benchmark": benchmark, "agielo/uploads": str(len(batch))}
    if len(batch) == 1:
        return dg.RunRequest(
            run_key=run_key, job_name=ingest_uploads.name, partition_key=upload_key(benchmark, batch[0].agent), tags=tags
        )
    tags |= {
        RANGE_START_TAG: str(upload_key(benchmark, batch[0].agent)),
        RANGE_END_TAG: str(upload_key(benchmark, batch[-1].agent)),
    }
    return dg.RunRequest(run_key=run_key, job_name=ingest_uploads.name, tags=tags)


def plan_ingest(instance: dg.DagsterInstance, files: list[StoredFile], seen: dict[str, str]) -> IngestPlan:
    """Register partitions and plan runs for the raw files that changed since ``seen`` (path → version)."""
    spec_version = {f.benchmark: f.version for f in files if is_spec(f)}
    changed_specs = {b for b, v in spec_version.items() if seen.get(f"raw/{b}/benchmark.yaml") != v}
    uploads = [f for f in files if is_upload(f) and (seen.get(f.path) != f.version or f.benchmark in changed_specs)]
    refused = [str(err) for err in refusals([f for f in files if seen.get(f.path) != f.version])]
    present = {f.path for f in files}
    removed = sorted(
        {p.split("/")[1] for p in seen if p not in present and p.count("/") == 2 and not p.endswith("/benchmark.yaml")}
        & set(instance.get_dynamic_partitions(benchmark_partitions.name))
    )
    register_partitions(instance, uploads)
    requests = upload_runs(instance, uploads)
    for benchmark in removed:
        if any(f.benchmark == benchmark and is_upload(f) for f in files):
            requests.append(
                dg.RunRequest(
                    run_key=f"removed:{benchmark}:{hashlib.sha256(json.dumps(sorted(present)).encode()).hexdigest()[:16]}",
                    job_name=rate_benchmarks.name,
                    partition_key=benchmark,
                )
            )
    return IngestPlan(requests, uploads, refused, removed)


def ingested_versions(storage: ObjectStorage, benchmark: str, agent: str) -> tuple[str, str] | None:
    """(file version, benchmark.yaml version) last processed for an upload, accepted or not."""
    record = quarantine_path(benchmark, agent)
    if storage.exists(record):
        data = json.loads(storage.read_bytes(record))
        return data["version"], data["spec_version"]
    path = accepted_path(benchmark, agent)
    if storage.exists(path):
        upload = AcceptedUpload.from_schema(pq.read_schema(io.BytesIO(storage.read_bytes(path))))
        return upload.source_version, upload.spec_version
    return None


def already_seen(storage: ObjectStorage, files) -> dict[str, str]:
    """A sensor-style cursor rebuilt from the warehouse: uploads whose current version was processed."""
    spec_version = {f.benchmark: f.version for f in files if is_spec(f)}
    seen = {f"raw/{b}/benchmark.yaml": v for b, v in spec_version.items()}
    for f in files:
        if is_upload(f) and ingested_versions(storage, f.benchmark, f.agent) == (f.version, spec_version.get(f.benchmark, "")):
            seen[f.path] = f.version
    return seen


@dg.sensor(
    name="raw_uploads_sensor",
    jobs=[ingest_uploads, rate_benchmarks],
    minimum_interval_seconds=15,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches <root>/raw/ for new or changed uploads and benchmark.yaml files (by version, not time).",
)
def raw_uploads_sensor(context: dg.SensorEvaluationContext, storage: ObjectStorage) -> dg.SensorResult:
    files = storage.list_raw()
    # no cursor yet (a new daemon, or after `agielo run`): start from what the warehouse holds
    seen = json.loads(context.cursor) if context.cursor else already_seen(storage, files)
    plan = plan_ingest(context.instance, files, seen)
    for message in plan.refused:
        context.log.warning(f"refused upload: {message}")
    cursor = json.dumps({f.path: f.version for f in files}, sort_keys=True)
    if not plan.run_requests:
        return dg.SensorResult(skip_reason=dg.SkipReason(f"no new or changed uploads among {len(files)} file(s)"), cursor=cursor)
    return dg.SensorResult(run_requests=plan.run_requests, cursor=cursor)


@dg.sensor(
    name="judgments_sensor",
    jobs=[rank_judgments],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches <root>/judgments/<set>.csv for new or changed sets of pairwise difficulty judgments.",
)
def judgments_sensor(context: dg.SensorEvaluationContext, storage: ObjectStorage) -> dg.SensorResult:
    seen = json.loads(context.cursor) if context.cursor else {}
    files = [f for f in storage.list_files("judgments") if not f.name.startswith(".")]
    changed = []
    for f in files:
        if seen.get(f.path) == f.version:
            continue
        name = f.path.removeprefix("judgments/").removesuffix(".csv")
        try:
            if f.path.count("/") != 1 or not f.path.endswith(".csv"):
                raise IngestError(f.path, "layout", "judgment sets belong at judgments/<set>.csv")
            changed.append(check_name(name, "judgment set", f.path))
        except IngestError as err:
            context.log.warning(f"refused judgments: {err}")
    known = set(context.instance.get_dynamic_partitions(judgment_partitions.name))
    new = [n for n in changed if n not in known]
    cursor = json.dumps({f.path: f.version for f in files}, sort_keys=True)
    requests = [
        dg.RunRequest(run_key=f"{n}:{next(f.version for f in files if f.path == f'judgments/{n}.csv')}", partition_key=n)
        for n in changed
    ]
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[judgment_partitions.build_add_request(new)] if new else [],
        cursor=cursor,
    )


# Declarative automation only runs while an automation sensor runs; Dagster's implicit one starts
# stopped. This one re-rates benchmarks as their uploads change, from the moment the daemon starts.
automation_sensor = dg.AutomationConditionSensorDefinition(
    "agielo_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=15,
    description="Evaluates the assets' automation conditions: re-rates a benchmark when one of its uploads changed.",
)
