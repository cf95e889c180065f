"""The default model (rating/logistic.py): exchangeable, deterministic, finite at the extremes, and solving its own
equations, checked against an independent computation by scipy's adaptive quadrature."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from agielo_dagster.rating import logistic, rate, simulate_matches
from agielo_dagster.rating.frames import encode_matches
from agielo_dagster.rating.graph import components
from agielo_dagster.rating.logistic import CENTRE, LOGIT, PRIOR_SCALE, PRIOR_WEIGHT, by_test_case, fit_logistic
from agielo_dagster.rating.twopl import TWOPL


def _table(rows):
    return pd.DataFrame(rows, columns=["test_case_id", "agent_id", "score"]).assign(metric=lambda f: f["score"])


def test_identical_results_give_the_same_bits_whatever_the_row_order_or_seed():
    """The issue's case: one test case, a = 1, b = 0, c = 1; a and c are the same agent to the bit, in any order."""
    matches = _table([("t", "a", 1.0), ("t", "b", 0.0), ("t", "c", 1.0)])
    first = rate(matches).agents.set_index("agent_id")
    for order, seed in (([2, 1, 0], 7), ([1, 0, 2], 123)):
        again = rate(matches.iloc[order], seed=seed).agents.set_index("agent_id")
        pd.testing.assert_frame_equal(again.loc[first.index], first, check_exact=True)
    for column in ("mu", "sigma", "mu_lo", "mu_hi", "rank", "rank_hi"):
        assert first.loc["a", column] == first.loc["c", column], column
    assert first.loc["a", "mu"] > first.loc["b", "mu"] and np.isfinite(first[["mu_lo", "mu_hi"]]).all().all()


def test_a_larger_benchmark_is_bit_identical_under_shuffled_rows_and_other_seeds():
    rng = np.random.default_rng(5)
    matches = simulate_matches(rng.normal(1500, 400, 300), rng.normal(1500, 400, 12), seed=5, coverage=0.6)
    twins = matches[matches["agent_id"] == "agent_03"].assign(agent_id="twin_of_03")  # the same results again
    matches = pd.concat([matches, twins], ignore_index=True)
    first = rate(matches, seed=1)
    shuffled = rate(matches.sample(frac=1.0, random_state=9), seed=99)
    for table in ("agents", "test_cases"):
        a, b = getattr(first, table), getattr(shuffled, table)
        key = "agent_id" if table == "agents" else "test_case_id"
        pd.testing.assert_frame_equal(
            a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True), check_exact=True
        )
    agents = first.agents.set_index("agent_id")
    assert (agents.loc["agent_03"] == agents.loc["twin_of_03"]).all()


def test_perfect_and_zero_scores_are_finite_for_agents_and_test_cases():
    rng = np.random.default_rng(2)
    matches = simulate_matches(rng.normal(1500, 300, 40), [1300.0, 1500.0, 1700.0], seed=2)
    perfect = pd.DataFrame({"test_case_id": matches["test_case_id"].unique(), "agent_id": "perfect", "score": 1.0})
    zero = perfect.assign(agent_id="zero", score=0.0)
    matches = pd.concat([matches, perfect.assign(metric=1.0), zero.assign(metric=0.0)], ignore_index=True)
    matches.loc[matches["test_case_id"] == "tc_00", "score"] = 1.0  # a test case every agent solves
    matches["metric"] = matches["score"]
    result = rate(matches)
    agents = result.agents.set_index("agent_id")
    assert np.isfinite(agents[["mu", "sigma", "mu_lo", "mu_hi"]].to_numpy()).all()
    assert agents["mu"].idxmax() == "perfect" and agents["mu"].idxmin() == "zero"
    assert agents.loc["perfect", "mu"] - agents.loc["agent_2", "mu"] < 1200  # off the top, not off the scale
    assert agents.loc["perfect", "mu_hi"] - agents.loc["perfect", "mu_lo"] < 2000
    cases = result.test_cases.set_index("test_case_id")
    assert np.isfinite(cases.loc["tc_00", ["mu", "sigma"]].to_numpy()).all()
    assert cases.loc["tc_00", "mu"] < cases["mu"].median()  # solved by everyone: easy, and finite


