"""difficulty_judgments: HodgeRank difficulties from pairwise human judgments (as in TADDL-V).

Drop ``<root>/judgments/<set>.csv`` with rows ``item_a, item_b, winner`` (``a`` when item_a is
the harder one, ``b``, or ``tie``), or a numeric ``margin`` instead of ``winner``; optional
``weight`` and ``rater`` columns. One partition per judgment set.
"""

import dagster as dg
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.contract import IngestError, check_name
from agielo_dagster.domain.lineage import CODE_VERSION
from agielo_dagster.domain.readers import read_rows
from agielo_dagster.rating.frames import MatchTableError

from .common import OWNERS, TAGS, frame_table, retried_on_storage_errors

judgment_partitions = dg.DynamicPartitionsDefinition(name="judgment_sets")


def judgment_path(name: str) -> str:
    return f"judgments/{name}.csv"


@dg.asset(
    partitions_def=judgment_partitions,
    io_manager_key="warehouse_io_manager",
    group_name="judgments",
    code_version=CODE_VERSION,
    kinds={"parquet"},
    owners=OWNERS,
    tags=TAGS,
    description="HodgeRank difficulty of every judged item: item, score (higher is harder), judgments, component; "
    "with the share of inconsistent (cyclic) flow and the alignment rate in the metadata.",
)
def difficulty_judgments(context: dg.AssetExecutionContext, storage: ObjectStorage) -> pd.DataFrame:
    name = check_name(context.partition_key, "judgment set", judgment_path(context.partition_key))
    path = judgment_path(name)
    with retried_on_storage_errors(context):
        data, version = storage.store.read_versioned(path, limit=storage.max_upload_bytes)
    try:
        frame = read_rows(data, path, max_bytes=storage.max_upload_bytes).to_pandas()
        from agielo_dagster.rating import hodge_rank  # scipy: imported where used, so the code location loads fast

        result = hodge_rank(frame)
    except (IngestError, MatchTableError) as err:
        raise dg.Failure(f"{path}: {err}", metadata={"file": path, "version": version}, allow_retries=False) from None
    scores = result.scores
    context.add_output_metadata(
        {
            "file": dg.MetadataValue.path(storage.store.uri(path)),
            "version": version,
            "judgments": len(frame),
            "items": len(scores),
            "inconsistency": result.inconsistency,
            "alignment": result.alignment,
            "hardest_items": frame_table(scores, list(scores.columns), limit=10, digits=3),
        }
    )
    return scores
