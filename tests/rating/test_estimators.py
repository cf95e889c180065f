"""Plackett-Luce, HodgeRank, Rasch, bootstrap and robustness."""

import choix
import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from agielo_dagster.rating import (
    MatchTableError,
    bootstrap,
    hodge_rank,
    pairwise_wins,
    plackett_luce,
    robustness,
    simulate_matches,
)

ELO = 400 / np.log(10)


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(0)
    true_agents = np.linspace(1300, 1900, 12)
    return true_agents, simulate_matches(rng.normal(1500, 300, 1500), true_agents, seed=1)


def test_pairwise_wins_count_ties_as_half():
    m = pd.DataFrame(
        {
            "test_case_id": ["t1", "t1", "t1", "t2", "t2", "t3"],
            "agent_id": ["a", "b", "c", "a", "b", "c"],
            "metric": [0.9, 0.5, 0.9, 0.2, 0.2, 1.0],
        }
    ).assign(score=lambda f: f["metric"])
    wins, ids = pairwise_wins(m)
    assert list(ids) == ["a", "b", "c"]
    # t1: a beats b, a ties c, c beats b; t2: a ties b; t3: c alone, no comparison
    np.testing.assert_array_equal(wins, [[0, 1.5, 0.5], [0.5, 0, 0], [0.5, 1, 0]])


@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_plackett_luce_equals_choix_on_the_same_comparisons(synthetic, alpha):
    _, matches = synthetic
    wins, ids = pairwise_wins(matches)
    ours = plackett_luce(matches, alpha=alpha, reference_agent=ids[0], reference_rating=0.0).set_index("agent_id")["rating"]
    # our alpha adds alpha pseudo-wins each way between every pair
    theirs = choix.ilsr_pairwise_dense(wins + alpha * (1 - np.eye(len(ids))), tol=1e-13, max_iter=100_000) * ELO
    theirs = pd.Series(theirs - theirs[0], index=ids)
    np.testing.assert_allclose(ours.loc[ids].to_numpy(), theirs.to_numpy(), atol=1e-6)


def test_plackett_luce_recovers_order_with_incomplete_coverage(synthetic):
    true_agents, matches = synthetic
    sparse = matches.sample(frac=0.4, random_state=3)  # every agent misses most test cases
    out = plackett_luce(sparse).set_index("agent_id")
    order = [f"agent_{i:02d}" for i in range(12)]
    assert spearmanr(out.loc[order, "rating"], true_agents)[0] >= 0.97
    assert out["rating"].mean() == pytest.approx(1500.0)


def test_plackett_luce_refuses_infinite_scores_without_regularization():
    m = pd.DataFrame({"test_case_id": ["t1", "t1", "t2", "t2"], "agent_id": ["a", "b", "a", "b"], "metric": [1.0, 0.0, 1.0, 0.0]})
    m["score"] = m["metric"]
    with pytest.raises(MatchTableError, match="comparisons_connected"):
        plackett_luce(m)
    out = plackett_luce(m, alpha=1.0).set_index("agent_id")["rating"]
    assert out["a"] > out["b"] and np.isfinite(out).all()


@pytest.mark.slow  # demo_digits: 20 classifiers cross-validated on 1,797 digits; breast_cancer stays quick
def test_plackett_luce_ranking_survives_90_percent_missing_on_the_real_benchmark(demo_digits):
    assert demo_digits["agent_id"].nunique() == 20
    result = robustness(demo_digits, methods="plackett_luce", fractions=(0.0, 0.9), repeats=5, seed=1)
    by_fraction = result.set_index("fraction_dropped")
    assert by_fraction.loc[0.0, "kendall_tau"] == pytest.approx(1.0)
    assert by_fraction.loc[0.9, "kendall_tau"] >= 0.9
    assert by_fraction.loc[0.9, "measurements"] == round(len(demo_digits) * 0.1)


