"""The match table knows which inputs its rows came from, from its own columns and a footer of a few bytes."""

import dataclasses
import shutil

import pyarrow as pa

from agielo_dagster.domain import matches as matches_module
from agielo_dagster.domain.ledger import read_ledger, refresh_ledger
from agielo_dagster.domain.matches import build_match_table, manifest_of
from agielo_dagster.domain.readers import read_uploads
from agielo_dagster.domain.store import Store


def _benchmark(root, agents: int, rows: int = 3):
    folder = root / "raw" / "quiz"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: binary\n")
    for a in range(agents):
        text = "test_case_id,correct\n" + "".join(f"case-{i},{(a + i) % 2}\n" for i in range(rows if a else 0))
        (folder / f"model_{a:03d}.csv").write_text(text)  # model_000 has no rows
    store = Store(str(root))
    refresh_ledger(store, "quiz", read_uploads=read_uploads)
    return store, read_ledger(store, "quiz")


def test_the_manifest_is_read_from_the_tables_columns_and_reuse_reads_no_copy(tmp_path):
    store, ledger = _benchmark(tmp_path, 300)
    table = build_match_table(store, ledger)
    with_rows = {r["agent"]: (r["path"], r["version"], r["spec_version"]) for r in ledger.accepted if r["rows"]}
    assert len(with_rows) == 299 and manifest_of(table) == with_rows
    assert sum(len(k) + len(v) for k, v in table.schema.metadata.items()) < 200  # not a line per agent
    shutil.rmtree(tmp_path / "warehouse" / "accepted")  # every agent's rows come from the previous table
    with_rows_only = dataclasses.replace(ledger, rows=tuple(r for r in ledger.rows if r["rows"]))  # none to read
    again = build_match_table(store, with_rows_only, table)
    assert again.equals(table) and again.schema.metadata == table.schema.metadata


def test_agents_scored_under_another_spec_keep_theirs():
    accepted = [
        {"agent": "a", "spec_version": "sha256:new"},
        {"agent": "b", "spec_version": "sha256:old"},
        {"agent": "c", "spec_version": "sha256:new"},
    ]
    codes = pa.array([0, 1, 2], pa.int32())
    column = pa.DictionaryArray.from_arrays(codes, pa.array(["a", "b", "c"]))
    paths = pa.DictionaryArray.from_arrays(codes, pa.array(["raw/q/a.csv", "raw/q/b.csv", "raw/q/c.csv"]))
    table = pa.table({"agent_id": column, "source_path": paths, "source_version": paths}).replace_schema_metadata(
        {matches_module._SPECS: matches_module._spec_versions(accepted)}
    )
    assert manifest_of(table) == {
        "a": ("raw/q/a.csv", "raw/q/a.csv", "sha256:new"),
        "b": ("raw/q/b.csv", "raw/q/b.csv", "sha256:old"),
        "c": ("raw/q/c.csv", "raw/q/c.csv", "sha256:new"),
    }
    assert manifest_of(table.replace_schema_metadata(None)) == {}  # a table of other code: built from scratch


def test_rated_matches_keep_the_rated_test_cases_and_no_excluded_id(tmp_path):
    """Of a match table and the provisional matches, the rows on the test cases ``test_case_ratings`` holds; where one
    is left out its id leaves the dictionary too (pandas made a category of it: an unplayed test case)."""
    from agielo_dagster.domain.matches import MATCH_SCHEMA, rated_matches
    from agielo_dagster.domain.stored import Stored

    store = Store(str(tmp_path))

    def stored(name: str, table: pa.Table) -> Stored:
        handle = Stored.of(store, name, "quiz")
        store.write_parquet(handle.path, table)
        return handle

    def matches(cases: list[str], agent: str) -> pa.Table:
        n = len(cases)
        columns = [cases, [agent] * n, [1.0] * n, [1.0] * n, ["raw/x.csv"] * n, ["1"] * n]
        return pa.Table.from_arrays(
            [pa.array(c).cast(f.type) for c, f in zip(columns, MATCH_SCHEMA, strict=True)], schema=MATCH_SCHEMA
        )

    joint = stored("match_tables", matches(["a", "b", "c"], "m1"))
    partial = stored("provisional_matches", matches(["c", "d"], "p1"))
    every = stored("test_case_ratings", pa.table({"test_case_id": ["a", "b", "c"]}))
    whole = rated_matches(every, joint)
    assert whole.equals(joint.read(whole.column_names))  # nothing excluded: the table as read
    kept = rated_matches(stored("test_case_ratings", pa.table({"test_case_id": ["a", "c"]})), joint, partial)
    assert kept.column("test_case_id").to_pylist() == ["a", "c", "c"] and kept.column("agent_id").to_pylist() == [
        "m1",
        "m1",
        "p1",
    ]
    assert sorted(kept.column("test_case_id").combine_chunks().dictionary.to_pylist()) == ["a", "c"]
    assert list(kept.to_pandas()["test_case_id"].cat.categories) == ["a", "c"]
