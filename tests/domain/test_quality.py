"""The great_expectations suite over a match table, run directly (GX 1.x)."""

import gc

import numpy as np
import pandas as pd
import pyarrow as pa

from agielo_dagster.domain import quality
from agielo_dagster.domain.quality import audit_matches


def matches(n, *, agents=1, metric=1.0):
    ids = np.char.add("case-", (np.arange(n) % (n // agents)).astype(str))
    agent = np.char.add("model-", (np.arange(n) // (n // agents)).astype(str))
    return pa.table(
        {"test_case_id": ids, "agent_id": agent, "metric": np.full(n, metric), "score": np.full(n, min(max(metric, 0.0), 1.0))}
    )


def frames_with_rows(n):
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, pd.DataFrame) and len(o) == n]


def failed(outcomes):
    return {e.expectation: e for e in outcomes if not e.success}


def test_a_failed_expectation_names_its_rows_and_values():
    out_of_range = matches(2, metric=2.0).set_column(1, "agent_id", pa.array(["model-2"] * 2))
    table = pa.concat_tables([matches(4, agents=2), out_of_range])  # rows 5-6: a third agent's, out of range
    assert failed(audit_matches(table, "quiz", 0.0, 1.0)).keys() == {"expect_column_values_to_be_between"}
    bad = failed(audit_matches(table, "quiz", 0.0, 1.0))["expect_column_values_to_be_between"]
    assert bad.column == "metric" and bad.rows == (5, 6) and "row 5: 2.0" in bad.describe()
    assert failed(audit_matches(table, "quiz")) == {}  # no declared range: no range expectation


def test_one_agents_repeated_test_case_fails_and_two_agents_sharing_one_do_not():
    shared = matches(6, agents=2)  # model-0 and model-1 each on case-0..2
    assert failed(audit_matches(shared, "quiz")) == {}
    repeated = pa.concat_tables([shared, shared.slice(1, 1)])  # model-0's case-1 again, row 7
    unique = failed(audit_matches(repeated, "quiz"))["expect_compound_columns_to_be_unique"]
    assert unique.rows == (2, 7)


def test_gx_does_not_keep_the_validated_matches_alive():
    """GX caches the last batch it validated for the life of the process: every later step paid for it."""
    assert failed(audit_matches(matches(60_002, agents=2), "quiz")) == {}
    assert frames_with_rows(60_002) == []


def test_a_match_table_validated_in_parts_fails_on_the_same_rows_as_whole(monkeypatch):
    """A large match table is validated in parts of about SUITE_ROWS rows, each holding every row of its test-case ids;
    the outcome, rows numbered as in the table, is the whole table's."""
    ids = np.char.add("case-", (np.arange(40) % 31).astype(str)).astype(object)  # 9 ids repeated
    ids[[5, 17]] = None
    metric = np.linspace(-0.5, 1.5, 40)
    rows = pa.table(
        {
            "test_case_id": pa.array(ids, pa.string()),
            "agent_id": pa.array(["model-0"] * 40),
            "metric": metric,
            "score": np.clip(metric, 0, 1),
        }
    )
    whole = audit_matches(rows, "quiz", 0.0, 1.0)
    monkeypatch.setattr(quality, "SUITE_ROWS", 7)
    parted = audit_matches(rows, "quiz", 0.0, 1.0)
    assert [e.expectation for e in parted] == [e.expectation for e in whole]
    assert set(failed(whole)) == {
        "expect_column_values_to_not_be_null",
        "expect_compound_columns_to_be_unique",
        "expect_column_values_to_be_between",
    }
    for p, w in zip(parted, whole, strict=True):
        assert (p.success, p.rows, p.column) == (w.success, w.rows, w.column)
        assert len(p.values) == len(w.values)
