"""Jobs: rating a benchmark (ingest included), the nightly re-rating, the quarantine report, judgments, tidying."""

import dagster as dg

from .assets.common import RUN_TAG
from .housekeeping import tidy_warehouse
from .runs import RERATE_TAG

# a benchmark's run: its ledger first, then every output tagged for it (the match table's step ends the run early
# when the ledger's data version, the accepted inputs, did not change: assets/matches.py)
LEDGER = dg.AssetSelection.assets("upload_ledger") | dg.AssetSelection.checks_for_assets("upload_ledger")
RATE_SELECTION = LEDGER | dg.AssetSelection.tag(RUN_TAG, "rating")
# the great_expectations audit of the accepted uploads (assets/quality.py), a check of the observed files: nightly
SUITE = dg.AssetSelection.checks(dg.AssetCheckKey(dg.AssetKey("raw_uploads"), "upload_suite"))

rate_benchmarks = dg.define_asset_job(
    "rate_benchmarks",
    selection=RATE_SELECTION,
    description="Bring a benchmark up to date: validate new or changed uploads, then rebuild its match table, "
    "ratings, reliability report, competency gaps and report when the accepted uploads changed.",
)

rate_benchmarks_nightly = dg.define_asset_job(
    "rate_benchmarks_nightly",
    selection=RATE_SELECTION | SUITE | dg.AssetSelection.tag(RUN_TAG, "nightly"),
    tags={RERATE_TAG: "true"},
    description="Everything rate_benchmarks does, always re-rating, plus estimator comparison, bootstrap uncertainty "
    "and the great_expectations suite over the accepted matches.",
)

convert_incoming = dg.define_asset_job(
    "convert_incoming",
    selection=dg.AssetSelection.assets("harness_uploads") | dg.AssetSelection.checks_for_assets("harness_uploads"),
    description="Turn new or changed harness logs under incoming/ into uploads of their benchmarks.",
)

plan_placement = dg.define_asset_job(
    "plan_placement",
    selection=dg.AssetSelection.assets("placement_plans"),
    description="Plan the next test cases to evaluate a new agent on (config: agent, budget); used by `agielo plan`.",
)

rate_leaderboard = dg.define_asset_job(
    "rate_leaderboard",
    selection=dg.AssetSelection.groups("leaderboard"),
    description="Re-fit the leaderboard across every benchmark (from its last fit) and its pages, once benchmarks "
    "were rated; run by `agielo run` and the sensor when the benchmarks' ratings or its code changed.",
)

report_quarantine = dg.define_asset_job("report_quarantine", selection=dg.AssetSelection.assets("quarantine_report"))

rank_judgments = dg.define_asset_job(
    "rank_judgments",
    selection=dg.AssetSelection.assets("difficulty_judgments"),
    description="HodgeRank a set of pairwise difficulty judgments.",
)

JOBS = [
    convert_incoming,
    plan_placement,
    rate_benchmarks,
    rate_benchmarks_nightly,
    rank_judgments,
    rate_leaderboard,
    report_quarantine,
    tidy_warehouse,
]
