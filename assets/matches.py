"""match_tables: every accepted match of a benchmark, with the file and version it came from."""

import io
import json

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.lineage import CODE_VERSION, inputs_digest
from agielo_dagster.ingest import IngestError, classify_raw_path, parse_benchmark_spec

from .automation import STORAGE_RETRY, warehouse_out
from .partitions import benchmark_partitions, uploads_of_benchmark
from .raw import AcceptedUpload, accepted_path, raw_benchmark_logs, read_accepted


def load_benchmark_spec(storage: ObjectStorage, benchmark: str):
    """The benchmark's current spec; a missing or invalid one fails the step without retries."""
    path = f"raw/{benchmark}/benchmark.yaml"
    try:
        if not storage.exists(path):
            raise IngestError(path, "spec_exists", "benchmark.yaml is missing")
        return parse_benchmark_spec(storage.read_bytes(path, limit=1 << 20), benchmark, path)
    except IngestError as err:
        raise dg.Failure(str(err), metadata={"rule": err.rule}, allow_retries=False) from None


def uploads_present(storage: ObjectStorage, benchmark: str) -> set[str]:
    """Agents with an upload in ``raw/<benchmark>/`` (names only: no file is read or hashed)."""
    agents = set()
    for name in storage.list_dir(f"raw/{benchmark}"):
        try:
            raw = classify_raw_path(f"raw/{benchmark}/{name}")
        except IngestError:
            continue  # refused files are reported by the quarantine report
        if raw and raw.kind == "upload":
            agents.add(raw.agent)
    return agents


def current_uploads(storage: ObjectStorage, benchmark: str) -> tuple[list[AcceptedUpload], list[str]]:
    """The accepted uploads a benchmark's ratings should use, and the agents left out as stale.

    An upload counts while its raw file is present; it is stale when it was accepted under a
    scoring that ``benchmark.yaml`` no longer declares. Reads file metadata only.
    """
    spec = load_benchmark_spec(storage, benchmark)
    scoring = json.dumps(spec.scoring.to_config(), sort_keys=True)
    present = sorted(uploads_present(storage, benchmark))
    uploads, stale = [], []
    for agent in present:
        path = accepted_path(benchmark, agent)
        if not storage.exists(path):
            continue  # never accepted: listed in the quarantine report
        upload = AcceptedUpload.from_schema(pq.read_schema(io.BytesIO(storage.read_bytes(path))))
        (uploads if upload.scoring == scoring else stale).append(upload if upload.scoring == scoring else agent)
    return uploads, stale


def accepted_uploads(storage: ObjectStorage, benchmark: str) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The accepted matches of a benchmark's current uploads under its current scoring.

    Returns the match table (agents in name order, rows in file order; lineage columns are
    categorical), its input manifest (one row per upload: agent_id, source_path,
    source_version, spec_version, matches) and the agents left out: accepted under a scoring
    that ``benchmark.yaml`` no longer declares.
    """
    uploads, stale = current_uploads(storage, benchmark)
    tables, manifest = [], []
    for upload in uploads:
        _, table = read_accepted(storage, benchmark, upload.agent, columns=["test_case_id", "metric", "score"])
        n = table.num_rows
        constant = {"agent_id": upload.agent, "source_path": upload.source_path, "source_version": upload.source_version}
        columns = {
            k: pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([v])) for k, v in constant.items()
        }
        tables.append(
            pa.table(
                {
                    "test_case_id": table["test_case_id"],
                    "agent_id": columns["agent_id"],
                    "metric": table["metric"],
                    "score": table["score"],
                    "source_path": columns["source_path"],
                    "source_version": columns["source_version"],
                }
            )
        )
        manifest.append({**constant, "spec_version": upload.spec_version, "matches": n})
    if not tables:
        raise dg.Failure(
            f"benchmark {benchmark!r} has no accepted upload under its current benchmark.yaml; "
            "see the quarantine report and the raw_benchmark_logs checks",
            allow_retries=False,
        )
    matches = pa.concat_tables(tables, promote_options="permissive").unify_dictionaries().combine_chunks().to_pandas()
    return matches, pd.DataFrame(manifest), stale


@dg.multi_asset(
    outs={
        "match_tables": warehouse_out(
            "All accepted matches of a benchmark: test_case_id, agent_id, metric, score, and the source "
            "file path and version of every row (lineage)."
        ),
        "input_manifests": warehouse_out(
            "The exact input files of a benchmark's ratings: agent_id, source_path, source_version, "
            "spec_version (of benchmark.yaml), matches."
        ),
    },
    retry_policy=STORAGE_RETRY,
    partitions_def=benchmark_partitions,
    deps=[dg.AssetDep(raw_benchmark_logs, partition_mapping=uploads_of_benchmark)],
)
def match_tables(context: dg.AssetExecutionContext, storage: ObjectStorage):
    benchmark = context.partition_key
    matches, manifest, stale = accepted_uploads(storage, benchmark)
    digest = inputs_digest(manifest[["source_path", "source_version"]].itertuples(index=False))
    yield dg.Output(
        matches,
        "match_tables",
        metadata={
            "matches": len(matches),
            "agents": len(manifest),
            "test_cases": int(matches["test_case_id"].nunique()),
            "inputs_digest": digest,
            "left_out_stale_scoring": ", ".join(stale) or "none",
            "code_version": CODE_VERSION,
        },
    )
    yield dg.Output(
        manifest,
        "input_manifests",
        metadata={"inputs_digest": digest, "input_files": dg.MetadataValue.md(manifest.to_markdown(index=False))},
    )
