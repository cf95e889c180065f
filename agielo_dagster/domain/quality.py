"""The great_expectations 1.x suite over a benchmark's match table: an independent audit of the input contract.

dagster-ge pins great_expectations < 1, so the suite is built and run here directly on an ephemeral GX context, in
the asset check ``upload_suite`` of ``raw_uploads`` (``assets/quality.py``). Every upload was already checked by the
input contract, which names the file, row and rule of what it rejects; the suite states the same rules again, in
GX's words, over what was accepted, so that a contract bug shows as a failed check:

- ``test_case_id`` present in every row and unique within each agent's results;
- the metric numeric and, where the scoring function declares one, inside its range;
- the score (derived from the metric) inside [0, 1].

The check runs with the nightly re-rating, not with the run that rates a new upload: importing great_expectations
costs about 3 CPU-s a process, more than the rest of that run's work (docs/performance.md). A match table of more
than ``SUITE_ROWS`` rows is validated in parts of about that many, each holding every row of its test-case ids (so
that each part's uniqueness is the whole's): GX's pandas frames of 10 million rows took about 3.4 GB at once.
"""

import logging
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


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


def match_suite(benchmark: str, lo: float, hi: float):
    """The GX expectation suite of a match table (columns: agent, test_case_id, metric, score); ``lo``, ``hi``: the
    metric's declared range (infinite where the scoring declares none)."""
    import great_expectations as gx

    e = gx.expectations
    suite = gx.ExpectationSuite(name=f"matches_{benchmark}")
    suite.add_expectation(e.ExpectColumnToExist(column="test_case_id"))
    suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column="test_case_id"))
    suite.add_expectation(e.ExpectCompoundColumnsToBeUnique(column_list=["agent", "test_case_id"]))
    suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column="metric"))
    if np.isfinite(lo) and np.isfinite(hi):
        suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="metric", min_value=lo, max_value=hi))
    suite.add_expectation(e.ExpectColumnValuesToBeBetween(column="score", min_value=0.0, max_value=1.0))
    return suite


SUITE_ROWS = 1_000_000
"""The most rows validated in one GX validation (about; see the module docstring)."""


def _suite_frame(rows: pa.Table, agent: np.ndarray) -> pd.DataFrame:
    """The columns the suite checks (test_case_id, metric, score), and each row's agent (a code)."""
    rows = rows.select(["test_case_id", "metric", "score"])
    ids = rows.column("test_case_id")
    if pa.types.is_dictionary(ids.type):  # a part of a wide upload keeps the whole dictionary: as a categorical,
        rows = rows.set_column(0, "test_case_id", ids.cast(ids.type.value_type))  # pandas checked and hashed all of it
    # Python strings, each distinct id one object (to_pandas deduplicates): as small as a categorical where uploads
    # share ids, and a part of a million distinct ids converts in 0.1 s against about 2 s as a categorical
    frame = rows.to_pandas()
    frame.insert(0, "agent", agent)
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


def _run_suite(frame: pd.DataFrame, suite) -> list[Expectation]:
    batch_definition = _batch_definition()
    result = batch_definition.get_batch(batch_parameters={"dataframe": frame.reset_index(drop=True)}).validate(
        suite, result_format={"result_format": "COMPLETE", "unexpected_index_column_names": []}
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


def _run_suite_in_parts(rows: pa.Table, agent: np.ndarray, suite) -> list[Expectation]:
    """The suite over ``rows`` (each row's ``agent``), in parts of at most about ``SUITE_ROWS`` rows parted by test-case
    id; the parts' outcomes merged, their rows numbered as in ``rows`` (1-based)."""
    parts = -(-rows.num_rows // SUITE_ROWS)
    if parts <= 1:
        return _run_suite(_suite_frame(rows, agent), suite)
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
        outcomes = _run_suite(_suite_frame(rows.take(taken), agent[taken]), suite)
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


def audit_matches(matches: pa.Table, benchmark: str, lo: float = -np.inf, hi: float = np.inf) -> list[Expectation]:
    """The suite's outcomes over a match table (``MATCH_COLUMNS``); rows in the outcomes are its 1-based rows."""
    ids = matches.column("agent_id")
    agent = pc.dictionary_encode(ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids).indices
    agent = agent.fill_null(-1).to_numpy(zero_copy_only=False)
    _batch_definition()  # GX builds a suite only once a context is active
    return _run_suite_in_parts(matches.select(["test_case_id", "metric", "score"]), agent, match_suite(benchmark, lo, hi))
