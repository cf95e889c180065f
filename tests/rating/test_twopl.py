"""The logistic models' shared fit (:mod:`agielo_dagster.rating.logistic`) and the 2PL (``rate(matches, model="2pl")``)."""

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import rate
from agielo_dagster.rating.frames import encode_matches
from agielo_dagster.rating.graph import components
from agielo_dagster.rating.logistic import MAX_ITERATIONS, PRIOR_SCALE, PRIOR_WEIGHT, by_test_case, fit_logistic
from agielo_dagster.rating.orders import match_orders, snapshot_ends
from agielo_dagster.rating.ratings import fitted_ratings
from agielo_dagster.rating.simulate import simulate_matches

LOGISTIC = ["rasch"]
QUICK = dict(with_reliability=False, snapshot_fractions=(1.0,), test_case_snapshot_fractions=(1.0,))
DISCRIMINATION = ["discrimination", "discrimination_lo", "discrimination_hi"]


def _sparse(share: float = 0.02, side: int = 300, seed: int = 5):
    rng = np.random.default_rng(seed)
    return simulate_matches(rng.normal(1500, 400, side), rng.normal(1500, 400, side), seed=seed, coverage=share)


def _two_pl(seed: int, n_agents: int = 40, n_test_cases: int = 300, law: str = "lognormal"):
    """(matches, true agent ratings, true discriminations) of a 2PL benchmark, the truth on the model's scale
    (a mean discrimination of 1: θ' = 1500 + ᾱ (θ − 1500), α' = α / ᾱ)."""
    rng = np.random.default_rng(seed)
    theta, beta = rng.normal(1500, 400, n_agents), rng.normal(1500, 400, n_test_cases)
    alpha = rng.lognormal(0.0, 0.5, n_test_cases) if law == "lognormal" else rng.normal(1.0, 0.5, n_test_cases)
    if law == "rasch":
        alpha = np.ones(n_test_cases)
    matches = simulate_matches(beta, theta, seed=seed + 1, discrimination=alpha)
    return matches, 1500 + alpha.mean() * (theta - 1500), alpha / alpha.mean()


def _by_index(table: pd.DataFrame, column: str, prefix: str) -> np.ndarray:
    return table[column].to_numpy()[np.argsort(table[f"{prefix}_id"].str.split("_").str[1].astype(int).to_numpy())]


@pytest.mark.parametrize("model", LOGISTIC)
def test_a_sparse_benchmark_converges(model):
    # 2 % of 300 × 300: agents of one match, whose Jeffreys term curves as much as their likelihood (Newton, blind to
    # it, stepped them twice too far, back and forth, until MAX_ITERATIONS)
    m = encode_matches(_sparse())
    assert np.bincount(m.agent).min() == 1
    fit = fitted_ratings(m, {"model": model}).state
    assert fit.iterations < MAX_ITERATIONS / 4
    assert np.isfinite(fit.theta).all()


@pytest.mark.filterwarnings("ignore::agielo_dagster.rating.DisconnectedMatchesWarning")
@pytest.mark.parametrize("model", LOGISTIC)
def test_every_snapshot_rates_the_agents_met_so_far(model):
    # the early snapshots of a sparse benchmark have agents without a match: they made the whole fit NaN
    matches = _sparse(0.05, 60)
    result = rate(matches, model=model, seed=3, with_reliability=False)
    snaps = result.snapshots[result.snapshots["kind"] == "agent"]
    (order,) = match_orders(len(matches), seed=3)
    fractions = np.sort(snaps["fraction"].unique())
    for f, end in zip(fractions, snapshot_ends(fractions, len(matches)), strict=True):
        met = set(matches["agent_id"].to_numpy()[order[:end]])
        at = snaps[snaps["fraction"] == f].set_index("id")["mu"]
        assert set(at[np.isfinite(at)].index) == met


@pytest.mark.parametrize("model", LOGISTIC)
def test_an_only_agent_with_a_perfect_score_stays_on_the_scale(model):
    # its Jeffreys term was all taken back as the component's common push (the component is that agent): 8,354 Elo
    matches = pd.DataFrame({"test_case_id": [f"t{i}" for i in range(5)], "agent_id": "a", "score": 1.0}).assign(metric=1.0)
    mu = rate(matches, model=model, **QUICK).agents["mu"].iloc[0]
    assert 1500 < mu < 2500


def test_laplaces_fit_solves_the_equation_of_tau():
    # Laplace's one node gave Cov(s − p, β²) the wrong sign of curvature: τ's step was held, τ stayed where it started
    matches = simulate_matches(np.random.default_rng(9).normal(1500, 700, 200), np.linspace(800, 2200, 20), seed=9)
    m = encode_matches(matches)
    fit = fit_logistic(by_test_case(m), components(m)[1], binary=True, quadrature=False)
    second = (fit.beta_mean**2 + fit.beta_var).sum()
    a0, b0 = PRIOR_WEIGHT / 2, PRIOR_WEIGHT * PRIOR_SCALE**2 / 2
    equation = 0.5 * (second / fit.tau2 - m.n_test_cases) - a0 + b0 / fit.tau2
    assert abs(equation) < 0.01 * np.sqrt(m.n_test_cases)
    assert fit.tau2 > 2 * PRIOR_SCALE**2  # 700 Elo, from a start at 400
