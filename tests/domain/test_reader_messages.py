"""A rejected upload names every rule it breaks (the first row of each, the next ones numbered, the rest counted)."""

import json

import pytest

from agielo_dagster.domain.contract import MAX_REPORT_CHARS, IngestError, parse_benchmark_spec
from agielo_dagster.domain.readers import read_upload

SPEC = parse_benchmark_spec("metric: correct\nscoring: identity\n", "quiz", "raw/quiz/benchmark.yaml")


def rejected(data: bytes, file: str = "raw/quiz/agent_1.csv") -> IngestError:
    with pytest.raises(IngestError) as err:
        read_upload(data, file, SPEC)
    return err.value


def csv_rows(values: dict[int, tuple[str, str]], n: int = 20) -> bytes:
    rows = [values.get(i, (f"q{i}", "0.5")) for i in range(1, n + 1)]
    return ("test_case_id,correct\n" + "".join(f"{t},{m}\n" for t, m in rows)).encode()


def test_a_later_row_of_another_rule_does_not_hide_an_earlier_one():
    # row 6 out of range, row 11 a repeated id: both named, the first in the file first
    err = rejected(csv_rows({6: ("q6", "7"), 11: ("q2", "1")}))
    message = str(err)
    assert err.rule == "metric_in_range" and err.row == 6 and err.line == 7
    assert (
        "data row 6 (line 7): correct 7.0 is outside [0, 1] of scoring 'identity' (1 value(s)) (rule: metric_in_range)" in message
    )
    assert "data row 11 (line 12): test case 'q2' appears again (first at data row 2)" in message
    assert message.index("data row 6") < message.index("data row 11") and message.endswith("(rule: test_case_id_unique)")
    assert [p.rule for p in err.problems] == ["metric_in_range", "test_case_id_unique"]


def test_many_rows_breaking_a_rule_are_counted_not_listed():
    bad = {i: (f"q{i}", "9") for i in (3, 5, 8, 13, 14, 15, 19)}
    err = rejected(csv_rows({**bad, 4: ("", "0.5")}))
    message = str(err)
    assert "data row 3 (line 4): correct 9.0 is outside" in message and "(also data rows 5, 8, 13 and 3 more)" in message
    assert "data row 4 (line 5): test_case_id is missing or empty" in message
    assert len(message) <= MAX_REPORT_CHARS


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_missing_values_and_out_of_range_values_are_both_named(fmt):
    if fmt == "jsonl":
        rows = [{"test_case_id": f"q{i}", "correct": 0.5} for i in range(1, 12)]
        rows[5]["correct"] = 3
        rows[10]["correct"] = None
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    else:
        data = csv_rows({6: ("q6", "3"), 11: ("q11", "")}, n=11)
    err = rejected(data, f"raw/quiz/agent_1.{fmt}")
    assert [p.rule for p in err.problems] == ["metric_in_range", "metric_present"], str(err)
    assert [p.row for p in err.problems] == [6, 11]


def test_one_problem_reads_as_before():
    err = rejected(csv_rows({6: ("q6", "7")}))
    assert str(err) == (
        "raw/quiz/agent_1.csv: data row 6 (line 7): correct 7.0 is outside [0, 1] of scoring 'identity' (1 value(s))"
        " (rule: metric_in_range)"
    )
    assert err.problems == (err,)


def test_a_tag_file_names_every_rule_it_breaks():
    from agielo_dagster.domain.tags import read_tags

    data = b"test_case_id,subject,abilities\nq1,math,a\n q2,math,b\nq3,math,a;;b\nq4,math,c\nq1,bio,a\n"
    with pytest.raises(IngestError) as err:
        read_tags(data, "raw/quiz/test_cases.csv")
    assert [(p.rule, p.row) for p in err.value.problems] == [
        ("test_case_id_trimmed", 2),
        ("tag_list_item_empty", 3),
        ("test_case_id_unique", 5),
    ], str(err.value)


def test_a_benchmark_yaml_names_every_key_it_gets_wrong():
    text = "metric: 7\nscoring: bogus\ndescription: [1]\nfull_coverage: 2\ncolour: red\n"
    with pytest.raises(IngestError) as err:
        parse_benchmark_spec(text, "quiz", "raw/quiz/benchmark.yaml")
    rules = [p.rule for p in err.value.problems]
    assert rules == ["spec_keys", "spec_metric", "spec_description", "scoring_known", "spec_full_coverage"], str(err.value)
    assert err.value.rule == "spec_keys" and str(err.value).count("raw/quiz/benchmark.yaml") == 1


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_every_wrong_typed_jsonl_value_is_named_like_csv_problems():
    rows = [{"test_case_id": f"q{i}", "correct": 0.5} for i in range(1, 21)]
    for i in (3, 5, 8, 13, 14, 19):  # data rows 3, 5, … (1-based)
        rows[i - 1]["correct"] = "yes"
    for i in (4, 9):
        rows[i - 1]["test_case_id"] = [i]
    rows[16]["correct"] = None  # data row 17: missing, a rule of its own
    err = rejected(_jsonl(rows), "raw/quiz/agent_1.jsonl")
    message = str(err)
    assert "data row 3 (line 3): correct 'yes' is text, not a number" in message
    assert "(also data rows 5, 8, 13 and 2 more) (rule: metric_numeric)" in message
    assert (
        "data row 4 (line 4): test_case_id [4] is an array" in message
        and "(also data row 9) (rule: test_case_id_type)" in message
    )
    assert "data row 17 (line 17): correct is missing or empty (1 row(s))" in message
    assert [(p.rule, p.row) for p in err.problems] == [("metric_numeric", 3), ("test_case_id_type", 4), ("metric_present", 17)]


def test_every_value_of_a_wrong_typed_parquet_column_is_named():
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    metric = ["0.5"] * 10
    metric[1] = None  # data row 2 is missing, not wrong-typed: named under its own rule
    pq.write_table(pa.table({"test_case_id": [f"q{i}" for i in range(10)], "correct": metric}), sink)
    err = rejected(sink.getvalue(), "raw/quiz/agent_1.parquet")
    message = str(err)
    assert "data row 1: correct is a parquet column of text ('0.5' in this row), not numbers" in message
    assert "(also data rows 3, 4, 5 and 5 more) (rule: metric_numeric)" in message
    assert [(p.rule, p.row) for p in err.problems] == [("metric_numeric", 1), ("metric_present", 2)]
