"""Forged parquet files (issue 45's attacks, and a structure-aware fuzz of footers and page headers): each is refused
or read within the decoder process's bounds, and never takes the reading process down.

The attacks run at test scale: a 1 MiB upload limit, so a decoder may add its floor (64 MiB) to what it holds at a
request's start; the pages are 96 MiB. On main before the decoder process (a0acbe9) the zstd, gzip and brotli page
bombs (64 MiB pages) added 201 MiB to the reading process's peak against a bound of 8 MiB, the text stored by prefix
was refused (log_size) with one batch decoded, and reading a hundred row groups pointing at one region took 22 CPU
seconds (benchmarks/parquet_limits.py has the figures at the default limit).
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agielo_dagster.domain.contract import IngestError, parse_benchmark_spec
from agielo_dagster.domain.readers import read_uploads
from agielo_dagster.domain.readers.isolation import Decoder, memory_budget
from benchmarks.crafted import _parquet, understated_footer
from benchmarks.forged_parquet import (
    BROTLI,
    DATA_PAGE,
    DICTIONARY_PAGE,
    GZIP,
    LZ4_HADOOP,
    ZSTD,
    Forged,
    MiB,
    Page,
    compressed,
    dictionary_bomb,
    forged,
    nested_unknown,
    one_region,
    page_bomb,
    plain_text,
)

LIMIT = 1 << 20
SPEC = parse_benchmark_spec("metric: correct\nscoring: identity\n", "b", "raw/b/benchmark.yaml")
SLACK = 16 << 20  # resident code pages a new decoding path touches (RLIMIT_DATA counts writable memory, VmHWM all)


def _dictionary_expands() -> bytes:
    note = pa.DictionaryArray.from_arrays(pa.array([0] * 10_000, pa.int32()), pa.array(["y" * 10_000]))
    return _parquet(pa.table({"test_case_id": [str(i) for i in range(10_000)], "note": note}))


def _prefixed() -> bytes:
    """Text stored by prefix (DELTA_BYTE_ARRAY): 100 MB decoded, a few KB stored."""
    sink = io.BytesIO()
    table = pa.table({"test_case_id": [str(i) for i in range(10_000)], "note": ["y" * 10_000] * 10_000})
    pq.write_table(table, sink, use_dictionary=False, column_encoding={"note": "DELTA_BYTE_ARRAY"})
    return sink.getvalue()


ATTACKS = {
    "nested unknown page-header fields, zstd": lambda: page_bomb(ZSTD, 96 * MiB),
    "nested unknown page-header fields, gzip": lambda: page_bomb(GZIP, 96 * MiB),
    "nested unknown page-header fields, brotli": lambda: page_bomb(BROTLI, 96 * MiB),
    "a dictionary page in LZ4 with Hadoop framing (codec 5)": lambda: dictionary_bomb(LZ4_HADOOP, 96 * MiB, empty=False),
    "a dictionary page of empty values": lambda: dictionary_bomb(ZSTD, 96 * MiB),
    "a row group understating its size": understated_footer,
    "a row group and column chunk understating their size": lambda: understated_footer(column_too=True),
    "one 10 KB value repeated through a dictionary": _dictionary_expands,
    "text stored by prefix": _prefixed,
}


@pytest.fixture(scope="module")
def decoder():
    decoder = Decoder()
    yield decoder
    decoder.close()


def warm_peak(decoder: Decoder) -> int:
    """The decoder's peak resident memory after an ordinary small parquet upload."""
    decoder.decode("rows", {}, [(_parquet(pa.table({"test_case_id": ["a"], "note": ["b"]})), "raw/b/warm.parquet")], LIMIT)
    return decoder.last_cost.peak_bytes


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_forged_parquet_is_refused_within_the_decoder_s_memory_bound(attack):
    decoder = Decoder()  # a fresh process: its peak is this file's
    try:
        started = warm_peak(decoder)
        data = ATTACKS[attack]()
        assert len(data) < 1 << 20
        (outcome,) = decoder.decode("rows", {}, [(data, "raw/b/a.parquet")], LIMIT)
        assert isinstance(outcome, IngestError) and outcome.rule in ("log_size", "decode_limit"), outcome
        assert str(outcome).startswith("raw/b/a.parquet: ") and len(str(outcome)) <= 300
        peak = decoder.last_cost.peak_bytes
        assert peak is not None and peak <= started + len(data) + memory_budget(LIMIT) + SLACK, (peak - started) >> 20
    finally:
        decoder.close()


