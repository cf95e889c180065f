"""Tags, slices, ability masses, the explorer and `agielo query`, through the pipeline."""

import os
import subprocess
import sys

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from ..devserver import REPO

ABILITIES = ["algebra", "geometry", "logic", "reading"]


def write_tagged_benchmark(root, seed=0):
    """4 agents × 240 test cases; each test case needs 1–2 abilities; agent_3 is weak at geometry."""
    rng = np.random.default_rng(seed)
    folder = root / "raw/olympiad"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
    mass = {"algebra": 0.5, "geometry": 1.5, "logic": 1.0, "reading": 0.2}
    ids, needs = [f"p{i:03d}" for i in range(240)], []
    for _ in ids:
        needs.append(sorted(rng.choice(ABILITIES, size=rng.integers(1, 3), replace=False)))
    difficulty = np.array([sum(mass[a] for a in n) for n in needs]) - 1.0
    pd.DataFrame(
        {
            "test_case_id": ids,
            "abilities": ["; ".join(n) for n in needs],
            "subject": ["math" if "algebra" in n else "other" for n in needs],
        }
    ).to_csv(folder / "test_cases.csv", index=False)
    for a, skill in enumerate([0.5, 1.0, 1.5, 1.5]):
        penalty = np.array([2.5 if (a == 3 and "geometry" in n) else 0.0 for n in needs])
        p = 1 / (1 + np.exp(difficulty + penalty - skill))
        pd.DataFrame({"test_case_id": ids, "correct": (rng.random(len(ids)) < p).astype(int)}).to_csv(
            folder / f"agent_{a}.csv", index=False
        )


def test_tags_slices_masses_and_the_explorer(daemon, root):
    write_tagged_benchmark(root)
    daemon.settle()
    ledger = pd.read_parquet(root / "warehouse/upload_ledger/olympiad.parquet").set_index("path")
    assert ledger.loc["raw/olympiad/test_cases.csv", "kind"] == "tags"
    assert ledger.loc["raw/olympiad/test_cases.csv", "status"] == "accepted"
    assert "test_cases" not in set(pd.read_parquet(root / "warehouse/agent_ratings/olympiad.parquet")["agent_id"])
    tags = pd.read_parquet(root / "warehouse/test_case_tags/olympiad.parquet")
    assert {"abilities", "subject"} <= set(tags.columns) and len(tags) == 240
    slices = pd.read_parquet(root / "warehouse/slice_ratings/olympiad.parquet")
    geometry = slices[(slices["tag"] == "abilities") & (slices["value"] == "geometry")].set_index("agent_id")
    # the planted weakness: agent_3 is the one far below its overall rating on geometry
    assert geometry["delta"].idxmin() == "agent_3" and geometry.loc["agent_3", "delta"] < -100
    assert geometry.loc["agent_3", "mu_hi"] < geometry.loc["agent_3", "mu"] + 400
    masses = pd.read_parquet(root / "warehouse/ability_masses/olympiad.parquet").set_index("ability")["mass"]
    assert masses.idxmax() == "geometry" and masses.idxmin() == "reading"  # the planted order of the extremes
    explorer = (root / "warehouse/explorer/olympiad.html").read_text()
    assert "geometry" in explorer and "agent_3" in explorer
    assert 'src="http' not in explorer and 'href="http' not in explorer  # self-contained: nothing fetched
    event = daemon.instance.fetch_materializations(dg.AssetKey("benchmark_reports"), limit=1).records[0].asset_materialization
    assert event.metadata["explorer"].value.endswith("warehouse/explorer/olympiad.html")


def test_a_bad_tag_file_is_rejected_and_named(daemon, root):
    write_tagged_benchmark(root)
    (root / "raw/olympiad/test_cases.csv").write_text("test_case_id,abilities\np000,algebra;;geometry\np000,logic\n")
    daemon.settle()
    row = pd.read_parquet(root / "warehouse/upload_ledger/olympiad.parquet").set_index("path").loc["raw/olympiad/test_cases.csv"]
    assert row["status"] == "rejected" and row["rule"] and row["message"].startswith("raw/olympiad/test_cases.csv")
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    assert "raw/olympiad/test_cases.csv" in set(report["file"])
    # the benchmark is still rated, without the file's tags
    assert len(pd.read_parquet(root / "warehouse/agent_ratings/olympiad.parquet")) == 4


@pytest.mark.slow
def test_agielo_query_ranks_agents_on_the_selected_test_cases(daemon, root):
    write_tagged_benchmark(root)
    daemon.settle()
    env = {**os.environ, "DAGSTER_HOME": str(root.parent / "unused_home")}
    run = lambda text: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "agielo_dagster.cli", "query", text, "--storage", str(root)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = run("abilities contains 'geometry' and rating > 1400")
    assert out.returncode == 0, out.stderr
    assert "selected" in out.stdout and "olympiad:" in out.stdout
    lines = [line for line in out.stdout.splitlines() if "agent_" in line]
    assert len(lines) == 4 and "agent_3" in lines[-1]  # weak at geometry: last on a geometry query
    bad = run("__import__('os') == 1")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and "query position" in bad.stderr