def _independent_equations(matches: pd.DataFrame, theta: np.ndarray, tau2: float, agents: list, cases: list):
    """The fit's equations evaluated by scipy's adaptive quadrature over each test case's prior (logits): each agent's
    marginal score plus Jeffreys' term (its push along a common shift taken back in proportion to each agent's
    information), and the equation of log τ²."""
    a = matches["agent_id"].map({k: i for i, k in enumerate(agents)}).to_numpy()
    t = matches["test_case_id"].map({k: i for i, k in enumerate(cases)}).to_numpy()
    s = matches["score"].to_numpy()
    score, info, slope = np.zeros(len(agents)), np.zeros(len(agents)), np.zeros(len(agents))
    dlog_u = 0.0
    for j in range(len(cases)):
        rows = np.flatnonzero(t == j)

        def density(b, rows=rows):
            eta = theta[a[rows]] - b
            log_lik = -np.sum(s[rows] * np.logaddexp(0.0, -eta) + (1 - s[rows]) * np.logaddexp(0.0, eta))
            return math.exp(log_lik - 0.5 * b * b / tau2)

        def moment(f, rows=rows):
            return integrate.quad(lambda b: f(b) * density(b), -40, 40, limit=200, epsabs=0, epsrel=1e-11)[0]

        total = moment(lambda b: 1.0)
        dlog_u += 0.5 * (moment(lambda b: b * b) / total / tau2 - 1.0)
        for i in rows:

            def p_of(b, i=i):
                return 0.5 * (1.0 + math.tanh(0.5 * (theta[a[i]] - b)))

            score[a[i]] += moment(lambda b, i=i: s[i] - p_of(b)) / total
            info[a[i]] += moment(lambda b: p_of(b) * (1 - p_of(b))) / total
            slope[a[i]] += moment(lambda b: p_of(b) * (1 - p_of(b)) * (1 - 2 * p_of(b))) / total
    jeffreys = 0.5 * slope / info
    a0, b0 = PRIOR_WEIGHT / 2.0, PRIOR_WEIGHT * PRIOR_SCALE**2 / 2.0
    return score + jeffreys - info * jeffreys.sum() / info.sum(), dlog_u - a0 + b0 / tau2, info


@pytest.mark.parametrize("seed", [0, 1])
def test_the_fit_solves_its_equations_by_an_independent_quadrature(seed):
    """9 Gauss-Hermite nodes at each test case's posterior against scipy's adaptive quadrature: each agent's equation
    is zero to within a hundredth of its standard error, and τ's within a hundredth of its own."""
    rng = np.random.default_rng(seed)
    matches = simulate_matches(rng.normal(1500, 350, 12), rng.normal(1500, 350, 5), seed=seed, coverage=0.8)
    m = encode_matches(matches)
    _, component, _ = components(m)
    fit = fit_logistic(by_test_case(m), component, binary=True)
    agents, cases = list(m.agent_ids), list(m.test_case_ids)
    residual, residual_u, info = _independent_equations(matches, fit.theta, fit.tau2, agents, cases)
    assert np.abs(residual / np.sqrt(info)).max() < 0.01
    assert abs(residual_u) < 0.01 * math.sqrt(len(cases))
    assert fit.iterations < 40


def test_graded_scores_find_their_dispersion():
    """Partial credit in quarters, Binomial(4, E)/4: a score's variance is E(1 − E)/4, dispersion 0.25."""
    rng = np.random.default_rng(3)
    matches = simulate_matches(rng.normal(1500, 300, 400), rng.normal(1500, 300, 30), seed=3, outcome="graded")
    m = encode_matches(matches)
    _, component, _ = components(m)
    fit = fit_logistic(by_test_case(m), component, binary=False)
    assert fit.phi == pytest.approx(0.25, abs=0.02)
    assert math.sqrt(fit.tau2) * LOGIT == pytest.approx(300, rel=0.1)  # the test cases' spread, recovered
    assert CENTRE + LOGIT * np.mean(fit.beta_mean) == pytest.approx(1500, abs=30)


def test_a_wide_sparse_graded_benchmark_finds_its_dispersion():
    """Coverage's 30 × 400, sd 800, 10 % graded: most matches' E lies near 0 or 1, where a mean of per-match Pearson
    ratios (s − E)² / (E(1 − E)) ran low (0.146 for 0.25 over 20 draws) and stretched the scale (slope 1.116)."""
    from agielo_dagster.rating.coverage import Regime, draw

    for seed in (7, 1007):
        m = encode_matches(draw(Regime(sd=800.0, share=0.1, outcome="graded"), seed).matches)
        _, component, _ = components(m)
        assert fit_logistic(by_test_case(m), component, binary=False).phi == pytest.approx(0.25, abs=0.03)


def test_a_wide_sparse_benchmark_converges_well_within_the_cap():
    """Coverage's 30 × 400, sd 800, 10 % draw of seed 18007 ran to the 200-pass cap unconverged: Jeffreys' curvature,
    clipped at 0 for a far-out agent, makes each Newton step ~5 % of the way there. The secant along the last step
    goes the rest of it (88 passes)."""
    from agielo_dagster.rating.coverage import Regime, draw
    from agielo_dagster.rating.logistic import MAX_ITERATIONS

    m = encode_matches(draw(Regime(sd=800.0, share=0.1), 18007).matches)
    _, component, _ = components(m)
    assert fit_logistic(by_test_case(m), component, binary=True).iterations < MAX_ITERATIONS / 2


