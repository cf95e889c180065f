"""The bad-upload corpus (tests/data/bad/README.md) through the reader alone: every row's rule holds."""

import re
from pathlib import Path

import pyarrow as pa
import pytest

from agielo_dagster.domain.contract import MAX_MESSAGE_CHARS, IngestError, check_name, parse_benchmark_spec
from agielo_dagster.domain.readers import read_upload

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad"
LIMIT = 64 * 1024  # as in tests/pipeline/test_bad_uploads.py
SPEC = parse_benchmark_spec(b"metric: correct\nscoring: identity\n", "corpus", "raw/corpus/benchmark.yaml")
TABLE = re.findall(r"^\| (uploads/\S+|benchmarks/\S+) \|.*\| (\S+) \|$", (CORPUS / "README.md").read_text(), flags=re.M)
UPLOADS = [(entry, rule) for entry, rule in TABLE if entry.startswith("uploads/")]
BENCHMARKS = [(entry, rule) for entry, rule in TABLE if entry.startswith("benchmarks/")]


def read(entry: str) -> pa.Table:
    name = entry.removeprefix("uploads/")
    check_name(name.rsplit(".", 1)[0], "agent", f"raw/corpus/{name}")
    return read_upload((CORPUS / entry).read_bytes(), f"raw/corpus/{name}", SPEC, max_bytes=LIMIT)


def test_the_table_lists_every_corpus_file_once():
    listed = [entry for entry, _ in UPLOADS]
    assert len(listed) == len(set(listed)) >= 60
    assert sorted(listed) == sorted(f"uploads/{p.name}" for p in (CORPUS / "uploads").iterdir())
    assert sorted(e for e, _ in BENCHMARKS) == sorted(f"benchmarks/{p.name}/" for p in (CORPUS / "benchmarks").iterdir())


@pytest.mark.parametrize("entry, rule", [(e, r) for e, r in UPLOADS if r not in ("accepted", "one_file_per_agent")])
def test_each_rejected_upload_names_its_rule(entry, rule):
    with pytest.raises(IngestError) as err:
        read(entry)
    assert err.value.rule == rule, str(err.value)
    message = str(err.value)
    assert message.startswith(f"raw/corpus/{entry.removeprefix('uploads/')}:") and message.endswith(f"(rule: {rule})")
    assert len(message) <= MAX_MESSAGE_CHARS


@pytest.mark.parametrize("entry", [e for e, r in UPLOADS if r in ("accepted", "one_file_per_agent")])
def test_each_accepted_upload_reads(entry):
    # twin.csv and twin.jsonl are each a good upload: only the pipeline sees that one agent has two files
    table = read(entry)
    assert table.column_names[:3] == ["test_case_id", "metric", "score"]
    assert table.schema.field("test_case_id").type == pa.string() and table.num_rows > 0
    assert all(name.startswith("meta.") for name in table.column_names[3:])


@pytest.mark.parametrize("entry, rule", BENCHMARKS)
def test_each_broken_benchmark_fails_on_its_yaml_and_not_on_its_upload(entry, rule):
    folder = CORPUS / entry
    if rule == "spec_exists":
        assert not (folder / "benchmark.yaml").exists()
    else:
        with pytest.raises(IngestError) as err:
            parse_benchmark_spec((folder / "benchmark.yaml").read_bytes(), folder.name, f"raw/{folder.name}/benchmark.yaml")
        assert err.value.rule == rule
    assert read_upload((folder / "model_a.csv").read_bytes(), f"raw/{folder.name}/model_a.csv", SPEC).num_rows == 60


def message(entry: str) -> str:
    with pytest.raises(IngestError) as err:
        read(entry)
    return str(err.value)


