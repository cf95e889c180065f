"""Data-quality gates: a great_expectations 1.x suite per upload, run inside a blocking asset check.

dagster-ge pins great_expectations < 1, so the suite is built and run here directly on an
ephemeral GX context. The suite mirrors the input contract:

- ``test_case_id`` present in every row and unique within the file (within each upload when several
  uploads of a run are validated together);
- the metric column numeric and, where the scoring function declares one, inside its range;
- the score (derived from the metric) inside [0, 1].
"""

import logging
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from agielo_dagster.ingest import BenchmarkSpec


@dataclass(frozen=True)
class Expectation:
    """One expectation's outcome, with the 1-based data rows it failed on."""

    expectation: str
    column: str
    success: bool
    rows: tuple[int, ...] = ()
    values: tuple = ()

    def describe(self) -> str:
        if self.success:
            return f"{self.expectation}({self.column}): passed"
        shown = ", ".join(f"row {r}: {v!r}" for r, v in zip(self.rows[:5], self.values[:5], strict=False))
        more = f" and {len(self.rows) - 5} more" if len(self.rows) > 5 else ""
        return f"{self.expectation}({self.column}) failed on {len(self.rows)} row(s): {shown}{more}"


@lru_cache(maxsize=1)
def _batch_definition():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas("uploads").add_dataframe_asset("upload")
    return asset.add_batch_definition_whole_dataframe("whole_file")


def upload_suite(spec: BenchmarkSpec):
    """The GX expectation suite of one benchmark's uploads (columns: upload, test_case_id, metric, score)."""
    import great_expectations as gx

    e = gx.expectations
    suite = gx.ExpectationSuite(name=f"upload_{spec.name}")
    suite.add_expectation(e.ExpectColumnToExist(column="test_case_id"))
    suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column="test_case_id"))
    suite.add_expectation(e.ExpectCompoundColumnsToBeUnique(column_list=["upload", "test_case_id"]))
    suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column="metric"))
    if np.isfinite(spec.scoring.lo) and np.isfinite(spec.scoring.hi):
        suite.add_expectation(
            e.ExpectColumnValuesToBeBetween(column="metric", min_value=spec.scoring.lo, max_value=spec.scoring.hi)
        )
    suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="score", min_value=0.0, max_value=1.0))
    return suite


def _suite_frame(log: pd.DataFrame, spec: BenchmarkSpec, upload: int = 0) -> pd.DataFrame:
    """The columns the suite checks; metric values that are not numbers become NaN (and fail)."""
    frame = pd.DataFrame(
        {
            "test_case_id": log["test_case_id"].astype("string") if "test_case_id" in log else pd.Series(dtype="string"),
            "metric": pd.to_numeric(log[spec.metric], errors="coerce") if spec.metric in log else np.nan,
        }
    )
    metric = frame["metric"].to_numpy(dtype=np.float64)
    finite = np.isfinite(metric)
    frame["metric"] = np.where(finite, metric, np.nan)
    score = np.full(len(frame), np.nan)
    if spec.scoring.name == "binary":
        score[finite] = (metric[finite] >= spec.scoring.threshold).astype(float)
    else:
        score[finite] = (metric[finite] - spec.scoring.lo) / (spec.scoring.hi - spec.scoring.lo)
        if not spec.scoring.higher_is_better:
            score[finite] = 1.0 - score[finite]
    frame["score"] = score
    frame.insert(0, "upload", upload)
    return frame


def _run_suite(frame: pd.DataFrame, spec: BenchmarkSpec) -> list[Expectation]:
    result = (
        _batch_definition()
        .get_batch(batch_parameters={"dataframe": frame.reset_index(drop=True)})
        .validate(upload_suite(spec), result_format={"result_format": "COMPLETE", "unexpected_index_column_names": []})
    )
    outcomes = []
    for r in result.results:
        kwargs = r.expectation_config.kwargs
        column = kwargs.get("column") or "+".join(kwargs.get("column_list") or [])
        rows = tuple(int(i) + 1 for i in (r.result.get("unexpected_index_list") or []))
        values = tuple(r.result.get("unexpected_list") or [])
        outcomes.append(Expectation(r.expectation_config.type, column, bool(r.success), rows, values))
    return outcomes


def validate_upload(log: pd.DataFrame, spec: BenchmarkSpec) -> list[Expectation]:
    """Run the GX suite on one parsed upload; rows in the outcomes are its 1-based data rows."""
    return _run_suite(_suite_frame(log, spec), spec)


def validate_uploads(logs: list[pd.DataFrame], spec: BenchmarkSpec) -> list[list[Expectation]]:
    """The suite's outcomes for each of several uploads of one benchmark.

    Validates them together in one pass (GX's cost is mostly per validation, not per row); only
    if that pass fails is each upload validated alone, so that failures name the right file and row.
    """
    if len(logs) > 1:
        combined = _run_suite(pd.concat([_suite_frame(log, spec, k) for k, log in enumerate(logs)], ignore_index=True), spec)
        if all(e.success for e in combined):
            return [combined for _ in logs]
    return [validate_upload(log, spec) for log in logs]
