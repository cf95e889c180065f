import numpy as np
import pandas as pd
import polars as pl
import pytest

from agielo_dagster.rating import (
    MatchTableError,
    competency_gaps,
    expected_metric,
    expected_score,
    hard_cases,
    minmax,
    oracle_rating,
)


def test_expected_score_formula_and_broadcasting():
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1900, 1500) == pytest.approx(1 / (1 + 10 ** (-1)))
    out = expected_score(np.array([[1500.0], [1700.0]]), np.array([1500.0, 1900.0]))
    assert out.shape == (2, 2)
    assert out[1, 1] == pytest.approx(1 / (1 + 10**0.5))


def test_expected_metric_uses_the_inverse_scoring():
    s = minmax(0.0, 4.0, higher_is_better=False)  # e.g. displacement error in metres
    assert expected_metric(1500, 1500, s) == pytest.approx(2.0)
    assert expected_metric(2300, 1500, s) < 0.1  # a much stronger agent is expected near 0 m
    assert expected_metric(1600, 1500) == pytest.approx(expected_score(1600, 1500))


def test_oracle_rating():
    assert oracle_rating(2000.0, 0.5) == 2000.0
    assert oracle_rating(2000.0, 0.99) == pytest.approx(2000 + 400 * np.log10(99))
    with pytest.raises(ValueError):
        oracle_rating(2000.0, 1.0)


TEST_CASES = pd.DataFrame(
    {
        "test_case_id": ["easy", "mid", "hard", "hardest"],
        "mu": [1200.0, 1500.0, 1800.0, 2100.0],
        "label": ["cat", "dog", "fox", "owl"],
    }
)


def test_hard_cases_are_those_expected_below_threshold_hardest_first():
    out = hard_cases(TEST_CASES, agent_rating=1600.0, metric_threshold=0.5)
    assert list(out["test_case_id"]) == ["hardest", "hard"]
    assert list(out["label"]) == ["owl", "fox"]  # metadata columns travel along
    np.testing.assert_allclose(out["expected_score"], expected_score(1600.0, [2100.0, 1800.0]))
    assert (out["expected_metric"] < 0.5).all()


def test_hard_cases_for_a_lower_is_better_metric():
    s = minmax(0.0, 10.0, higher_is_better=False)
    # expected error above 6 is a failure; E[M] = 10 − 10·E[S]
    out = hard_cases(TEST_CASES, agent_rating=1600.0, metric_threshold=6.0, scoring=s)
    assert list(out["test_case_id"]) == ["hardest", "hard"]
    assert (out["expected_metric"] > 6.0).all()


def test_hard_cases_polars():
    out = hard_cases(pl.from_pandas(TEST_CASES), 1600.0, 0.5)
    assert isinstance(out, pl.DataFrame) and out["test_case_id"].to_list() == ["hardest", "hard"]


def test_competency_gaps_columns_and_values():
    agents = pd.DataFrame({"agent_id": ["weak", "strong"], "mu": [1400.0, 2000.0]})
    gaps = competency_gaps(TEST_CASES, agents)
    assert list(gaps.columns) == [
        "agent_id", "rating", "hardest_test_case_rating", "expected_score_on_hardest",
        "expected_metric_on_hardest", "oracle_rating_50", "gap_50", "oracle_rating_90", "gap_90",
        "oracle_rating_99", "gap_99", "pct_beaten_50", "pct_beaten_91",
    ]  # fmt: skip
    strong = gaps.iloc[0]
    assert strong["agent_id"] == "strong"
    assert strong["gap_50"] == pytest.approx(100.0)
    assert strong["gap_99"] == pytest.approx(100.0 + 400 * np.log10(99))
    # 2000 lies between 'hard' (3rd of 4 → 75%) and 'hardest' (100%): two thirds of the way
    assert strong["pct_beaten_50"] == pytest.approx(75 + 25 * 200 / 300)
    weak = gaps.iloc[1]
    # 1400 − 401.9 lies below the easiest case (1200): it beats none of them, not the CDF's first step (25 %)
    assert weak["pct_beaten_91"] == 0.0
    assert weak["pct_beaten_50"] == pytest.approx(25 + 25 * 200 / 300)


