"""The Dagster code location: assembles assets, checks, jobs, sensor, schedule and resources."""

import dagster as dg

from assets.matches import match_tables
from assets.quarantine import quarantine_report
from assets.ratings import competency_gap_tables, ratings
from assets.raw import raw_benchmark_logs
from resources.storage import ObjectStorage
from resources.warehouse import WarehouseIOManager

from .jobs import ingest_uploads, rate_benchmarks, report_quarantine
from .schedules import nightly_rerate
from .sensors import raw_uploads_sensor


def build_definitions(storage: ObjectStorage | None = None) -> dg.Definitions:
    """The definitions over a storage root (``AGIELO_STORAGE`` or ``./agielo_data`` by default)."""
    storage = storage or ObjectStorage()
    return dg.Definitions(
        assets=[raw_benchmark_logs, match_tables, ratings, competency_gap_tables, quarantine_report],
        jobs=[ingest_uploads, rate_benchmarks, report_quarantine],
        sensors=[raw_uploads_sensor],
        schedules=[nightly_rerate],
        resources={"storage": storage, "warehouse_io_manager": WarehouseIOManager(storage=storage)},
        executor=dg.in_process_executor,
    )


defs = build_definitions()
