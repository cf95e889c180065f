"""A new model placed from a plan, as a user would: `agielo plan` → partial upload → `agielo run` → full upload → `agielo run`.

The results are real: the demo's breast_cancer benchmark with one classifier held back; its full
out-of-fold log is what the "new model" would have produced.
"""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.demo import write_demo_data

from ..devserver import REPO

NEW = "mlp"
BENCHMARK = "breast_cancer"
BUDGET = 30


def agielo(*args, home, timeout=600):
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def warehouse(root, asset):
    return pd.read_parquet(root / "warehouse" / asset / f"{BENCHMARK}.parquet")


@pytest.mark.slow
def test_a_planned_partial_upload_is_provisional_until_the_full_one(tmp_path):
    home, root = tmp_path / "home", tmp_path / "storage"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    write_demo_data(str(root), (BENCHMARK,))
    held_back = pd.read_csv(root / "raw" / BENCHMARK / f"{NEW}.csv")  # the new model's full results, not uploaded yet
    (root / "raw" / BENCHMARK / f"{NEW}.csv").unlink()

    first = agielo("run", "--storage", str(root), home=home)
    assert first.returncode == 0, first.stdout + first.stderr
    before = warehouse(root, "test_case_ratings").set_index("test_case_id")[["mu", "sigma"]]
    assert NEW not in set(warehouse(root, "agent_ratings")["agent_id"])

    # the plan: BUDGET test cases, a stratified random sample by difficulty (at the new-agent prior: nothing known yet)
    planned = agielo("plan", "--benchmark", BENCHMARK, "--agent", NEW, "--budget", str(BUDGET), "--storage", str(root), home=home)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert f"planned {BUDGET} test case(s) for {NEW} on {BENCHMARK}" in planned.stdout
    plan = pd.read_csv(root / "plans" / BENCHMARK / f"{NEW}.csv")
    assert list(plan.columns) == ["test_case_id", "mu", "sigma", "information"]
    assert len(plan) == BUDGET and plan["test_case_id"].is_unique
    assert set(plan["test_case_id"]) <= set(before.index)
    assert np.ptp(plan["mu"]) > 0.5 * np.ptp(before["mu"])  # spread over the difficulties

    # the model is run on exactly those test cases: a partial upload
    partial = held_back[held_back["test_case_id"].isin(plan["test_case_id"])]
    assert len(partial) == BUDGET
    partial.to_csv(root / "raw" / BENCHMARK / f"{NEW}.csv", index=False)
    second = agielo("run", "--storage", str(root), home=home)
    assert second.returncode == 0, second.stdout + second.stderr
    agents = warehouse(root, "agent_ratings").set_index("agent_id")
    assert bool(agents.loc[NEW, "provisional"]) and not agents.drop(index=NEW)["provisional"].any()
    row = agents.loc[NEW]
    assert np.isfinite([row["mu"], row["mu_lo"], row["mu_hi"]]).all()
    assert row["mu_lo"] < row["mu"] < row["mu_hi"] and row["matches"] == BUDGET
    assert (
        row["status"] == "provisional"
        and row["status_reason"] == f"placed from a partial upload: {BUDGET} of its {BUDGET} test cases"
    )
    assert (agents.drop(index=NEW)["status"] == "rated").all()
    # no rank of its own and nobody's moved; the ranks its interval allows among the 12 rated classifiers
    rated = agents.drop(index=NEW)
    assert pd.isna(row["rank"]) and rated["rank"].notna().all()
    assert row["rank_lo"] == 1 + (rated["mu_lo"] > row["mu_hi"]).sum()
    assert row["rank_hi"] == 1 + (rated["mu_hi"] >= row["mu_lo"]).sum()
    assert 1 <= row["rank_lo"] <= row["rank_hi"] <= len(rated) + 1
    gaps = warehouse(root, "competency_gap_tables").set_index("agent_id")
    assert bool(gaps.loc[NEW, "provisional"])
    after = warehouse(root, "test_case_ratings").set_index("test_case_id")[["mu", "sigma"]]
    pd.testing.assert_frame_equal(after.loc[before.index], before)  # the benchmark's ratings did not move

    # a second plan knows the provisional rating and skips what was evaluated
    again = agielo("plan", "--benchmark", BENCHMARK, "--agent", NEW, "--budget", "10", "--storage", str(root), home=home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"already evaluated: {BUDGET}" in again.stdout and "current rating: none yet" not in again.stdout
    nxt = pd.read_csv(root / "plans" / BENCHMARK / f"{NEW}.csv")
    assert len(nxt) == 10 and not set(nxt["test_case_id"]) & set(plan["test_case_id"])

    # the full upload: a regular agent, rated jointly
    held_back.to_csv(root / "raw" / BENCHMARK / f"{NEW}.csv", index=False)
    third = agielo("run", "--storage", str(root), home=home)
    assert third.returncode == 0, third.stdout + third.stderr
    agents = warehouse(root, "agent_ratings").set_index("agent_id")
    assert not agents["provisional"].any() and agents.loc[NEW, "matches"] == len(held_back)
    assert (agents["status"] == "rated").all() and (agents["status_reason"] == "").all()
    assert row["mu_lo"] <= agents.loc[NEW, "mu"] <= row["mu_hi"]  # the provisional interval held the joint rating
    assert not warehouse(root, "competency_gap_tables")["provisional"].any()
