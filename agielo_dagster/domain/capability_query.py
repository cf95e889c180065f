"""A capability query across benchmarks: select test cases by their tags and ratings, rank agents on them.

The warehouse holds, per benchmark, the test-case ratings and tags; a query (the small language of
:mod:`agielo_dagster.domain.query`, no eval) selects test cases across benchmarks, and the agents
are ranked on exactly those (ONEBench's capability query), each agent placed from its results on them against the test cases' difficulties moved onto the leaderboard's
scale (``benchmark_scales``: one scale for every benchmark the leaderboard links). Every agent of the leaderboard has a
row: one not evaluated on the selection says so. Fields: every tag, plus ``rating`` (the test case's difficulty), ``flag`` and ``discrimination``
(:mod:`agielo_dagster.rating.item_quality`), ``benchmark`` and ``test_case_id``; a tag named like one of these
is ``<name>_tag``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .layout import warehouse_folder, warehouse_path
from .matches import every_match
from .query import parse_query, select
from .store import Store
from .stored import Stored

__all__ = ["CapabilityQuery", "query_warehouse", "test_case_frame"]

RATED = {"test_case_id": "test_case_id", "mu": "rating", "sigma": "sigma", "flag": "flag", "discrimination": "discrimination"}
NOT_SELECTED = "not evaluated on the selected test cases"


@dataclass(frozen=True)
class CapabilityQuery:
    query: str
    test_cases: pd.DataFrame  # benchmark, test_case_id, rating and tags of the selected test cases
    ranking: pd.DataFrame  # rank_on's table, with status and status_reason (empty when no agent is evaluated on the selection)
    linked: bool  # whether the benchmarks' scales are the leaderboard's (False: no leaderboard yet, each its own)


def test_case_frame(store: Store) -> pd.DataFrame:
    """One row per rated test case of every benchmark: benchmark, test_case_id, rating, flag, discrimination (where
    its ratings have them), and its tags."""
    frames = []
    for name in store.list_dir(warehouse_folder("test_case_ratings")):
        benchmark = name.removesuffix(".parquet")
        path = warehouse_path("test_case_ratings", benchmark)
        columns = [c for c in RATED if c in store.read_schema(path).names]
        frame = store.read_table(path, columns=columns).to_pandas().rename(columns=RATED).astype({"test_case_id": str})
        tags_file = warehouse_path("test_case_tags", benchmark)
        if store.exists(tags_file):
            tags = store.read_table(tags_file).to_pandas().astype({"test_case_id": str})
            if tags.shape[1] > 1:
                frame = frame.merge(tags, on="test_case_id", how="left", suffixes=("", "_tag"))
        frames.append(frame.assign(benchmark=benchmark))
    if not frames:
        return pd.DataFrame({"benchmark": [], "test_case_id": [], "rating": []})
    return pd.concat(frames, ignore_index=True)


def query_warehouse(store: Store, text: str) -> CapabilityQuery:
    """Select test cases across benchmarks with ``text`` and rank the agents on them (raises QueryError)."""
    from ..rating.logistic import CENTRE
    from ..rating.pool import rank_on

    query = parse_query(text)
    frame = test_case_frame(store)
    chosen = frame[select(query, frame)] if len(frame) else frame
    scales, board = _leaderboard(store)
    linked = scales is not None and set(chosen["benchmark"]) <= set(scales.index)
    matches = []
    for benchmark, group in chosen.groupby("benchmark", sort=True):
        table = _results(store, benchmark)
        difficulty = group.set_index("test_case_id")
        table = table[table["test_case_id"].isin(difficulty.index)]
        shift = float(scales.loc[benchmark, "centre"]) - CENTRE if linked else 0.0
        sigma = difficulty["sigma"] if "sigma" in difficulty else pd.Series(0.0, index=difficulty.index)
        matches.append(
            table.assign(
                benchmark=benchmark,
                mu=table["test_case_id"].map(difficulty["rating"]) + shift,
                sigma=table["test_case_id"].map(sigma).fillna(0.0),
            )
        )
    selected = pd.concat(matches, ignore_index=True) if matches else pd.DataFrame()
    if selected.empty:
        return CapabilityQuery(str(query), chosen.reset_index(drop=True), pd.DataFrame(), linked)
    component = dict(zip(board["agent_id"], board["component"], strict=True)) if board is not None else None
    ranking = rank_on(selected, component=component).assign(status="rated", status_reason="")
    if board is not None:  # every agent of the leaderboard: one the selection did not evaluate says so
        absent = board[~board["agent_id"].isin(ranking["agent_id"])][["agent_id", "component"]]
        ranking = pd.concat([ranking, absent.assign(status="not selected", status_reason=NOT_SELECTED)], ignore_index=True)
    return CapabilityQuery(str(query), chosen.reset_index(drop=True), ranking, linked)


def _results(store: Store, benchmark: str) -> pd.DataFrame:
    """The benchmark's matches, the provisional agents' (partial uploads) included."""
    matches = every_match(Stored.of(store, "match_tables", benchmark), Stored.of(store, "provisional_matches", benchmark))
    if matches is None:  # withdrawn since its test cases were read
        raise FileNotFoundError(warehouse_path("match_tables", benchmark))
    return matches.to_pandas().astype({"test_case_id": str, "agent_id": str})


def _leaderboard(store: Store) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The benchmarks' scales (by benchmark) and the leaderboard's agents, where the leaderboard exists."""
    try:
        scales = store.read_table(warehouse_path("benchmark_scales", None), columns=["benchmark", "centre"]).to_pandas()
        board = store.read_table(warehouse_path("agent_leaderboard", None), columns=["agent_id", "component"]).to_pandas()
    except (OSError, ValueError):
        return None, None
    return scales.astype({"benchmark": str}).set_index("benchmark"), board.astype({"agent_id": str})
