"""The nightly re-rating of every benchmark."""

import os

import dagster as dg

from .assets.partitions import benchmark_partitions
from .jobs import rate_benchmarks_nightly
from .runs import BENCHMARK_TAG, TRIGGER_TAG

NIGHTLY_CRON = "0 2 * * *"


def nightly_timezone() -> str:
    """``AGIELO_TIMEZONE`` (an IANA name such as Europe/Berlin), UTC by default."""
    return os.environ.get("AGIELO_TIMEZONE", "UTC")


@dg.schedule(
    name="nightly_rerate",
    cron_schedule=NIGHTLY_CRON,
    execution_timezone=nightly_timezone(),
    job=rate_benchmarks_nightly,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Re-rates every benchmark at 02:00 (AGIELO_TIMEZONE, default UTC), with the heavier estimators.",
)
def nightly_rerate(context: dg.ScheduleEvaluationContext):
    benchmarks = context.instance.get_dynamic_partitions(benchmark_partitions.name)
    if not benchmarks:
        return dg.SkipReason("no benchmark has been uploaded yet")
    night = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [
        dg.RunRequest(run_key=f"{night}:{b}", partition_key=b, tags={TRIGGER_TAG: "nightly", BENCHMARK_TAG: b})
        for b in benchmarks
    ]
