import math
from functools import partial

import numpy as np
import pandas as pd
import polars as pl
import pytest

from agielo_dagster.rating import MatchTableError, g, update_match, update_rating_period
from agielo_dagster.rating import rate as any_model
from agielo_dagster.rating.glicko import Q, snapshot_ends

rate = partial(any_model, model="glicko")  # this module is about the paper's sequential pass


def test_glickman_published_example():
    # Glickman (1999), "Parameter estimation in large dynamic paired comparison experiments", §Example:
    # a 1500/200 player beats 1400/30, loses to 1550/100 and to 1700/300 in one rating period.
    mu, sigma = update_rating_period(1500, 200, [1400, 1550, 1700], [30, 100, 300], [1, 0, 0])
    assert round(mu) == 1464
    assert round(sigma, 1) == 151.4
    assert g(30) == pytest.approx(0.9955, abs=1e-4)
    assert g(300) == pytest.approx(0.7242, abs=1e-4)


def test_q_and_g_follow_glicko_1():
    assert Q == pytest.approx(0.0057565, rel=1e-4)
    assert g(0.0) == 1.0


# Values below were computed by hand (30-digit decimals) from
# E = 1/(1 + 10^(−g(σ_j)(μ_i − μ_j)/400)), 1/σ'² = 1/σ² + q²g²E(1 − E), μ' = μ + qσ'²g(S − E).
@pytest.mark.parametrize(
    "agent, test_case, score, agent_after, test_case_after",
    [
        ((1500, 350), (1500, 350), 1.0, (1662.212002605765, 290.230506091091), (1337.787997394235, 290.230506091091)),
        ((1500, 350), (1500, 350), 0.0, (1337.787997394235, 290.230506091091), (1662.212002605765, 290.230506091091)),
        ((1700, 80), (1400, 200), 0.3, (1684.458240759461, 79.089790488034), (1503.794643754472, 185.250009056806)),
    ],
)
def test_single_match_against_hand_computed_values(agent, test_case, score, agent_after, test_case_after):
    mu_a, sig_a, mu_t, sig_t = update_match(*agent, *test_case, score)
    assert (mu_a, sig_a) == pytest.approx(agent_after, abs=1e-9)
    assert (mu_t, sig_t) == pytest.approx(test_case_after, abs=1e-9)


def test_a_match_is_the_one_game_rating_period_for_both_players():
    mu_a, sig_a, mu_t, sig_t = update_match(1620.0, 140.0, 1480.0, 260.0, 0.75)
    assert (mu_a, sig_a) == pytest.approx(update_rating_period(1620.0, 140.0, [1480.0], [260.0], [0.75]), abs=1e-9)
    assert (mu_t, sig_t) == pytest.approx(update_rating_period(1480.0, 260.0, [1620.0], [140.0], [0.25]), abs=1e-9)


def _matches():
    return pd.DataFrame(
        {
            "test_case_id": ["q1", "q2", "q1", "q3", "q2", "q3"],
            "agent_id": ["m1", "m1", "m2", "m2", "m3", "m3"],
            "metric": [1.0, 0.0, 1.0, 1.0, 0.5, 0.0],
            "score": [1.0, 0.0, 1.0, 1.0, 0.5, 0.0],
        }
    )


def test_row_order_rating_equals_matches_applied_one_by_one():
    matches = _matches()
    result = rate(matches, row_order=True, orders=1)
    state = {}
    for row in matches.itertuples():
        a = state.get(("a", row.agent_id), (1500.0, 350.0))
        t = state.get(("t", row.test_case_id), (1500.0, 350.0))
        mu_a, sig_a, mu_t, sig_t = update_match(*a, *t, row.score)
        state[("a", row.agent_id)] = (mu_a, sig_a)
        state[("t", row.test_case_id)] = (mu_t, sig_t)
    for row in result.agents.itertuples():
        assert (row.mu, row.sigma) == pytest.approx(state[("a", row.agent_id)], abs=1e-9)
    for row in result.test_cases.itertuples():
        assert (row.mu, row.sigma) == pytest.approx(state[("t", row.test_case_id)], abs=1e-9)


