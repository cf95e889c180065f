"""``upload_suite``: the great_expectations suite over a benchmark's accepted uploads, with the nightly re-rating.

The input contract judged every upload when it landed (``upload_ledger``); this check of the benchmark's files
(``raw_uploads``) states its rules again in GX's words over what was accepted (the match table and the provisional
agents' matches), so that a contract bug shows as a failed check (an error, naming the agent, test case and row of each
offending match). It is a check of the observed source, not of an asset the rating run materializes, so that the run
that rates a new upload leaves it out: importing great_expectations (about 3 CPU-s a process) would more than double
that run's cost. It runs with ``rate_benchmarks_nightly``, or from the UI.
"""

import dagster as dg
import pyarrow as pa
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.ledger import read_scoring
from agielo_dagster.domain.matches import every_match
from agielo_dagster.domain.stored import Stored

from .common import retried_on_storage_errors

SUITE_CHECK = "upload_suite"
SHOWN_ROWS = 5


@dg.asset_check(
    asset="raw_uploads",
    name=SUITE_CHECK,
    additional_ins={name: dg.AssetIn() for name in ("match_tables", "provisional_matches")},  # after the nightly rebuild
    blocking=False,
    description="The great_expectations suite over the benchmark's accepted uploads (its match table and the "
    "provisional agents' matches): test-case ids present and unique per agent, the metric inside the declared range, "
    "the score in [0, 1]. An independent audit of the input contract, run with the nightly re-rating; fails (an error) "
    "naming each offending match.",
)
def upload_suite(
    context: dg.AssetCheckExecutionContext, storage: ObjectStorage, match_tables: Stored, provisional_matches: Stored
) -> dg.AssetCheckResult:
    with retried_on_storage_errors(context):
        return suite_result(storage.store, context.partition_key, match_tables, provisional_matches)


def suite_result(store, benchmark: str, match_tables: Stored, provisional_matches: Stored) -> dg.AssetCheckResult:
    """The suite's verdict over the benchmark's stored matches (passed where none is stored: withdrawn)."""
    from agielo_dagster.domain.quality import audit_matches  # great_expectations loads with the check alone

    matches = every_match(match_tables, provisional_matches)
    if matches is None:
        return dg.AssetCheckResult(passed=True, metadata={"benchmark": benchmark, "matches": 0})
    scoring = read_scoring(store, benchmark)
    lo, hi = (scoring.lo, scoring.hi) if scoring is not None else (float("-inf"), float("inf"))
    outcomes = audit_matches(matches, benchmark, lo, hi)
    failed = [e for e in outcomes if not e.success]
    return dg.AssetCheckResult(
        passed=not failed,
        severity=dg.AssetCheckSeverity.ERROR,
        description="; ".join(_described(e, matches) for e in failed) or f"{len(outcomes)} expectations met",
        metadata={"benchmark": benchmark, "matches": matches.num_rows, "expectations": len(outcomes), "failed": len(failed)},
    )


def _described(failure, matches: pa.Table) -> str:
    """``expect_…(metric) failed on 2 match(es): row 7 (agent a, test case t): 1.5, …``."""
    shown = []
    for row, value in list(zip(failure.rows, failure.values, strict=False))[:SHOWN_ROWS]:
        agent, case = (matches.column(c)[row - 1].as_py() for c in ("agent_id", "test_case_id"))
        shown.append(f"row {row} (agent {agent}, test case {case}): {value!r}")
    more = f" and {len(failure.rows) - SHOWN_ROWS} more" if len(failure.rows) > SHOWN_ROWS else ""
    return f"{failure.expectation}({failure.column}) failed on {len(failure.rows)} match(es): {', '.join(shown)}{more}"
