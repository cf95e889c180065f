"""Nightly estimator assets and HodgeRank on dropped judgment files."""

import dagster as dg
import pandas as pd
import pytest

from agielo_dagster.sensors import judgments_sensor

from .conftest import QUIET, write_benchmark


@pytest.mark.slow  # the quick pass runs the nightly job in test_seams
def test_nightly_job_compares_estimators_and_bounds_uncertainty(daemon, root):
    write_benchmark(root, "quiz", [1200, 1450, 1700, 1950], test_cases=150)
    runs = daemon.settle()
    assert not any(r.asset_materializations_for_node("estimator_comparison") for r in runs if r.success)  # not incremental
    assert not (root / "warehouse/estimator_comparison/quiz.parquet").exists()
    config = {
        **QUIET,
        "ops": {
            "rating_uncertainty": {"config": {"resamples": 40}},
        },
    }
    job = daemon.defs.resolve_job_def("rate_benchmarks_nightly")
    result = job.execute_in_process(run_config=config, instance=daemon.instance, partition_key="quiz")
    assert result.success
    comparison = pd.read_parquet(root / "warehouse/estimator_comparison/quiz.parquet")
    assert len(comparison) == 6  # 4 methods, every pair
    assert (comparison["kendall_tau"] > 0.6).all() and (comparison["top_k_agreement"] == 1.0).all()
    uncertainty = pd.read_parquet(root / "warehouse/rating_uncertainty/quiz.parquet")
    assert set(uncertainty["quantity"]) == {"rating", "gap_50", "gap_90", "gap_99", "plackett_luce"}
    ratings = uncertainty[uncertainty["quantity"] == "rating"].set_index("agent_id")
    assert (ratings["low"] < ratings["high"]).all()
    assert ratings.loc["agent_3", "low"] > ratings.loc["agent_0", "high"]  # 750 points apart: clearly separated
    materialization = result.asset_materializations_for_node("rating_uncertainty")[0]
    assert materialization.metadata["resamples"].value == 40
    heldout = pd.read_parquet(root / "warehouse/reliability_heldout/quiz.parquet").set_index(["method", "measure"])["value"]
    # binary outcomes: AGI-Elo predicts held-out matches better than knowing only the agent's mean
    assert heldout["agielo", "log_loss"] < heldout["agent_mean", "log_loss"]
    assert heldout["agielo", "brier"] < heldout["agent_mean", "brier"]
    # the metadata carry the headline: the default prediction against the baselines, and a verdict
    check = result.asset_materializations_for_node("reliability_heldout")[0].metadata
    assert check["measure"].value == "log_loss" and check["default_method"].value == "agielo_population"
    assert check["default"].value == round(heldout["agielo_population", "log_loss"], 4)
    assert check["test_case_mean"].value == round(heldout["test_case_mean", "log_loss"], 4)
    assert check["additive"].value == round(heldout["additive", "log_loss"], 4)
    assert check["verdict"].value == "ok"  # simulated from the logistic model: AGI-Elo ties the Rasch fit


def _judgment_tick(daemon, cursor=None):
    context = dg.build_sensor_context(
        instance=daemon.instance, cursor=cursor, resources={"storage": daemon.storage}, definitions=daemon.defs
    )
    result = judgments_sensor(context)
    for request in result.dynamic_partitions_requests or []:
        daemon.instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    runs = [
        daemon.defs.resolve_job_def("rank_judgments").execute_in_process(
            run_config=QUIET, instance=daemon.instance, partition_key=r.partition_key, raise_on_error=False
        )
        for r in result.run_requests
    ]
    return result, runs


def test_dropped_judgments_are_ranked_with_hodge_rank(daemon, root):
    folder = root / "judgments"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {
            "item_a": ["t1", "t2", "t1", "t3"],
            "item_b": ["t2", "t3", "t3", "t4"],
            "winner": ["a", "a", "a", "tie"],
            "rater": ["r1", "r1", "r2", "r2"],
        }
    ).to_csv(folder / "study.csv", index=False)
    pd.DataFrame({"item_a": ["x", "y", "z"], "item_b": ["y", "z", "x"], "winner": ["a", "a", "a"]}).to_csv(
        folder / "cyclic.csv", index=False
    )
    (folder / "bad name!.csv").write_text("item_a,item_b,winner\nx,y,a\n")
    result, runs = _judgment_tick(daemon)
    assert sorted(r.partition_key for r in result.run_requests) == ["cyclic", "study"]
    assert all(run.success for run in runs)
    scores = pd.read_parquet(root / "warehouse/difficulty_judgments/study.parquet")
    assert list(scores["item"])[0] == "t1" and set(scores["item"]) == {"t1", "t2", "t3", "t4"}
    cyclic = next(run for run in runs if run.dagster_run.tags.get("dagster/partition") == "cyclic")
    assert cyclic.asset_materializations_for_node("difficulty_judgments")[0].metadata["inconsistency"].value == 1.0
    # nothing changed: nothing requested; a changed set is ranked again
    again, _ = _judgment_tick(daemon, result.cursor)
    assert not again.run_requests
    (folder / "study.csv").write_text("item_a,item_b,winner\nt4,t1,a\n")
    changed, runs = _judgment_tick(daemon, again.cursor)
    assert [r.partition_key for r in changed.run_requests] == ["study"] and runs[0].success


def test_a_malformed_judgment_set_is_rejected_by_rule_without_failing_the_run(daemon, root):
    folder = root / "judgments"
    folder.mkdir(parents=True)
    (folder / "broken.csv").write_text("item_a,item_b,winner\nx,y,maybe\n")
    _, (run,) = _judgment_tick(daemon)
    assert run.success  # bad input is a named rule, never a failed step
    materialization = run.asset_materializations_for_node("difficulty_judgments")[0]
    assert materialization.metadata["status"].value == "rejected"
    message = materialization.metadata["message"].value
    assert "judgments/broken.csv: data row 1 (line 2): winner 'maybe'" in message and "winner_known" in message
    (check,) = run.get_asset_check_evaluations()
    assert check.check_name == "judgments_accepted" and not check.passed
    assert pd.read_parquet(root / "warehouse/difficulty_judgments/broken.parquet").empty
