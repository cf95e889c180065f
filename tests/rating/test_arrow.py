"""pyarrow tables in, pyarrow tables out: dictionary-encoded ids, many chunks, parquet, no string per match."""

import tracemalloc

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agielo_dagster.rating import MatchTableError, competency_gaps, place_agents, rate, simulate_matches
from agielo_dagster.rating.frames import encode_matches


@pytest.fixture(scope="module")
def matches():
    rng = np.random.default_rng(6)
    return simulate_matches(rng.normal(1500, 250, 300), np.linspace(1300, 1800, 7), seed=9)


def _dictionary_chunks(df: pd.DataFrame, pieces: int) -> pa.Table:
    """The table cut into chunks, each dictionary-encoding its ids on its own (different dictionaries)."""
    tables = []
    shuffled = df.sample(frac=1, random_state=1)
    for rows in np.array_split(np.arange(len(df)), pieces):
        t = pa.Table.from_pandas(shuffled.iloc[rows], preserve_index=False).combine_chunks()
        for c in ("test_case_id", "agent_id"):
            t = t.set_column(t.schema.get_field_index(c), c, pa.compute.dictionary_encode(t.column(c)))
        tables.append(t)
    return pa.concat_tables(tables)


def test_arrow_in_arrow_out_with_the_same_numbers(matches):
    table = _dictionary_chunks(matches, 4)
    assert pa.types.is_dictionary(table.schema.field("agent_id").type) and table.column("agent_id").num_chunks == 4
    ours = rate(table, seed=3)
    theirs = rate(matches.sample(frac=1, random_state=1).reset_index(drop=True), seed=3)
    for name in ("agents", "test_cases", "snapshots", "reliability"):
        assert isinstance(getattr(ours, name), pa.Table)
        pd.testing.assert_frame_equal(getattr(ours, name).to_pandas(), getattr(theirs, name), check_exact=True)


@pytest.mark.parametrize("id_type", [pa.string(), pa.large_string()])
def test_plain_string_ids(matches, id_type):
    table = pa.Table.from_pandas(matches, preserve_index=False)
    table = table.cast(
        pa.schema([pa.field(c, id_type if c.endswith("_id") else table.schema.field(c).type) for c in table.column_names])
    )
    ours = rate(table, seed=4, with_reliability=False).agents.to_pandas()
    pd.testing.assert_frame_equal(ours, rate(matches, seed=4, with_reliability=False).agents, check_exact=True)


def test_polars_categorical_ids(matches):
    frame = pl.from_pandas(matches).with_columns(
        pl.col("agent_id").cast(pl.Categorical), pl.col("test_case_id").cast(pl.Categorical)
    )
    out = rate(frame, seed=4, with_reliability=False).agents
    assert isinstance(out, pl.DataFrame)
    np.testing.assert_array_equal(out["mu"].to_numpy(), rate(matches, seed=4, with_reliability=False).agents["mu"].to_numpy())


def test_parquet_with_dictionary_ids(tmp_path, matches):
    path = tmp_path / "matches.parquet"
    pq.write_table(pa.Table.from_pandas(matches, preserve_index=False), path, row_group_size=500)
    table = pq.read_table(path, read_dictionary=["test_case_id", "agent_id"])
    assert pa.types.is_dictionary(table.schema.field("test_case_id").type)
    result = rate(table, seed=2)
    pd.testing.assert_frame_equal(result.agents.to_pandas(), rate(matches, seed=2).agents, check_exact=True)
    gaps = competency_gaps(result.test_cases, result.agents)
    assert isinstance(gaps, pa.Table) and gaps.num_rows == 7
    placed = place_agents(table.filter(pa.compute.equal(table.column("agent_id"), "agent_3")), result.test_cases)
    assert isinstance(placed, pa.Table) and placed.num_rows == 1


