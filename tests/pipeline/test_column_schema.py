"""Every table an asset writes carries Dagster's column schema, each column described (rating/schema.py)."""

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from .conftest import QUIET
from .test_capabilities import write_tagged_benchmark
from .test_estimator_assets import _judgment_tick

EEE = Path(__file__).resolve().parents[1] / "data" / "harness" / "eee"


@pytest.mark.slow  # the rating job, the nightly estimators, a plan and judgments: about 90 s
def test_every_table_output_has_its_columns_described(daemon, root):
    write_tagged_benchmark(root)
    shutil.copytree(EEE, root / "incoming/eee")  # a harness drop: the incoming ledger too
    runs = daemon.settle()
    nightly = daemon.defs.resolve_job_def("rate_benchmarks_nightly")
    config = {
        **QUIET,
        "ops": {"rating_uncertainty": {"config": {"resamples": 5}}},
    }
    runs.append(nightly.execute_in_process(run_config=config, instance=daemon.instance, partition_key="olympiad"))
    plan = {**QUIET, "ops": {"placement_plans": {"config": {"agent": "newbie", "budget": 20}}}}
    runs.append(
        daemon.defs.resolve_job_def("plan_placement").execute_in_process(
            run_config=plan, instance=daemon.instance, partition_key="olympiad"
        )
    )
    (root / "judgments").mkdir()
    (root / "judgments/study.csv").write_text("item_a,item_b,winner\np001,p002,a\np002,p003,a\np001,p003,tie\n")
    runs += _judgment_tick(daemon)[1]
    assert all(run.success for run in runs)
    undescribed, mismatched, seen = [], [], set()
    for run in runs:
        for event in run.get_asset_materialization_events():
            materialization = event.event_specific_data.materialization
            schema = materialization.metadata.get("dagster/column_schema")
            if schema is None:
                continue
            asset = "/".join(materialization.asset_key.path)
            seen.add(asset)
            columns = schema.value.columns
            uri = materialization.metadata["dagster/uri"].value
            written = pq.read_schema(uri).names
            if [c.name for c in columns] != written:
                mismatched.append(f"{asset}: {[c.name for c in columns]} != {written}")
            undescribed += [f"{asset}.{c.name}" for c in columns if not (c.description or "").strip()]
    assert not mismatched, "\n".join(mismatched)
    assert not undescribed, " ".join(undescribed)
    assert {"upload_ledger", "harness_uploads", "match_tables", "agent_ratings", "slice_ratings", "rating_uncertainty"} <= seen
    assert {"placement_plans", "difficulty_judgments"} <= seen
