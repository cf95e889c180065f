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

LOGISTIC = ["rasch", "2pl"]
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


def test_discriminations_follow_the_truth():
    matches, _, alpha = _two_pl(1)
    cases = rate(matches, model="2pl", **QUICK).test_cases
    d = _by_index(cases, "discrimination", "test_case")
    assert np.corrcoef(d, alpha)[0, 1] > 0.6
    assert (cases["discrimination_lo"] < cases["discrimination"]).all()
    assert (cases["discrimination"] < cases["discrimination_hi"]).all()
    # the rasch's: each test case fitted alone on the rasch's agents, nearly as close
    rasch = _by_index(rate(matches, **QUICK).test_cases, "discrimination", "test_case")
    assert np.corrcoef(rasch, alpha)[0, 1] > 0.5


def test_agent_intervals_cover_at_about_their_level():
    # discriminations from the model's own law (lognormal ones move its scale: benchmarks/coverage_2pl.py)
    covered, alpha_covered = [], []
    for seed in (1, 2, 3):
        matches, theta, alpha = _two_pl(seed, law="normal")
        result = rate(matches, model="2pl", **QUICK)
        mu, lo, hi = (_by_index(result.agents, c, "agent") for c in ("mu", "mu_lo", "mu_hi"))
        shifted = theta + (mu.mean() - theta.mean())
        covered.append((lo <= shifted) & (shifted <= hi))
        d_lo, d_hi = (_by_index(result.test_cases, c, "test_case") for c in DISCRIMINATION[1:])
        alpha_covered.append((d_lo <= alpha) & (alpha <= d_hi))
    assert 0.88 <= np.concatenate(covered).mean() <= 1.0
    assert 0.88 <= np.concatenate(alpha_covered).mean() <= 0.99


def test_on_rasch_data_the_discriminations_sit_near_one():
    matches, _, _ = _two_pl(4, law="rasch")
    cases = rate(matches, model="2pl", **QUICK).test_cases
    assert np.median(np.abs(cases["discrimination"] - 1.0)) < 0.1
    assert ((cases["discrimination_lo"] <= 1.0) & (1.0 <= cases["discrimination_hi"])).mean() >= 0.95


def test_a_reversed_test_case_gets_a_discrimination_interval_below_zero():
    # a wrong reference answer: every agent's result on one test case reversed, so that stronger agents fail it
    # (a typical one: half the agents solved it, its discrimination at least the mean's)
    matches, _, alpha = _two_pl(5)
    rates = matches.groupby("test_case_id")["score"].mean()
    rates = rates[alpha[rates.index.str.split("_").str[1].astype(int)] >= 1.0]
    reversed_case = (rates - 0.5).abs().idxmin()
    wrong = matches["test_case_id"] == reversed_case
    matches.loc[wrong, ["metric", "score"]] = 1.0 - matches.loc[wrong, ["metric", "score"]]
    cases = rate(matches, model="2pl", **QUICK).test_cases.set_index("test_case_id")
    assert cases.loc[reversed_case, "discrimination_hi"] < 0.0
    assert (cases.drop(reversed_case)["discrimination_hi"] > 0.0).all()


def test_perfect_and_zero_scores_stay_finite():
    matches, _, _ = _two_pl(6, n_agents=12, n_test_cases=30)
    matches.loc[matches["agent_id"] == "agent_00", ["metric", "score"]] = 1.0
    matches.loc[matches["agent_id"] == "agent_01", ["metric", "score"]] = 0.0
    matches.loc[matches["test_case_id"] == "tc_00", ["metric", "score"]] = 1.0
    matches.loc[matches["test_case_id"] == "tc_01", ["metric", "score"]] = 0.0
    result = rate(matches, model="2pl", **QUICK)
    agents, cases = result.agents.set_index("agent_id"), result.test_cases.set_index("test_case_id")
    assert np.isfinite(agents[["mu", "sigma", "mu_lo", "mu_hi"]].to_numpy()).all()
    assert np.isfinite(cases[["mu", "sigma", *DISCRIMINATION]].to_numpy()).all()
    assert agents["mu"].idxmax() == "agent_00" and agents["mu"].idxmin() == "agent_01"
    assert cases["mu"].idxmin() == "tc_00" and cases["mu"].idxmax() == "tc_01"
    assert agents["sigma"].max() < 1000.0


def test_the_same_results_give_the_same_bits_under_any_row_order_and_seed():
    matches, _, _ = _two_pl(7, n_agents=15, n_test_cases=60)
    # a twin of agent_00 and one of tc_00: the same results, other names
    matches = pd.concat([matches, matches[matches["agent_id"] == "agent_00"].assign(agent_id="agent_99")])
    matches = pd.concat([matches, matches[matches["test_case_id"] == "tc_00"].assign(test_case_id="tc_99")])
    matches = matches.reset_index(drop=True)
    first = rate(matches, model="2pl", seed=1, **QUICK)
    shuffled = matches.sample(frac=1.0, random_state=3).reset_index(drop=True)
    second = rate(shuffled, model="2pl", seed=9, **QUICK)
    by = {"agents": "agent_id", "test_cases": "test_case_id"}
    for table, key in by.items():
        a = getattr(first, table).set_index(key).sort_index()
        b = getattr(second, table).set_index(key).sort_index()
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    agents = first.agents.set_index("agent_id")
    assert agents.loc["agent_00", ["mu", "sigma"]].tolist() == agents.loc["agent_99", ["mu", "sigma"]].tolist()
    cases = first.test_cases.set_index("test_case_id")
    columns = ["mu", "sigma", *DISCRIMINATION]
    assert cases.loc["tc_00", columns].tolist() == cases.loc["tc_99", columns].tolist()


def test_graded_scores_rate_with_a_discrimination():
    rng = np.random.default_rng(8)
    alpha = rng.lognormal(0.0, 0.5, 150)
    matches = simulate_matches(
        rng.normal(1500, 400, 150), rng.normal(1500, 400, 30), seed=8, outcome="graded", discrimination=alpha
    )
    result = rate(matches, model="2pl", **QUICK)
    assert np.isfinite(result.agents[["mu", "sigma"]].to_numpy()).all()
    assert np.corrcoef(_by_index(result.test_cases, "discrimination", "test_case"), alpha)[0, 1] > 0.6
