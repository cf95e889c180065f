"""Adding a harness or a scoring is one new module plus one registry line (README's "where to change what").

The toys of ``toy_harness.py`` and ``toy_scoring.py`` are registered here with exactly that line, run through the
readers, the engine and the real pipeline, and unregistered.
"""

from __future__ import annotations

import dagster as dg
import numpy as np
import pandas as pd
import pytest
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.harness import READERS, drops_of, harness_of, read_all, read_drop
from agielo_dagster.rating.scoring import SCORINGS, ScoringError, make_scoring, scoring_names

from ..pipeline.conftest import Daemon, write_benchmark, write_log
from .toy_harness import Toy
from .toy_scoring import Percent

LOG = "incoming/toy/team/run.tsv"
TSV = "".join(f"acme/model-{m}\tquiz\tq{i}\t{float((i * (m + 1)) % 3 == 0)}\n" for m in range(3) for i in range(40))


@pytest.fixture
def root(tmp_path):
    return tmp_path / "storage"


@pytest.fixture
def daemon(root):
    root.mkdir()
    with dg.instance_for_test() as instance:
        yield Daemon(ObjectStorage(root=str(root)), instance)


@pytest.fixture
def toy_harness():
    READERS[Toy.name] = Toy()  # the one line a new harness adds to registry.py
    yield
    del READERS[Toy.name]
    assert harness_of(LOG) is None


@pytest.fixture
def percent():
    SCORINGS[Percent.name] = Percent  # the one line a new scoring adds to rating/scoring/__init__.py
    yield
    del SCORINGS[Percent.name]
    assert "percent" not in scoring_names()


def test_an_unregistered_harness_is_no_harness():
    assert harness_of(LOG) is None
    with pytest.raises(ValueError, match="unknown harness 'toy'"):
        read_drop("toy", [LOG], lambda p: b"")


def test_a_registered_harness_recognises_and_reads_its_logs(toy_harness):
    files = {LOG: TSV.encode(), "incoming/toy/notes.txt": b"not a log", "raw/quiz/a.csv": b"test_case_id,x\n1,1\n"}
    assert harness_of(LOG) == ("toy", LOG)
    assert list(drops_of(files)) == [("toy", LOG)]
    result = read_all(list(files), files.__getitem__)
    assert result.errors == []
    assert sorted(u.original_agent for u in result.uploads) == ["acme/model-0", "acme/model-1", "acme/model-2"]
    assert {(u.benchmark, u.harness, u.rows.num_rows, u.metric) for u in result.uploads} == {("quiz", "toy", 40, "score")}


@pytest.mark.slow  # one pipeline run, about 30 s
def test_a_registered_harness_runs_through_the_pipeline(toy_harness, daemon, root):
    (root / LOG).parent.mkdir(parents=True)
    (root / LOG).write_text(TSV)
    assert all(run.success for run in daemon.settle())
    ratings = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet")
    assert len(ratings) == 3 and all(a.startswith("acme__model-") for a in ratings["agent_id"])


def test_an_unregistered_scoring_is_refused_by_name():
    with pytest.raises(ScoringError, match="unknown scoring function 'percent'; known: identity, binary, minmax"):
        make_scoring("percent")


def test_a_registered_scoring_scores_inverts_and_round_trips(percent):
    scoring = make_scoring("percent")
    np.testing.assert_allclose(scoring.score([0.0, 25.0, 100.0]), [0.0, 0.25, 1.0])
    np.testing.assert_allclose(scoring.metric([0.25]), [25.0])
    assert make_scoring(**{"name": scoring.to_config()["scoring"], "params": scoring.to_config()["params"]}) == scoring
    with pytest.raises(ScoringError) as err:
        scoring.score([50.0, 101.0])
    assert err.value.rule == "metric_in_range" and err.value.row == 1


@pytest.mark.slow  # one pipeline run, about 25 s
def test_a_benchmark_whose_yaml_names_a_registered_scoring_is_rated(percent, daemon, root):
    matches = write_benchmark(root, "quiz", [1300, 1600, 1900], test_cases=120, spec="metric: correct\nscoring: percent\n")
    for agent, rows in matches.groupby("agent_id"):  # the same outcomes, in percent
        write_log(root, "quiz", agent, rows.assign(correct=100 * rows["metric"])[["test_case_id", "correct"]])
    assert all(run.success for run in daemon.settle())
    ratings = pd.read_parquet(root / "warehouse/agent_ratings/quiz.parquet").set_index("agent_id")["mu"]
    assert ratings["agent_0"] < ratings["agent_1"] < ratings["agent_2"]
