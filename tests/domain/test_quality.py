"""The great_expectations gate over uploads, run directly (GX 1.x)."""

import gc

import numpy as np
import pandas as pd
import pyarrow as pa

from agielo_dagster.domain.contract import parse_benchmark_spec
from agielo_dagster.domain.quality import failed_expectations

SPEC = parse_benchmark_spec("metric: correct\nscoring: identity\n", "quiz", "benchmark.yaml")


def upload(n, *, metric=1.0):
    ids = np.char.add("case-", np.arange(n).astype(str))
    return pa.table({"test_case_id": ids, "metric": np.full(n, metric), "score": np.full(n, min(max(metric, 0.0), 1.0))})


def frames_with_rows(n):
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, pd.DataFrame) and len(o) == n]


def test_a_failed_expectation_names_the_upload_and_its_rows():
    failures = failed_expectations([upload(3), upload(4, metric=2.0)], SPEC)
    assert failures[0] == ()
    assert len(failures[1]) == 1 and "metric" in failures[1][0] and "row 1: 2.0" in failures[1][0]


def test_gx_does_not_keep_the_validated_uploads_alive():
    """GX caches the last batch it validated for the life of the process: every later step paid for it."""
    uploads = [upload(30_001), upload(30_001)]
    assert failed_expectations(uploads, SPEC) == [(), ()]
    assert frames_with_rows(60_002) == []  # the two validated together
    assert failed_expectations([upload(50_003)], SPEC) == [()]
    assert frames_with_rows(50_003) == []


def test_an_upload_validated_in_parts_fails_on_the_same_rows_as_whole(monkeypatch):
    """A wide upload is validated in parts of about SUITE_ROWS rows, each holding every row of its test-case ids
    (issue 25); the outcome, rows numbered as in the upload, is the whole upload's."""
    from agielo_dagster.domain import quality

    ids = np.char.add("case-", (np.arange(40) % 31).astype(str)).astype(object)  # 9 ids repeated
    ids[[5, 17]] = None
    metric = np.linspace(-0.5, 1.5, 40)
    rows = pa.table({"test_case_id": pa.array(ids, pa.string()), "metric": metric, "score": np.clip(metric, 0, 1)})
    whole = quality.validate_upload(rows, SPEC)
    monkeypatch.setattr(quality, "SUITE_ROWS", 7)
    parted = quality.validate_upload(rows, SPEC)
    assert [e.expectation for e in parted] == [e.expectation for e in whole]
    assert {e.expectation for e in whole if not e.success} == {
        "expect_column_values_to_not_be_null",
        "expect_compound_columns_to_be_unique",
        "expect_column_values_to_be_between",
    }
    for p, w in zip(parted, whole, strict=True):
        assert (p.success, p.rows, p.column) == (w.success, w.rows, w.column)
        assert len(p.values) == len(w.values)
