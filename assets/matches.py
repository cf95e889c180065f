"""match_tables: every accepted match of a benchmark, with the file and version it came from."""

import json

import dagster as dg
import pandas as pd

from agielo_dagster.ingest import parse_benchmark_spec
from agielo_dagster.lineage import CODE_VERSION, inputs_digest
from resources.storage import ObjectStorage, is_upload
from resources.warehouse import parquet_to_frame

from .automation import ON_UPSTREAM_CHANGE
from .partitions import benchmark_partitions, uploads_of_benchmark
from .raw import accepted_path, raw_benchmark_logs

MATCH_COLUMNS = ["test_case_id", "agent_id", "metric", "score", "source_path", "source_version"]


def load_benchmark_spec(storage: ObjectStorage, benchmark: str):
    path = f"raw/{benchmark}/benchmark.yaml"
    return parse_benchmark_spec(storage.read_bytes(path, limit=1 << 20), benchmark, path)


def accepted_uploads(storage: ObjectStorage, benchmark: str) -> tuple[pd.DataFrame, list[str]]:
    """The accepted matches of a benchmark's current uploads under its current scoring.

    Returns the stored frames concatenated (agents in name order, rows in file order) and the
    agents left out: accepted under a scoring that ``benchmark.yaml`` no longer declares.
    """
    spec = load_benchmark_spec(storage, benchmark)
    scoring = json.dumps(spec.scoring.to_config(), sort_keys=True)
    present = sorted({f.agent for f in storage.list_raw() if f.benchmark == benchmark and is_upload(f)})
    frames, stale = [], []
    for agent in present:
        path = accepted_path(benchmark, agent)
        if not storage.exists(path):
            continue  # never accepted: listed in the quarantine report
        frame = parquet_to_frame(storage.read_bytes(path))
        if frame["scoring"].iloc[0] != scoring:
            stale.append(agent)
            continue
        frames.append(frame)
    if not frames:
        raise dg.Failure(
            f"benchmark {benchmark!r} has no accepted upload under its current benchmark.yaml; "
            "see the quarantine report and the raw_benchmark_logs checks",
        )
    return pd.concat(frames, ignore_index=True), stale


@dg.asset(
    partitions_def=benchmark_partitions,
    deps=[dg.AssetDep(raw_benchmark_logs, partition_mapping=uploads_of_benchmark)],
    automation_condition=ON_UPSTREAM_CHANGE,
    io_manager_key="warehouse_io_manager",
    group_name="ratings",
    code_version=CODE_VERSION,
    kinds={"pandas", "parquet"},
    description="All accepted matches of a benchmark: test_case_id, agent_id, metric, score, and the source "
    "file path and version of every row (lineage).",
)
def match_tables(context: dg.AssetExecutionContext, storage: ObjectStorage) -> pd.DataFrame:
    benchmark = context.partition_key
    stored, stale = accepted_uploads(storage, benchmark)
    matches = stored[MATCH_COLUMNS]
    inputs = matches[["source_path", "source_version"]].drop_duplicates().sort_values("source_path")
    context.add_output_metadata(
        {
            "matches": len(matches),
            "agents": int(matches["agent_id"].nunique()),
            "test_cases": int(matches["test_case_id"].nunique()),
            "inputs_digest": inputs_digest(inputs.itertuples(index=False)),
            "input_files": dg.MetadataValue.md(inputs.to_markdown(index=False)),
            "left_out_stale_scoring": ", ".join(stale) or "none",
            "code_version": CODE_VERSION,
        }
    )
    return matches
