"""What the ratings say about themselves (issue 22): the fragility of #1, and the range graded gaps assume."""

import dagster as dg
import pandas as pd

from .conftest import write_benchmark


def latest_metadata(instance, asset: str, partition: str) -> dict:
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1
    ).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def test_ratings_state_the_fragility_of_first_and_gaps_the_range_they_assume(daemon, root):
    # a 0/1 metric declared on [0, 10]: the matches span a tenth of the declared range
    spec = "metric: correct\nscoring: minmax\nparams: {lo: 0, hi: 10}\n"
    write_benchmark(root, "quiz", [1300, 1600, 1620, 1640], test_cases=80, spec=spec)
    runs = daemon.settle()
    assert runs and all(r.success for r in runs)
    ratings = latest_metadata(daemon.instance, "agent_ratings", "quiz")
    agents = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet")
    best = agents.sort_values("mu", ascending=False)["agent_id"].iloc[0]
    assert ratings["fragility_leader"] == best
    assert ratings["fragility_method"] in ("exact", "approx")
    assert isinstance(ratings["fragility_of_first"], int) and 1 <= ratings["fragility_of_first"] <= 40
    assert ratings["fragility_flips_to"] in set(agents["agent_id"]) - {best}
    assert best in ratings["fragility_tier"]
    # the report and the explorer say it in one sentence, from agent_ratings' own parquet metadata
    sentence = (
        f"removing {'' if ratings['fragility_method'] == 'exact' else 'at most '}{ratings['fragility_of_first']} of 80 "
        f"test cases makes {ratings['fragility_flips_to']} first instead of {best}"
    )
    report = (root / "warehouse/reports/quiz.html").read_text(encoding="utf-8")
    assert f'<p id="fragility">Fragility of #1: {sentence}' in report
    assert sentence in (root / "warehouse/explorer/quiz.html").read_text(encoding="utf-8")

    gaps_meta = latest_metadata(daemon.instance, "competency_gap_tables", "quiz")
    assert gaps_meta["assumed_metric_range"] == "[0, 10] (minmax)"
    assert gaps_meta["observed_metric_range"] == "[0, 1]" and gaps_meta["observed_share_of_range"] == 0.1
    assert "declares the metric on [0, 10]" in gaps_meta["range_warning"]
    gaps = pd.read_parquet(root / "warehouse/competency_gap_tables/quiz.parquet")
    assert (gaps["assumed_metric_lo"] == 0).all() and (gaps["assumed_metric_hi"] == 10).all()
    assert (gaps["range_warning"] == gaps_meta["range_warning"]).all()
    logs = [e.user_message or "" for r in runs for e in daemon.instance.all_logs(r.run_id)]
    logged = [message for message in logs if "declares the metric" in message]
    assert logged, "the far-too-wide range is logged as a warning"