def test_output_tables_have_the_engine_columns_and_summaries():
    result = rate(_matches(), row_order=True, orders=1)
    assert list(result.agents.columns) == [
        "agent_id", "mu", "sigma", "matches", "mean_score", "mean_metric", "mu_order_sd",
        "mu_lo", "mu_hi", "rank", "rank_lo", "rank_hi", "component",
    ]  # fmt: skip
    assert list(result.test_cases.columns) == [
        "test_case_id", "mu", "sigma", "discrimination", "discrimination_lo", "discrimination_hi", "flag", "flag_reason",
        "matches", "mean_score", "mean_metric", "mu_order_sd", "component",
        "mu_after_1", "sigma_after_1",  # each test case's history (here: at most 2 matches)
    ]  # fmt: skip
    assert list(result.snapshots.columns) == ["fraction", "kind", "id", "mu", "sigma"]
    tc = result.test_cases.set_index("test_case_id")
    assert tc.loc["q1", "matches"] == 2 and tc.loc["q1", "mean_score"] == 0.0  # both agents solved it
    assert tc.loc["q2", "mean_metric"] == 0.25
    ag = result.agents.set_index("agent_id")
    assert ag.loc["m3", "mean_score"] == 0.25
    assert result.agents["sigma"].lt(350).all()  # σ only shrinks


def test_same_seed_is_bit_identical_and_other_seeds_differ():
    rng = np.random.default_rng(3)
    from agielo_dagster.rating import simulate_matches

    matches = simulate_matches(rng.normal(1500, 200, 300), [1300, 1500, 1700, 1900], seed=1)
    a, b, c = rate(matches, seed=7), rate(matches, seed=7), rate(matches, seed=8)
    pd.testing.assert_frame_equal(a.test_cases, b.test_cases, check_exact=True)
    pd.testing.assert_frame_equal(a.snapshots, b.snapshots, check_exact=True)
    pd.testing.assert_frame_equal(a.reliability, b.reliability, check_exact=True)
    assert not np.array_equal(a.test_cases["mu"], c.test_cases["mu"])


def test_row_order_does_not_change_the_shuffled_result_ids():
    matches = _matches()
    shuffled_rows = matches.sample(frac=1, random_state=0)
    # codes follow sorted ids, so the output rows are the same whatever the input row order
    assert list(rate(shuffled_rows).agents["agent_id"]) == ["m1", "m2", "m3"]


def test_several_orders_report_mean_and_spread():
    rng = np.random.default_rng(5)
    from agielo_dagster.rating import simulate_matches

    matches = simulate_matches(rng.normal(1500, 250, 200), [1400, 1600, 1800], seed=2)
    singles = [rate(matches, seed=s, orders=1) for s in (11,)]
    multi = rate(matches, seed=11, orders=4)  # Glicko's orders (refined, μ is the joint fit's)
    assert multi.agents["mu_order_sd"].gt(0).all()
    assert singles[0].agents["mu_order_sd"].isna().all()
    # the first of K orders is the single order drawn from the same seed
    from agielo_dagster.rating.glicko import match_orders

    first_of_four = match_orders(len(matches), seed=11, orders=4)[0]
    (only,) = match_orders(len(matches), seed=11)
    np.testing.assert_array_equal(first_of_four, only)
    # the mean over orders lies within the spread of single orders
    per_order = np.array(
        [
            rate(matches.iloc[o].reset_index(drop=True), row_order=True, orders=1).agents["mu"]
            for o in match_orders(len(matches), seed=11, orders=4)
        ]
    )
    np.testing.assert_allclose(multi.agents["mu"], per_order.mean(axis=0), atol=1e-9)
    np.testing.assert_allclose(multi.agents["mu_order_sd"], per_order.std(axis=0, ddof=1), atol=1e-9)
    # σ is the mixture of the orders' posteriors, not the mean σ
    per_order_sigma = np.array(
        [
            rate(matches.iloc[o].reset_index(drop=True), row_order=True, orders=1).agents["sigma"]
            for o in match_orders(len(matches), seed=11, orders=4)
        ]
    )
    np.testing.assert_allclose(
        multi.agents["sigma"], np.sqrt((per_order_sigma**2).mean(axis=0) + per_order.var(axis=0)), atol=1e-9
    )


def test_snapshots_follow_the_authors_milestones():
    assert snapshot_ends([0.01, 0.5, 1.0], 1_000_000).tolist() == [10_000, 500_000, 1_000_000]
    assert snapshot_ends([0.01, 1.0], 7).tolist() == [1, 7]
    result = rate(_matches(), row_order=True, orders=1, snapshot_fractions=(0.5, 1.0), test_case_snapshot_fractions=(1.0,))
    snaps = result.snapshots
    final = snaps[(snaps.fraction == 1.0) & (snaps.kind == "agent")].set_index("id")
    pd.testing.assert_series_equal(final["mu"], result.agents.set_index("agent_id")["mu"], check_names=False)
    # after 3 of 6 matches (row order) m3 has not played yet
    half = snaps[(snaps.fraction == 0.5) & (snaps.kind == "agent")].set_index("id")
    assert half.loc["m3", "mu"] == 1500.0 and half.loc["m3", "sigma"] == 350.0
    assert set(snaps[snaps.kind == "test_case"]["fraction"]) == {1.0}


