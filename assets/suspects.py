"""The per-benchmark check that warns when many of its test cases look mislabeled (issue 40)."""

import dagster as dg
import pyarrow.compute as pc
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.layout import suspects_path
from agielo_dagster.domain.stored import Stored
from agielo_dagster.domain.suspects import MISLABELED_WARN_SHARE, mislabeled_ids, mislabeled_line, read_flags


@dg.asset_check(
    asset="test_case_ratings",
    name="few_mislabeled_test_cases",
    description=(
        f"Fails (as a warning) when more than {MISLABELED_WARN_SHARE:.0%} of the benchmark's test cases are flagged "
        "likely_mislabeled (stronger agents fail them, weaker ones pass); counts every flag in its metadata."
    ),
)
def few_mislabeled_test_cases(
    context: dg.AssetCheckExecutionContext, storage: ObjectStorage, test_case_ratings: Stored
) -> dg.AssetCheckResult:
    from agielo_dagster.rating.item_quality import FLAGS  # the engine (and numba) load when a check runs

    store, benchmark = storage.store, context.partition_key
    table = read_flags(test_case_ratings)
    if table is None:  # withdrawn, or rated before the flags
        return dg.AssetCheckResult(passed=True, metadata={"benchmark": benchmark, "test_cases": 0})
    counts = {flag: int(pc.sum(pc.equal(table.column("flag"), flag)).as_py() or 0) for flag in FLAGS}
    mislabeled = mislabeled_ids(table)
    share = len(mislabeled) / table.num_rows if table.num_rows else 0.0
    return dg.AssetCheckResult(
        passed=share <= MISLABELED_WARN_SHARE,
        severity=dg.AssetCheckSeverity.WARN,
        description=mislabeled_line(mislabeled, store.uri(suspects_path(benchmark)))
        if mislabeled
        else "no test case looks mislabeled",
        metadata={
            "benchmark": benchmark,
            "test_cases": table.num_rows,
            "mislabeled_share": round(share, 4),
            "warn_above_share": MISLABELED_WARN_SHARE,
            **counts,
        },
    )
