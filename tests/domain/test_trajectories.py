"""The agent trajectories streamed from a stored snapshot table are those of the whole table in memory."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agielo_dagster.domain.figures import agent_trajectories, to_png
from agielo_dagster.domain.store import Store
from agielo_dagster.domain.trajectories import streamed_trajectories, trajectories
from agielo_dagster.rating import rate, simulate_matches


@pytest.fixture(scope="module")
def snapshots():
    """A tall benchmark's snapshots (60 agents, 8 test cases: more agents than are drawn), as ``rate`` returns them."""
    rng = np.random.default_rng(5)
    matches = simulate_matches(rng.normal(1500, 200, 8), rng.normal(1500, 300, 60), seed=2)
    return rate(matches, orders=4).snapshots


@pytest.mark.parametrize("rows_per_group", [97, 1_000, 1 << 20])
def test_streamed_trajectories_are_those_of_the_whole_table(tmp_path, snapshots, rows_per_group):
    table = pa.Table.from_pandas(snapshots, preserve_index=False)
    (tmp_path / "warehouse").mkdir()
    pq.write_table(table, tmp_path / "warehouse" / "snapshots.parquet", row_group_size=rows_per_group)
    store = Store(str(tmp_path))
    read = []

    def parts():
        read.append(1)
        return store.read_parts(
            "warehouse/snapshots.parquet", columns=["fraction", "id", "mu"], read_dictionary=["id"], where={"kind": "agent"}
        )

    got, expected = streamed_trajectories(parts), trajectories(snapshots)
    assert len(read) == 2  # two passes over the parts, never the whole table
    assert got.agents == expected.agents == 60 and got.shown.shape[1] == 25
    pd.testing.assert_frame_equal(got.shown, expected.shown, check_exact=True)
    np.testing.assert_array_equal(got.low, expected.low)
    np.testing.assert_array_equal(got.high, expected.high)
    assert to_png(agent_trajectories(got)) == to_png(agent_trajectories(snapshots))


def test_the_best_agents_tie_by_id_in_both_ways():
    rows = pd.DataFrame(
        {
            "fraction": np.repeat([0.5, 1.0], 4),
            "kind": "agent",
            "id": ["d", "c", "b", "a"] * 2,
            "mu": [1500.0, 1500.0, 1400.0, 1400.0, 1600.0, 1600.0, 1600.0, 1500.0],
        }
    )
    table = pa.Table.from_pandas(rows, preserve_index=False)
    streamed = streamed_trajectories(lambda: (table.slice(start, 3) for start in range(0, 8, 3)), shown=2)
    in_memory = trajectories(rows, shown=2)
    assert list(streamed.shown.columns) == list(in_memory.shown.columns) == ["b", "c"]
    assert streamed.agents == in_memory.agents == 4
    assert list(streamed.low) == list(in_memory.low) == [1400.0, 1500.0]