def test_competency_gaps_custom_confidences_and_scoring():
    agents = pd.DataFrame({"agent_id": ["a"], "mu": [1800.0]})
    s = minmax(0.0, 10.0, higher_is_better=False)
    gaps = competency_gaps(TEST_CASES, agents, confidences=(0.75, 0.999), scoring=s)
    assert {"oracle_rating_75", "gap_75", "oracle_rating_99_9", "gap_99_9"} <= set(gaps.columns)
    assert gaps["expected_metric_on_hardest"].iloc[0] == pytest.approx(10 - 10 * expected_score(1800, 2100))


def test_competency_gaps_need_no_test_case_ids_and_check_them_where_given():
    """The gaps read only the test cases' ratings: the pipeline leaves a wide benchmark's millions of ids out."""
    agents = pd.DataFrame({"agent_id": ["weak", "strong"], "mu": [1400.0, 2000.0]})
    pd.testing.assert_frame_equal(
        competency_gaps(TEST_CASES[["mu"]], agents), competency_gaps(TEST_CASES, agents), check_exact=True
    )
    with pytest.raises(MatchTableError, match="test-case table row 1: test_case_id is missing"):
        competency_gaps(TEST_CASES.assign(test_case_id=["a", None, "c", "d"]), agents)


def test_competency_gaps_refuses_tables_without_ratings():
    with pytest.raises(MatchTableError, match="lacks column"):
        competency_gaps(TEST_CASES.drop(columns="mu"), pd.DataFrame({"agent_id": ["a"], "mu": [1.0]}))
    with pytest.raises(MatchTableError, match="row 0: mu nan is not a finite number.*rule: mu_finite"):
        competency_gaps(TEST_CASES, pd.DataFrame({"agent_id": ["a"], "mu": [np.nan]}))


def test_score_link_is_the_isotonic_fit_of_score_on_rating_difference():
    from sklearn.isotonic import IsotonicRegression

    from agielo_dagster.rating import score_link

    agents = pd.DataFrame({"agent_id": ["weak", "strong"], "mu": [1400.0, 1700.0]})
    matches = pd.DataFrame(
        {
            "test_case_id": ["easy", "mid", "hard", "easy", "mid", "hard", "hardest"],
            "agent_id": ["weak", "weak", "weak", "strong", "strong", "strong", "strong"],
            "score": [0.9, 0.7, 0.75, 0.95, 0.9, 0.6, 0.8],
        }
    ).assign(metric=lambda f: f["score"])
    link = score_link(matches, TEST_CASES, agents)
    diff = matches["agent_id"].map({"weak": 1400.0, "strong": 1700.0}) - matches["test_case_id"].map(
        TEST_CASES.set_index("test_case_id")["mu"]
    )
    reference = IsotonicRegression(out_of_bounds="clip").fit(diff, matches["score"])
    grid = np.linspace(-700, 700, 57)
    np.testing.assert_allclose(link(grid), reference.predict(grid))
    assert np.all(np.diff(link(grid)) >= 0) and link.matches == 7
    # ties are averaged (−400: 0.75 and 0.8; −100: 0.7 and 0.6), then the violators pooled: (0.75 + 0.8 + 0.7 + 0.6)/4
    assert link(-100.0) == pytest.approx(0.7125) and link(-400.0) == pytest.approx(0.7125)
    assert link(200.0) == pytest.approx(0.9) and link(900.0) == pytest.approx(0.95)  # flat beyond the last knot
    # it plugs into every prediction
    assert expected_score(1400.0, 1200.0, link=link) == pytest.approx(link(200.0))
    s = minmax(0.0, 10.0, higher_is_better=False)
    assert expected_metric(1400.0, 1200.0, s, link=link) == pytest.approx(10 - 10 * link(200.0))
    out = hard_cases(TEST_CASES, 1700.0, 0.8, link=link)
    assert list(out["test_case_id"]) == ["hardest", "hard"]
    with pytest.raises(ValueError, match="sigma or link"):
        expected_score(1400.0, 1200.0, sigma=50.0, link=link)
    with pytest.raises(MatchTableError, match="'nobody' has no rating"):
        score_link(matches.head(1).assign(agent_id="nobody"), TEST_CASES, agents)
