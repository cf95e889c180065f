"""The test cases that look wrong, for people: the run summary's line and the annotators' export.

The flags are the engine's (:mod:`agielo_dagster.rating.item_quality`). A suspect is a test case flagged
``likely_mislabeled`` or ``uninformative``: one whose reference answer or scoring deserves a look. The export has
one row per suspect, its flag, reason and discrimination, then each agent's score on it, the agents' columns in
order of rating (strongest first), so that "the strong agents fail it" is read left to right.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .stored import Stored

__all__ = [
    "EXCLUSION_KEY",
    "MISLABELED_WARN_SHARE",
    "SUSPECT_COLUMNS",
    "SUSPECT_FLAGS",
    "mislabeled_ids",
    "mislabeled_line",
    "exclusion_of",
    "read_flags",
    "suspect_table",
]

SUSPECT_FLAGS = ("likely_mislabeled", "uninformative")
SUSPECT_COLUMNS = ("test_case_id", "flag", "flag_reason", "discrimination", "discrimination_lo", "discrimination_hi", "mu")
# above this share of likely_mislabeled test cases the benchmark's check warns: the demo's and simulated benchmarks
# flag at most 0.9 % of clean test cases (docs/capabilities.md), audits find 3-6.5 % of items wrong in LLM benchmarks
MISLABELED_WARN_SHARE = 0.02
SHOWN_IDS = 5
EXCLUSION_KEY = "agielo_exclusion"
"""The key of ``agent_ratings``' parquet metadata holding what benchmark.yaml's ``exclude`` left out and how the agents
moved (JSON: ``excluded`` [{test_case_id, why}], ``excluded_test_cases``, ``moved`` [{agent_id, rank, rank_with_them,
mu, mu_moved}])."""


def suspect_table(test_cases: pa.Table, matches: pa.Table, agents: pd.DataFrame) -> pd.DataFrame:
    """One row per suspect test case: ``SUSPECT_COLUMNS`` (``mu`` as ``rating``), then one column per agent with its
    score (empty where it did not play it), strongest agent first. Only the suspects' rows are converted."""
    if "flag" not in test_cases.column_names:  # rated before the engine flagged test cases
        return pd.DataFrame(columns=[c if c != "mu" else "rating" for c in SUSPECT_COLUMNS])
    flagged = test_cases.select(list(SUSPECT_COLUMNS)).filter(pc.is_in(test_cases.column("flag"), pa.array(SUSPECT_FLAGS)))
    rows = flagged.to_pandas().astype({"test_case_id": str}).rename(columns={"mu": "rating"})
    rows = rows.sort_values(["flag", "discrimination", "test_case_id"], kind="stable").reset_index(drop=True)
    if rows.empty:
        return rows
    ids = pc.cast(matches.column("test_case_id"), pa.string())
    played = matches.select(["test_case_id", "agent_id", "score"]).filter(pc.is_in(ids, pa.array(rows["test_case_id"])))
    scores = played.to_pandas().astype({"test_case_id": str, "agent_id": str})
    scores = scores.pivot(index="test_case_id", columns="agent_id", values="score")
    order = agents.astype({"agent_id": str}).sort_values(["mu", "agent_id"], ascending=[False, True], kind="stable")
    by_rating = [a for a in order["agent_id"] if a in scores.columns]
    return rows.merge(scores[by_rating], left_on="test_case_id", right_index=True, how="left")


def mislabeled_line(ids: list[str], where: str) -> str:
    """``7 test cases look mislabeled: q12, q40, … (their results by agent: <where>)``."""
    shown = ", ".join(ids[:SHOWN_IDS]) + (", …" if len(ids) > SHOWN_IDS else "")
    noun = "test case looks" if len(ids) == 1 else "test cases look"
    return f"{len(ids)} {noun} mislabeled: {shown} (their results by agent: {where})"


def read_flags(test_case_ratings: Stored) -> pa.Table | None:
    """A benchmark's ``test_case_id, flag`` columns; None where it is not rated, or was rated before the flags."""
    if not test_case_ratings.exists or "flag" not in test_case_ratings.schema.names:
        return None
    return test_case_ratings.read(["test_case_id", "flag"])


def mislabeled_ids(flags: pa.Table | None) -> list[str]:
    if flags is None:
        return []
    return [str(i) for i in flags.filter(pc.equal(flags.column("flag"), "likely_mislabeled")).column("test_case_id").to_pylist()]


def exclusion_of(schema_metadata) -> dict:
    """What the exclusion recorded in a table's schema metadata ({} when nothing was excluded)."""
    metadata = schema_metadata or {}
    raw = metadata.get(EXCLUSION_KEY.encode()) or metadata.get(EXCLUSION_KEY)
    return json.loads(raw) if raw else {}
