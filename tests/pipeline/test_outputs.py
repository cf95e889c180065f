"""Per-benchmark outputs come from the asset graph: every one is run by the rating job, withdrawn with its
benchmark and covered by the staleness question, including one these modules never heard of."""

import dagster as dg
import pyarrow as pa
import pytest
from agielo_dagster.assets.common import RUN_TAG, benchmark_asset, digest_of
from agielo_dagster.assets.partitions import benchmark_partitions

from agielo_dagster.definitions import build_definitions, defs
from agielo_dagster.domain.layout import warehouse_path
from agielo_dagster.domain.status import withdraw
from agielo_dagster.outputs import benchmark_outputs

from .conftest import write_benchmark


def selected(definitions: dg.Definitions, job: str) -> set[str]:
    return {k.to_user_string() for k in definitions.resolve_job_def(job).asset_layer.selected_asset_keys}


def check_outputs(definitions: dg.Definitions) -> None:
    graph = definitions.resolve_asset_graph()
    outputs = benchmark_outputs(graph)
    per_benchmark = {
        k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).partitions_def == benchmark_partitions
    }
    # every partitioned per-benchmark asset but the ledger says which runs write it: none is left out
    assert per_benchmark - {"upload_ledger"} == {*outputs.rated, *outputs.other}
    assert selected(definitions, "rate_benchmarks") == {"upload_ledger", *outputs.rated}
    nightly = {n for n in outputs.other if graph.get(dg.AssetKey(n)).tags[RUN_TAG] == "nightly"}
    assert selected(definitions, "rate_benchmarks_nightly") == {"upload_ledger", *outputs.rated, *nightly}
    # the staleness question reads the final outputs: each rated output is one of them or feeds one
    for name in outputs.rated:
        feeds = {f for f in outputs.finals if dg.AssetKey(name) in graph.get_ancestor_asset_keys(dg.AssetKey(f))}
        assert name in outputs.finals or feeds, name


def test_every_per_benchmark_output_is_run_withdrawn_and_covered(storage):
    check_outputs(defs)
    outputs = benchmark_outputs(defs.resolve_asset_graph())
    assert outputs.finals == ("benchmark_reports",)
    store = storage.store
    for name in (*outputs.rated, *outputs.other):
        store.write_bytes(warehouse_path(name, "quiz"), b"x")
    withdraw(store, "quiz", outputs)
    assert [n for n in (*outputs.rated, *outputs.other) if store.exists(warehouse_path(n, "quiz"))] == []


@dg.asset(ins={"agent_ratings": dg.AssetIn()}, **benchmark_asset("A new per-benchmark output, listed nowhere."))
def agent_count(agent_ratings: pa.Table) -> dg.Output:
    return dg.Output(pa.table({"agents": [agent_ratings.num_rows]}), metadata={"inputs_digest": digest_of(agent_ratings)})


@pytest.mark.slow  # one rating run and one withdrawal (about 10 s alone, 30 s on busy cores)
def test_a_new_per_benchmark_asset_is_run_withdrawn_and_covered(daemon, root):
    """Definitions with one more asset: the rating run writes it, the question asks it, the withdrawal removes it."""
    daemon.defs = dg.Definitions.merge(build_definitions(daemon.storage), dg.Definitions(assets=[agent_count]))
    check_outputs(daemon.defs)
    assert set(benchmark_outputs(daemon.defs.resolve_asset_graph()).finals) == {"benchmark_reports", "agent_count"}
    write_benchmark(root, "quiz", [1400.0, 1600.0], test_cases=20)
    assert all(r.success for r in daemon.settle())
    extra = root / warehouse_path("agent_count", "quiz")
    assert pa.parquet.read_table(extra).column("agents").to_pylist() == [2]

    assert daemon.sensor_tick().run_requests == []
    kept = extra.read_bytes()
    extra.unlink()  # a final output missing: the benchmark is stale
    assert [r.partition_key for r in daemon.sensor_tick(execute=False).run_requests] == ["quiz"]
    extra.write_bytes(kept)

    for path in sorted((root / "raw" / "quiz").iterdir()):
        path.unlink()
    (root / "raw" / "quiz").rmdir()
    daemon.settle()
    assert not extra.exists() and not (root / warehouse_path("benchmark_reports", "quiz")).exists()