def test_the_attacks_leave_the_other_uploads_of_their_batch_accepted():
    good = [(b"test_case_id,correct\na,1\nb,0\n", f"raw/b/good_{i}.csv") for i in range(3)]
    items = [good[0], (page_bomb(ZSTD, 96 * MiB), "raw/b/bomb.parquet"), good[1]]
    items += [(dictionary_bomb(LZ4_HADOOP, 96 * MiB, empty=False), "raw/b/lz4.parquet"), good[2]]
    outcomes = read_uploads(items, SPEC, max_bytes=LIMIT)
    assert [o.num_rows if isinstance(o, pa.Table) else o.rule for o in outcomes] == [2, "decode_limit", 2, "decode_limit", 2]


def test_many_row_groups_on_one_region_are_stopped_at_the_cpu_cap():
    """Each row group walks the region's 150,000 page headers again: 22 CPU seconds for a hundred of them before."""
    decoder = Decoder(cpu_seconds=1)
    try:
        data = one_region(100)
        (outcome,) = decoder.decode("rows", {}, [(data, "raw/b/a.parquet")], 32 << 20)
        assert outcome.rule == "decode_limit" and "CPU seconds" in str(outcome), outcome
        # the cap (1 s + 0.5 s a MiB, rounded up), and the process's start (a killed process's CPU is its whole life's)
        assert decoder.last_cost.cpu_seconds < 2 + 2.5
    finally:
        decoder.close()


def test_an_ordinary_dictionary_encoded_parquet_within_the_bound_is_read_whole(decoder):
    """The bounds refuse expansion, not dictionaries: 10,000 rows of one 100-byte value (1 MB decoded) read as written."""
    note = pa.DictionaryArray.from_arrays(pa.array([0] * 10_000, pa.int32()), pa.array(["y" * 100]))
    data = _parquet(pa.table({"test_case_id": [str(i) for i in range(10_000)], "note": note}))
    (table,) = decoder.decode("rows", {}, [(data, "raw/b/a.parquet")], LIMIT)
    assert table.column("note").to_pylist() == ["y" * 100] * 10_000
    assert table.column("test_case_id").to_pylist() == [str(i) for i in range(10_000)]


def test_text_stored_by_prefix_within_the_bound_is_read(decoder):
    sink = io.BytesIO()
    ordinary = [f"answer {i % 3}" for i in range(1000)]
    table = pa.table({"test_case_id": [str(i) for i in range(1000)], "note": ordinary})
    pq.write_table(table, sink, use_dictionary=False, column_encoding={"note": "DELTA_BYTE_ARRAY"})
    (read,) = decoder.decode("rows", {}, [(sink.getvalue(), "raw/b/a.parquet")], LIMIT)
    assert read.column("note").to_pylist() == ordinary


def test_invalid_utf8_text_in_a_parquet_column_is_refused(decoder):
    """Arrow's parquet reader does not check text: an id of bytes 0xFF 0x30 was accepted before (and broke readers)."""
    data = forged(Forged((Page(plain_text(b"\xff0"), 6),)))
    (outcome,) = decoder.decode("rows", {}, [(data, "raw/b/a.parquet")], LIMIT)
    assert outcome.rule == "utf8" and "'note'" in str(outcome)


# -- no damaged or forged footer or page header ends otherwise than in a table or a rule -------------------------------

RULES = {"parquet_parse", "parquet_footer", "log_size", "header_width", "decode_limit", "decode_crash", "utf8"}
RULES |= {"has_test_case_id", "has_metric", "has_rows", "log_not_empty", "unique_columns", "header_names"}
RULES |= {"test_case_id_present", "test_case_id_trimmed", "test_case_id_type", "test_case_id_unique"}
RULES |= {"metric_present", "metric_numeric", "metric_finite", "metric_in_range"}


