"""No accepted upload vanishes: every joint and partial upload's agent gets exactly one row of agent_ratings (property).

``with_provisional_agents`` is the ratings step's own code (no Dagster run): one rated benchmark in two
components (``tc_…`` and a typo'd ``TC_…`` agent), then any set of partial uploads drawn from known, other-component
and unknown test-case ids.
"""

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from agielo_dagster.assets.ratings import with_provisional_agents
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agielo_dagster.rating import DisconnectedMatchesWarning, rate, simulate_matches
from agielo_dagster.rating.standing import STATUSES


@pytest.fixture(scope="module")
def rated():
    matches = simulate_matches(np.random.default_rng(0).normal(1500, 300, 40), [1300, 1600, 1900], seed=0)
    typo = matches[matches["agent_id"] == "agent_0"].assign(agent_id="typo", test_case_id=lambda f: f["test_case_id"].str.upper())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DisconnectedMatchesWarning)
        result = rate(pa.Table.from_pandas(pd.concat([matches, typo], ignore_index=True)), orders=2, with_reliability=False)
    return result


upload = st.tuples(
    st.sets(st.integers(0, 39), max_size=6),  # main-component test cases
    st.sets(st.integers(0, 39), max_size=6),  # the typo'd component's
    st.integers(0, 5),  # unknown ids
).filter(lambda u: len(u[0]) + len(u[1]) + u[2] > 0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(uploads=st.lists(upload, min_size=1, max_size=5))
def test_every_partial_upload_has_one_row_with_a_status_and_its_reason(rated, uploads):
    rows = []
    for j, (main, other, unknown) in enumerate(uploads):
        ids = [f"tc_{i:02d}" for i in sorted(main)] + [f"TC_{i:02d}" for i in sorted(other)] + [f"zz_{k}" for k in range(unknown)]
        score = [float(k % 2) for k in range(len(ids))]
        rows.append(pd.DataFrame({"test_case_id": ids, "agent_id": f"new_{j}", "metric": score, "score": score}))
    partial = pa.Table.from_pandas(pd.concat(rows, ignore_index=True), preserve_index=False)
    table = with_provisional_agents(rated.agents, rated.test_cases, partial, "rasch").to_pandas().set_index("agent_id")
    assert table.index.is_unique
    assert set(table.index) == {"agent_0", "agent_1", "agent_2", "typo"} | {f"new_{j}" for j in range(len(uploads))}
    assert set(table["status"]) <= set(STATUSES)
    for j, (main, other, unknown) in enumerate(uploads):
        row = table.loc[f"new_{j}"]
        n = len(main) + len(other) + unknown
        expected = "provisional" if main else "disconnected" if other else "unplaced"
        assert row["status"] == expected, (uploads, row.to_dict())
        assert row["status_reason"]
        if expected == "unplaced":
            assert pd.isna(row["mu"]) and row["matches"] == 0
            assert str(n) in row["status_reason"] or n == 1
            continue
        used = len(main) if main else len(other)
        assert row["matches"] == used and np.isfinite(row["mu"]) and pd.isna(row["rank"])
        assert row["status_reason"].split(": ", 1)[1].startswith(f"{used} of its {n} test case")
        if unknown:
            assert f"{unknown} {'is' if unknown == 1 else 'are'} not rated in this benchmark" in row["status_reason"]
        if main and other:
            assert f"{len(other)} lie" in row["status_reason"]
        assert pd.isna(row["rank_lo"]) == (expected == "disconnected")
    assert table.loc["typo", "status"] == "disconnected" and pd.isna(table.loc["typo", "rank"])
