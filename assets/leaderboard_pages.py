"""The leaderboard's pages: the explorer's index (every benchmark on one scale, linked to its page) and a report."""

import hashlib

import dagster as dg
import pyarrow as pa
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.layout import explorer_index_path, explorer_path, pool_report_path
from agielo_dagster.domain.stored import Stored

from .common import declared


@dg.asset(
    **declared(
        "The explorer's index (warehouse/explorer/_index.html: the benchmarks on the leaderboard's scale, each linked "
        "to its explorer page, the leaderboard across them, each agent on each benchmark) and the leaderboard's report "
        "(warehouse/reports/_leaderboard.html); one row per page with its path, size and hash.",
        "leaderboard",
        kinds=("parquet", "html"),
    ),
)
def leaderboard_pages(
    context: dg.AssetExecutionContext,
    storage: ObjectStorage,
    agent_leaderboard: Stored,
    benchmark_scales: Stored,
    agent_benchmark_ratings: Stored,
) -> dg.Output:
    from agielo_dagster.domain.explorer_index import render_index
    from agielo_dagster.domain.pool_report import render_pool_report

    store = storage.store
    paths = {"explorer_index": explorer_index_path(), "report": pool_report_path()}
    if not agent_leaderboard.exists:  # no benchmark rated any more
        for path in paths.values():
            store.remove(path)
        return dg.Output(None, metadata={"withdrawn": True})
    leaderboard, scales = agent_leaderboard.read().to_pandas(), benchmark_scales.read().to_pandas()
    # linked by file name: the index lies beside the benchmarks' pages, wherever the warehouse is served from
    pages = {b: explorer_path(b).rsplit("/", 1)[1] for b in scales["benchmark"] if store.exists(explorer_path(b))}
    code_version = context.assets_def.code_versions_by_key[context.asset_key] or ""
    written = {
        "explorer_index": render_index(leaderboard, scales, agent_benchmark_ratings.read().to_pandas(), pages),
        "report": render_pool_report(leaderboard, scales, code_version),
    }
    for name, data in written.items():
        store.write_bytes(paths[name], data)
    artifacts = [
        {"artifact": name, "path": paths[name], "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in written.items()
    ]
    return dg.Output(
        pa.Table.from_pylist(artifacts),
        metadata={
            "inputs_digest": agent_leaderboard.digest,
            "explorer_index": dg.MetadataValue.path(store.uri(paths["explorer_index"])),
            "report": dg.MetadataValue.path(store.uri(paths["report"])),
        },
    )
