"""Ability masses (TADDL-V's DL-V model): planted masses come back, the alignment rate is a plain pair count."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.rating import AbilityMasses, MatchTableError, ability_masses, alignment_rate
from agielo_dagster.rating.abilities import aligned_pairs, order_coefficient

PLANTED = {"algebra": 2.5, "geometry": 0.8, "logic": 3.6, "reading": 1.4, "counting": 0.5, "spatial": 2.0}


def model_difficulty(abilities: list[str], masses: dict, max_order: int | None) -> float:
    """D(t) written out term by term, exactly as the issue states it (no closed form)."""
    total = sum(masses[a] for a in abilities)
    top = len(abilities) if max_order is None else min(max_order, len(abilities))
    for r in range(2, top + 1):
        cor = sum(sum(math.log(masses[a]) for a in subset) for subset in itertools.combinations(abilities, r))
        total += (-1) ** (r + 1) * cor
    return total


def planted_tasks(n_tasks: int, seed: int, max_abilities: int = 3):
    rng = np.random.default_rng(seed)
    names = list(PLANTED)
    tasks = {f"task_{i:04d}": list(rng.choice(names, rng.integers(1, max_abilities + 1), replace=False)) for i in range(n_tasks)}
    long = pd.DataFrame([(t, a) for t, abilities in tasks.items() for a in abilities], columns=["item_id", "ability"])
    return tasks, long


@pytest.mark.parametrize("n", range(1, 7))
@pytest.mark.parametrize("max_order", [1, 2, 3, None])
def test_the_closed_form_coefficient_is_the_inclusion_exclusion_sum(n, max_order):
    masses = dict(zip("abcdef", [0.7, 1.9, 3.1, 0.4, 2.2, 5.0], strict=True))
    abilities = list("abcdef")[:n]
    closed = sum(masses[a] for a in abilities) + order_coefficient(n, max_order) * sum(math.log(masses[a]) for a in abilities)
    assert closed == pytest.approx(model_difficulty(abilities, masses, max_order), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("max_order", [1, 2])
def test_planted_masses_are_recovered(max_order):
    tasks, long = planted_tasks(300, seed=max_order)
    rng = np.random.default_rng(10 + max_order)
    truth = np.array([model_difficulty(a, PLANTED, max_order) for a in tasks.values()])
    difficulties = pd.DataFrame({"item_id": list(tasks), "difficulty": truth + rng.normal(0, 0.02, len(truth))})
    fit = ability_masses(difficulties, long, max_order=max_order, scale="none")
    assert isinstance(fit, AbilityMasses) and fit.converged
    got = fit.masses.set_index("ability")["mass"]
    for ability, mass in PLANTED.items():
        assert got[ability] == pytest.approx(mass, abs=0.03), ability
    assert fit.loss < 0.02**2 * 1.5  # the noise, no more
    assert list(fit.masses["mass"]) == sorted(fit.masses["mass"], reverse=True)
    assert fit.masses.set_index("ability")["items"].sum() == len(long)


def test_masses_on_an_elo_scale_come_back_in_units_of_the_scale():
    """AGI-Elo-like difficulties (1500 + 200 per unit of mass): the fitted origin and the masses follow the scale."""
    tasks, long = planted_tasks(300, seed=7)
    truth = np.array([model_difficulty(a, PLANTED, 1) for a in tasks.values()])
    difficulties = pd.DataFrame({"item_id": list(tasks), "difficulty": 1500 + 200 * truth})
    fit = ability_masses(difficulties, long, max_order=1)  # scale="standard": unit = sd, origin fitted
    assert fit.origin == pytest.approx(1500, abs=1.0)
    got = fit.masses.set_index("ability")["mass"] * fit.unit / 200
    for ability, mass in PLANTED.items():
        assert got[ability] == pytest.approx(mass, rel=1e-3), ability
    assert fit.rmse < 0.5 and fit.alignment > 0.99
    # an explicit scale fixes both
    fixed = ability_masses(difficulties, long, max_order=1, scale=(1500, 200))
    assert fixed.masses.set_index("ability")["mass"]["logic"] == pytest.approx(PLANTED["logic"], rel=1e-4)


def test_unseen_items_are_predicted_and_unknown_abilities_said():
    tasks, long = planted_tasks(240, seed=3)
    truth = {t: model_difficulty(a, PLANTED, 2) for t, a in tasks.items()}
    train = [t for t in tasks if int(t[-4:]) < 200]
    difficulties = pd.DataFrame({"item_id": train, "difficulty": [truth[t] for t in train]})
    fit = ability_masses(difficulties, long, max_order=2, scale="none")  # rows of unseen items are ignored by the fit
    assert len(fit.fitted) == len(train)
    new = long[~long["item_id"].isin(train)]
    new = pd.concat([new, pd.DataFrame({"item_id": ["task_new", "task_new"], "ability": ["algebra", "telepathy"]})])
    predicted = fit.predict(new).set_index("item_id")
    held_out = [t for t in tasks if t not in train]
    for t in held_out:
        assert predicted.loc[t, "difficulty"] == pytest.approx(truth[t], abs=0.01)
        assert predicted.loc[t, "abilities"] == len(tasks[t]) and predicted.loc[t, "unknown_abilities"] == 0
    assert np.isnan(predicted.loc["task_new", "difficulty"]) and predicted.loc["task_new", "unknown_abilities"] == 1


def test_alignment_rate_equals_a_hand_count():
    # pairs with different observed values: (a,b) (a,c) (a,d) (b,c) (b,d); c and d tie, so their pair is left out.
    # fitted orders (a,b) (a,c) (a,d) as observed, (b,c) and (b,d) the other way: 3 of 5.
    observed = [1.0, 2.0, 3.0, 3.0]
    fitted = [0.1, 0.9, 0.5, 0.5]
    assert aligned_pairs(observed, fitted) == (3, 5)
    assert alignment_rate(observed, fitted) == pytest.approx(0.6)
    # a pair the fit ties is not aligned; no pair with different observations gives NaN
    assert aligned_pairs([1, 2, 3], [5, 5, 6]) == (2, 3)
    assert math.isnan(alignment_rate([4, 4], [1, 2]))


def test_alignment_rate_matches_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        observed, fitted = rng.integers(0, 6, n).astype(float), rng.integers(0, 6, n).astype(float)
        pairs = [(i, j) for i in range(n) for j in range(n) if observed[i] < observed[j]]
        aligned = sum(fitted[i] < fitted[j] for i, j in pairs)
        assert aligned_pairs(observed, fitted) == (aligned, len(pairs))


def test_the_fit_reports_its_alignment_by_the_same_count():
    """A small case: four single-ability items and one pair; the reported alignment is the count over `fitted`."""
    difficulties = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "i5"], "difficulty": [1.0, 2.0, 2.5, 2.0, 3.5]})
    long = pd.DataFrame(
        {"item_id": ["i1", "i2", "i3", "i4", "i5", "i5"], "ability": ["a", "b", "c", "b", "a", "b"]}
    )  # i2 and i4 need the same ability: the fit ties them, but they tie in the data too
    fit = ability_masses(difficulties, long, max_order=1, scale="none", l2=0.0)
    hand = sum(
        fit.fitted["fitted"].iloc[i] < fit.fitted["fitted"].iloc[j]
        for i in range(5)
        for j in range(5)
        if fit.fitted["difficulty"].iloc[i] < fit.fitted["difficulty"].iloc[j]
    )
    assert fit.pairs == 9  # 10 pairs, less the tie i2–i4
    assert fit.aligned == hand and fit.alignment == pytest.approx(hand / 9)


def test_hodge_rank_scores_can_be_explained():
    """HodgeRank scores (centred at 0) from judgments that follow planted masses: the order of the tasks is kept."""
    from agielo_dagster.rating import hodge_rank

    tasks, long = planted_tasks(60, seed=11)
    truth = pd.Series({t: model_difficulty(a, PLANTED, 2) for t, a in tasks.items()})
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 60, 1500), rng.integers(0, 60, 1500)
    keep = a != b
    names = np.array(list(tasks))
    judged = pd.DataFrame({"item_a": names[a[keep]], "item_b": names[b[keep]]})
    judged["margin"] = truth[judged["item_a"]].to_numpy() - truth[judged["item_b"]].to_numpy()
    scores = hodge_rank(judged).scores.rename(columns={"item": "item_id", "score": "difficulty"})[["item_id", "difficulty"]]
    assert scores["difficulty"].mean() == pytest.approx(0, abs=1e-9)
    scores["difficulty"] = scores["difficulty"].round(6)  # tasks needing the same abilities tie (up to lsqr's 1e-12 noise)
    # the margins' own unit, the origin fitted: the planted masses come back
    fit = ability_masses(scores, long, max_order=2, scale=1.0)
    assert fit.origin == pytest.approx(-truth.mean(), abs=1e-3)
    for ability, mass in fit.masses.set_index("ability")["mass"].items():
        assert mass == pytest.approx(PLANTED[ability], abs=1e-3), ability
    assert fit.alignment == pytest.approx(1.0)
    # the standard scale, on its own unit: the order is kept, less exactly
    standard = ability_masses(scores, long, max_order=2)
    assert standard.alignment > 0.9 and np.corrcoef(standard.fitted["fitted"], standard.fitted["difficulty"])[0, 1] > 0.98


def test_bad_inputs_are_named():
    long = pd.DataFrame({"item_id": ["a", "a"], "ability": ["x", "x"]})
    with pytest.raises(MatchTableError) as info:
        ability_masses(pd.DataFrame({"item_id": ["a"], "difficulty": [1.0]}), long)
    assert info.value.rule == "ability_unique" and info.value.row == 1
    with pytest.raises(MatchTableError) as info:
        ability_masses(pd.DataFrame({"item_id": ["a", "a"], "difficulty": [1.0, 2.0]}), long.iloc[:1])
    assert info.value.rule == "item_unique"
    with pytest.raises(MatchTableError) as info:
        ability_masses(pd.DataFrame({"item_id": ["a"], "difficulty": [float("nan")]}), long.iloc[:1])
    assert info.value.rule == "difficulty_finite"
    with pytest.raises(MatchTableError) as info:
        ability_masses(pd.DataFrame({"item_id": ["b"], "difficulty": [1.0]}), long.iloc[:1])
    assert info.value.rule == "abilities_known"
    with pytest.raises(MatchTableError) as info:
        ability_masses(pd.DataFrame({"item": ["a"], "difficulty": [1.0]}), long.iloc[:1])
    assert info.value.rule == "required_columns"
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_order"):
            ability_masses(pd.DataFrame({"item_id": ["a"], "difficulty": [1.0]}), long.iloc[:1], max_order=bad)
    for bad in ((0, -1), -2.0, "elo"):
        with pytest.raises(ValueError, match="scale|unit"):
            ability_masses(pd.DataFrame({"item_id": ["a"], "difficulty": [1.0]}), long.iloc[:1], scale=bad)


def test_items_without_abilities_are_left_out_and_counted():
    difficulties = pd.DataFrame({"item_id": ["a", "b", "c"], "difficulty": [1.0, 2.0, 9.0]})
    long = pd.DataFrame({"item_id": ["a", "b"], "ability": ["x", "y"]})
    fit = ability_masses(difficulties, long, max_order=1, scale="none", l2=0.0)
    assert fit.items_without_abilities == 1 and set(fit.fitted["item_id"]) == {"a", "b"}
    assert fit.masses.set_index("ability")["mass"].to_dict() == pytest.approx({"x": 1.0, "y": 2.0}, abs=1e-6)


def test_arrow_in_arrow_out():
    pa = pytest.importorskip("pyarrow")
    difficulties = pa.table({"item_id": ["a", "b"], "difficulty": [1.0, 2.0]})
    long = pa.table({"item_id": ["a", "b"], "ability": ["x", "y"]})
    fit = ability_masses(difficulties, long, max_order=1, scale="none")
    assert isinstance(fit.masses, pa.Table) and isinstance(fit.fitted, pa.Table)
    assert isinstance(fit.predict(long), pa.Table)
