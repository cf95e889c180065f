"""Graded, lower-is-better metrics: how well E[M] is calibrated, with and without σ, on a real regression benchmark."""

import numpy as np
import pytest

from agielo_dagster.rating import combined_sigma, expected_metric, heldout_check, minmax, rate
from benchmarks.graded import DIABETES_HI


@pytest.fixture(scope="module")
def rated(diabetes_benchmark):
    return rate(diabetes_benchmark, seed=0, refine=False)  # Glicko's σ: what the σ-aware prediction integrates


def _predicted_mean_metric(matches, result, *, with_sigma: bool):
    scoring = minmax(0.0, DIABETES_HI, higher_is_better=False)
    agents = result.agents.set_index("agent_id").loc[matches["agent_id"]]
    cases = result.test_cases.set_index("test_case_id").loc[matches["test_case_id"]]
    sigma = combined_sigma(agents["sigma"].to_numpy(), cases["sigma"].to_numpy()) if with_sigma else None
    e_m = expected_metric(agents["mu"].to_numpy(), cases["mu"].to_numpy(), scoring, sigma=sigma)
    return matches.assign(expected=e_m).groupby("agent_id")[["metric", "expected"]].mean()


def test_the_benchmark_is_real_graded_and_lower_is_better(diabetes_benchmark):
    assert diabetes_benchmark["agent_id"].nunique() == 12 and diabetes_benchmark["test_case_id"].nunique() == 442
    errors = diabetes_benchmark.groupby("agent_id")["metric"].mean()
    assert errors["linear_regression"] < errors["mean_predictor"]  # a model beats predicting the mean
    assert diabetes_benchmark["score"].between(0, 1).all() and diabetes_benchmark["score"].nunique() > 1000


def test_expected_metric_is_optimistic_without_sigma_and_calibrated_with_it(diabetes_benchmark, rated):
    """E[M] = f⁻¹(E[S]) per agent against its mean absolute error.

    The plain prediction promises errors about 6 units (13%) smaller than the regressors make: test
    cases rated from 12 matches are uncertain, and a logistic at the point ratings is too sure.
    Integrating over both ratings' σ brings the bias to about 1 unit.
    """
    plain = _predicted_mean_metric(diabetes_benchmark, rated, with_sigma=False)
    aware = _predicted_mean_metric(diabetes_benchmark, rated, with_sigma=True)
    bias_plain = (plain["expected"] - plain["metric"]).mean()
    bias_aware = (aware["expected"] - aware["metric"]).mean()
    assert bias_plain < -3.0  # lower error promised than delivered: optimistic
    assert abs(bias_aware) < 2.0
    assert (aware["expected"] - aware["metric"]).abs().max() < (plain["expected"] - plain["metric"]).abs().min()
    # the ranking of the regressors is the same either way
    assert (plain["expected"].rank() == aware["expected"].rank()).all()


def test_held_out_errors_in_metric_units(diabetes_benchmark):
    """Held out, 5 folds. Glicko's ratings (``refine=False``): σ helps, Brier 0.00517 against 0.00562. Refined (the
    default): the plain prediction is better already (MAE 18.84 against Glicko's 19.50, Brier 0.00526) and the
    refined σ no longer helps (Brier 0.00527, MAE 19.60): it over-corrects, as in the next test."""
    scoring = minmax(0.0, DIABETES_HI, higher_is_better=False)
    glicko = heldout_check(diabetes_benchmark, folds=5, seed=0, scoring=scoring, refine=False)
    out = glicko.set_index(["method", "measure"])["value"]
    # absolute errors of 44-67 units: predicting each one within 20 units beats the agents' means by a third
    assert out[("agielo", "mae")] < 0.75 * out[("agent_mean", "mae")]
    assert out[("agielo_sigma", "brier")] < out[("agielo", "brier")]
    assert np.isfinite(out.to_numpy()).all()
    refined = heldout_check(diabetes_benchmark, folds=5, seed=0, scoring=scoring).set_index(["method", "measure"])["value"]
    assert refined[("agielo", "mae")] < out[("agielo", "mae")] and refined[("agielo", "brier")] < out[("agielo", "brier")]
    assert refined[("agielo_sigma", "brier")] < out[("agielo_sigma", "brier")] * 1.05  # no worse than Glicko's with σ


def test_refined_sigma_over_corrects_the_in_sample_bias(diabetes_benchmark):
    """E[M] per agent against its mean error, on the refined ratings (the default): the plain prediction is less
    optimistic than Glicko's (bias −3.4 units against −6.1), and integrating over the refined σ overshoots to
    +3.2 (Glicko's σ: +1.2). The refined agents' σ is a standard error relative to their mean, the test cases' a
    posterior sd: measured, not yet a calibrated σ-aware prediction (docs/engine.md, "Predictions with σ")."""
    refined = rate(diabetes_benchmark, seed=0)
    plain = _predicted_mean_metric(diabetes_benchmark, refined, with_sigma=False)
    aware = _predicted_mean_metric(diabetes_benchmark, refined, with_sigma=True)
    bias_plain = (plain["expected"] - plain["metric"]).mean()
    bias_aware = (aware["expected"] - aware["metric"]).mean()
    assert -5.0 < bias_plain < -2.0 and 2.0 < bias_aware < 5.0
    assert (plain["expected"].rank() == aware["expected"].rank()).all()
