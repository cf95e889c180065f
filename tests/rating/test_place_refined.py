"""Placement of a newcomer on the refined scale (``place_on_refined``), by the refinement's own pairwise equations."""

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import rate
from agielo_dagster.rating.refine import place_on_refined, place_refined


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
