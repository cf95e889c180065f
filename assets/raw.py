"""raw_benchmark_logs: one partition per uploaded (benchmark, agent) file.

Each upload is parsed, run through the great_expectations suite (a blocking check) and
the engine's own contract. An accepted upload is stored, normalized, at
``warehouse/accepted/<benchmark>/<agent>.parquet``; a rejected one gets a record at
``warehouse/quarantine/<benchmark>/<agent>.json`` and leaves the last accepted version
of that agent untouched. Raw files are only ever read.
"""

import io
import json
from dataclasses import asdict, dataclass

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from agielo_dagster.resources.quality import validate_uploads
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.lineage import CODE_VERSION
from agielo_dagster.ingest import (
    IngestError,
    check_name,
    log_to_matches,
    parse_benchmark_spec,
    read_log,
)

from .automation import STORAGE_RETRY
from .partitions import split_upload_key, upload_partitions

QUALITY_CHECK = "upload_passes_quality_suite"


@dataclass(frozen=True)
class UploadOutcome:
    benchmark: str
    agent: str
    file: str
    version: str
    spec_version: str
    accepted: bool
    rows: int = 0
    rule: str = ""
    message: str = ""
    expectations: tuple[str, ...] = ()


@dataclass(frozen=True)
class AcceptedUpload:
    """What an accepted upload was: stored as the parquet file's key-value metadata, not per row."""

    agent: str
    source_path: str
    source_version: str
    spec_version: str
    scoring: str  # the scoring config as JSON

    def to_parquet(self, rows: pd.DataFrame) -> bytes:
        table = pa.Table.from_pandas(rows, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"agielo": json.dumps(asdict(self)).encode()})
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        return buffer.getvalue()

    @classmethod
    def from_schema(cls, schema: pa.Schema) -> "AcceptedUpload":
        return cls(**json.loads(schema.metadata[b"agielo"]))


def read_accepted(
    storage: ObjectStorage, benchmark: str, agent: str, columns: list[str] | None = None
) -> tuple[AcceptedUpload, pa.Table]:
    table = pq.read_table(io.BytesIO(storage.read_bytes(accepted_path(benchmark, agent))), columns=columns)
    return AcceptedUpload.from_schema(table.schema), table


def accepted_path(benchmark: str, agent: str) -> str:
    return f"warehouse/accepted/{benchmark}/{agent}.parquet"


def quarantine_path(benchmark: str, agent: str) -> str:
    return f"warehouse/quarantine/{benchmark}/{agent}.json"


def find_upload(storage: ObjectStorage, benchmark: str, agent: str) -> str:
    """The raw file of an agent in a benchmark (exactly one may exist)."""
    names = [n for n in storage.list_dir(f"raw/{benchmark}") if n.rsplit(".", 1)[0] == agent and n != "benchmark.yaml"]
    if not names:
        raise IngestError(f"raw/{benchmark}/{agent}.*", "upload_exists", "no such upload (was it removed?)")
    if len(names) > 1:
        raise IngestError(
            f"raw/{benchmark}/{agent}.*",
            "one_file_per_agent",
            f"agent {agent!r} has {len(names)} files ({', '.join(names)}); keep exactly one",
        )
    return f"raw/{benchmark}/{names[0]}"


@dataclass
class _Candidate:
    """An upload that passed the input contract, awaiting the quality suite."""

    benchmark: str
    agent: str
    file: str
    version: str
    spec_version: str
    spec: object
    log: pd.DataFrame
    matches: pd.DataFrame
    metadata: pd.DataFrame


def _check_upload(storage: ObjectStorage, benchmark: str, agent: str) -> "_Candidate | UploadOutcome":
    """Read and check one upload against the input contract; an UploadOutcome if it is rejected."""
    file, version, spec_version = f"raw/{benchmark}/{agent}", "", ""
    try:
        check_name(benchmark, "benchmark", file)
        check_name(agent, "agent", file)
        file = find_upload(storage, benchmark, agent)
        data, version = storage.read_versioned(file, limit=storage.max_upload_bytes)
        spec_file = f"raw/{benchmark}/benchmark.yaml"
        if not storage.exists(spec_file):
            raise IngestError(
                spec_file, "spec_exists", "benchmark.yaml is missing: it says which column is the metric and how to score it"
            )
        spec_data, spec_version = storage.read_versioned(spec_file, limit=1 << 20)
        spec = parse_benchmark_spec(spec_data, benchmark, spec_file)
        log = read_log(data, file, max_bytes=storage.max_upload_bytes)
        matches, metadata = log_to_matches(log, file=file, agent=agent, spec=spec, version=version)
    except IngestError as err:
        return UploadOutcome(benchmark, agent, file, version, spec_version, False, rule=err.rule, message=str(err))
    return _Candidate(benchmark, agent, file, version, spec_version, spec, log, matches, metadata)