def test_default_snapshots_cover_every_percent_for_agents_and_four_shares_for_test_cases():
    result = rate(_matches())
    snaps = result.snapshots
    assert snaps[snaps.kind == "agent"]["fraction"].nunique() == 100
    assert sorted(snaps[snaps.kind == "test_case"]["fraction"].unique()) == [0.1, 0.25, 0.5, 1.0]
    assert len(result.reliability) == 100


def test_polars_in_polars_out():
    result = rate(pl.from_pandas(_matches()))
    assert isinstance(result.agents, pl.DataFrame)
    assert isinstance(result.snapshots, pl.DataFrame)
    assert isinstance(result.reliability, pl.DataFrame)
    pandas_result = rate(_matches())
    np.testing.assert_array_equal(result.agents["mu"].to_numpy(), pandas_result.agents["mu"].to_numpy())


@pytest.mark.parametrize(
    "column, value, row, rule",
    [
        ("score", 1.5, 2, "score_in_range"),
        ("score", -0.1, 4, "score_in_range"),
        ("score", math.nan, 1, "score_finite"),
        ("metric", math.inf, 3, "metric_finite"),
        ("agent_id", None, 5, "id_present"),
        ("metric", "n/a", 0, "metric_numeric"),
    ],
)
def test_bad_match_tables_are_errors_naming_row_column_and_rule(column, value, row, rule):
    matches = _matches().astype({column: object})
    matches.loc[row, column] = value
    with pytest.raises(MatchTableError) as err:
        rate(matches)
    assert (err.value.row, err.value.column, err.value.rule) == (row, column, rule)
    assert f"row {row}" in str(err.value)


def test_missing_columns_and_empty_tables_are_refused():
    with pytest.raises(MatchTableError, match="lacks column.*score"):
        rate(_matches().drop(columns="score"))
    with pytest.raises(MatchTableError, match="no rows"):
        rate(_matches().iloc[:0])


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="increase strictly"):
        rate(_matches(), snapshot_fractions=(0.5, 0.2))
    with pytest.raises(ValueError, match="within"):
        rate(_matches(), test_case_snapshot_fractions=(0.0, 1.0))
    with pytest.raises(ValueError, match="row_order=False"):
        rate(_matches(), row_order=True, orders=3)
    with pytest.raises(ValueError, match="init_sigma"):
        rate(_matches(), init_sigma=0.0)


def test_rating_moves_with_the_paper_q_squared_denominator():
    # With the paper's misprinted denominator (no q²) a player would barely move; Glicko-1 moves ~160 points.
    (mu_a, _, _, _) = update_match(1500, 350, 1500, 350, 1.0)
    assert mu_a - 1500 > 150
    no_q2 = 1500 + Q * (1 / (1 / 350**2 + g(350) ** 2 * 0.25)) * g(350) * 0.5
    assert no_q2 - 1500 < 1
    assert math.isclose(mu_a, 1662.212002605765, abs_tol=1e-9)


def test_one_order_reproduces_the_previous_engine_bit_for_bit():
    """``orders=1`` is the paper's single order as earlier versions computed it: these are their numbers, exactly."""
    from agielo_dagster.rating import simulate_matches

    rng = np.random.default_rng(2024)
    matches = simulate_matches(rng.normal(1500, 300, 800), np.linspace(1200, 2000, 6), seed=7)
    result = rate(matches, seed=42, orders=1)
    assert result.agents["mu"].tolist() == [
        1208.196115866714, 1373.4143606071739, 1511.9180328389753, 1666.165594520368, 1821.5946636836507, 1987.0851401746322,
    ]  # fmt: skip
    assert result.test_cases["mu"].iloc[:3].tolist() == [1703.4216301182573, 1722.0762554514417, 2011.5081167863375]
    rel = result.reliability.iloc[[9, 49, 99]]
    assert rel["mae"].tolist() == [0.1902963397057494, 0.1115840947980619, 0.07762385895612162]
    assert rel["rho_test_cases"].tolist() == [-0.8734136311706426, -0.9134148592803335, -0.9845442299064534]