def test_bad_arrow_tables_are_errors_naming_the_row(matches):
    table = pa.Table.from_pandas(matches, preserve_index=False)
    ids = table.column("agent_id").to_pylist()
    ids[17] = None
    with pytest.raises(MatchTableError) as err:
        rate(table.set_column(1, "agent_id", pa.array(ids)))
    assert (err.value.row, err.value.column, err.value.rule) == (17, "agent_id", "id_present")
    scores = table.column("score").to_pylist()
    scores[5] = 1.5
    with pytest.raises(MatchTableError) as err:
        rate(table.set_column(3, "score", pa.array(scores)))
    assert (err.value.row, err.value.rule) == (5, "score_in_range")
    scores[5] = None
    with pytest.raises(MatchTableError) as err:
        rate(table.set_column(3, "score", pa.array(scores)))
    assert (err.value.row, err.value.rule) == (5, "score_finite")
    metric = [str(v) for v in table.column("metric").to_pylist()]
    metric[2] = "n/a"
    with pytest.raises(MatchTableError) as err:
        rate(table.set_column(2, "metric", pa.array(metric)))
    assert (err.value.row, err.value.rule) == (2, "metric_numeric")
    with pytest.raises(MatchTableError, match="required_columns"):
        rate(table.drop_columns(["score"]))


def test_no_python_string_per_match():
    """Encoding 400,000 dictionary-encoded matches allocates far less than one Python string per row would (≥ 49 bytes each)."""
    n_t, n_a = 20_000, 20
    agent_names = pa.array([f"agent_{i:02d}" for i in range(n_a)])
    case_names = pa.array([f"case_{i:05d}" for i in range(n_t)])
    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "test_case_id": pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(n_t), n_a).astype(np.int32)), case_names),
            "agent_id": pa.DictionaryArray.from_arrays(pa.array(np.tile(np.arange(n_a), n_t).astype(np.int32)), agent_names),
            "metric": rng.random(n_t * n_a),
            "score": rng.random(n_t * n_a),
        }
    )
    encode_matches(table)  # compile outside the measurement
    tracemalloc.start()
    m = encode_matches(table)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(m) == 400_000 and m.agent.dtype == np.int32 and m.n_test_cases == n_t
    assert peak < 25 * len(m)  # bytes: int32 codes and indices (about 19 B a match); a string per row is >= 57 B per column


def test_rate_parquet_equals_rating_the_read_table(tmp_path, matches):
    from agielo_dagster.rating import rate_parquet, read_matches

    half = len(matches) // 2
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    pq.write_table(pa.Table.from_pandas(matches.iloc[:half], preserve_index=False), paths[0], row_group_size=300)
    pq.write_table(pa.Table.from_pandas(matches.iloc[half:], preserve_index=False), paths[1], row_group_size=300)
    streamed = rate_parquet(paths, seed=6)
    whole = rate(read_matches(paths), seed=6)
    for name in ("agents", "test_cases", "reliability"):
        assert isinstance(getattr(streamed, name), pa.Table)
        assert getattr(streamed, name).equals(getattr(whole, name))
    pd.testing.assert_frame_equal(streamed.agents.to_pandas(), rate(matches, seed=6).agents, check_exact=True)


def test_rate_parquet_reads_files_held_in_memory(tmp_path, matches):
    """An object store's file arrives as bytes: a buffer rates exactly as the same file on disk."""
    from agielo_dagster.rating import rate_parquet

    path = tmp_path / "m.parquet"
    pq.write_table(pa.Table.from_pandas(matches, preserve_index=False), path, row_group_size=300)
    on_disk = rate_parquet(path, seed=3)
    in_memory = rate_parquet(pa.py_buffer(path.read_bytes()), seed=3)
    assert in_memory.agents.equals(on_disk.agents) and in_memory.test_cases.equals(on_disk.test_cases)
    assert rate_parquet([path.read_bytes()], seed=3).agents.equals(on_disk.agents)


def test_rate_parquet_names_the_row_of_the_whole_table(tmp_path, matches):
    from agielo_dagster.rating import rate_parquet

    bad = matches.astype({"agent_id": object, "metric": object})
    bad.loc[700, "agent_id"] = None
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pandas(bad, preserve_index=False), path, row_group_size=300)
    with pytest.raises(MatchTableError) as err:
        rate_parquet(path)
    assert (err.value.row, err.value.column, err.value.rule) == (700, "agent_id", "id_present")
    repeated = pd.concat([matches, matches.iloc[[5]]], ignore_index=True)
    pq.write_table(pa.Table.from_pandas(repeated, preserve_index=False), path, row_group_size=300)
    with pytest.raises(MatchTableError, match="rows 5 and 2100"):
        rate_parquet(path)
    text = matches.astype({"metric": str})
    text.loc[650, "metric"] = "n/a"
    pq.write_table(pa.Table.from_pandas(text, preserve_index=False), path, row_group_size=300)
    with pytest.raises(MatchTableError) as err:
        rate_parquet(path)
    assert (err.value.row, err.value.rule) == (650, "metric_numeric")


