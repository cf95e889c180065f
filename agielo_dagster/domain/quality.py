"""Data-quality gate: a great_expectations 1.x suite over every upload before it is accepted.

dagster-ge pins great_expectations < 1, so the suite is built and run here directly on an
ephemeral GX context, over the normalized upload (after the input contract). It is a second,
independent opinion: an upload the contract accepts but the suite fails is rejected (rule
``quality_suite``). The suite mirrors the input contract:

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
import pyarrow as pa

from .contract import BenchmarkSpec


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


_SUITE_SCHEMA = pa.schema([("test_case_id", pa.string()), ("metric", pa.float64()), ("score", pa.float64())])


def _suite_frame(rows: pa.Table, upload: int = 0) -> pd.DataFrame:
    """The columns the suite checks, from a normalized upload (test_case_id, metric, score)."""
    frame = rows.select(["test_case_id", "metric", "score"]).to_pandas(strings_to_categorical=True)
    frame.insert(0, "upload", upload)
    return frame


def _release(batch_definition, columns) -> None:
    """Let GX drop the last frame it validated.

    GX's engine keeps the data of the last batch it validated (by batch id, one per asset) for as
    long as its context lives, and GX keeps its latest context for the process: the whole upload
    stayed in memory through every later step (2M matches: about 70 MB). Validating an empty frame
    under the same id, against an empty suite, replaces it, with GX's public API only.
    """
    import great_expectations as gx

    empty = pd.DataFrame({column: [] for column in columns})
    batch_definition.get_batch(batch_parameters={"dataframe": empty}).validate(gx.ExpectationSuite(name="release"))


def _run_suite(frame: pd.DataFrame, spec: BenchmarkSpec) -> list[Expectation]:
    batch_definition = _batch_definition()
    result = batch_definition.get_batch(batch_parameters={"dataframe": frame.reset_index(drop=True)}).validate(
        upload_suite(spec), result_format={"result_format": "COMPLETE", "unexpected_index_column_names": []}
    )
    _release(batch_definition, frame.columns)
    outcomes = []
    for r in result.results:
        kwargs = r.expectation_config.kwargs
        column = kwargs.get("column") or "+".join(kwargs.get("column_list") or [])
        rows = tuple(int(i) + 1 for i in (r.result.get("unexpected_index_list") or []))
        values = tuple(r.result.get("unexpected_list") or [])
        outcomes.append(Expectation(r.expectation_config.type, column, bool(r.success), rows, values))
    return outcomes


def validate_upload(rows: pa.Table, spec: BenchmarkSpec) -> list[Expectation]:
    """Run the GX suite on one normalized upload; rows in the outcomes are its 1-based data rows."""
    return _run_suite(_suite_frame(rows), spec)


def validate_uploads(uploads: list[pa.Table], spec: BenchmarkSpec) -> list[list[Expectation]]:
    """The suite's outcomes for each of several normalized uploads of one benchmark.

    Validates them together in one pass (GX's cost is mostly per validation, not per row); only
    if that pass fails is each upload validated alone, so that failures name the right file and row.
    """
    if len(uploads) > 1:
        columns = ["test_case_id", "metric", "score"]
        together = pa.concat_tables([t.select(columns).cast(_SUITE_SCHEMA) for t in uploads])
        upload = np.repeat(np.arange(len(uploads)), [t.num_rows for t in uploads])
        frame = together.to_pandas(strings_to_categorical=True)
        frame.insert(0, "upload", upload)
        combined = _run_suite(frame, spec)
        if all(e.success for e in combined):
            return [combined for _ in uploads]
    return [validate_upload(rows, spec) for rows in uploads]


def failed_expectations(uploads: list[pa.Table], spec: BenchmarkSpec) -> list[tuple[str, ...]]:
    """For each upload, the descriptions of the expectations it failed (empty when it passed)."""
    return [tuple(e.describe() for e in outcome if not e.success) for outcome in validate_uploads(uploads, spec)]
