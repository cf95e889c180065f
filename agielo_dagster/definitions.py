"""The Dagster code location: assembles assets, checks, jobs, sensor, schedule and resources."""

import dagster as dg

from agielo_dagster.assets.estimators import estimator_comparison, rating_uncertainty
from agielo_dagster.assets.judgments import difficulty_judgments
from agielo_dagster.assets.matches import match_tables
from agielo_dagster.assets.quarantine import quarantine_report
from agielo_dagster.assets.ratings import competency_gap_tables, ratings
from agielo_dagster.assets.raw import raw_benchmark_logs
from agielo_dagster.resources.storage import ObjectStorage
from agielo_dagster.resources.warehouse import WarehouseIOManager

from .jobs import ingest_uploads, rank_judgments, rate_benchmarks, rate_benchmarks_nightly, report_quarantine
from .schedules import nightly_rerate
from .sensors import automation_sensor, judgments_sensor, raw_uploads_sensor


def build_definitions(storage: ObjectStorage | None = None) -> dg.Definitions:
    """The definitions over a storage root (``AGIELO_STORAGE`` or ``./agielo_data`` by default)."""
    storage = storage or ObjectStorage()
    return dg.Definitions(
        assets=[
            raw_benchmark_logs,
            match_tables,
            ratings,
            competency_gap_tables,
            quarantine_report,
            estimator_comparison,
            rating_uncertainty,
            difficulty_judgments,
        ],
        jobs=[ingest_uploads, rate_benchmarks, rate_benchmarks_nightly, rank_judgments, report_quarantine],
        sensors=[raw_uploads_sensor, judgments_sensor, automation_sensor],
        schedules=[nightly_rerate],
        resources={"storage": storage, "warehouse_io_manager": WarehouseIOManager(storage=storage)},
        executor=dg.in_process_executor,
    )


defs = build_definitions()