def test_a_dispersion_that_one_match_sways_converges_well_within_the_cap():
    """Coverage's 30 × 400, sd 800, 30 % ceiling draw of seed 12007 ran to the 200-pass cap: one match (a score of
    1/3 at a fitted chance near 10⁻⁵) carried most of a dispersion taken as the mean of per-match ratios, which fell
    about three times as fast as φ rose, and φ and the far-out agents cycled. The ratio of sums does not let it."""
    from agielo_dagster.rating.coverage import Regime, draw
    from agielo_dagster.rating.logistic import MAX_ITERATIONS

    m = encode_matches(draw(Regime(sd=800.0, share=0.3, outcome="ceiling", truth="pseudo"), 12007).matches)
    _, component, _ = components(m)
    fit = fit_logistic(by_test_case(m), component, binary=False)
    assert fit.iterations < MAX_ITERATIONS / 4


@pytest.mark.xfail(strict=True, reason="Jeffreys' gradient is taken with the test cases held: docs/engine.md, Targets not met")
def test_a_tall_benchmarks_first_tenth_converges():
    """The 10 % snapshot of 10,000 × 5 (5,000 matches, agents of one to three) has a maximum: the Laplace marginal
    likelihood plus Σ ½ log I_a peaks by pass 10 of the snapshot's fit. The fit stretches on past it to ±240 logits,
    as each agent's Jeffreys pull leaves out its reaction through the test cases' posteriors (along the stretch at pass
    10: +1,785 with the test cases held, −1,012 with them following)."""
    from agielo_dagster.rating.logistic_rate import _subset
    from agielo_dagster.rating.orders import match_orders

    rng = np.random.default_rng(0)
    agents, cases = rng.normal(1500, 300, 10_000), rng.normal(1500, 300, 5)
    m = encode_matches(simulate_matches(cases, agents, seed=0))
    _, component, _ = components(m)
    data = by_test_case(m)
    fit = fit_logistic(data, component, binary=True)
    place = np.empty(len(m.score), dtype=np.int64)
    place[match_orders(len(m.score), seed=0)[0]] = np.arange(len(m.score))
    first, _ = _subset(data, place[np.lexsort((m.agent, m.test_case))] < len(m.score) // 10)
    snapshot = fit_logistic(first, component, binary=True, theta=fit.theta, variances=fit.variances, fit_spread=False)
    assert snapshot.iterations < logistic.MAX_ITERATIONS / 4
    assert np.abs(snapshot.theta).max() < 10.0


@pytest.mark.parametrize("model", [logistic.RASCH, TWOPL], ids=["rasch", "2pl"])
@pytest.mark.parametrize("coverage", [1.0, 0.1], ids=["dense", "sparse"])
def test_the_agents_variances_are_those_of_the_inverse_hessian(coverage, model, monkeypatch):
    """``relative_variance`` against numpy's inverse of H = diag(info) − F Fᵀ, centred on each component's mean:
    F Fᵀ by BLAS on a full design, by each test case's pairs of matches on a sparse one (in tiles of 7 agents)."""
    monkeypatch.setattr(logistic, "BLOCK", 7)
    rng = np.random.default_rng(2)
    matches = simulate_matches(rng.normal(1500, 300, 60), rng.normal(1500, 300, 40), seed=2, coverage=coverage)
    m = encode_matches(matches)
    _, component, _ = components(m)
    data = by_test_case(m)
    fit = fit_logistic(data, component, binary=True, model=model)
    k = fit.factor.shape[1]
    test_case = np.repeat(np.arange(data.n_test_cases), np.diff(data.start))
    f = np.zeros((data.n_agents, k * data.n_test_cases))
    for j in range(k):
        f[data.agent, test_case * k + j] = fit.factor[:, j]
    inverse = np.linalg.inv(np.diag(fit.info) - f @ f.T)
    same = component[:, None] == component[None, :]
    centre = np.eye(data.n_agents) - same / same.sum(axis=1, keepdims=True)  # each agent less its component's mean
    expected = np.einsum("ij,jk,ik->i", centre, inverse, centre)
    variance = logistic.relative_variance(fit, data, component, sandwich=False)
    np.testing.assert_allclose(variance, expected, rtol=1e-10)


def test_a_fit_with_its_spread_kept_keeps_it_and_solves_for_the_agents_alone():
    """``fit_spread=False`` (the snapshots'): the prior variances stay as given, and at the whole fit's own spread the
    agents' fixed point is the whole fit's."""
    rng = np.random.default_rng(4)
    m = encode_matches(simulate_matches(rng.normal(1500, 400, 25), rng.normal(1500, 400, 60), seed=4, coverage=0.7))
    _, component, _ = components(m)
    data = by_test_case(m)
    whole = fit_logistic(data, component, binary=True)
    kept = fit_logistic(data, component, binary=True, variances=whole.variances * 4.0, fit_spread=False)
    np.testing.assert_array_equal(kept.variances, whole.variances * 4.0)
    again = fit_logistic(data, component, binary=True, variances=whole.variances, fit_spread=False)
    np.testing.assert_allclose(again.theta, whole.theta, atol=1e-5)
