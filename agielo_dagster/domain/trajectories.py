"""What the agent-trajectories figure draws: the best agents' ratings at each share of matches, and the range of all
agents' ratings as a band.

From a frame of snapshot rows (:func:`trajectories`), or streamed from the stored snapshot table
(:func:`streamed_trajectories`): every agent has a row at each of the 100 shares, so a tall benchmark's
agents are most of the table (100,000 agents: 10M rows, 1.1 GB read and converted to pandas), of which the
figure draws 25 agents' rows and two numbers a share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SHOWN", "Trajectories", "by_fraction", "streamed_trajectories", "trajectories"]

SHOWN = 25
"""Agents drawn one by one (the best at the last share); the rest are the band."""


@dataclass(frozen=True)
class Trajectories:
    """``shown``: fraction × agent, the mean rating of the best agents at the last fraction, best first (ties by id);
    ``low`` and ``high``: every agent's lowest and highest rating at each fraction (``shown.index``);
    ``agents``: how many agents have a rating."""

    shown: pd.DataFrame
    low: np.ndarray
    high: np.ndarray
    agents: int


def by_fraction(agents: pd.DataFrame) -> pd.DataFrame:
    """``mu`` as fraction × agent (as ``pivot_table``, mean of repeats), filled with numpy: pivot_table's
    group-and-unstack of 20,000 agents × 100 snapshots held hundreds of MB for a 16 MB matrix."""
    fractions, f_codes = np.unique(agents["fraction"].to_numpy(dtype=np.float64), return_inverse=True)
    codes, uniques = pd.factorize(agents["id"])  # no text per row (the ids arrive dictionary-encoded or as arrow strings)
    names = np.asarray(pd.Index(uniques).astype(str), dtype=object)
    order = np.argsort(names, kind="stable")  # columns sorted by id, as pivot_table's
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    ids, a_codes = names[order], rank[codes]
    cell = f_codes * len(ids) + a_codes
    mu = agents["mu"].to_numpy(dtype=np.float64)
    known = ~np.isnan(mu)
    total = np.bincount(cell[known], mu[known], minlength=len(fractions) * len(ids))
    count = np.bincount(cell[known], minlength=len(fractions) * len(ids))
    with np.errstate(invalid="ignore", divide="ignore"):
        values = (total / count).reshape(len(fractions), len(ids))
    keep = (count.reshape(len(fractions), len(ids)) > 0).any(axis=0)  # as pivot_table, agents with no rating dropped
    return pd.DataFrame(values[:, keep], index=pd.Index(fractions, name="fraction"), columns=pd.Index(ids[keep], name="id"))


def trajectories(snapshots: pd.DataFrame, shown: int = SHOWN) -> Trajectories:
    """The trajectories of a frame of snapshot rows (``fraction, kind, id, mu``; only the agents' rows are read)."""
    wide = by_fraction(snapshots[snapshots["kind"] == "agent"])
    final = wide.iloc[-1].sort_values(ascending=False, kind="stable")  # ties in column order: by id
    return Trajectories(wide[list(final.index[:shown])], wide.min(axis=1).to_numpy(), wide.max(axis=1).to_numpy(), len(final))


def streamed_trajectories(read: Callable[[], Iterable[pa.Table]], shown: int = SHOWN) -> Trajectories:
    """:func:`trajectories` of a snapshot table read twice, a part at a time (``read()`` yields its agents' rows as tables
    of ``fraction, id, mu``, e.g. row groups): memory is one part and the best agents' rows, whatever the number of agents.

    The same as :func:`trajectories` of the whole table where it holds one row per agent and fraction and an agent,
    once rated, stays rated (as ``rate`` writes it): the band is then the lowest and highest row at each fraction,
    and the agents are those rated at the last.
    """
    low: dict[float, float] = {}
    high: dict[float, float] = {}
    last, rated = -np.inf, 0
    best = pd.DataFrame({"id": pd.Series([], dtype=object), "mu": pd.Series([], dtype=np.float64)})
    for part in read():
        if part.num_rows == 0:
            continue
        fraction = part.column("fraction").to_numpy().astype(np.float64)
        mu = part.column("mu").to_numpy().astype(np.float64)  # a null is NaN
        values, inverse = np.unique(fraction, return_inverse=True)
        known = ~np.isnan(mu)
        lo, hi = np.full(len(values), np.inf), np.full(len(values), -np.inf)
        np.minimum.at(lo, inverse[known], mu[known])
        np.maximum.at(hi, inverse[known], mu[known])
        for f, a, b in zip(values.tolist(), lo.tolist(), hi.tolist(), strict=True):
            low[f], high[f] = min(low.get(f, np.inf), a), max(high.get(f, -np.inf), b)
        if values[-1] > last:
            last, rated, best = values[-1], 0, best.iloc[:0]
        at = known & (fraction == last)
        if at.any():
            rated += int(at.sum())
            rows = pd.DataFrame({"id": part.column("id").filter(pa.array(at)).cast(pa.string()).to_pylist(), "mu": mu[at]})
            best = _best(pd.concat([best, rows], ignore_index=True), shown)
    fractions = np.array(sorted(low))
    ids = list(best["id"])
    wanted = pa.array(ids, pa.string())
    parts = [
        part.filter(_is_in(part.column("id"), wanted))
        .select(["fraction", "id", "mu"])
        .cast(pa.schema([("fraction", pa.float64()), ("id", pa.string()), ("mu", pa.float64())]))
        for part in read()
    ]
    rows = pa.concat_tables(parts).to_pandas() if parts else pd.DataFrame({"fraction": [], "id": [], "mu": []})
    wide = by_fraction(rows).reindex(index=pd.Index(fractions, name="fraction"), columns=pd.Index(ids, name="id"))
    bounds = np.array([[low[f], high[f]] for f in fractions]).reshape(-1, 2)
    bounds[~np.isfinite(bounds)] = np.nan  # a fraction where no agent is rated: no band (as the frame's min of NaN)
    return Trajectories(wide, bounds[:, 0], bounds[:, 1], rated)


def _is_in(ids: pa.ChunkedArray, wanted: pa.Array) -> pa.ChunkedArray:
    """Which ids are ``wanted``; a dictionary column is matched by its dictionary, not its rows' text."""
    if not pa.types.is_dictionary(ids.type):
        return pc.is_in(ids, value_set=wanted)
    return pa.chunked_array(
        [pc.take(pc.is_in(chunk.dictionary, value_set=wanted), chunk.indices) for chunk in ids.chunks], pa.bool_()
    )


def _best(rows: pd.DataFrame, shown: int) -> pd.DataFrame:
    """The ``shown`` rows of highest ``mu``, ties by id."""
    return rows.sort_values(["mu", "id"], ascending=[False, True], kind="stable").head(shown).reset_index(drop=True)
