"""The default model (rating/logistic.py): exchangeable, deterministic, finite at the extremes, and solving its own
equations, checked against an independent computation by scipy's adaptive quadrature."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from agielo_dagster.rating import logistic, rate, simulate_matches, twopl
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


def _two_blocks(n_agents: int, n_test_cases: int, binary: bool, seed: int) -> pd.DataFrame:
    """Two halves of the agents, each playing every test case of its half: two components under one spread.
    Graded scores are the share of four tries solved."""
    rng = np.random.default_rng(seed)
    theta, beta = rng.normal(0.0, 1.5, n_agents), rng.normal(0.0, 1.5, n_test_cases)
    a, t = np.meshgrid(np.arange(n_agents), np.arange(n_test_cases), indexing="ij")
    a, t = a.ravel(), t.ravel()
    a, t = a[(a < n_agents // 2) == (t < n_test_cases // 2)], t[(a < n_agents // 2) == (t < n_test_cases // 2)]
    p = 1.0 / (1.0 + np.exp(-(theta[a] - beta[t])))
    tries = 1 if binary else 4
    score = rng.binomial(tries, p) / tries
    return _table(list(zip([f"tc_{i:02d}" for i in t], [f"agent_{i:02d}" for i in a], score, strict=True)))


def _bordered(fit, data, model):
    """What the intervals take, computed independently: the negative Hessian A of the fit's objective in (θ, log
    variances), Jeffreys' term aside as the intervals take it (θ's block the model's H = diag(info) − F Fᵀ, dense;
    its border and the variances' block by central differences of the variances' score from the model's own
    posterior pass), and G, each test case's part of the whole score as a column (θ's and the variances')."""
    n_a, n_t, k = data.n_agents, data.n_test_cases, fit.factor.shape[1]
    n = len(data.score)
    prior_mean = np.array([0.0, 1.0])[:k]  # β's and the 2PL's α's
    a0, b0 = PRIOR_WEIGHT / 2.0, PRIOR_WEIGHT * np.asarray(model.scales) ** 2 / 2.0

    def at(theta, log_var):
        match_score = np.empty(n)
        args = (np.exp(log_var), fit.phi, fit.mode.copy(), model.fine, np.zeros(n_a), match_score, np.empty((n, k)))
        post = model.posterior(data, theta, *args)
        parts = 0.5 * (np.exp(-log_var) * ((post.mean - prior_mean) ** 2 + post.var) - 1.0)  # n_t × k
        return match_score, parts, parts.sum(axis=0) - a0 + b0 * np.exp(-log_var)

    theta, log_var, h = fit.theta, np.log(fit.variances), 1e-5
    cross = np.empty((k, n_a))
    for a in range(n_a):
        step = h * np.eye(n_a)[a]
        cross[:, a] = (at(theta + step, log_var)[2] - at(theta - step, log_var)[2]) / (2.0 * h)
    curvature = np.empty((k, k))
    for j in range(k):
        step = h * np.eye(k)[j]
        curvature[:, j] = -(at(theta, log_var + step)[2] - at(theta, log_var - step)[2]) / (2.0 * h)
    test_case = np.repeat(np.arange(n_t), np.diff(data.start))
    f = np.zeros((n_a, k * n_t))
    for j in range(k):
        f[data.agent, test_case * k + j] = fit.factor[:, j]
    bordered = np.block([[np.diag(fit.info) - f @ f.T, -cross.T], [-cross, curvature]])
    match_score, parts, _ = at(theta, log_var)
    u = np.zeros((n_a, n_t))
    u[data.agent, test_case] = match_score
    return bordered, np.vstack([u, parts.T])