def test_both_ways_of_finding_repeated_matches_agree(matches):
    from agielo_dagster.rating._frame_kernels import count_repeats, earliest_repeat, first_duplicate

    repeated = pd.concat([matches, matches.iloc[[9, 30, 9]]], ignore_index=True)
    m = encode_matches(repeated, unique=False)
    seen = np.zeros((m.n_agents * m.n_test_cases + 63) // 64, dtype=np.uint64)
    count = count_repeats(m.agent, m.test_case, m.n_test_cases, seen)
    assert count == 3
    assert earliest_repeat(m.agent, m.test_case, m.n_test_cases, seen) == (9, len(matches))
    first, second, count = first_duplicate(m.agent, m.test_case, m.n_agents, m.n_test_cases, np.empty(len(m), dtype=np.int64))
    assert (first, second, count) == (9, len(matches), 3)


def test_a_large_pandas_table_encodes_like_its_arrow_twin():
    """From 200,000 rows pandas hashes the two id columns in parallel threads: the codes must not mix them up."""
    from agielo_dagster.rating.frames import _PARALLEL_FACTORIZE_ROWS

    rng = np.random.default_rng(2)
    big = simulate_matches(rng.normal(1500, 250, 20_000), np.linspace(1300, 1800, 12), seed=4)
    assert len(big) >= _PARALLEL_FACTORIZE_ROWS
    ours, twin = encode_matches(big), encode_matches(pa.Table.from_pandas(big, preserve_index=False))
    np.testing.assert_array_equal(ours.test_case_ids.astype(str), twin.test_case_ids.astype(str))
    np.testing.assert_array_equal(ours.agent_ids.astype(str), twin.agent_ids.astype(str))
    np.testing.assert_array_equal(ours.test_case, twin.test_case)
    np.testing.assert_array_equal(ours.agent, twin.agent)
    assert len(ours.agent_ids) == 12 and len(ours.test_case_ids) == 20_000


def test_row_positions_find_each_id_without_hashing_the_table():
    """The row of each id in an Arrow column (first row of a repeated id, -1 where absent), as pandas finds it;
    the column is scanned against the ids' hash table, never hashed itself (a wide benchmark's millions, issue 25)."""
    from agielo_dagster.rating.frames import row_positions

    column = pa.chunked_array([pa.array(["c", "a", "b"]), pa.array(["d", "a"])], pa.string())
    ids = ["a", "zz", "d", "c", "a"]
    expected = [1, -1, 3, 0, 1]
    assert row_positions(column, ids).tolist() == expected
    assert row_positions(column, pa.array(ids)).tolist() == expected
    assert row_positions(column.dictionary_encode(), ids).tolist() == expected
    assert row_positions(column, []).tolist() == []


def test_rate_parquet_keeps_test_case_ids_in_arrow_in_chunks_under_the_string_limit(tmp_path, matches, monkeypatch):
    """rate_parquet never makes the test cases' ids Python strings (about 70 bytes each for a wide benchmark's
    millions, issue 25); its test-case table is cut in chunks where one Arrow string array would overflow, and
    holds the same ids, ratings and schema."""
    from agielo_dagster.rating import rate_parquet, tables

    path = tmp_path / "m.parquet"
    pq.write_table(pa.Table.from_pandas(matches, preserve_index=False), path)
    whole = rate_parquet(path, seed=4).test_cases
    monkeypatch.setattr(tables, "_STRING_BYTES", 500)
    chunked = rate_parquet(path, seed=4).test_cases
    assert chunked.column("test_case_id").num_chunks > 1
    assert chunked.schema.equals(whole.schema, check_metadata=True)
    assert chunked.combine_chunks().equals(whole.combine_chunks())
