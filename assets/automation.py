"""When derived assets re-materialize, and how their outputs are declared."""

import dagster as dg

from agielo_dagster.domain.lineage import CODE_VERSION

_deps_updated = dg.AutomationCondition.any_deps_updated()

# Built from eager()'s parts, changed twice:
# - no 'missing' parts: eager waits while any upstream partition is missing, and in the upload grid
#   most cells are legitimately empty (and a rejected upload must not stall its benchmark);
# - the memory of "an upload changed" is cleared by our own request only in a tick where no
#   dependency updated again. Otherwise an upload landing between our request and the next tick,
#   or while our run is in flight, would be forgotten (the reset would win the tie). Upstream
#   updates made by runs that also targeted this asset do not count, so chains do not re-fire.
ON_UPSTREAM_CHANGE = (
    _deps_updated.since(dg.AutomationCondition.newly_requested() & ~_deps_updated)
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("re-rate when an upload changed")


# object storage restarts or hiccups: retry a failed step 2, 4, 8, 16 s later (±jitter)
STORAGE_RETRY = dg.RetryPolicy(max_retries=4, delay=2, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)


def warehouse_out(description: str, group: str = "ratings") -> dg.AssetOut:
    """A per-benchmark output kept as parquet in the warehouse, re-rated when its uploads change."""
    return dg.AssetOut(
        io_manager_key="warehouse_io_manager",
        group_name=group,
        code_version=CODE_VERSION,
        automation_condition=ON_UPSTREAM_CHANGE,
        kinds={"pandas", "parquet"},
        description=description,
    )