def assert_each_is_a_table_or_a_rule(items, outcomes):
    assert len(outcomes) == len(items)
    for (_, file), outcome in zip(items, outcomes, strict=True):
        if isinstance(outcome, IngestError):
            assert outcome.rule in RULES and str(outcome).startswith(file) and len(str(outcome)) <= 320, outcome
        else:
            assert isinstance(outcome, pa.Table)


def test_no_single_damaged_byte_of_a_parquet_upload_ends_otherwise():
    """pyarrow's column-metadata accessors once aborted the process (SIGABRT) on some damaged footers: every byte of
    a one-row file damaged three ways, and the file also cut there (4,476 files), read in batches as the ledger does."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"test_case_id": ["t0"], "correct": [0.5]}), sink)  # pyarrow's defaults: size statistics
    valid = sink.getvalue().to_pybytes()
    items = []
    for position in range(len(valid)):
        for value in (0x00, 0xFF, valid[position] ^ 0x10):
            damaged = bytearray(valid)
            damaged[position] = value
            items += [
                (bytes(damaged), f"raw/b/{position}_{value}.parquet"),
                (bytes(damaged[:position]), f"raw/b/{position}.parquet"),
            ]
    outcomes = [o for k in range(0, len(items), 1000) for o in read_uploads(items[k : k + 1000], SPEC)]
    assert_each_is_a_table_or_a_rule(items, outcomes)
    assert sum(isinstance(o, IngestError) for o in outcomes) > 3000  # most damage is refused by rule


CODECS = st.sampled_from(range(8))  # every codec parquet defines, LZO (which Arrow cannot read) included
LIES = st.sampled_from([0, 1, 3, 64, -1, 2**31 - 1, 1 << 26, 1 << 30])


def honest_or(draw, honest, lies=LIES):
    """Most fields tell the truth (so that reading gets past them to the next), one in four lies."""
    return honest if draw(st.integers(min_value=0, max_value=3)) else draw(lies)


@st.composite
def pages(draw, codec: int):
    value = draw(st.binary(max_size=16))
    body = compressed(codec, [plain_text(value)]) if draw(st.integers(0, 3)) else draw(st.binary(max_size=24))
    extra = ()
    if draw(st.booleans()):
        extra = (nested_unknown(draw(st.integers(min_value=1, max_value=80)), draw(st.integers(min_value=9, max_value=300))),)
    return Page(
        body,
        honest_or(draw, len(plain_text(value))),
        kind=honest_or(draw, DATA_PAGE, st.sampled_from([DICTIONARY_PAGE, 1, 3, 7])),
        values=honest_or(draw, 1),
        encoding=honest_or(draw, 0, st.sampled_from([2, 3, 4, 5, 6, 7, 8, 9, 42])),
        extra=extra,
    )


@st.composite
def forged_files(draw) -> bytes:
    codec = draw(CODECS)
    spec = Forged(
        tuple(draw(st.lists(pages(codec), min_size=1, max_size=4))),
        codec=codec,
        row_groups=honest_or(draw, 1, st.integers(min_value=0, max_value=40)),
        chunk_size=honest_or(draw, None),
        data_offset_shift=honest_or(draw, 0, st.sampled_from([-3, 1, 7, -(1 << 20), 1 << 40])),
        bare_groups=honest_or(draw, 0, st.sampled_from([1, 1000])),
    )
    data = bytearray(forged(spec))
    if draw(st.integers(0, 3)) == 0:  # and a byte anywhere
        data[draw(st.integers(min_value=0, max_value=len(data) - 1))] = draw(st.integers(min_value=0, max_value=255))
    return bytes(data)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(forged_files(), min_size=1, max_size=8))
def test_forged_footers_and_page_headers_give_a_table_or_a_rule(files):
    """A structure-aware fuzz: every field of the footer and page headers may lie (sizes, counts, offsets, codecs,
    encodings, page kinds, unknown fields at any depth); read in batches of up to eight, as uploads."""
    items = [(data, f"raw/b/forged_{i}.parquet") for i, data in enumerate(files)]
    assert_each_is_a_table_or_a_rule(items, read_uploads(items, SPEC, max_bytes=64 << 10))
