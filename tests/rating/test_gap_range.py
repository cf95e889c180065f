"""Graded gaps depend on the declared metric range (issue 22, item 4): stated, and flagged when far too wide."""

import math

import pytest

from agielo_dagster.rating import binary, competency_gaps, identity, minmax, rate
from agielo_dagster.rating.gap_range import range_assumption


def _best_gap(matches, scoring):
    scored = matches.assign(score=scoring.score(matches["metric"]))
    result = rate(scored, with_reliability=False)
    return competency_gaps(result.test_cases, result.agents, scoring=scoring).iloc[0]


def test_the_declared_range_moves_the_gaps_and_a_far_wider_one_is_flagged(diabetes_benchmark):
    observed_hi = float(diabetes_benchmark["metric"].max())  # 242: the largest absolute error of any regressor
    tight, wide = minmax(0.0, observed_hi, higher_is_better=False), minmax(0.0, 1000.0, higher_is_better=False)
    at_tight, at_wide = _best_gap(diabetes_benchmark, tight), _best_gap(diabetes_benchmark, wide)
    # the same results: the best agent's gap falls by hundreds of Elo and it "beats" nearly every test case
    assert at_tight["gap_50"] - at_wide["gap_50"] > 300
    assert at_tight["pct_beaten_91"] < 50 < 90 < at_wide["pct_beaten_91"]
    assert not range_assumption(tight, 0.0, observed_hi).far
    assert not range_assumption(minmax(0.0, 350.0), 0.0, observed_hi).far  # 69 % of the declared span
    stated = range_assumption(wide, 0.0, observed_hi)
    assert stated.far and stated.observed_share == pytest.approx(0.242)
    assert "[0, 1000]" in stated.warning and "[0, 242]" in stated.warning and "24 %" in stated.warning
    meta = stated.as_metadata()
    assert meta["assumed_metric_range"] == "[0, 1000] (minmax)" and meta["range_warning"] == stated.warning


def test_identity_and_binary_ranges():
    assert range_assumption(identity(), 0.0, 1.0).warning == ""
    assert range_assumption(identity(), 0.9, 1.0).far  # probabilities that never leave [0.9, 1]
    flat = range_assumption(binary(0.5), -3.0, 7.0)
    assert not flat.far and math.isnan(flat.observed_share) and flat.as_metadata()["assumed_metric_range"] == "none (binary)"
    with pytest.raises(ValueError, match="observed metric range"):
        range_assumption(identity(), 1.0, 0.0)