def test_hodge_rank_recovers_exact_scores_on_a_consistent_graph():
    true = {"a": 3.0, "b": 1.0, "c": 0.5, "d": -2.0, "e": 0.0}
    rows = [(x, y, true[x] - true[y]) for x in true for y in true if x < y and (x, y) != ("a", "e")]
    result = hodge_rank(pd.DataFrame(rows, columns=["item_a", "item_b", "margin"]))
    scores = result.scores.set_index("item")["score"]
    shifted = pd.Series(true) - np.mean(list(true.values()))
    np.testing.assert_allclose(scores.loc[shifted.index], shifted, atol=1e-9)
    assert result.inconsistency == pytest.approx(0.0, abs=1e-12)
    assert result.alignment == 1.0


def test_hodge_rank_on_winners_of_a_tree_is_consistent():
    judgments = pd.DataFrame({"item_a": ["x", "z", "y"], "item_b": ["y", "y", "w"], "winner": ["a", "b", "tie"]})
    result = hodge_rank(judgments)
    s = result.scores.set_index("item")["score"]
    assert s["x"] - s["y"] == pytest.approx(1.0) and s["y"] - s["z"] == pytest.approx(1.0) and s["y"] == pytest.approx(s["w"])
    assert result.inconsistency == pytest.approx(0.0, abs=1e-12)


def test_hodge_rank_reports_the_inconsistency_of_a_cycle():
    cycle = pd.DataFrame({"item_a": ["x", "y", "z"], "item_b": ["y", "z", "x"], "winner": ["a", "a", "a"]})
    result = hodge_rank(cycle)
    assert result.inconsistency == pytest.approx(1.0)
    assert np.allclose(result.scores["score"], 0.0)
    assert result.alignment == 0.0  # no strict majority is reproduced by equal scores


def test_hodge_rank_pools_raters_and_measures_alignment():
    judgments = pd.DataFrame(
        {
            "item_a": ["p", "q", "p", "p", "r"],
            "item_b": ["q", "p", "q", "r", "q"],
            "winner": ["a", "b", "b", "a", "a"],
            "rater": ["u1", "u2", "u3", "u1", "u2"],
        }
    )
    result = hodge_rank(judgments)
    pairs = result.pairs.set_index(["item_a", "item_b"])
    # p–q judged three times, twice "p harder": flow (1 + 1 − 1)/3 from p's side
    assert pairs.loc[("p", "q"), "flow"] == pytest.approx(1 / 3) and pairs.loc[("p", "q"), "weight"] == 3
    assert result.alignment == 1.0
    order = list(result.scores["item"])
    assert order.index("p") < order.index("q")


def test_hodge_rank_refuses_bad_judgments():
    with pytest.raises(MatchTableError, match="winner_known"):
        hodge_rank(pd.DataFrame({"item_a": ["x"], "item_b": ["y"], "winner": ["maybe"]}))
    with pytest.raises(MatchTableError, match="distinct_items"):
        hodge_rank(pd.DataFrame({"item_a": ["x"], "item_b": ["x"], "winner": ["a"]}))


def test_bootstrap_intervals(synthetic):
    _, matches = synthetic
    out = bootstrap(matches, n_resamples=60, seed=4)
    assert set(out["quantity"]) == {"rating", "gap_50", "gap_90", "gap_99", "plackett_luce"}
    assert (out["low"] <= out["high"]).all() and (out["sd"] > 0).all()
    inside = (out["low"] <= out["estimate"]) & (out["estimate"] <= out["high"])
    assert inside.mean() >= 0.9
    again = bootstrap(matches, n_resamples=60, seed=4)
    pd.testing.assert_frame_equal(out, again)
    # more test cases, narrower intervals
    small = bootstrap(matches[matches["test_case_id"] < "tc_0300"], n_resamples=60, seed=4, plackett_luce=False)
    width = lambda f: (f.loc[f["quantity"] == "rating", "high"] - f.loc[f["quantity"] == "rating", "low"]).mean()  # noqa: E731
    assert width(out) < width(small)


def test_robustness_reports_every_method(synthetic):
    _, matches = synthetic
    out = robustness(matches, fractions=(0.0, 0.5), repeats=2)
    assert set(out["method"]) == {"agielo", "plackett_luce", "mean_metric"}
    np.testing.assert_allclose(out.loc[out["fraction_dropped"] == 0.0, "kendall_tau"], 1.0)
    assert (out["kendall_tau"] > 0.8).all()
