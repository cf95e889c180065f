"""Fixtures of the rating tests: the demo's second real benchmark and a real regression benchmark."""

import pandas as pd
import pytest

from benchmarks import graded


@pytest.fixture(scope="session")
def demo_breast_cancer():
    """The embedded demo's breast_cancer benchmark (13 scikit-learn classifiers, 569 tumours), as a match table."""
    from agielo_dagster.demo import demo_logs

    logs = demo_logs("breast_cancer")
    return pd.concat(
        [log.assign(agent_id=agent, metric=log["p_true"], score=log["p_true"]) for agent, log in logs.items()], ignore_index=True
    )[["test_case_id", "agent_id", "metric", "score"]]


@pytest.fixture(scope="session")
def diabetes_benchmark():
    """A real graded, lower-is-better benchmark: :func:`benchmarks.graded.diabetes_benchmark`."""
    return graded.diabetes_benchmark()
