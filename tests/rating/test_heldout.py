"""The held-out predictive check: numbers against a hand-computed case, and on the real benchmarks."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from agielo_dagster.rating import heldout_check, identity, minmax, update_match
from agielo_dagster.rating.heldout import heldout_folds

MATCHES = pd.DataFrame(
    {
        "test_case_id": ["q1", "q2", "q3", "q1", "q2", "q3", "q1", "q2"],
        "agent_id": ["a", "a", "a", "b", "b", "b", "c", "c"],
        "metric": [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
    }
).assign(score=lambda f: f["metric"])


def _glicko_by_hand(train: pd.DataFrame) -> dict:
    """Row-order Glicko-1 with update_match, one match at a time (every player starts at 1500 ± 350)."""
    state = {}
    for row in train.itertuples():
        a = state.get(("a", row.agent_id), (1500.0, 350.0))
        t = state.get(("t", row.test_case_id), (1500.0, 350.0))
        mu_a, sig_a, mu_t, sig_t = update_match(*a, *t, row.score)
        state[("a", row.agent_id)], state[("t", row.test_case_id)] = (mu_a, sig_a), (mu_t, sig_t)
    return state


def _rasch_by_hand(train: pd.DataFrame, ridge: float) -> tuple[dict, dict]:
    """The penalized joint maximum likelihood, by scipy's general-purpose optimizer."""
    agents, cases = sorted(MATCHES["agent_id"].unique()), sorted(MATCHES["test_case_id"].unique())
    ai = train["agent_id"].map({k: i for i, k in enumerate(agents)}).to_numpy()
    ti = train["test_case_id"].map({k: i for i, k in enumerate(cases)}).to_numpy()
    s = train["score"].to_numpy()

    def objective(x):
        z = x[: len(agents)][ai] - x[len(agents) :][ti]
        return np.sum(np.logaddexp(0.0, z) - s * z) + ridge * (x @ x)

    x = minimize(objective, np.zeros(len(agents) + len(cases)), method="BFGS", options={"gtol": 1e-10}).x
    return dict(zip(agents, x[: len(agents)], strict=True)), dict(zip(cases, x[len(agents) :], strict=True))


def test_numbers_against_a_hand_computed_case():
    folds = heldout_folds(len(MATCHES), 2, seed=3)
    assert sorted(np.bincount(folds).tolist()) == [4, 4]
    ours = heldout_check(MATCHES, folds=2, seed=3, shuffles=1, shuffle=False).set_index(["method", "measure"])["value"]
    predicted = {k: np.empty(len(MATCHES)) for k in ("agielo", "rasch", "agent_mean", "test_case_mean")}
    for f in (0, 1):
        train, test = MATCHES[folds != f], MATCHES[folds == f]
        state = _glicko_by_hand(train)
        theta, b = _rasch_by_hand(train, 0.01)
        for i, row in test.iterrows():
            mu_a = state.get(("a", row.agent_id), (1500.0, 350.0))[0]
            mu_t = state.get(("t", row.test_case_id), (1500.0, 350.0))[0]
            predicted["agielo"][i] = 1 / (1 + 10 ** ((mu_t - mu_a) / 400))
            predicted["rasch"][i] = 1 / (1 + math.exp(-(theta.get(row.agent_id, 0.0) - b.get(row.test_case_id, 0.0))))
            mine = train[train.agent_id == row.agent_id]["score"]
            predicted["agent_mean"][i] = mine.mean() if len(mine) else train["score"].mean()
            theirs = train[train.test_case_id == row.test_case_id]["score"]
            predicted["test_case_mean"][i] = theirs.mean() if len(theirs) else train["score"].mean()
    s = MATCHES["score"].to_numpy()
    for method, p in predicted.items():
        q = np.clip(p, 1e-15, 1 - 1e-15)
        assert ours[(method, "log_loss")] == pytest.approx(-np.mean(s * np.log(q) + (1 - s) * np.log(1 - q)), abs=1e-6), method
        assert ours[(method, "brier")] == pytest.approx(np.mean((p - s) ** 2), abs=1e-6), method


def test_table_shape_and_graded_measures():
    graded = MATCHES.assign(metric=[9.0, 7.5, 1.0, 8.0, 2.0, 3.0, 0.5, 6.0])
    scoring = minmax(0.0, 10.0)
    graded["score"] = scoring.score(graded["metric"])
    out = heldout_check(graded, folds=2, seed=3, scoring=scoring, shuffles=2)
    assert list(out.columns) == ["method", "measure", "value", "matches", "folds"]
    assert set(out["measure"]) == {"mae", "brier"}
    assert set(out["method"]) == {"agielo", "agielo_sigma", "rasch", "agent_mean", "test_case_mean"}
    assert (out["matches"] == 8).all() and (out["folds"] == 2).all()
    # MAE is in metric units: ten times the score scale here
    mae = out.set_index(["method", "measure"])["value"]
    assert mae[("agent_mean", "mae")] > 1.0
    with pytest.raises(ValueError, match="folds"):
        heldout_check(MATCHES, folds=1)


def test_ratings_predict_held_out_matches_better_than_means_on_the_real_benchmark(demo_digits):
    out = heldout_check(demo_digits, folds=5, seed=0, scoring=identity()).set_index(["method", "measure"])["value"]
    for measure in ("mae", "brier"):
        assert out[("agielo", measure)] < out[("agent_mean", measure)]
        assert out[("agielo", measure)] < out[("test_case_mean", measure)]
    # and as well as the additive logistic fit, within 5%
    assert out[("agielo", "brier")] <= 1.05 * out[("rasch", "brier")]


def test_binary_outcomes_get_log_loss(demo_digits):
    binary = demo_digits.assign(score=(demo_digits["score"] > 0.5).astype(float))
    binary["metric"] = binary["score"]
    out = heldout_check(binary, folds=3, seed=1).set_index(["method", "measure"])["value"]
    assert {m for m, _ in out.index} == {"agielo", "agielo_sigma", "rasch", "agent_mean", "test_case_mean"}
    assert out[("agielo", "log_loss")] < out[("agent_mean", "log_loss")] < out[("test_case_mean", "log_loss")]
