"""Store.read_parts's row filter: only the rows asked for, row group by row group."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agielo_dagster.domain import parquet_io
from agielo_dagster.domain import store as store_module
from agielo_dagster.domain.store import Store


def write(store: Store, path: str, table: pa.Table, row_group_size: int) -> None:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=row_group_size)
    store.write_bytes(path, sink.getvalue())


def test_where_keeps_the_matching_rows_of_every_row_group(tmp_path):
    store = Store(root=str(tmp_path))
    # agents first, then test cases, as rating_snapshots is written: the last row groups hold no agent
    kinds = ["agent"] * 5 + ["test_case"] * 20 + ["agent"] * 2
    table = pa.table({"kind": kinds, "id": [f"x{i}" for i in range(len(kinds))], "mu": [float(i) for i in range(len(kinds))]})
    write(store, "warehouse/snap.parquet", table, row_group_size=4)

    def rows(**settings) -> pa.Table:
        return pa.concat_tables(store.read_parts("warehouse/snap.parquet", **settings))

    agents = rows(where={"kind": "agent"})
    assert agents.column("id").to_pylist() == ["x0", "x1", "x2", "x3", "x4", "x25", "x26"]
    assert agents.schema == table.schema
    only = rows(columns=["id"], read_dictionary=["id"], where={"kind": "agent"})
    assert only.column_names == ["id"] and only.num_rows == 7
    none = rows(columns=["id", "mu"], where={"kind": "judge"})
    assert none.num_rows == 0 and none.column_names == ["id", "mu"]
    both = rows(columns=["mu"], where={"kind": "agent", "id": "x25"})
    assert both.column("mu").to_pylist() == [25.0]  # every condition holds, not only the first
    assert rows().num_rows == len(kinds)  # no filter: everything


def test_a_killed_writers_temporary_file_is_removed_at_once_others_by_age(tmp_path):
    """A run right after a kill finds no leftover of the killed writer; a live writer's file stays until it is old."""
    import os
    import subprocess
    import sys
    import time

    store = Store(root=str(tmp_path))
    folder = tmp_path / "warehouse" / "agent_ratings"
    folder.mkdir(parents=True)
    host = store_module._host_tag()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    killed = folder / f".quiz.parquet.{host}-{dead.stdout.strip()}-0123abcd.tmp"
    alive = folder / f".quiz.parquet.{host}-{os.getpid()}-4567ef01.tmp"
    elsewhere = folder / ".quiz.parquet.ffffffff-1-89abcdef.tmp"
    unnamed = folder / ".quiz.parquet.0123456789abcdef.tmp"  # written before writers were named
    for path in (killed, alive, elsewhere, unnamed):
        path.write_bytes(b"half a parquet file")
    assert store.remove_temporaries("warehouse") == ["warehouse/agent_ratings/" + killed.name]
    old = time.time() - 3600
    for path in (alive, elsewhere, unnamed):
        os.utime(path, (old, old))
    assert sorted(store.remove_temporaries("warehouse")) == sorted(
        f"warehouse/agent_ratings/{p.name}" for p in (alive, elsewhere, unnamed)
    )
    store.write_bytes("warehouse/agent_ratings/quiz.parquet", b"data")
    assert [p.name for p in folder.iterdir()] == ["quiz.parquet"]


def test_a_dictionary_wider_than_a_row_group_is_written_per_row_group(tmp_path, monkeypatch):
    """A wide benchmark's test-case ids as one dictionary went whole into every row group (issue 25); each row group
    now carries the ids its rows use, and the table reads back equal."""
    monkeypatch.setattr(parquet_io, "ROW_GROUP_ROWS", 100)
    ids = pa.array(np.char.add("case-", np.arange(1_000).astype(str))).dictionary_encode()
    table = pa.table({"test_case_id": ids, "mu": np.arange(1_000, dtype=np.float64)})
    path = tmp_path / "wide.parquet"
    path.write_bytes(parquet_io.parquet_bytes(table))
    back = pq.read_table(path)
    assert back.column("test_case_id").cast(pa.string()).to_pylist() == ids.cast(pa.string()).to_pylist()
    assert back.column("mu").to_pylist() == table.column("mu").to_pylist()
    groups = pq.ParquetFile(path).metadata.num_row_groups
    assert groups == 10
    for g in range(groups):
        piece = pq.ParquetFile(path, read_dictionary=["test_case_id"]).read_row_group(g)
        assert len(piece.column("test_case_id").chunk(0).dictionary) == 100


def test_a_local_read_gives_the_whole_file_or_one_byte_past_the_limit(tmp_path):
    store = Store(str(tmp_path))
    sizes = {"empty": 0, "small": 30, "at_limit": 3 << 20, "over_limit": (3 << 20) + 5}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(np.random.default_rng(size).bytes(size))
    for name in sizes:
        data = (tmp_path / name).read_bytes()
        assert store.read_bytes(name) == data
        assert store.read_bytes(name, limit=3 << 20) == data[: (3 << 20) + 1]
        assert store.read_versioned(name, limit=3 << 20)[0] == data[: (3 << 20) + 1]
    with pytest.raises(FileNotFoundError):
        store.read_bytes("missing")
