"""Where each agent stands in its benchmark: rated, provisional, disconnected or unplaced, and who is first.

A benchmark's ratings compare only within a connected component of the match graph (two agents
with no chain of shared test cases between them are rated on scales nothing ties together; see
:mod:`agielo_dagster.rating.graph`). The **main component** is the one holding the most matches
(ties: the one holding the alphabetically first agent id), numbered 0 by :func:`rate`. The
benchmark's order is the order of its main component:

- ``rated``: rated jointly in the main component; ranked among the others;
- ``provisional``: placed from a partial upload against the frozen test-case ratings of the main
  component; ``rank`` null, ``rank_lo..rank_hi`` where its interval would stand among the rated;
- ``disconnected``: its matches do not link it to the main component (e.g. test-case ids with a
  typo'd prefix), so it is rated only within its own component: ``rank``, ``rank_lo`` and
  ``rank_hi`` are null, and it is never first;
- ``unplaced``: an accepted partial upload none of whose test-case ids the benchmark rates: one
  row, ``mu``, ``sigma`` and the ranks null.

``status_reason`` is empty for ``rated`` and a short sentence otherwise. :func:`top_tier` names the
agents that share first place: rated agents that no interval puts below another (``rank_lo == 1``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .frames import Table, flavour_of, require_columns, to_flavour, to_pandas

__all__ = ["MAIN_COMPONENT", "STATUSES", "agent_standings", "top_tier"]

MAIN_COMPONENT = 0
STATUSES = ("rated", "provisional", "disconnected", "unplaced")
RANK_COLUMNS = ("rank", "rank_lo", "rank_hi")


def _agents(n: int) -> str:
    return f"{n} agent{'' if n == 1 else 's'}"


def _cases(n: int) -> str:
    return f"{n} test case{'' if n == 1 else 's'}"


def agent_standings(agents: Table, partial_uploads: Table | None = None) -> Table:
    """The agent table with each agent's ``status`` and ``status_reason``; ranks kept only where they compare.

    Parameters
    ----------
    agents : DataFrame or pyarrow.Table
        ``agent_id, mu, component`` and ``rank, rank_lo, rank_hi`` (e.g. :func:`rate`'s agents),
        with an optional boolean ``provisional`` column (agents placed from a partial upload).
    partial_uploads : DataFrame, optional
        One row per partial upload: ``agent_id, test_cases`` (distinct test cases in the upload),
        ``unknown`` (those the benchmark does not rate) and ``outside`` (rated ones left out
        because they lie in another component than the one the agent was placed in). A partial
        upload with no row in ``agents`` (none of its test cases rated) is appended as
        ``unplaced``: ``matches`` 0, ``component`` −1, its ratings and ranks null.

    Returns
    -------
    The table in the flavour of ``agents``, rows in their order (unplaced ones last, by id), with
    ``status`` (one of :data:`STATUSES`) and ``status_reason`` appended; ``rank``, ``rank_lo`` and
    ``rank_hi`` are null outside the main component.
    """
    flavour = flavour_of(agents)
    table = to_pandas(agents).copy()
    require_columns(table, ("agent_id", "mu", "component"), "agent table")
    table["agent_id"] = table["agent_id"].astype(str)
    partial = _partial_uploads(partial_uploads)
    provisional = (
        table["provisional"].fillna(False).astype(bool).to_numpy()
        if "provisional" in table.columns
        else np.zeros(len(table), dtype=bool)
    )
    component = pd.to_numeric(table["component"], errors="coerce").to_numpy(dtype=np.float64)
    main = component == MAIN_COMPONENT
    main_agents = int((main & ~provisional).sum())
    group_size = pd.Series(component[~provisional]).value_counts()

    status, reason = [], []
    for agent_id, in_main, is_prov, comp in zip(table["agent_id"], main, provisional, component, strict=True):
        upload = partial.get(agent_id)
        if in_main and not is_prov:
            status.append("rated")
            reason.append("")
        elif in_main:
            status.append("provisional")
            reason.append(_partial_reason(upload, "placed from a partial upload"))
        else:
            status.append("disconnected")
            others = int(group_size.get(comp, 0)) - (0 if is_prov else 1)
            own = f"rated only with {_agents(others)} of its own" if others else "rated only against its own test cases"
            if is_prov:
                lead = f"a partial upload whose rated test cases share none with the main component ({_agents(main_agents)})"
                reason.append(_partial_reason(upload, lead) + f"; {own}")
            else:
                reason.append(f"shares no test case with the main component ({_agents(main_agents)}); {own}")
    table["status"] = status
    table["status_reason"] = reason
    for column in RANK_COLUMNS:  # integers with nulls: null outside the main component (and for provisional `rank`)
        if column in table.columns:
            values = pd.to_numeric(table[column], errors="coerce").astype("Float64")
            values[~main] = pd.NA
            table[column] = values.round().astype("Int64")

    missing = sorted(set(partial) - set(table["agent_id"]))
    if missing:
        rows = pd.DataFrame(
            {
                "agent_id": missing,
                "component": np.full(len(missing), -1, dtype=np.int64),
                "status": "unplaced",
                "status_reason": [_unplaced_reason(partial[a]["test_cases"]) for a in missing],
            }
        )
        if "matches" in table.columns:
            rows["matches"] = np.zeros(len(missing), dtype=table["matches"].dtype)
        if "provisional" in table.columns:
            rows["provisional"] = True
        table = pd.concat([table, rows], ignore_index=True)[list(table.columns)]
    return to_flavour(table, flavour)


def _unplaced_reason(n: int) -> str:
    if n == 1:
        return "its only test case is not rated in this benchmark"
    return f"none of its {_cases(n)} is rated in this benchmark"


def _partial_uploads(partial_uploads: Table | None) -> dict[str, dict[str, int]]:
    if partial_uploads is None:
        return {}
    frame = to_pandas(partial_uploads)
    require_columns(frame, ("agent_id", "test_cases", "unknown"), "partial upload table")
    out = {}
    for row in frame.to_dict("records"):
        out[str(row["agent_id"])] = {
            "test_cases": int(row["test_cases"]),
            "unknown": int(row["unknown"]),
            "outside": int(row.get("outside", 0) or 0),
        }
    return out


def _partial_reason(upload: Mapping[str, int] | None, lead: str) -> str:
    if upload is None:
        return lead
    n, unknown, outside = upload["test_cases"], upload["unknown"], upload["outside"]
    used = n - unknown - outside
    text = f"{lead}: {used} of its {_cases(n)}"
    left_out = []
    if unknown:
        left_out.append(f"{unknown} {'is' if unknown == 1 else 'are'} not rated in this benchmark")
    if outside:
        left_out.append(f"{outside} lie{'s' if outside == 1 else ''} outside the component it was placed in")
    return "; ".join([text, *left_out])


def top_tier(agents: Table) -> list[str]:
    """The agents sharing first place: ``rated`` agents with ``rank_lo == 1``, highest ``mu`` first.

    ``rank_lo`` is 1 + the number of agents whose interval lies entirely above the agent's, so the
    top tier is the best agent and every rated agent whose interval no other's clears. One name
    means a clear first; several mean the intervals cannot tell them apart. Without a ``status``
    column, agents of the main component that are not provisional count as rated; without
    ``rank_lo``, the single highest ``mu``.
    """
    table = to_pandas(agents)
    require_columns(table, ("agent_id", "mu"), "agent table")
    rated = np.ones(len(table), dtype=bool)
    if "status" in table.columns:
        rated = np.array(table["status"] == "rated", dtype=bool)
    else:
        if "component" in table.columns:
            rated &= (pd.to_numeric(table["component"], errors="coerce") == MAIN_COMPONENT).to_numpy()
        if "provisional" in table.columns:
            rated &= ~table["provisional"].fillna(False).astype(bool).to_numpy()
    mu = pd.to_numeric(table["mu"], errors="coerce").to_numpy(dtype=np.float64)
    rated &= np.isfinite(mu)
    if not rated.any():
        return []
    candidates = table[rated].assign(_mu=mu[rated], agent_id=table.loc[rated, "agent_id"].astype(str))
    if "rank_lo" in candidates.columns:
        first = candidates[pd.to_numeric(candidates["rank_lo"], errors="coerce") == 1]
        if len(first):
            candidates = first
        else:
            candidates = candidates.nlargest(1, "_mu")
    else:
        candidates = candidates.nlargest(1, "_mu")
    ordered = candidates.sort_values(["_mu", "agent_id"], ascending=[False, True], kind="stable")
    return ordered["agent_id"].tolist()
