"""The refined agents de-biased by the conditional bootstrap (issue 22: an unbiased scale where comparisons are few)."""

import itertools
import warnings

import numpy as np
import pytest

from agielo_dagster.rating import rate, simulate_matches
from agielo_dagster.rating.debias import conditional_scores


def _draws(log_strength, successes, copies, seed=0):
    """``copies`` identical test cases of these agents with ``successes`` of them won, drawn once each."""
    n = len(log_strength)
    start = np.arange(copies + 1, dtype=np.int64) * n
    agent = np.tile(np.arange(n, dtype=np.int64), copies)
    score = np.tile((np.arange(n) < successes).astype(np.float64), copies)
    return conditional_scores(start, agent, score, np.asarray(log_strength, dtype=np.float64), seed).reshape(copies, n)


def test_a_draw_keeps_each_test_cases_successes_and_follows_the_rasch_conditional_distribution():
    log_strength = np.log(np.array([1.0, 2.0, 4.0, 8.0]))
    drawn = _draws(log_strength, 2, 40_000)
    assert np.all(drawn.sum(axis=1) == 2) and set(np.unique(drawn)) == {0.0, 1.0}
    subsets = list(itertools.combinations(range(4), 2))
    exact = np.array([np.exp(log_strength[list(s)].sum()) for s in subsets])
    exact /= exact.sum()  # P(S) ∝ Π x_a over the winners: the test case's own rating cancels
    seen = np.array([np.mean(np.all(drawn[:, list(s)] == 1.0, axis=1)) for s in subsets])
    assert np.all(np.abs(seen - exact) <= 4 * np.sqrt(exact * (1 - exact) / 40_000)), (seen, exact)


def test_draws_stay_probabilities_however_wide_the_ratings():
    """300 agents spread over 20,000 Elo, 150 successes: products of strengths would overflow; the tilted table does not."""
    rng = np.random.default_rng(1)
    log_strength = np.log(10.0) / 400.0 * rng.uniform(-10_000, 10_000, 300)
    drawn = _draws(log_strength, 150, 20)
    assert np.all(drawn.sum(axis=1) == 150)
    # the strongest agents win every draw, the weakest none
    order = np.argsort(log_strength)
    assert drawn[:, order[-20:]].min() == 1.0 and drawn[:, order[:20]].max() == 0.0


def _sparse_wide(seed):
    rng = np.random.default_rng(seed)
    return simulate_matches(rng.normal(1500, 800, 400), rng.normal(1500, 800, 30), seed=seed + 1, coverage=0.1)


def test_sparse_wide_binary_benchmarks_are_de_biased_reproducibly(monkeypatch):
    """sd 800, 10 % of pairs: the de-biased scale is wider than Firth's, and the same seed gives the same ratings."""
    from agielo_dagster.rating import refine

    matches = _sparse_wide(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a sparse draw may leave an agent in a group of its own
        de_biased = rate(matches, seed=3, orders=4, with_reliability=False).agents
        again = rate(matches, seed=3, orders=4, with_reliability=False).agents
        monkeypatch.setattr(refine, "TRIGGER", np.inf)
        firth = rate(matches, seed=3, orders=4, with_reliability=False).agents
    np.testing.assert_array_equal(de_biased["mu"], again["mu"])
    assert de_biased["mu"].std() > 1.05 * firth["mu"].std()
    assert np.all(de_biased["mu_hi"] - de_biased["mu_lo"] >= 0.99 * (firth["mu_hi"] - firth["mu_lo"]))


def test_dense_benchmarks_are_not_drawn_for(monkeypatch):
    """Where Firth's correction moves no agent by a standard error, its ratings are kept: no bootstrap, no seed in them."""
    from agielo_dagster.rating import debias

    def refuse(*args, **kwargs):
        raise AssertionError("the bootstrap ran")

    monkeypatch.setattr(debias, "debias", refuse)
    rng = np.random.default_rng(4)
    matches = simulate_matches(rng.normal(1500, 600, 300), rng.normal(1500, 600, 12), seed=5)
    assert rate(matches, seed=1, orders=4, with_reliability=False).settings["refine"] is True


@pytest.mark.parametrize("seed", [0, 1])
def test_graded_scores_keep_firths_estimate(seed, monkeypatch):
    """Graded scores have no conditional distribution to draw from; their pairs' slopes are 0.99–1.04 already."""
    from agielo_dagster.rating import debias

    monkeypatch.setattr(debias, "debias", lambda *a, **k: (_ for _ in ()).throw(AssertionError("drawn")))
    rng = np.random.default_rng(seed)
    matches = simulate_matches(rng.normal(1500, 800, 400), rng.normal(1500, 800, 30), seed=seed, outcome="graded", coverage=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(rate(matches, seed=1, orders=4, with_reliability=False).agents["mu"]).all()


def test_a_benchmark_of_too_many_agents_keeps_firths_estimate_and_says_so(monkeypatch):
    """The de-bias refits 20 draws a round, each a Newton solve on n_a × n_a matrices: above ``MAX_AGENTS`` it is skipped."""
    from agielo_dagster.rating import debias, refine

    matches = _sparse_wide(7)
    monkeypatch.setattr(debias, "MAX_AGENTS", 10)
    with pytest.warns(debias.DebiasSkippedWarning, match="30 agents \\(limit 10"):
        skipped = rate(matches, seed=3, orders=4, with_reliability=False).agents
    monkeypatch.setattr(refine, "TRIGGER", np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        firth = rate(matches, seed=3, orders=4, with_reliability=False).agents
    np.testing.assert_array_equal(skipped["mu"], firth["mu"])


@pytest.fixture
def draws(monkeypatch):
    """The de-bias runs, counted."""
    from agielo_dagster.rating import debias

    calls = []
    drawn = debias.debias
    monkeypatch.setattr(debias, "debias", lambda *a, **k: calls.append(1) or drawn(*a, **k))
    return calls


def test_the_fragility_search_draws_once_and_names_rates_leader(draws):
    """Hundreds of subsets are re-rated with the whole benchmark's correction: one de-bias, not one per subset."""
    from agielo_dagster.rating.fragility import fragility_of_first

    calls = draws
    matches = _sparse_wide(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        leader = rate(matches, seed=42, with_reliability=False).agents.sort_values("mu").iloc[-1]["agent_id"]
        calls.clear()
        f = fragility_of_first(matches, seed=42)
    assert f.leader == leader and len(calls) == 1 and f.re_ratings > 1


def test_the_calibrated_twins_reuse_the_benchmarks_correction(draws):
    """Ten twins of a de-biased benchmark draw no de-bias of their own: one for the benchmark's correction, reused."""
    from agielo_dagster.rating.reliability import calibration_twins

    calls = draws
    matches = _sparse_wide(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = rate(matches, seed=42, with_reliability=False)
        calls.clear()
        yardstick = calibration_twins(matches, result, twins=10, seed=0)
    assert len(calls) == 1 and len(yardstick.mae_twins) == 10 and np.isfinite(yardstick.mae_twin)
