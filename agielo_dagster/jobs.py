"""Jobs: ingesting uploads, rating benchmarks, and the quarantine report."""

import dagster as dg

ingest_uploads = dg.define_asset_job(
    "ingest_uploads",
    selection=dg.AssetSelection.assets("raw_benchmark_logs"),
    description="Validate uploads (one partition or a range of them per run).",
)

# every per-benchmark output, in dependency order
BENCHMARK_OUTPUTS = (
    "match_tables",
    "input_manifests",
    "rating_snapshots",
    "test_case_ratings",
    "agent_ratings",
    "reliability_reports",
    "competency_gap_tables",
)

rate_benchmarks = dg.define_asset_job(
    "rate_benchmarks",
    selection=dg.AssetSelection.assets(*BENCHMARK_OUTPUTS),
    description="Rebuild a benchmark's match table, ratings, reliability report and competency gaps.",
)

report_quarantine = dg.define_asset_job("report_quarantine", selection=dg.AssetSelection.assets("quarantine_report"))
