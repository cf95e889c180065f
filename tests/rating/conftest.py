"""Fixtures of the rating tests: the demo's second real benchmark and a real regression benchmark."""

import pytest

from benchmarks import graded

from ..conftest import demo_match_table


@pytest.fixture(scope="session")
def demo_breast_cancer(tmp_path_factory):
    """The embedded demo's breast_cancer benchmark (13 scikit-learn classifiers, 569 tumours), as a match table."""
    return demo_match_table(tmp_path_factory, "breast_cancer")


@pytest.fixture(scope="session")
def diabetes_benchmark():
    """A real graded, lower-is-better benchmark: :func:`benchmarks.graded.diabetes_benchmark`."""
    return graded.diabetes_benchmark()
