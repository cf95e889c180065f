"""Data-quality gate: a great_expectations 1.x suite over every upload before it is accepted.

dagster-ge pins great_expectations < 1, so the suite is built and run here directly on an
ephemeral GX context, over the normalized upload (after the input contract). It is a second,
independent opinion: an upload the contract accepts but the suite fails is rejected (rule
``quality_suite``). The suite mirrors the input contract:

- ``test_case_id`` present in every row and unique within the file (within each upload when several
  uploads of a run are validated together);
- the metric column numeric and, where the scoring function declares one, inside its range;
- the score (derived from the metric) inside [0, 1].

An upload of more than ``SUITE_ROWS`` rows is validated in parts of about that many, each holding
every row of its test-case ids (so that each part's uniqueness is the whole's): GX's pandas
frames of a 10-million-row upload took about 3.4 GB at once (issue 25).
"""

import logging
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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
SUITE_ROWS = 1_000_000
"""The most rows validated in one GX validation (about; see the module docstring)."""


def _suite_frame(rows: pa.Table, upload: int | np.ndarray = 0) -> pd.DataFrame:
    """The columns the suite checks, from a normalized upload (test_case_id, metric, score), and each row's upload."""
    rows = rows.select(["test_case_id", "metric", "score"])
    ids = rows.column("test_case_id")
    if pa.types.is_dictionary(ids.type):  # a part of a wide upload keeps the whole dictionary: as a categorical,
        rows = rows.set_column(0, "test_case_id", ids.cast(ids.type.value_type))  # pandas checked and hashed all of it
    # Python strings, each distinct id one object (to_pandas deduplicates): as small as a categorical where uploads
    # share ids, and a part of a million distinct ids converts in 0.1 s against about 2 s as a categorical
    frame = rows.to_pandas()
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


def _run_suite_in_parts(rows: pa.Table, upload: np.ndarray | int, spec: BenchmarkSpec) -> list[Expectation]:
    """The suite over ``rows`` (each row's ``upload``), in parts of at most about ``SUITE_ROWS`` rows parted by test-case
    id; the parts' outcomes merged, their rows numbered as in ``rows`` (1-based)."""
    parts = -(-rows.num_rows // SUITE_ROWS)
    if parts <= 1:
        return _run_suite(_suite_frame(rows, upload), spec)
    ids = rows.column("test_case_id")
    codes = pc.dictionary_encode(ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids).indices
    part = codes.fill_null(0).to_numpy(zero_copy_only=False) % parts
    del codes
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    del part
    merged: list[list] = []
    for k in range(parts):
        taken = order[bounds[k] : bounds[k + 1]]
        outcomes = _run_suite(_suite_frame(rows.take(taken), upload if np.isscalar(upload) else upload[taken]), spec)
        merged = merged or [[e, [], []] for e in outcomes]
        for entry, e in zip(merged, outcomes, strict=True):
            entry[1].extend(int(taken[r - 1]) + 1 for r in e.rows)
            entry[2].extend(e.values)
            entry[0] = entry[0] if e.success else e
    results = []
    for first, found, values in merged:
        by_row = sorted(range(len(found)), key=found.__getitem__)
        values = [values[i] for i in by_row] if len(values) == len(found) else values
        results.append(
            Expectation(first.expectation, first.column, first.success, tuple(found[i] for i in by_row), tuple(values))
        )
    return results


def _suite_columns(rows: pa.Table) -> pa.Table:
    """``rows`` with the suite's column types (normalized uploads have them: a cast of each of 5,000 small tables
    costs more than the suite)."""
    return rows if rows.schema.remove_metadata() == _SUITE_SCHEMA else rows.cast(_SUITE_SCHEMA)


def validate_upload(rows: pa.Table, spec: BenchmarkSpec) -> list[Expectation]:
    """Run the GX suite on one normalized upload; rows in the outcomes are its 1-based data rows."""
    return _run_suite_in_parts(rows, 0, spec)


def validate_uploads(uploads: list[pa.Table], spec: BenchmarkSpec) -> list[list[Expectation]]:
    """The suite's outcomes for each of several normalized uploads of one benchmark.

    Validates them together in one pass (GX's cost is mostly per validation, not per row); only
    if that pass fails is each upload validated alone, so that failures name the right file and row.
    """
    if len(uploads) > 1:
        columns = ["test_case_id", "metric", "score"]
        # one chunk a column: pandas' arrow-backed columns hash and measure chunk by chunk (5,000 uploads: half the cost)
        together = pa.concat_tables([_suite_columns(t.select(columns)) for t in uploads]).combine_chunks()
        upload = np.repeat(np.arange(len(uploads)), [t.num_rows for t in uploads])
        combined = _run_suite_in_parts(together, upload, spec)
        del together
        if all(e.success for e in combined):
            return [combined for _ in uploads]
    return [validate_upload(rows, spec) for rows in uploads]


def failed_expectations(uploads: list[pa.Table], spec: BenchmarkSpec) -> list[tuple[str, ...]]:
    """For each upload, the descriptions of the expectations it failed (empty when it passed)."""
    return [tuple(e.describe() for e in outcome if not e.success) for outcome in validate_uploads(uploads, spec)]