def ingest_uploads(storage: ObjectStorage, keys: list[tuple[str, str]]) -> list[UploadOutcome]:
    """Validate uploads (benchmark, agent) and store each as accepted or quarantined, in order."""
    checked = [_check_upload(storage, benchmark, agent) for benchmark, agent in keys]
    candidates = [c for c in checked if isinstance(c, _Candidate)]
    by_spec: dict[str, list[_Candidate]] = {}
    for c in candidates:
        by_spec.setdefault(c.spec_version, []).append(c)
    suite_failures: dict[int, tuple[str, ...]] = {}
    for group in by_spec.values():
        for c, expectations in zip(group, validate_uploads([c.log for c in group], group[0].spec), strict=True):
            failed = tuple(e.describe() for e in expectations if not e.success)
            if failed:  # the input contract passed, so the suite should too: this is a disagreement to report
                suite_failures[id(c)] = failed
    outcomes = []
    for c in checked:
        if isinstance(c, UploadOutcome):
            outcome = c
        elif id(c) in suite_failures:
            failed = suite_failures[id(c)]
            message = str(IngestError(c.file, "quality_suite", "; ".join(failed)))
            outcome = UploadOutcome(
                c.benchmark,
                c.agent,
                c.file,
                c.version,
                c.spec_version,
                False,
                rule="quality_suite",
                message=message,
                expectations=failed,
            )
        else:
            stored = c.matches[["test_case_id", "metric", "score"]].copy()
            for column in c.metadata.columns.drop("test_case_id"):
                stored[f"meta.{column}"] = c.metadata[column].to_numpy()
            upload = AcceptedUpload(
                c.agent, c.file, c.version, c.spec_version, json.dumps(c.spec.scoring.to_config(), sort_keys=True)
            )
            storage.write_bytes(accepted_path(c.benchmark, c.agent), upload.to_parquet(stored))
            storage.remove(quarantine_path(c.benchmark, c.agent))
            outcomes.append(UploadOutcome(c.benchmark, c.agent, c.file, c.version, c.spec_version, True, rows=len(stored)))
            continue
        storage.write_bytes(quarantine_path(outcome.benchmark, outcome.agent), json.dumps(asdict(outcome), indent=1).encode())
        outcomes.append(outcome)
    return outcomes


def ingest_upload(storage: ObjectStorage, benchmark: str, agent: str) -> UploadOutcome:
    """Validate one upload and store it as accepted or quarantined."""
    return ingest_uploads(storage, [(benchmark, agent)])[0]


@dg.asset(
    partitions_def=upload_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    retry_policy=STORAGE_RETRY,
    check_specs=[
        dg.AssetCheckSpec(
            QUALITY_CHECK,
            asset="raw_benchmark_logs",
            blocking=True,
            description="great_expectations suite: test_case_id present and unique, metric numeric and in the "
            "scoring range, score in [0, 1]; plus the input contract (file readable, benchmark.yaml valid).",
        )
    ],
    group_name="ingest",
    code_version=CODE_VERSION,
    kinds={"pandas", "parquet"},
    description="One uploaded raw log per (benchmark, agent): validated, then accepted (normalized) or quarantined.",
)
def raw_benchmark_logs(context: dg.AssetExecutionContext, storage: ObjectStorage) -> dg.MaterializeResult:
    outcomes = ingest_uploads(storage, [split_upload_key(key) for key in context.partition_keys])
    for o in outcomes:
        if o.accepted:
            context.log.info(f"accepted {o.file} ({o.rows} rows, {o.version[:19]})")
        else:
            context.log.warning(f"rejected {o.message}")
    table = pd.DataFrame([asdict(o) for o in outcomes]).drop(columns="expectations")
    rejected = [o for o in outcomes if not o.accepted]
    metadata = {
        "uploads": dg.MetadataValue.md(table.to_markdown(index=False)),
        "accepted": sum(o.accepted for o in outcomes),
        "rejected": len(rejected),
    }
    # what was ingested, per upload partition, for the UI (`agielo run` reads the warehouse itself)
    metadata["ingested_versions"] = dg.MetadataValue.json(
        {str(k): [o.version, o.spec_version] for k, o in zip(context.partition_keys, outcomes, strict=True)}
    )
    if len(outcomes) == 1:
        o = outcomes[0]
        metadata |= {"file": dg.MetadataValue.path(storage.uri(o.file)), "version": o.version, "rows": o.rows}
    check_metadata = {"rejected uploads": dg.MetadataValue.md("\n".join(f"- {o.message}" for o in rejected) or "none")}
    for o in rejected[:1]:
        check_metadata |= {"rule": o.rule, "error": o.message}
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[dg.AssetCheckResult(check_name=QUALITY_CHECK, passed=not rejected, metadata=check_metadata)],
    )
