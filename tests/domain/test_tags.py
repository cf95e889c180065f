"""Tags: a tag file is validated like any input (each problem one IngestError naming file, row and rule), and
upload metadata becomes tags only where it describes the test case."""

import io
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agielo_dagster.domain.contract import MAX_MESSAGE_CHARS, IngestError
from agielo_dagster.domain.readers import read_upload
from agielo_dagster.domain.tags import (
    MAX_TAG_ITEMS,
    MAX_TAG_VALUE_CHARS,
    abilities_of,
    is_tag_file,
    merge_tags,
    read_tags,
    tags_from_metadata,
)

FILE = "raw/quiz/test_cases.csv"


def parquet(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_good_tag_file_reads_with_single_and_multi_valued_tags():
    data = b"test_case_id,subject,abilities,year\nq1,math,algebra; geometry,2020\nq2, code ,,2021\nq3,,logic,\n"
    table = read_tags(data, FILE)
    assert table.column_names == ["test_case_id", "subject", "abilities", "year"]
    assert table.schema.field("subject").type == pa.string()
    assert table.schema.field("abilities").type == pa.list_(pa.string())
    assert table.to_pylist() == [
        {"test_case_id": "q1", "subject": "math", "abilities": ["algebra", "geometry"], "year": "2020"},
        {"test_case_id": "q2", "subject": "code", "abilities": None, "year": "2021"},
        {"test_case_id": "q3", "subject": None, "abilities": ["logic"], "year": None},
    ]


def test_jsonl_and_parquet_arrays_are_multi_valued_tags():
    table = read_tags(
        jsonl(
            {"test_case_id": 1, "abilities": ["a", "b"], "n": 3, "ok": True},
            {"test_case_id": "2", "abilities": "c", "n": 4.5, "ok": False},
        ),
        "raw/quiz/test_cases.jsonl",
    )
    assert table.to_pylist() == [
        {"test_case_id": "1", "abilities": ["a", "b"], "n": "3", "ok": "true"},
        {"test_case_id": "2", "abilities": ["c"], "n": "4.5", "ok": "false"},
    ]
    source = pa.table({"test_case_id": ["a", "b"], "abilities": [["x", "y"], None], "year": [2020, 2021]})
    table = read_tags(parquet(source), "raw/quiz/test_cases.parquet")
    assert table.schema.field("abilities").type == pa.list_(pa.string())
    assert table.column("abilities").to_pylist() == [["x", "y"], None]
    assert table.column("year").to_pylist() == ["2020", "2021"]
    # plain text that merely starts with a bracket stays text
    table = read_tags(
        jsonl({"test_case_id": "a", "note": "[draft]"}, {"test_case_id": "b", "note": "x"}), "raw/q/test_cases.jsonl"
    )
    assert table.column("note").to_pylist() == ["[draft]", "x"]


BAD = [
    # (file name, bytes, rule, data row or None)
    ("test_cases.csv", b"id,subject\nq1,math\n", "has_test_case_id", None),
    ("test_cases.csv", b"test_case_id\nq1\n", "has_tags", None),
    ("test_cases.csv", b"test_case_id,rating\nq1,3\n", "tag_name_reserved", None),
    ("test_cases.csv", b"test_case_id,benchmark\nq1,3\n", "tag_name_reserved", None),
    ("test_cases.csv", b"test_case_id,sub ject\nq1,3\n", "tag_name", None),
    ("test_cases.csv", b"test_case_id,</script>\nq1,3\n", "tag_name", None),
    ("test_cases.csv", b"test_case_id,subject\n", "has_rows", None),
    ("test_cases.csv", b"", "log_not_empty", None),
    ("test_cases.csv", b"test_case_id,subject\nq1,math\nq1,code\n", "test_case_id_unique", 2),
    ("test_cases.csv", b"test_case_id,subject\nq1,math\n,code\n", "test_case_id_present", 2),
    ("test_cases.csv", b"test_case_id,subject\n q1,math\n", "test_case_id_trimmed", 1),
    ("test_cases.csv", b"test_case_id,subject\nq1,math\n\nq2,x\n", "csv_blank_row", 2),
    ("test_cases.csv", b"test_case_id,subject\nq1,3,4\n", "csv_row_width", 1),
    ("test_cases.csv", b"test_case_id,subject,subject\nq1,3,4\n", "unique_columns", None),
    ("test_cases.csv", b"test_case_id,subject\nq1,\xff\n", "utf8", None),
    ("test_cases.csv", b"test_case_id,abilities\nq1,a;;b\n", "tag_list_item_empty", 1),
    ("test_cases.csv", b"test_case_id,abilities\nq1,a\nq2,c;\n", "tag_list_item_empty", 2),
    ("test_cases.csv", b"test_case_id,abilities\nq1,a;b;a\n", "tag_list_duplicate", 1),
    (
        "test_cases.csv",
        b"test_case_id,abilities\nq1,a\nq2," + b";".join(b"x%d" % i for i in range(MAX_TAG_ITEMS + 1)) + b"\n",
        "tag_list_length",
        2,
    ),
    ("test_cases.csv", b"test_case_id,subject\nq1," + b"x" * (MAX_TAG_VALUE_CHARS + 1) + b"\n", "tag_value_length", 1),
    ("test_cases.jsonl", jsonl({"test_case_id": "a", "abilities": [["nested"]]}), "tag_value_type", 1),
    ("test_cases.jsonl", jsonl({"test_case_id": "a", "meta": "x"}, {"test_case_id": "b", "meta": {"k": 1}}), "tag_value_type", 2),
    ("test_cases.jsonl", jsonl({"test_case_id": 1.5, "subject": "a"}), "test_case_id_type", 1),
    ("test_cases.jsonl", jsonl({"subject": "a", "test_case_id": "x"}, {"subject": "b"}), "test_case_id_present", 2),
    ("test_cases.jsonl", b'{"test_case_id": "a", "subject": "x"}\n{"test_case_id": "b", \n', "jsonl_parse", None),
    ("test_cases.parquet", parquet(pa.table({"test_case_id": [1.0], "s": ["x"]})), "test_case_id_type", 1),
    ("test_cases.parquet", b"PAR1" + bytes(8) + b"PAR1", "parquet_parse", None),
    ("test_cases.txt", b"test_case_id,subject\nq1,math\n", "log_format", None),
]


@pytest.mark.parametrize("name, data, rule, row", BAD, ids=[f"{r}-{i}" for i, (_, _, r, _) in enumerate(BAD)])
def test_bad_tag_files_get_clear_errors(name, data, rule, row):
    file = f"raw/quiz/{name}"
    with pytest.raises(IngestError) as err:
        read_tags(data, file, max_bytes=64 * 1024)
    assert err.value.rule == rule, str(err.value)
    assert err.value.row == row, str(err.value)
    message = str(err.value)
    assert message.startswith(f"{file}:") and message.endswith(f"(rule: {rule})") and len(message) <= MAX_MESSAGE_CHARS
    if row is not None and name.endswith(".csv"):
        assert err.value.line is not None and f"data row {row} (line {err.value.line})" in message


def test_a_csv_error_names_the_line_after_a_multi_line_value():
    data = b'test_case_id,note,abilities\nq1,"two\nlines",a\nq2,x,b;;c\n'
    with pytest.raises(IngestError) as err:
        read_tags(data, FILE)
    assert (err.value.rule, err.value.row, err.value.line) == ("tag_list_item_empty", 2, 4)


def test_size_limit_and_wrong_input_type():
    with pytest.raises(IngestError) as err:
        read_tags(b"test_case_id,subject\n" + b"q,x\n" * 100, FILE, max_bytes=100)
    assert err.value.rule == "log_size"
    with pytest.raises(TypeError):
        read_tags("test_case_id,subject\nq,x\n", FILE)  # text, not the file's bytes


def test_tag_files_are_named_apart_from_uploads():
    assert is_tag_file("test_cases.csv") and is_tag_file("test_cases.PARQUET") and is_tag_file("test_cases.jsonl")
    assert not is_tag_file("test_cases.yaml") and not is_tag_file("agent_1.csv") and not is_tag_file("test_cases")


def upload(text: bytes, agent: str):
    from agielo_dagster.domain.contract import parse_benchmark_spec

    spec = parse_benchmark_spec(b"metric: correct\nscoring: identity\n", "quiz", "raw/quiz/benchmark.yaml")
    return read_upload(text, f"raw/quiz/{agent}.csv", spec)


def test_metadata_that_describes_the_test_case_becomes_tags():
    first = upload(b"test_case_id,correct,label,predicted,skills,bad name\nq1,1,3,3,x;y,1\nq2,0,4,5,z,2\n", "agent_1")
    second = upload(b"test_case_id,correct,label,predicted,skills,bad name\nq2,1,4,4,z,2\nq3,0,7,1,,3\n", "agent_2")
    tags = tags_from_metadata([first, second])
    # 'predicted' differs between agents on q2: it is about the answer, not the test case; 'bad name' is no tag name
    assert tags.column_names == ["test_case_id", "label", "skills"]
    assert tags.to_pylist() == [
        {"test_case_id": "q1", "label": "3", "skills": ["x", "y"]},
        {"test_case_id": "q2", "label": "4", "skills": ["z"]},
        {"test_case_id": "q3", "label": "7", "skills": None},
    ]
    # a jsonl upload's typed metadata agrees with a csv upload's text
    typed = pa.table({"test_case_id": ["q1"], "metric": [1.0], "score": [1.0], "meta.label": pa.array([3], pa.int64())})
    assert tags_from_metadata([first, typed]).column("label").to_pylist() == ["3", "4"]
    # metadata never rejects: a column breaking a tag rule is simply left out
    broken = pa.table({"test_case_id": ["q1"], "meta.skills": ["a;;b"], "meta.ok": ["y"]})
    assert tags_from_metadata(broken).column_names == ["test_case_id", "ok"]


def test_the_tag_file_wins_over_metadata_column_by_column():
    file_tags = read_tags(b"test_case_id,label,topic\nq1,L,T\nq9,M,U\n", FILE)
    meta = pa.table({"test_case_id": ["q1", "q2"], "label": ["3", "4"], "skills": pa.array([["x"], ["y", "z"]])})
    merged = merge_tags(file_tags, meta)
    assert merged.column_names == ["test_case_id", "label", "topic", "skills"]
    assert merged.to_pylist() == [
        {"test_case_id": "q1", "label": "L", "topic": "T", "skills": ["x"]},
        {"test_case_id": "q9", "label": "M", "topic": "U", "skills": None},
        {"test_case_id": "q2", "label": None, "topic": None, "skills": ["y", "z"]},  # the file's label replaces metadata's
    ]
    assert merge_tags(None, meta) is meta and merge_tags(file_tags, None) is file_tags


def test_abilities_of_a_tag_is_the_long_frame_of_ability_masses():
    tags = read_tags(b"test_case_id,abilities,subject\nq1,algebra;geometry,m\nq2,,m\nq3,logic,c\n", FILE)
    long = abilities_of(tags)
    assert long.to_dict("list") == {"item_id": ["q1", "q1", "q3"], "ability": ["algebra", "geometry", "logic"]}
    assert abilities_of(tags, "subject")["ability"].tolist() == ["m", "m", "c"]
    with pytest.raises(KeyError, match="abilities, subject"):
        abilities_of(pd.DataFrame(tags.to_pandas()), "skills")
