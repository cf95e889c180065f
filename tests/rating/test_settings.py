"""One typed settings object: ``orders`` its one name for the match orders, checked once, naming the bad setting."""

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agielo_dagster.rating import DEFAULT_ORDERS, RatingSettings, rate, rate_parquet, simulate_matches


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(8)
    return simulate_matches(rng.normal(1500, 300, 200), np.linspace(1300, 1900, 5), seed=3)


def test_the_model_is_a_setting_checked_by_name_and_the_default_is_rasch(small):
    assert RatingSettings().model == "rasch"
    with pytest.raises(ValueError, match="model must be one of rasch, 2pl, glicko, got 'elo'"):
        RatingSettings(model="elo")
    assert rate(small, with_reliability=False).settings["model"] == "rasch"
    # the paper's pass keeps its own defaults: every percent a snapshot; the logistic models every tenth
    assert len(RatingSettings(model="glicko").snapshot_fractions) == 100
    assert RatingSettings().snapshot_fractions == tuple(round(k / 10, 1) for k in range(1, 11))


@pytest.mark.parametrize("model", ["rasch", "glicko"])
def test_a_result_reproduces_from_its_settings(small, model):
    first = rate(small, model=model, seed=7, orders=2, with_reliability=False)
    again = rate(small, **first.settings, with_reliability=False)
    pd.testing.assert_frame_equal(first.agents, again.agents, check_exact=True)


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        (dict(orders=0), "orders must be an integer >= 1"),
        (dict(orders=2.5), "orders must be an integer >= 1"),
        (dict(orders=True), "orders must be an integer >= 1"),
        (dict(row_order=True, orders=3), "orders=3 needs row_order=False"),
        (dict(workers=0), "workers must be an integer >= 1"),
        (dict(seed="x"), "seed must be an integer or None"),
        (dict(level=1.5), "level"),
        (dict(init_sigma=0.0), "init_sigma"),
        (dict(snapshot_fractions=(0.5, 0.2)), "snapshot_fractions must increase strictly"),
    ],
)
def test_a_bad_setting_is_refused_by_name(bad, named):
    with pytest.raises(ValueError, match=named):
        RatingSettings(**bad)


def test_unknown_settings_are_named_and_the_object_is_frozen():
    with pytest.raises(TypeError, match="unknown rating setting.*shuffles"):
        RatingSettings.of(shuffles=4)
    settings = RatingSettings(snapshot_fractions=[0.5, 1.0])
    assert settings.snapshot_fractions == (0.5, 1.0) and settings.orders == DEFAULT_ORDERS
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.orders = 1  # type: ignore[misc]


def test_rate_parquet_takes_the_settings_built_once(small, tmp_path):
    path = tmp_path / "matches.parquet"
    pq.write_table(pa.Table.from_pandas(small, preserve_index=False), path)
    settings = RatingSettings(seed=5, orders=2, with_reliability=False)
    by_settings = rate_parquet(path, settings=settings).agents.to_pandas()
    by_keywords = rate_parquet(path, seed=5, orders=2, with_reliability=False).agents.to_pandas()
    pd.testing.assert_frame_equal(by_settings, by_keywords, check_exact=True)
    with pytest.raises(TypeError, match="not both"):
        rate_parquet(path, settings=settings, seed=1)