SHAPES = {"agents": (8, 40), "test cases": (40, 12), "diagonal": (120, 16)}  # which side relative_variance inverts
# rules fine enough that the quadrature's own error (the derivatives of the integral against those of its sum over
# nodes, which the central differences take) stays below the tolerance: with the fits' 9 (the 2PL's 9 × 9) nodes it
# was 4e-4 (2e-2) of a variance on these test cases of 4 to 6 agents, at 41 (31 × 31) 1e-9 (3e-4)
FINE = {"rasch": (logistic.RASCH, logistic._hermite(41), 1e-6), "2pl": (TWOPL, twopl._rules(((0, 31),)), 1e-3)}


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "graded"])
@pytest.mark.parametrize(
    ("side", "name"),
    [
        pytest.param(side, name, marks=[pytest.mark.slow] if (side, name) == ("diagonal", "2pl") else [])
        for side in SHAPES
        for name in FINE
    ],
)
def test_the_agents_variances_carry_the_spreads_own_uncertainty(side, name, binary, monkeypatch):
    """``relative_variance`` against the θ block of A⁻¹ (A: the Hessian in θ and the log prior variances, bordered,
    :func:`_bordered`), for graded scores the larger of it and the sandwich A⁻¹ G Gᵀ A⁻¹'s, each agent less its
    component's mean.
    Where the agents' H⁻¹ is approximated (its diagonal, above ``DENSE`` on both sides) the spreads' part still is
    exact: the variance less the one with the spreads known (``spread=None``), where neither is clipped at 0."""
    import dataclasses

    model, fine, tolerance = FINE[name]
    model = dataclasses.replace(model, fine=fine)
    monkeypatch.setattr(logistic, "BLOCK", 7)
    if side == "diagonal":
        monkeypatch.setattr(logistic, "DENSE", 12)
    m = encode_matches(_two_blocks(*SHAPES[side], binary, seed=3))
    _, component, _ = components(m)
    assert component.max() == 1
    data = by_test_case(m)
    fit = fit_logistic(data, component, binary=binary, model=model, tolerance=1e-9)
    bordered, parts = _bordered(fit, data, model)
    n_a = data.n_agents
    same = component[:, None] == component[None, :]
    centre = np.eye(n_a) - same / same.sum(axis=1, keepdims=True)  # each agent less its component's mean

    def relative(inverse, sandwich):
        rows = inverse[:n_a] @ parts[: len(inverse)] if sandwich else inverse[:n_a, :n_a]
        v = rows @ rows.T if sandwich else rows
        return np.einsum("ij,jk,ik->i", centre, v, centre)

    def larger(inverse):  # graded scores: the larger of the model's and the sandwich's, agent by agent
        model = relative(inverse, False)
        return (model, model) if binary else (np.maximum(model, relative(inverse, True)), relative(inverse, True))

    (expected, sandwich), (held, sandwich_held) = larger(np.linalg.inv(bordered)), larger(np.linalg.inv(bordered[:n_a, :n_a]))
    variance = logistic.relative_variance(fit, data, component, sandwich=not binary)
    known = logistic.relative_variance(dataclasses.replace(fit, spread=None), data, component, sandwich=not binary)
    if side == "diagonal":
        kept = known > 0.0
        assert kept.sum() >= 30  # the diagonal stands for H⁻¹ on hundreds of agents, not 60: clipped at 0 on some here
        if not binary:  # the sandwich's spread part, where the sandwich is the larger with the spreads known or not
            model = logistic.relative_variance(fit, data, component, sandwich=False)
            model_known = logistic.relative_variance(dataclasses.replace(fit, spread=None), data, component, sandwich=False)
            kept &= (variance > model * (1.0 + 1e-9)) & (known > model_known * (1.0 + 1e-9))
            expected, held = sandwich, sandwich_held
            assert kept.sum() >= 10
        variance, known, expected, held = variance[kept], known[kept], expected[kept], held[kept]
    else:
        np.testing.assert_allclose(variance, expected, rtol=tolerance)
        np.testing.assert_allclose(known, held, rtol=1e-7)  # the sandwich: the last pass's scores, 1e-5 sd before
    np.testing.assert_allclose(variance - known, expected - held, rtol=0.0, atol=tolerance * expected.min())
    if binary:  # the model's variance: the spreads' uncertainty widens every interval, some by far more than the tolerance
        assert np.all(expected > held) and np.max(expected / held) > 1.0 + 100.0 * tolerance


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
