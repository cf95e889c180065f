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

# the nightly re-rating adds the heavier estimators to every per-benchmark output
NIGHTLY_OUTPUTS = (*BENCHMARK_OUTPUTS, "estimator_comparison", "rating_uncertainty")

rate_benchmarks_nightly = dg.define_asset_job(
    "rate_benchmarks_nightly",
    selection=dg.AssetSelection.assets(*NIGHTLY_OUTPUTS),
    description="Everything rate_benchmarks does, plus estimator comparison and bootstrap uncertainty.",
)

rank_judgments = dg.define_asset_job(
    "rank_judgments",
    selection=dg.AssetSelection.assets("difficulty_judgments"),
    description="HodgeRank a set of pairwise difficulty judgments.",
)
