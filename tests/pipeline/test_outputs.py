"""Per-benchmark outputs come from the asset graph: every one is run by the rating job, withdrawn with its benchmark and
covered by Dagster's staleness, including one these modules never heard of."""

import dagster as dg
import pyarrow as pa
import pytest
from agielo_dagster.assets.common import RUN_TAG, benchmark_asset
from agielo_dagster.assets.partitions import benchmark_partitions

from agielo_dagster.definitions import build_definitions, defs
from agielo_dagster.domain.layout import warehouse_path
from agielo_dagster.domain.stored import Stored
from agielo_dagster.pending import assets_defs_of, rating_keys

from .conftest import write_benchmark


def selected(definitions: dg.Definitions, job: str) -> set[str]:
    return {k.to_user_string() for k in definitions.resolve_job_def(job).asset_layer.selected_asset_keys}


def check_outputs(definitions: dg.Definitions) -> None:
    specs = definitions.resolve_all_asset_specs()
    per_benchmark = {s.key.to_user_string() for s in specs if s.partitions_def == benchmark_partitions}
    runs = {s.key.to_user_string(): s.tags.get(RUN_TAG) for s in specs if s.key.to_user_string() in per_benchmark}
    # every partitioned per-benchmark asset but the ledger and the observed files says which runs write it
    assert {n for n, run in runs.items() if run is None} == {"upload_ledger", "raw_uploads"}
    rated = {n for n, run in runs.items() if run == "rating"}
    assert {k.to_user_string() for k in rating_keys(assets_defs_of(definitions))} == {"upload_ledger", *rated}
    assert selected(definitions, "rate_benchmarks") == {"upload_ledger", *rated}
    nightly = {n for n, run in runs.items() if run == "nightly"}
    assert selected(definitions, "rate_benchmarks_nightly") == {"upload_ledger", *rated, *nightly}


def test_every_per_benchmark_output_is_run_by_its_job():
    check_outputs(defs)


@dg.asset(ins={"agent_ratings": dg.AssetIn()}, **benchmark_asset("A new per-benchmark output, listed nowhere."))
def agent_count(agent_ratings: Stored) -> dg.Output:
    if not agent_ratings.exists:  # withdrawn
        return dg.Output(None)
    agents = pa.table({"agents": [agent_ratings.read(["agent_id"]).num_rows]})
    return dg.Output(agents, metadata={"inputs_digest": agent_ratings.digest})


@pytest.mark.slow  # two rating runs and a tidying (about 10 s alone, 30 s on busy cores)
def test_a_new_per_benchmark_asset_is_run_withdrawn_and_covered(daemon, root):
    """A benchmark rated, then the definitions get one more asset: it is missing, so it alone runs; it is withdrawn
    with its benchmark."""
    write_benchmark(root, "quiz", [1400.0, 1600.0], test_cases=20)
    assert all(r.success for r in daemon.settle())
    daemon.defs = dg.Definitions.merge(build_definitions(daemon.storage), dg.Definitions(assets=[agent_count]))
    check_outputs(daemon.defs)
    runs = daemon.settle()
    assert {e.asset_key.to_user_string() for r in runs for e in r.get_asset_materialization_events()} == {"agent_count"}
    extra = root / warehouse_path("agent_count", "quiz")
    assert pa.parquet.read_table(extra).column("agents").to_pylist() == [2]
    assert daemon.sensor_tick().run_requests == []

    for path in sorted((root / "raw" / "quiz").iterdir()):
        path.unlink()
    (root / "raw" / "quiz").rmdir()
    daemon.settle()
    assert not extra.exists() and not (root / warehouse_path("benchmark_reports", "quiz")).exists()
    assert daemon.instance.get_dynamic_partitions("benchmarks") == []
