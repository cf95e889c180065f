"""Property-based checks of the upload readers (hypothesis): what is accepted round-trips exactly, in every format,
and no input whatsoever raises anything but an IngestError."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agielo_dagster.domain.contract import IngestError, parse_benchmark_spec
from agielo_dagster.domain.readers import read_upload

SPEC = parse_benchmark_spec("metric: correct\nscoring: identity\n", "prop", "raw/prop/benchmark.yaml")
WHITE = (
    {" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2028", "\u2029", "\u3000"}
    | {chr(c) for c in range(0x2000, 0x200B)}
    | {"\u202f", "\u205f"}
)

# ids: any text without surrogates, not empty, not padded with white space
ids = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda s: s[0] not in WHITE and s[-1] not in WHITE
)
metrics = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)
rows = st.lists(st.tuples(ids, metrics), min_size=1, max_size=40, unique_by=lambda r: r[0])
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def as_csv(pairs) -> bytes:
    """Ids always quoted (a bare CR or LF inside an id would end the record), metrics as Python writes floats."""
    body = "".join('"' + t.replace('"', '""') + '",' + repr(m) + "\n" for t, m in pairs)
    return ("test_case_id,correct\n" + body).encode()


def as_jsonl(pairs) -> bytes:
    return "".join(json.dumps({"test_case_id": t, "correct": m}) + "\n" for t, m in pairs).encode()


def as_parquet(pairs) -> bytes:
    sink = pa.BufferOutputStream()
    table = pa.table({"test_case_id": [t for t, _ in pairs], "correct": pa.array([m for _, m in pairs], pa.float64())})
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


WRITERS = {"csv": as_csv, "jsonl": as_jsonl, "parquet": as_parquet}


@pytest.mark.parametrize("fmt", list(WRITERS))
@FAST
@given(pairs=rows)
def test_accepted_ids_and_metrics_round_trip_exactly(fmt, pairs):
    # a CSV holds a byte-order mark only in its first bytes (rule csv_bom: files joined together), inside a field too
    assume(fmt != "csv" or not any("\ufeff" in t for t, _ in pairs))
    table = read_upload(WRITERS[fmt](pairs), f"raw/prop/agent.{fmt}", SPEC)
    assert table.column("test_case_id").to_pylist() == [t for t, _ in pairs]
    assert table.column("metric").to_pylist() == [m for _, m in pairs]  # bit for bit
    assert table.column("score").to_pylist() == [m for _, m in pairs]  # identity scoring


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@FAST
@given(values=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=30, unique=True))
def test_integer_ids_become_their_decimal_text(fmt, values):
    if fmt == "jsonl":
        data = "".join(json.dumps({"test_case_id": v, "correct": 1}) + "\n" for v in values).encode()
    else:
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"test_case_id": pa.array(values, pa.int64()), "correct": [1.0] * len(values)}), sink)
        data = sink.getvalue().to_pybytes()
    table = read_upload(data, f"raw/prop/agent.{fmt}", SPEC)
    assert table.column("test_case_id").to_pylist() == [str(v) for v in values]


@FAST
@given(
    value=st.one_of(
        st.floats(),
        st.booleans(),
        st.none(),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
)
def test_jsonl_ids_of_other_types_are_refused_by_rule(value):
    data = (json.dumps({"test_case_id": value, "correct": 1}) + "\n").encode()
    with pytest.raises(IngestError) as err:
        read_upload(data, "raw/prop/agent.jsonl", SPEC)
    assert err.value.rule in ("test_case_id_type", "test_case_id_present")
    assert err.value.row == 1 and len(str(err.value)) <= 320


@pytest.mark.parametrize("fmt", list(WRITERS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
def test_any_bytes_give_a_table_or_an_ingest_error(fmt, data):
    try:
        read_upload(data, f"raw/prop/agent.{fmt}", SPEC)
    except IngestError as err:
        assert str(err).startswith(f"raw/prop/agent.{fmt}") and len(str(err)) <= 320


@pytest.mark.parametrize("fmt", list(WRITERS))
@FAST
@given(pairs=rows, cut=st.integers(min_value=0, max_value=10_000), flip=st.integers(min_value=0, max_value=255))
def test_damaged_valid_files_give_a_table_or_an_ingest_error(fmt, pairs, cut, flip):
    data = bytearray(WRITERS[fmt](pairs))
    position = cut % len(data)
    data[position] = flip
    for damaged in (bytes(data), bytes(data[:position])):
        try:
            read_upload(damaged, f"raw/prop/agent.{fmt}", SPEC)
        except IngestError as err:
            assert err.rule and len(str(err)) <= 320


def _decimal_upload(values, arrow_type) -> bytes:
    sink = pa.BufferOutputStream()
    ids_ = [f"tc_{i}" for i in range(len(values))]
    pq.write_table(pa.table({"test_case_id": ids_, "correct": pa.array(values, arrow_type)}), sink)
    return sink.getvalue().to_pybytes()


@FAST
@given(values=st.lists(st.decimals(min_value=0, max_value=1, places=6, allow_nan=False), min_size=1, max_size=40))
def test_parquet_decimal_metrics_become_the_nearest_float64(values):
    table = read_upload(_decimal_upload(values, pa.decimal128(10, 6)), "raw/prop/agent.parquet", SPEC)
    assert table.column("metric").to_pylist() == [float(v) for v in values]  # float(Decimal) rounds correctly


@pytest.mark.parametrize(
    "arrow_type, text",
    [
        (pa.decimal128(10, 6), ["0.1", "0.3", "0.7", "0.000001", "0.999999", "1.000000"]),
        (pa.decimal128(38, 30), ["0.1", "0.333333333333333333333333333333", "0.000000000000000000000000000001"]),
        (pa.decimal256(60, 50), ["0.1", "0.12345678901234567890123456789012345678901234567890"]),
    ],
)
def test_parquet_decimal_examples_convert_exactly(arrow_type, text):
    from decimal import Decimal

    values = [Decimal(t) for t in text]
    table = read_upload(_decimal_upload(values, arrow_type), "raw/prop/agent.parquet", SPEC)
    assert table.column("metric").to_pylist() == [float(Decimal(t)) for t in text]
    assert table.column("metric").to_pylist()[0] == 0.1


# small csv bodies without quotes are split in Python (csv_format._split_small), larger ones by pyarrow's reader:
# every body, byte-order marks, NULs and lone CRs included, reads the same both ways
unquoted = st.lists(st.sampled_from(list("ab1.0,-+é ;\t\r\n\x0b\x1c\u2028\x00\ufeff") + ["\r\n"]), max_size=60).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=unquoted,
    header=st.sampled_from(
        ["test_case_id,correct", "correct,test_case_id,note", "test_case_id,correct,", "\ufefftest_case_id,correct"]
    ),
    end=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_small_csv_bodies_read_as_pyarrow_reads_them(body, header, end):
    """In this process (the decoder process would not see the patched size)."""
    from agielo_dagster.domain.contract import MAX_LOG_BYTES
    from agielo_dagster.domain.readers import csv_format
    from agielo_dagster.domain.readers.upload import _read_upload

    data = f"{header}{end}{body}".encode()

    def outcome():
        try:
            table = _read_upload(data, "raw/prop/agent.csv", SPEC, MAX_LOG_BYTES)
        except IngestError as err:
            return str(err)
        return table.to_pylist()

    fast = outcome()
    try:
        csv_format._SMALL_BODY_BYTES, before = -1, csv_format._SMALL_BODY_BYTES
        assert outcome() == fast
    finally:
        csv_format._SMALL_BODY_BYTES = before


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize("rows", [3, 3000])  # the small-body path, and pyarrow's reader
def test_a_byte_order_mark_is_dropped_at_the_file_s_start_and_refused_anywhere_else(quoted, rows):
    """One rule whatever the path: '\ufefft1' and 't1' were two ids before, depending on the file's size."""
    q = '"' if quoted else ""
    body = "".join(f"{q}t{i}{q},1\n" for i in range(rows))
    table = read_upload(f"\ufefftest_case_id,correct\n{body}".encode(), "raw/prop/agent.csv", SPEC)
    assert table.column("test_case_id").to_pylist()[:2] == ["t0", "t1"]
    for text in (
        f"test_case_id,correct\n\ufeff{body}",
        f"test_case_id,\ufeffcorrect\n{body}",
        f"test_case_id,correct\n{body}\ufeff,\n",
    ):
        with pytest.raises(IngestError, match="byte-order mark") as err:
            read_upload(text.encode(), "raw/prop/agent.csv", SPEC)
        assert err.value.rule == "csv_bom" and err.value.line == text.count("\n", 0, text.index("\ufeff")) + 1
