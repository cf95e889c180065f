"""The ratings step places a benchmark's provisional agents on the scale of its joint ratings, under its model.

``with_provisional_agents`` is the ratings step's own code (no Dagster run).
"""

import numpy as np
import pandas as pd
import pyarrow as pa
from agielo_dagster.assets.ratings import with_provisional_agents

from agielo_dagster.rating import place_provisional_agents, rate, simulate_matches


def _benchmark():
    rng = np.random.default_rng(3)
    matches = simulate_matches(rng.normal(1500, 700, 200), rng.normal(1500, 700, 8), seed=3)
    rest = matches[matches.agent_id != "agent_5"]
    partial = matches[matches.agent_id == "agent_5"].sample(30, random_state=1)
    return rest, partial


def test_a_partial_upload_is_placed_on_the_scale_of_the_joint_ratings():
    rest, partial = _benchmark()
    result = rate(pa.Table.from_pandas(rest, preserve_index=False), with_reliability=False)
    uploads = pa.Table.from_pandas(partial, preserve_index=False)
    table = with_provisional_agents(result.agents, result.test_cases, uploads, "rasch").to_pandas().set_index("agent_id")
    placed = place_provisional_agents(partial, result.test_cases, level=0.95).iloc[0]
    row = table.loc["agent_5"]
    assert row["status"] == "provisional" and pd.isna(row["rank"])
    assert row["mu"] == placed["mu"] and row["mu_lo"] == placed["mu_lo"] and row["mu_hi"] == placed["mu_hi"]
    # where a joint rating with the whole upload puts it (the same model, the same scale)
    full = pd.concat([rest, partial])
    joint = rate(full, with_reliability=False).agents.set_index("agent_id")
    assert row["mu_lo"] <= joint.loc["agent_5", "mu"] <= row["mu_hi"]
    # a Glicko benchmark's provisional agents are the Glicko placement's (its replay against the histories)
    glicko = rate(pa.Table.from_pandas(rest, preserve_index=False), model="glicko", orders=4, with_reliability=False)
    on_glicko = with_provisional_agents(glicko.agents, glicko.test_cases, uploads, "glicko").to_pandas().set_index("agent_id")
    by_replay = place_provisional_agents(partial, glicko.test_cases, level=0.95, model="glicko").iloc[0]
    assert on_glicko.loc["agent_5", "mu"] == by_replay["mu"]


def test_a_full_upload_placed_against_the_others_lands_where_the_joint_rating_does():
    rest, partial = _benchmark()
    mine = simulate_matches(np.random.default_rng(3).normal(1500, 700, 200), [1650.0], seed=9).assign(agent_id="newcomer")
    result = rate(rest, with_reliability=False)
    placed = place_provisional_agents(mine, result.test_cases, level=0.95).iloc[0]
    joint = rate(pd.concat([rest, mine]), with_reliability=False).agents.set_index("agent_id").loc["newcomer"]
    assert abs(placed["mu"] - joint["mu"]) < 0.25 * (placed["mu_hi"] - placed["mu_lo"])
