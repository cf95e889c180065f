"""HodgeRank on pairwise judgments (as TADDL-V ranks task difficulty from human comparisons).

Each row judges a pair (rows are numbered from 1 in messages): ``item_a, item_b, winner ∈ {a, b, tie}`` ("a is harder than b" is
``winner = a``), optionally with a numeric ``margin`` (the observed s_a − s_b) instead of a
winner, a ``weight`` and a ``rater``. Judgments of the same pair are averaged into a flow
Y_ab ∈ [−1, 1] (or the mean margin) with weight w_ab, the number of judgments (or their
summed weight). The scores s minimize Σ w_ab (s_a − s_b − Y_ab)², a weighted least-squares
problem on the sparse comparison graph, solved per connected component with mean-zero scores.

The residual Y − grad s is the flow no global ranking explains. ``inconsistency`` is its share
of the flow, Σ w r² / Σ w Y²: 0 for a consistent graph, 1 for a pure cycle. TADDL-V's
``alignment`` is the share of pairs with a strict majority whose majority order the scores
reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import lsqr

from ..frames import MatchTableError, Table, flavour_of, require_columns, to_flavour, to_pandas
from ..graph import warn_if_disconnected


@dataclass(frozen=True)
class HodgeRankResult:
    """``scores``: ``item, score, judgments, component`` (highest first); ``pairs``: per pair flow and residual."""

    scores: Table
    pairs: Table
    inconsistency: float
    alignment: float


def _pair_flows(df: pd.DataFrame) -> pd.DataFrame:
    a = df["item_a"].astype(str)
    b = df["item_b"].astype(str)
    if (a == b).any():
        row = int(np.flatnonzero((a == b).to_numpy())[0])
        raise MatchTableError(
            f"judgment row {row + 1}: an item is compared with itself (rule: distinct_items)", rule="distinct_items", row=row
        )
    if "margin" in df.columns:
        value = pd.to_numeric(df["margin"], errors="coerce").to_numpy(dtype=float)
    else:
        require_columns(df, ("winner",), "judgment table")
        winner = df["winner"].astype(str).str.lower()
        bad = ~winner.isin(["a", "b", "tie"])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise MatchTableError(
                f"judgment row {row + 1}: winner {df['winner'].iloc[row]!r} is not a, b or tie (rule: winner_known)",
                rule="winner_known",
                row=row,
            )
        value = np.select([winner == "a", winner == "b"], [1.0, -1.0], 0.0)
    if not np.isfinite(value).all():
        row = int(np.flatnonzero(~np.isfinite(value))[0])
        raise MatchTableError(
            f"judgment row {row + 1}: margin is not a finite number (rule: margin_finite)", rule="margin_finite", row=row
        )
    if "weight" in df.columns:
        weight = pd.to_numeric(df["weight"], errors="coerce").to_numpy(dtype=float)
        bad = ~(np.isfinite(weight) & (weight > 0))  # an inf, NaN or non-positive weight makes every score NaN
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise MatchTableError(
                f"judgment row {row + 1}: weight {df['weight'].iloc[row]!r} is not a finite number greater than 0 "
                f"({int(bad.sum())} row(s); rule: weight_positive)",
                rule="weight_positive",
                row=row,
            )
    else:
        weight = np.ones(len(df))
    # orient every pair as (low, high) so that a–b and b–a judgments pool
    flip = (a > b).to_numpy()
    lo, hi = np.where(flip, b, a), np.where(flip, a, b)
    value = np.where(flip, -value, value)
    frame = pd.DataFrame(
        {
            "item_a": lo,
            "item_b": hi,
            "flow": value * weight,
            "weight": weight,
            "win": (value > 0) * weight,
            "loss": (value < 0) * weight,
        }
    )
    pairs = frame.groupby(["item_a", "item_b"], sort=True).sum().reset_index()
    pairs["flow"] = pairs["flow"] / pairs["weight"]
    return pairs


def hodge_rank(comparisons: Table) -> HodgeRankResult:
    """Global scores from pairwise judgments, with the share of inconsistent flow and the alignment rate."""
    flavour = flavour_of(comparisons)
    df = to_pandas(comparisons)
    require_columns(df, ("item_a", "item_b"), "judgment table")
    if len(df) == 0:
        raise MatchTableError("judgment table has no rows (rule: non_empty)", rule="non_empty")
    pairs = _pair_flows(df)
    items, codes = np.unique(np.concatenate([pairs["item_a"], pairs["item_b"]]), return_inverse=True)
    i, j = codes[: len(pairs)], codes[len(pairs) :]
    m, n = len(pairs), len(items)
    sqrt_w = np.sqrt(pairs["weight"].to_numpy())
    # gradient operator: (grad s)_e = s_i − s_j; weighted least squares via √w scaling
    grad = sp.csr_matrix(
        (np.concatenate([np.ones(m), -np.ones(m)]), (np.tile(np.arange(m), 2), np.concatenate([i, j]))), shape=(m, n)
    )
    y = pairs["flow"].to_numpy()
    scores = lsqr(sp.diags(sqrt_w) @ grad, sqrt_w * y, atol=1e-14, btol=1e-14, iter_lim=10 * n + 1000)[0]
    n_components, component = connected_components(sp.coo_matrix((np.ones(m), (i, j)), shape=(n, n)), directed=False)
    if n_components > 1:
        sizes = np.bincount(component)  # number the groups by size, as components() does: group 0 the largest
        order = np.argsort(-sizes, kind="stable")
        by_size = np.empty_like(order)
        by_size[order] = np.arange(len(order))
        warn_if_disconnected(n_components, by_size[component], items, "hodge_rank", players="items", link="judgment")
    for c in np.unique(component):  # scores are defined up to a constant per component: centre each
        scores[component == c] -= scores[component == c].mean()
    residual = y - grad @ scores
    w = pairs["weight"].to_numpy()
    total = float(np.sum(w * y * y))
    inconsistency = float(np.sum(w * residual * residual) / total) if total > 0 else 0.0
    decided = pairs["win"].to_numpy() != pairs["loss"].to_numpy()
    majority = np.sign(pairs["win"].to_numpy() - pairs["loss"].to_numpy())
    agrees = np.sign(scores[i] - scores[j]) == majority
    alignment = float(agrees[decided].mean()) if decided.any() else float("nan")
    judgments = np.bincount(i, w, n) + np.bincount(j, w, n)
    table = pd.DataFrame({"item": items, "score": scores, "judgments": judgments, "component": component})
    table = table.sort_values(["score", "item"], ascending=[False, True], kind="stable")
    pairs = pairs.assign(fitted=grad @ scores, residual=residual)[["item_a", "item_b", "weight", "flow", "fitted", "residual"]]
    return HodgeRankResult(to_flavour(table, flavour), to_flavour(pairs, flavour), inconsistency, alignment)
