"""How the command line, the report and the explorer name who is first, and the agents outside the ranking.

One wording everywhere: "best X" only when X alone is first (``rank_lo == 1`` for no other rated
agent); otherwise "top tier (N tied: their intervals overlap): A, B, …". Provisional, disconnected
and unplaced agents are counted and named (at most :data:`MAX_NAMES` of each), each with its reason.
How fragile the first place is (the ``fragility_*`` values the ratings step records) is one sentence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..rating.standing import STATUSES, top_tier

__all__ = [
    "FRAGILITY_KEY",
    "MAX_NAMES",
    "fragility_line",
    "fragility_of",
    "headline",
    "new_agent_lines",
    "status_counts",
    "unusual_agents",
]

MAX_NAMES = 5  # names shown per list; the rest are counted
UNUSUAL = tuple(s for s in STATUSES if s != "rated")
FRAGILITY_KEY = "agielo_fragility"
"""The key of ``agent_ratings``' parquet metadata holding the fragility of #1 (JSON of its ``fragility_*`` values)."""


def _frame(agents: Any) -> pd.DataFrame:
    frame = agents.to_pandas() if hasattr(agents, "to_pandas") and not isinstance(agents, pd.DataFrame) else agents
    if "mu" not in frame.columns and "rating" in frame.columns:
        frame = frame.rename(columns={"rating": "mu"})
    return frame.astype({"agent_id": str})


def _names(names: list[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def headline(agents: Any, *, limit: int = MAX_NAMES) -> str:
    """``best X`` when X alone is first among the rated agents, else ``top tier (N tied: …): A, B, …``.

    ``agents``: an agent table (``agent_id``, ``mu`` or ``rating``, ``rank_lo``, ``status``) such as
    ``agent_ratings`` or a competency gap table.
    """
    tier = top_tier(_frame(agents))
    if not tier:
        return "no agent rated in the main component"
    if len(tier) == 1:
        return f"best {tier[0]}"
    return f"top tier ({len(tier)} tied: their intervals overlap): {_names(tier, limit)}"


def status_counts(agents: Any) -> dict[str, int]:
    """Agents per status, every status present (0 where none); {} without a ``status`` column."""
    frame = _frame(agents)
    if "status" not in frame.columns:
        return {}
    counts = frame["status"].value_counts()
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def unusual_agents(agents: Any, *, limit: int = MAX_NAMES) -> list[str]:
    """One line per provisional, disconnected or unplaced agent (``disconnected: a — reason``), at most ``limit`` per
    status, then ``… and N more disconnected``."""
    frame = _frame(agents)
    if "status" not in frame.columns:
        return []
    lines = []
    for status in UNUSUAL:
        mine = frame[frame["status"] == status].sort_values("agent_id", kind="stable")
        for row in mine.head(limit).itertuples():
            reason = getattr(row, "status_reason", "")
            lines.append(f"{status}: {row.agent_id}" + (f" — {reason}" if isinstance(reason, str) and reason else ""))
        if len(mine) > limit:
            lines.append(f"… and {len(mine) - limit} more {status}")
    return lines


def new_agent_lines(agents: Any, names: list[str], level: str, *, limit: int = MAX_NAMES) -> list[str]:
    """One line per agent of ``names`` (new in this run), best first: its rank (``=`` where shared) and rank range, its
    rating and ``level`` interval; an agent without a rank says its status instead. At most ``limit``, then a count."""
    frame = _frame(agents)
    rated = frame[frame["status"] == "rated"] if "status" in frame.columns else frame
    shared = rated["rank_lo"].value_counts() if "rank_lo" in frame.columns else pd.Series(dtype=int)
    mine = frame[frame["agent_id"].isin(names)].sort_values("mu", ascending=False, na_position="last", kind="stable")
    lines = []
    for row in mine.head(limit).to_dict("records"):
        status = row.get("status", "rated")
        if status == "rated" and row.get("rank_lo") == row.get("rank_lo") and "rank_lo" in row:
            rank, hi = int(row["rank_lo"]), int(row["rank_hi"])
            place = f"rank {'=' if shared.get(row['rank_lo'], 0) > 1 else ''}{rank}" + (
                f" (range {rank}–{hi})" if hi != rank else ""
            )
        else:
            place = str(status)
        where = (
            f"rated {row['mu']:.0f} [{row['mu_lo']:.0f}, {row['mu_hi']:.0f}] ({level} interval)" if row["mu"] == row["mu"] else ""
        )
        lines.append(f"new agent: {row['agent_id']}, {place}" + (f", {where}" if where else ""))
    if len(mine) > limit:
        lines.append(f"… and {len(mine) - limit} more new agents")
    return lines


def fragility_of(schema_metadata: Mapping[bytes, bytes] | Mapping[str, str] | None) -> dict:
    """The ``fragility_*`` values recorded in a table's schema metadata, keys as bytes (Arrow's) or text ({} when none)."""
    metadata = schema_metadata or {}
    raw = metadata.get(FRAGILITY_KEY.encode()) or metadata.get(FRAGILITY_KEY)  # type: ignore[call-overload]
    return json.loads(raw) if raw else {}


def fragility_line(fragility: Mapping[str, Any] | None) -> str:
    """How many test cases decide who is first, in one sentence ('' when it was not recorded).

    ``fragility``: ``fragility_of_first`` (None: the search found no removal that changes it), ``fragility_leader``,
    ``fragility_flips_to``, ``fragility_method`` (``exact``, ``approx`` or ``not computed: why``) and
    ``fragility_test_cases``, as :meth:`~agielo_dagster.rating.fragility.Fragility.as_metadata` gives them.
    """
    if not fragility or "fragility_method" not in fragility:
        return ""
    method = str(fragility["fragility_method"])
    if method.startswith("not computed"):
        return f"Fragility of #1 {method}."
    removals, leader = fragility.get("fragility_of_first"), fragility.get("fragility_leader", "")
    if removals is None:
        return f"Fragility of #1: no removal of test cases that the search tried ({method}) puts another agent before {leader}."
    bound = "" if method == "exact" else "at most "
    total = int(fragility.get("fragility_test_cases") or 0)
    return (
        f"Fragility of #1: removing {bound}{int(removals):,} of {total:,} test cases makes "
        f"{fragility.get('fragility_flips_to', '')} first instead of {leader} ({method})."
    )
