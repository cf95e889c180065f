"""Provisional agents of a refined benchmark are placed on the refined scale (issue 22): at a wide spread too.

A benchmark of 12 simulated agents (sd 600-800 Elo) on 300 test cases; one agent uploads only a random
5-20 % of its results. ``place_provisional_agents`` with the rated matches and agents places it by the
refinement's pairwise equations; the yardstick is a joint refit (the default, refined) of the benchmark
with that partial upload included.
"""

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from agielo_dagster.rating import place_provisional_agents, rate, simulate_matches
from agielo_dagster.rating.refine import RefinementSkippedWarning


def _case(rep: int, sd: float, share: float, n_agents: int = 12, n_test_cases: int = 300):
    """(one agent's partial upload, the rest's matches, the rest's rating, the joint refit with it, the agent, all matches)."""
    rng = np.random.default_rng(100 + rep)
    matches = simulate_matches(rng.normal(1500, sd, n_test_cases), rng.normal(1500, sd, n_agents), seed=rep)
    new = f"agent_{rng.integers(n_agents):02d}"
    rest = matches[matches.agent_id != new]
    part = matches[matches.agent_id == new].sample(frac=share, random_state=rep)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a partial upload's own test cases only: nothing disconnected here
        rated = rate(rest, seed=1, with_reliability=False)
        joint = rate(pd.concat([rest, part]), seed=1, with_reliability=False).agents.set_index("agent_id")
    return part, rest, rated, joint, new, matches


def _placed(part, rest, rated, level=0.9):
    return place_provisional_agents(part, rated.test_cases, level=level, rated_matches=rest, rated_agents=rated.agents).iloc[0]


def _gaps(reps, sd, share, full=False):
    """Per replication: (placed − joint, placed − joint relative to the other agents' mean, half-width of the 90 %
    interval, Glicko's error, and with ``full`` placed − the refit of all the agent's results relative to the others')."""
    out = []
    for rep in reps:
        part, rest, rated, joint, new, matches = _case(rep, sd, share)
        whole = np.nan
        if full:
            everything = rate(matches, seed=1, with_reliability=False).agents.set_index("agent_id")["mu"]
            whole = everything.drop(new).mean() - rated.agents["mu"].mean() - everything[new]
        placed = _placed(part, rest, rated)
        glicko = place_provisional_agents(part, rated.test_cases, level=0.9).iloc[0]
        level = joint["mu"].drop(new).mean() - rated.agents["mu"].mean()  # how far the joint refit moved the others
        out.append(
            (
                placed["mu"] - joint.loc[new, "mu"],
                placed["mu"] + level - joint.loc[new, "mu"],
                placed["mu_hi"] - placed["mu"],
                glicko["mu"] - joint.loc[new, "mu"],
                placed["mu"] + whole,
            )
        )
    return np.array(out)


def test_a_partial_upload_at_a_wide_spread_lands_where_the_joint_refit_puts_it():
    """sd 700 Elo, 10 % of 300 test cases, 8 replications (measured: relative error at most 3.1 Elo, mean 1.3;
    absolute within the 90 % interval in 8 of 8, mean |error| 36 Elo, the joint refit's level moving; the Glicko
    replay it replaces: mean |error| 206 Elo)."""
    gaps = _gaps(range(8), 700.0, 0.1)
    absolute, relative, half, glicko, _ = gaps.T
    assert np.abs(relative).max() < 15.0, gaps  # the others' refined ratings fixed: the joint refit's differences
    assert (np.abs(absolute) <= half).mean() >= 7 / 8, gaps  # the level the joint refit moves to is inside the interval
    assert np.abs(absolute).mean() < 0.6 * np.abs(glicko).mean(), gaps


@pytest.mark.slow
@pytest.mark.parametrize(("sd", "share"), [(600.0, 0.2), (800.0, 0.05), (800.0, 0.2)])
def test_coverage_of_the_provisional_interval_over_replications_at_a_wide_spread(sd, share):
    """30 replications at 90 %. Measured: the joint refit with the partial upload inside the interval in 30 of 30
    for all three, relative mean |error| 1.2-2.5 Elo (absolute 30-55: the refit's level moves); the refit of all the
    agent's results (relative to the others') inside it in 0.90-1.0; the Glicko replay within the same half-width
    in 0.40-0.87 (mean |error| 194-333 Elo)."""
    gaps = _gaps(range(30), sd, share, full=True)
    absolute, relative, half, glicko, whole = gaps.T
    assert (np.abs(absolute) <= half).mean() >= 0.85, gaps
    assert np.abs(relative).mean() < 10.0, gaps
    assert (np.abs(whole) <= half).mean() >= 0.8, gaps  # the interval is about the agent, not only its upload
    assert np.abs(absolute).mean() < 0.5 * np.abs(glicko).mean(), gaps


def test_pyarrow_tables_place_alike_and_rated_rows_elsewhere_are_ignored():
    part, rest, rated, _, _, _ = _case(0, 700.0, 0.1)
    plain = _placed(part, rest, rated)
    arrow = place_provisional_agents(
        pa.Table.from_pandas(part, preserve_index=False),
        pa.Table.from_pandas(rated.test_cases, preserve_index=False),
        level=0.9,
        rated_matches=pa.Table.from_pandas(rest, preserve_index=False),
        rated_agents=pa.Table.from_pandas(rated.agents, preserve_index=False),
    ).iloc[0]
    mine = rest[rest.test_case_id.isin(part.test_case_id)]  # only the rows on its own test cases count
    only = _placed(part, mine, rated)
    for other in (arrow, only):
        assert other["mu"] == pytest.approx(plain["mu"], abs=1e-9) and other["sigma"] == pytest.approx(plain["sigma"], rel=1e-9)


def test_rated_matches_without_agents_is_refused_and_no_comparison_falls_back_to_the_glicko_replay():
    part, rest, rated, _, _, _ = _case(0, 700.0, 0.1)
    with pytest.raises(ValueError, match="rated_matches and rated_agents go together"):
        place_provisional_agents(part, rated.test_cases, rated_matches=rest)
    nobody = rest.iloc[:0]
    fallback = place_provisional_agents(part, rated.test_cases, level=0.9, rated_matches=nobody, rated_agents=rated.agents)
    glicko = place_provisional_agents(part, rated.test_cases, level=0.9)
    pd.testing.assert_frame_equal(fallback, glicko)


def test_a_skipped_refinement_says_so_in_its_settings(monkeypatch):
    """What the pipeline reads to choose the scale: a benchmark too wide to refine has Glicko ratings, and says so."""
    from agielo_dagster.rating import refine

    part, rest, _, _, _, _ = _case(0, 700.0, 0.1)
    monkeypatch.setattr(refine, "MAX_AGENTS", 4)
    with pytest.warns(RefinementSkippedWarning):
        assert rate(rest, seed=1, with_reliability=False).settings["refine"] is False