MESSAGES = [
    ("uploads/non_numeric.csv", "data row 5 (line 6): correct 'yes' is not a number"),
    ("uploads/duplicate_ids.csv", "data row 11 (line 12): test case 'tc_03' appears again (first at data row 4)"),
    ("uploads/semicolons.csv", "wrong delimiter?"),
    ("uploads/far_too_large.csv", "limit is 65,536"),
    ("uploads/invalid_utf8.csv", "invalid UTF-8 at byte 64 (line 7)"),
    ("uploads/not_json.jsonl", "line 2 is not a JSON object"),
    ("uploads/missing_metric_column.csv", "columns are 'test_case_id', 'accuracy'"),
    ("uploads/empty_id.csv", "data row 7 (line 8): test_case_id is missing or empty"),
    ("uploads/padded_ids.csv", "data row 3 (line 4): test_case_id ' tc_02' has leading or trailing white space"),
    ("uploads/out_of_range.csv", "correct 1.5 is outside [0, 1] of scoring 'identity'"),
    ("uploads/decimal_comma.csv", "data row 1 (line 2): has 3 fields where the header has 2: 'tc_00,0,5'"),
    ("uploads/quoted_decimal_comma.csv", "decimal comma"),
    ("uploads/duplicate_header.csv", "column 'correct' appears twice in the header (columns 2 and 3)"),
    ("uploads/exponent_id.jsonl", "data row 8 (line 8): test_case_id 1000.0 is a float"),
    ("uploads/bool_id.jsonl", "data row 8 (line 8): test_case_id true is a boolean"),
    ("uploads/null_id.jsonl", "data row 8 (line 8): test_case_id is missing or empty"),
    ("uploads/huge_integer_metric.jsonl", "data row 5 (line 5): correct <an integer of 400 digits> is too large"),
    ("uploads/deep_nesting.jsonl", "line 1 nests arrays or objects more than 32 deep"),
    ("uploads/multiline_bad_metric.csv", "data row 21 (line 24): correct 'n/a' is not a number"),
    ("uploads/blank_line.csv", "data row 11 (line 12): has no values"),
    ("uploads/long_line.csv", "data row 2 (line 3): has 1 field where the header has 2"),
    ("uploads/utf16.csv", "(it looks like UTF-16)"),
    ("uploads/wide_header.csv", "the header has 20,002 columns; at most 256"),
    ("uploads/wide.parquet", "the parquet file has 302 columns; at most 256"),
    ("uploads/tabs.csv", "wrong delimiter?"),
    ("uploads/far_too_large.csv", "108,021 bytes"),
    ("uploads/text_metric.parquet", "correct is a parquet column of text ('0' in this row), not numbers"),
    ("uploads/fullwidth_digits.csv", "correct '１' is not a number: it uses non-ASCII digits"),
    ("uploads/arabic_digits.csv", "correct '١' is not a number: it uses non-ASCII digits"),
]


@pytest.mark.parametrize("entry, fragment", MESSAGES)
def test_messages_name_rows_lines_and_causes(entry, fragment):
    assert fragment in message(entry)


def test_a_non_ascii_agent_name_says_what_is_allowed():
    assert "it has non-ASCII characters; names may hold only ASCII letters" in message("uploads/模型.csv")


def test_accepted_uploads_keep_ids_as_written_and_metadata_as_declared():
    assert read("uploads/leading_zeros.csv")["test_case_id"].to_pylist()[:3] == ["000", "001", "002"]
    assert read("uploads/integer_ids.parquet")["test_case_id"].to_pylist()[:2] == ["1000", "1001"]
    assert read("uploads/int_ids.jsonl")["test_case_id"].to_pylist()[:2] == ["2000", "2001"]
    assert read("uploads/booleans.jsonl")["metric"].to_pylist()[:2] == [0.0, 1.0]
    assert read("uploads/decimal_metric.parquet")["metric"].to_pylist()[:2] == [0.0, 1.0]
    bom = read("uploads/bom.csv")
    assert bom.column_names == ["test_case_id", "metric", "score"] and bom["test_case_id"][0].as_py() == "tc_00"
    assert read("uploads/crlf.csv")["test_case_id"].to_pylist() == bom["test_case_id"].to_pylist()
    extra = read("uploads/extra_columns.csv")
    assert extra.column_names == ["test_case_id", "metric", "score", "meta.latency_ms", "meta.prediction"]
    assert extra["meta.latency_ms"][1].as_py() == "3.5"  # csv metadata is text, exactly as written
    mixed = read("uploads/mixed_metadata.jsonl")
    assert mixed.column_names == ["test_case_id", "metric", "score", "meta.seed", "meta.trace", "meta.big"]
    assert mixed["meta.seed"].to_pylist()[:2] == ['"s0"', "1"]
    assert mixed["meta.trace"].to_pylist()[:2] == ["[0, 0]", '{"steps": [1]}']
    assert mixed["meta.big"][0].as_py() == str(2**70)
    nested = read("uploads/nested_metadata.parquet")
    assert nested["meta.tokens"][0].as_py() == "[0, 1]" and nested["meta.judge"][0].as_py() == '{"model": "m", "votes": 0}'
    notes = read("uploads/multiline_notes.csv")
    assert notes["meta.notes"][0].as_py() == "first line\nsecond line, with a comma" and notes.num_rows == 60
