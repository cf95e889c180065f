"""A capability query across benchmarks: select test cases by their tags and ratings, rank agents on them.

The warehouse holds, per benchmark, the test-case ratings and tags; a query (the small language of
:mod:`agielo_dagster.domain.query`, no eval) selects test cases across benchmarks, and the agents
are ranked on exactly those by Plackett-Luce with bootstrap intervals (ONEBench's capability
query). Fields: every tag, plus ``rating`` (the test case's difficulty), ``flag`` and ``discrimination``
(:mod:`agielo_dagster.rating.item_quality`), ``benchmark`` and ``test_case_id``; a tag named like one of these
is ``<name>_tag``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..rating.schema import MATCH_COLUMNS
from .layout import warehouse_folder, warehouse_path
from .query import parse_query, select
from .store import Store

__all__ = ["CapabilityQuery", "query_warehouse", "test_case_frame"]

RATED = {"test_case_id": "test_case_id", "mu": "rating", "flag": "flag", "discrimination": "discrimination"}


@dataclass(frozen=True)
class CapabilityQuery:
    query: str
    test_cases: pd.DataFrame  # benchmark, test_case_id, rating and tags of the selected test cases
    ranking: pd.DataFrame  # query_ranking's table (empty when fewer than two agents share a test case)


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


def query_warehouse(store: Store, text: str, *, resamples: int = 200, seed: int = 0) -> CapabilityQuery:
    """Select test cases across benchmarks with ``text`` and rank the agents on them (raises QueryError)."""
    from ..rating import query_ranking

    query = parse_query(text)
    frame = test_case_frame(store)
    chosen = frame[select(query, frame)] if len(frame) else frame
    matches = []
    for benchmark, group in chosen.groupby("benchmark", sort=True):
        table = store.read_table(warehouse_path("match_tables", benchmark), columns=list(MATCH_COLUMNS)).to_pandas()
        table = table.astype({"test_case_id": str, "agent_id": str})
        matches.append(table[table["test_case_id"].isin(set(group["test_case_id"]))].assign(benchmark=benchmark))
    selected = pd.concat(matches, ignore_index=True) if matches else pd.DataFrame()
    if selected.empty or selected["agent_id"].nunique() < 2:
        ranking = pd.DataFrame()
    else:
        ranking = query_ranking(selected, resamples=resamples, seed=seed)
    return CapabilityQuery(str(query), chosen.reset_index(drop=True), ranking)
