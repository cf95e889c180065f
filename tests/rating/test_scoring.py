import math

import numpy as np
import pytest

from agielo_dagster.rating import ScoringError, binary, identity, make_scoring, minmax


def test_identity_is_the_metric_and_its_own_inverse():
    s = identity()
    np.testing.assert_array_equal(s.score([0.0, 0.25, 1.0]), [0.0, 0.25, 1.0])
    np.testing.assert_array_equal(s.metric([0.0, 0.25, 1.0]), [0.0, 0.25, 1.0])


def test_binary_thresholds_inclusively():
    s = binary(threshold=2.0)
    np.testing.assert_array_equal(s.score([1.999, 2.0, 7.5, -3.0]), [0.0, 1.0, 1.0, 0.0])
    # the inverse is the probability of reaching the threshold
    np.testing.assert_array_equal(s.metric([0.3]), [0.3])


def test_minmax_lower_is_better_maps_and_inverts():
    s = minmax(0.0, 10.0, higher_is_better=False)
    np.testing.assert_allclose(s.score([0.0, 2.5, 10.0]), [1.0, 0.75, 0.0])
    np.testing.assert_allclose(s.metric(s.score([0.0, 2.5, 10.0])), [0.0, 2.5, 10.0])
    assert s.is_worse(7.0, 5.0) and not s.is_worse(3.0, 5.0)


def test_minmax_higher_is_better_round_trips():
    s = minmax(-2.0, 6.0)
    m = np.array([-2.0, 0.0, 5.9, 6.0])
    np.testing.assert_allclose(s.score(m), (m + 2) / 8)
    np.testing.assert_allclose(s.metric(s.score(m)), m)


@pytest.mark.parametrize(
    "scoring, metric, row, rule",
    [
        (identity(), [0.5, 1.2, 0.1], 1, "metric_in_range"),
        (identity(), [0.5, 0.2, -0.01], 2, "metric_in_range"),
        (minmax(0, 10), [3.0, 10.5], 1, "metric_in_range"),
        (identity(), [0.5, math.nan], 1, "metric_finite"),
        (binary(0.5), [math.inf, 0.0], 0, "metric_finite"),
        (binary(0.5), [0.0, "abc"], 1, "metric_numeric"),
    ],
)
def test_bad_metrics_are_errors_naming_row_and_rule_never_clipped(scoring, metric, row, rule):
    with pytest.raises(ScoringError) as err:
        scoring.score(metric, source="raw/mmlu/gpt.csv")
    assert err.value.row == row
    assert err.value.rule == rule
    assert f"raw/mmlu/gpt.csv row {row}" in str(err.value)
    assert rule in str(err.value)


def test_make_scoring_from_config_round_trips():
    for s in (identity(), binary(0.7), minmax(0, 10, higher_is_better=False)):
        cfg = s.to_config()
        assert make_scoring(cfg["scoring"], cfg["params"]) == s


@pytest.mark.parametrize(
    "name, params, rule",
    [
        ("sigmoid", {}, "scoring_known"),
        ("minmax", {"lo": 5, "hi": 5}, "scoring_params"),
        ("minmax", {"lo": 0}, "scoring_params"),
        ("minmax", {"lo": 0, "hi": 1, "higher_is_better": "no"}, "scoring_params"),
        ("binary", {"threshold": float("nan")}, "scoring_params"),
        ("identity", {"lo": 0}, "scoring_params"),
        ("binary", {"threshold": "0.5"}, "scoring_params"),
    ],
)
def test_bad_scoring_configs_are_refused(name, params, rule):
    with pytest.raises(ScoringError) as err:
        make_scoring(name, params)
    assert err.value.rule == rule
