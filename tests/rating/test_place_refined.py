"""Placement of a newcomer on the refined scale (``place_on_refined``), by the refinement's own pairwise equations."""

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import rate
from agielo_dagster.rating.refined_placement import place_on_refined, place_refined


def _leave_out(matches, agent):
    joint = rate(matches, seed=1, with_reliability=False, refine=True).agents.set_index("agent_id")
    rest_matches = matches[matches.agent_id != agent]
    rest = rate(rest_matches, seed=2, with_reliability=False, refine=True).agents
    placed = place_on_refined(matches[matches.agent_id == agent], rest_matches, rest, level=0.9).iloc[0]
    return joint, rest.set_index("agent_id")["mu"], placed


def test_every_classifier_left_out_lands_where_the_joint_refinement_puts_it_relative_to_the_others(demo_breast_cancer):
    """Relative to the other agents' mean, the placement is within 2 Elo of the joint refinement (measured: max 0.8).

    The absolute rating moves with the scale's level, which follows the Glicko scale's at the
    median agent: dropping adaboost (the weakest, probabilities near 0.5) moves the others' level
    by 19 Elo, as it moves Glicko's by 18 (see the next test), so adaboost placed lands 18 Elo
    from its joint rating (benchmarks/placement_refined.py; Glicko placement: at most 4.9).
    """
    joint = rate(demo_breast_cancer, seed=1, with_reliability=False, refine=True).agents.set_index("agent_id")
    relative, absolute, covered = [], [], []
    for agent in joint.index:
        _, rest, placed = _leave_out(demo_breast_cancer, agent)
        relative.append((placed["mu"] - rest.mean()) - (joint.loc[agent, "mu"] - joint["mu"].drop(agent).mean()))
        absolute.append(placed["mu"] - joint.loc[agent, "mu"])
        covered.append(placed["mu_lo"] <= joint.loc[agent, "mu"] <= placed["mu_hi"])
    assert np.abs(relative).max() < 2.0
    # absolute: median 1.9, max 18.4 Elo (adaboost; 45 when the level was the test cases' MAP level)
    assert np.median(np.abs(absolute)) < 4.0 and np.abs(absolute).max() < 22.0
    assert all(covered)  # 13 of 13 (12 of 13 before the median anchor)


def test_dropping_the_weakest_agent_moves_the_refined_level_as_little_as_the_glicko_one(demo_breast_cancer):
    """The refined scale's level is anchored on the Glicko scale's median agent, not on the test cases' prior.

    Dropping adaboost moved the other agents' refined level by 46 Elo when it was fitted jointly
    with the test cases (those every agent solves take their level from the prior); anchored, by
    19.2 Elo (at most 23.7 for one agent), against 17.8 for the Glicko ratings themselves.
    """
    rest_matches = demo_breast_cancer[demo_breast_cancer.agent_id != "adaboost"]

    def moved(**kwargs):
        joint = rate(demo_breast_cancer, seed=1, with_reliability=False, **kwargs).agents.set_index("agent_id")["mu"]
        rest = rate(rest_matches, seed=2, with_reliability=False, **kwargs).agents.set_index("agent_id")["mu"]
        return rest - joint.drop("adaboost")

    refined, glicko = moved(refine=True), moved(refine=False)
    assert abs(refined.mean()) < 22.0 and refined.abs().max() < 27.0
    assert abs(refined.mean() - glicko.mean()) < 3.0  # measured 1.4: no more than the Glicko scale moves


def test_interval_is_the_sandwich_and_narrows_with_more_test_cases(demo_breast_cancer):
    rest_matches = demo_breast_cancer[demo_breast_cancer.agent_id != "svc_rbf"]
    rest = rate(rest_matches, seed=2, with_reliability=False, refine=True).agents
    mine = demo_breast_cancer[demo_breast_cancer.agent_id == "svc_rbf"]
    full = place_on_refined(mine, rest_matches, rest).iloc[0]
    few = place_on_refined(mine.sample(frac=0.1, random_state=0), rest_matches, rest).iloc[0]
    assert full["mu_lo"] < full["mu"] < full["mu_hi"]
    assert few["sigma"] > 2.0 * full["sigma"]  # a random tenth of the test cases: about √10 wider


def test_design_weights_weigh_test_cases_and_zero_drops_them():
    rng = np.random.default_rng(0)
    n = 200
    s_a, s_b = rng.integers(0, 2, (2, n)).astype(float)
    mu_b = rng.normal(1500, 100, n)
    cluster = np.arange(n)
    plain = place_refined(s_a, s_b, mu_b, cluster)
    assert plain.iterations > 0 and np.isfinite(plain.se)
    doubled = place_refined(s_a, s_b, mu_b, cluster, weight=np.full(n, 2.0))
    # a common weight scales the equations; only Firth's O(1) correction weighs relatively less (0.04 Elo here)
    assert doubled.mu == pytest.approx(plain.mu, abs=0.5) and doubled.mu != plain.mu
    assert doubled.se == pytest.approx(plain.se, rel=1e-2)
    weight = np.where(np.arange(n) < 100, 1.0, 0.0)
    half = place_refined(s_a, s_b, mu_b, cluster, weight=weight)
    first = place_refined(s_a[:100], s_b[:100], mu_b[:100], cluster[:100])
    assert half.mu == pytest.approx(first.mu, abs=1e-6) and half.se == pytest.approx(first.se, rel=1e-9)


