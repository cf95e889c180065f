"""Determinism, idempotency and races: the final state equals a clean run on the final inputs."""

import shutil

import dagster as dg
import pandas as pd
import pytest
from agielo_dagster.resources.storage import ObjectStorage

from .conftest import BENCHMARK_OUTPUTS, Daemon, write_benchmark, write_log


def outputs(root, benchmark):
    return {a: (root / "warehouse" / a / f"{benchmark}.parquet").read_bytes() for a in BENCHMARK_OUTPUTS}


def clean_run(raw_folder, tmp_path, name):
    """A fresh storage root and instance that only ever saw these raw files."""
    root = tmp_path / name
    shutil.copytree(raw_folder, root / "raw")
    with dg.instance_for_test() as instance:
        Daemon(ObjectStorage(root=str(root)), instance).settle()
    return root


def test_same_inputs_and_seed_give_byte_identical_tables(tmp_path):
    source = tmp_path / "source"
    write_benchmark(source, "quiz", [1300, 1500, 1700, 1900], test_cases=80)
    first = clean_run(source / "raw", tmp_path, "first")
    second = clean_run(source / "raw", tmp_path, "second")
    assert outputs(first, "quiz") == outputs(second, "quiz")
    assert len(outputs(first, "quiz")) == len(BENCHMARK_OUTPUTS)


def test_the_same_file_uploaded_twice_changes_nothing(daemon, root):
    write_benchmark(root, "quiz", [1300, 1600])
    daemon.settle()
    before, runs = outputs(root, "quiz"), len(daemon.runs)
    path = root / "raw/quiz/agent_1.csv"
    path.write_bytes(path.read_bytes())  # uploaded again, same content, new modification time
    assert not daemon.sensor_tick().run_requests
    assert len(daemon.runs) == runs and outputs(root, "quiz") == before


@pytest.mark.slow  # the quick pass keeps the byte-identical rerun
def test_a_file_replaced_while_its_run_is_in_flight(daemon, root, tmp_path):
    write_benchmark(root, "quiz", [1300, 1500, 1700])
    daemon.settle()
    log = pd.read_csv(root / "raw/quiz/agent_0.csv")
    write_log(root, "quiz", "agent_0", log.assign(correct=1))  # version 2 lands…
    requests = daemon.sensor_tick(execute=False).run_requests
    write_log(root, "quiz", "agent_0", log.assign(correct=0))  # …and is replaced before its run reads it
    daemon.execute(requests)
    daemon.settle()
    daemon.settle()
    clean = clean_run(root / "raw", tmp_path, "clean")
    assert outputs(root, "quiz") == outputs(clean, "quiz")
    stored = pd.read_parquet(root / "warehouse/match_tables/quiz.parquet")
    assert (stored.loc[stored["agent_id"] == "agent_0", "metric"] == 0).all()


@pytest.mark.slow  # the quick pass keeps the file replaced in flight
def test_agents_landing_while_a_run_is_planned_and_after_it(daemon, root, tmp_path):
    write_benchmark(root, "quiz", [1300, 1500])
    daemon.settle()
    matches = write_benchmark(root / "extra", "quiz", [1400, 1600, 1800], seed=0)
    late = {
        agent: rows.rename(columns={"metric": "correct"})[["test_case_id", "correct"]]
        for agent, rows in matches.groupby("agent_id")
    }
    write_log(root, "quiz", "late_agent_0", late["agent_0"])
    requests = daemon.sensor_tick(execute=False).run_requests
    write_log(root, "quiz", "late_agent_1", late["agent_1"])  # lands after the run was planned, before it starts
    daemon.execute(requests)
    write_log(root, "quiz", "late_agent_2", late["agent_2"])  # lands after the run
    daemon.settle()
    clean = clean_run(root / "raw", tmp_path, "clean")
    assert outputs(root, "quiz") == outputs(clean, "quiz")
    assert {"late_agent_0", "late_agent_1", "late_agent_2"} <= set(
        pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet")["agent_id"]
    )
