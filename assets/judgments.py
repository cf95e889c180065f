"""difficulty_judgments: HodgeRank difficulties from pairwise human judgments (as in TADDL-V).

Drop ``<root>/judgments/<set>.csv`` with rows ``item_a, item_b, winner`` (``a`` when item_a is
the harder one, ``b``, or ``tie``), or a numeric ``margin`` instead of ``winner``; optional
``weight`` and ``rater`` columns. One partition per judgment set. The file is checked against its
input contract (:mod:`agielo_dagster.domain.judgments`) first: a rejected file is one outcome in the
judgments ledger, named with every rule it breaks, and the set's scores are withdrawn (empty) until
it is fixed; the step does not fail. The check ``judgments_accepted`` warns while it is rejected.
"""

import dagster as dg
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.contract import IngestError, check_name
from agielo_dagster.domain.judgments import (
    judgment_path,
    judgment_sets,
    read_judgment_outcome,
    read_judgments,
    write_judgment_outcome,
)
from agielo_dagster.rating.frames import MatchTableError

from .common import declared, frame_table, retried_on_storage_errors
from .ledger import uploads_table

judgment_partitions = dg.DynamicPartitionsDefinition(name="judgment_sets")
SCORE_COLUMNS = ["item", "score", "judgments", "component"]

__all__ = ["difficulty_judgments", "judgment_partitions", "judgment_path", "judgments_accepted"]


@dg.asset(
    partitions_def=judgment_partitions,
    **declared(
        "HodgeRank difficulty of every judged item: item, score (higher is harder), judgments, component; "
        "with the share of inconsistent (cyclic) flow and the alignment rate in the metadata. A judgments file that breaks "
        "its contract is rejected (judgments ledger, check judgments_accepted) and its scores are empty until it is fixed.",
        "judgments",
    ),
)
def difficulty_judgments(context: dg.AssetExecutionContext, storage: ObjectStorage) -> pd.DataFrame:
    store = storage.store
    path = judgment_path(context.partition_key)
    try:
        name = check_name(context.partition_key, "judgment set", path)
    except IngestError as err:
        raise dg.Failure(str(err), allow_retries=False) from None  # a partition key no sensor makes
    with retried_on_storage_errors(context):
        listed = {n: f for n, f in judgment_sets(store)[0]}
        fingerprint = listed[name].fingerprint if name in listed else ""
        data, version = store.read_versioned(path, limit=storage.max_upload_bytes)
    try:
        frame = read_judgments(data, path, max_bytes=storage.max_upload_bytes)
        from agielo_dagster.rating import hodge_rank  # scipy: imported where used, so the code location loads fast

        result = hodge_rank(frame)
    except (IngestError, MatchTableError) as err:
        error = err if isinstance(err, IngestError) else IngestError(path, err.rule or "judgments", str(err))
        with retried_on_storage_errors(context):
            write_judgment_outcome(store, name, version, fingerprint, error=error)
        context.log.warning(f"rejected: {error}")
        context.add_output_metadata(
            {
                "file": dg.MetadataValue.path(store.uri(path)),
                "version": version,
                "status": "rejected",
                "rule": error.rule,
                "message": str(error),
                "items": 0,
            }
        )
        return pd.DataFrame(
            {c: pd.Series(dtype=t) for c, t in zip(SCORE_COLUMNS, ["str", "float64", "float64", "int64"], strict=True)}
        )
    with retried_on_storage_errors(context):
        write_judgment_outcome(store, name, version, fingerprint, rows=len(frame))
    scores = result.scores
    context.add_output_metadata(
        {
            "file": dg.MetadataValue.path(store.uri(path)),
            "version": version,
            "status": "accepted",
            "judgments": len(frame),
            "items": len(scores),
            "inconsistency": result.inconsistency,
            "alignment": result.alignment,
            "hardest_items": frame_table(scores, list(scores.columns), limit=10, digits=3),
        }
    )
    return scores


@dg.asset_check(
    asset=difficulty_judgments,
    name="judgments_accepted",
    description="Fails (as a warning) while the judgment set's file is rejected; names its rule and message.",
)
def judgments_accepted(context: dg.AssetCheckExecutionContext, storage: ObjectStorage) -> dg.AssetCheckResult:
    outcome = read_judgment_outcome(storage.store, context.partition_key) or {}
    rejected = outcome.get("status") == "rejected"
    shown = (
        [
            {
                "path": outcome["path"],
                "status": "rejected",
                "rule": outcome["rule"],
                "message": outcome["message"],
                "rows": 0,
                "version": outcome["version"],
            }
        ]
        if rejected
        else []
    )
    return dg.AssetCheckResult(
        passed=not rejected,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "judgment_set": context.partition_key,
            "status": outcome.get("status", "not read yet"),
            "problems": uploads_table(shown),
            **({"rule": outcome["rule"], "message": outcome["message"]} if rejected else {}),
        },
    )