def test_an_agent_beating_every_rival_stays_finite_and_one_without_comparisons_has_no_interval():
    n = 50
    won = place_refined(np.ones(n), np.zeros(n), np.full(n, 1500.0), np.arange(n))
    assert np.isfinite(won.mu) and won.mu > 1500.0  # Firth keeps it finite
    tied = place_refined(np.ones(n), np.ones(n), np.full(n, 1500.0), np.arange(n))  # no decisive pair
    assert np.isnan(tied.se) and tied.comparisons == 0.0


def test_table_form_names_every_newcomer(demo_breast_cancer):
    new = demo_breast_cancer[demo_breast_cancer.agent_id.isin(["adaboost", "svc_rbf"])]
    rest_matches = demo_breast_cancer[~demo_breast_cancer.agent_id.isin(["adaboost", "svc_rbf"])]
    rest = rate(rest_matches, seed=2, with_reliability=False, refine=True).agents
    placed = place_on_refined(new, rest_matches, rest)
    assert list(placed.columns) == ["agent_id", "mu", "sigma", "mu_lo", "mu_hi", "matches", "mean_score", "mean_metric"]
    mu = placed.set_index("agent_id")["mu"]
    assert mu["svc_rbf"] > mu["adaboost"]
    assert isinstance(placed, pd.DataFrame)


def test_a_lopsided_record_reaches_farther_on_its_flat_side_and_a_balanced_one_is_symmetric():
    """The newcomer's interval is the rated agents' own: z·se each side, farther where the penalized likelihood is
    flat. An agent that solves 47 of 50 test cases, against rivals at 1500 who solve half, is bounded below by its
    few losses but barely above."""
    rng = np.random.default_rng(3)
    n, z = 50, 1.959963984540054
    s_a, s_b = np.r_[np.ones(47), np.zeros(3)], (rng.random(n) < 0.5).astype(float)
    high = place_refined(s_a, s_b, np.full(n, 1500.0), np.arange(n))
    assert high.below == pytest.approx(z * high.se) and high.above > 1.15 * z * high.se
    low = place_refined(1.0 - s_a, 1.0 - s_b, np.full(n, 1500.0), np.arange(n))  # the mirror image
    assert low.mu == pytest.approx(3000.0 - high.mu) and low.se == pytest.approx(high.se)
    assert low.below == pytest.approx(high.above) and low.above == pytest.approx(high.below)
    m = 4000
    even = place_refined(
        rng.integers(0, 2, m).astype(float), rng.integers(0, 2, m).astype(float), np.full(m, 1500.0), np.arange(m)
    )
    assert even.below == pytest.approx(z * even.se, rel=0.02) and even.above == pytest.approx(z * even.se, rel=0.02)
    assert place_refined(s_a, s_b, np.full(n, 1500.0), np.arange(n), z=1.0).above < high.above


def test_the_profile_interval_covers_a_strong_newcomer_as_the_symmetric_one_did_not():
    """Newcomers far above every rival (true rating 2200 against 8 rivals near 1500, 20 binary test cases): their
    records nearly separate, the sandwich alone fell to a quarter of the model's standard error and covered 38 %;
    with the model's as a floor and the profile's reach above, the 95 % interval covers, more often than the
    z·se interval centred on the estimate."""
    rng = np.random.default_rng(11)
    z, truth, hits, symmetric_hits, trials = 1.959963984540054, 2200.0, 0, 0, 300
    for _ in range(trials):
        rivals = rng.normal(1500, 60, 8)
        difficulty = rng.normal(1500, 200, 20)
        p_new = 1 / (1 + 10 ** ((difficulty - truth) / 400))
        p_rival = 1 / (1 + 10 ** ((difficulty[:, None] - rivals[None, :]) / 400))
        s_new = (rng.random(20) < p_new).astype(float)
        s_rival = (rng.random((20, 8)) < p_rival).astype(float)
        p = place_refined(np.repeat(s_new, 8), s_rival.ravel(), np.tile(rivals, 20), np.repeat(np.arange(20), 8))
        if not np.isfinite(p.se):
            continue
        hits += p.mu - p.below <= truth <= p.mu + p.above
        symmetric_hits += p.mu - z * p.se <= truth <= p.mu + z * p.se
    assert hits / trials >= 0.90
    assert hits > symmetric_hits
