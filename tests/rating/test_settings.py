"""One typed settings object: ``orders`` its one name for the match orders, checked once, naming the bad setting."""

import dataclasses
import importlib
import inspect
import pkgutil

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


def test_the_old_name_shuffles_warns_and_rates_the_same(small):
    new = rate(small, seed=5, orders=2, with_reliability=False)
    with pytest.deprecated_call(match="'shuffles' is now 'orders'"):
        old = rate(small, seed=5, shuffles=2, with_reliability=False)
    pd.testing.assert_frame_equal(old.agents, new.agents, check_exact=True)
    assert old.settings == new.settings and new.settings["orders"] == 2
    with pytest.raises(TypeError, match="disagree"), pytest.deprecated_call():
        rate(small, orders=4, shuffles=2)


def test_the_old_flag_shuffle_is_row_order_negated(small):
    new = rate(small, row_order=True, orders=1, with_reliability=False)
    with pytest.deprecated_call(match="'shuffle' is now 'row_order'"):
        old = rate(small, shuffle=False, orders=1, with_reliability=False)
    pd.testing.assert_frame_equal(old.agents, new.agents, check_exact=True)
    assert old.settings == new.settings and new.settings["row_order"] is True
    with pytest.deprecated_call():
        assert RatingSettings.of({"shuffle": True, "orders": 2}) == RatingSettings(orders=2)
    with pytest.raises(TypeError, match="row_order=True and shuffle=True disagree"), pytest.deprecated_call():
        rate(small, row_order=True, shuffle=True, orders=1)


def test_every_engine_function_taking_orders_still_reads_shuffles(small):
    """One decorator carries the old keywords for every public engine function with ``orders`` or ``row_order``, bit for bit."""
    import agielo_dagster.rating as engine
    from agielo_dagster.rating.orders import final_ratings, match_orders

    taking_orders = {}
    for info in pkgutil.walk_packages(engine.__path__, f"{engine.__name__}."):
        for name, f in vars(importlib.import_module(info.name)).items():
            if (
                inspect.isfunction(f)
                and not name.startswith("_")
                and {"orders", "row_order"} & set(inspect.signature(f).parameters)
            ):
                taking_orders[f"{f.__module__}.{name}"] = f
    assert len(taking_orders) >= 10
    bare = sorted(name for name, f in taking_orders.items() if not hasattr(f, "__wrapped__"))
    assert bare == [], f"decorate with @accepts_old_names: {bare}"
    with pytest.deprecated_call(match="'shuffles' is now 'orders'"):
        old = match_orders(500, seed=4, shuffles=3)
    for a, b in zip(old, match_orders(500, seed=4, orders=3), strict=True):
        np.testing.assert_array_equal(a, b)
    from agielo_dagster.rating.frames import encode_matches

    m = encode_matches(small)
    with pytest.deprecated_call():
        old = final_ratings(m, seed=4, shuffles=2, workers=1)
    for a, b in zip(old, final_ratings(m, seed=4, orders=2, workers=1), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="disagree"), pytest.deprecated_call():
        match_orders(10, seed=1, orders=2, shuffles=3)


def test_a_result_reproduces_from_its_settings(small):
    first = rate(small, seed=7, orders=2, with_reliability=False)
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
    with pytest.raises(TypeError, match="unknown rating setting.*shufles"):
        RatingSettings.of(shufles=4)
    settings = RatingSettings(snapshot_fractions=[0.5, 1.0])
    assert settings.snapshot_fractions == (0.5, 1.0) and settings.orders == DEFAULT_ORDERS
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.orders = 1  # type: ignore[misc]
    assert RatingSettings(orders=1).refines is False and RatingSettings().refines is True


def test_rate_parquet_takes_the_settings_built_once(small, tmp_path):
    path = tmp_path / "matches.parquet"
    pq.write_table(pa.Table.from_pandas(small, preserve_index=False), path)
    settings = RatingSettings(seed=5, orders=2, with_reliability=False)
    by_settings = rate_parquet(path, settings=settings).agents.to_pandas()
    by_keywords = rate_parquet(path, seed=5, orders=2, with_reliability=False).agents.to_pandas()
    pd.testing.assert_frame_equal(by_settings, by_keywords, check_exact=True)
    with pytest.raises(TypeError, match="not both"):
        rate_parquet(path, settings=settings, seed=1)
