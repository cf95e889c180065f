"""Data frames in and out of the engine: pandas or polars, validated, as arrays.

The engine works on integer-coded numpy arrays. Functions accept a pandas or a
polars data frame and answer in the flavour they were given.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

__all__ = ["MatchTableError", "Matches", "encode_matches", "to_flavour", "to_pandas"]

Flavour = Literal["pandas", "polars"]
MATCH_COLUMNS = ("test_case_id", "agent_id", "metric", "score")


class MatchTableError(ValueError):
    """A match table that breaks a rule; names the row, the column and the rule."""

    def __init__(self, message: str, *, rule: str, row: int | None = None, column: str | None = None):
        super().__init__(message)
        self.rule = rule
        self.row = row
        self.column = column


def flavour_of(df: Any) -> Flavour:
    if isinstance(df, pd.DataFrame):
        return "pandas"
    if type(df).__module__.startswith("polars"):
        return "polars"
    raise TypeError(f"expected a pandas or polars DataFrame, got {type(df).__name__}")


def to_pandas(df: Any) -> pd.DataFrame:
    """A pandas view of a pandas or polars data frame."""
    return df if flavour_of(df) == "pandas" else df.to_pandas()


def to_flavour(df: pd.DataFrame, flavour: Flavour) -> Any:
    """Return ``df`` as the given flavour (pandas frames come back with a fresh RangeIndex)."""
    df = df.reset_index(drop=True)
    if flavour == "pandas":
        return df
    import polars as pl

    return pl.from_pandas(df)


def require_columns(df: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise MatchTableError(
            f"{what} lacks column(s) {', '.join(missing)}; it has {', '.join(map(str, df.columns)) or 'none'} "
            "(rule: required_columns)",
            rule="required_columns",
            column=missing[0],
        )


def ids_of(df: pd.DataFrame, column: str, what: str) -> pd.Series:
    """The id column as strings; a missing id is an error naming its row."""
    values = df[column]
    null = values.isna().to_numpy()
    if null.any():
        row = int(np.flatnonzero(null)[0])
        raise MatchTableError(
            f"{what} row {row}: {column} is missing ({int(null.sum())} missing; rule: id_present)",
            rule="id_present",
            row=row,
            column=column,
        )
    if isinstance(values.dtype, pd.CategoricalDtype) and pd.api.types.is_string_dtype(values.cat.categories):
        return values  # factorizes through its codes
    return values if pd.api.types.is_string_dtype(values) else values.astype(str)


def floats_of(df: pd.DataFrame, column: str, what: str, lo: float = -np.inf, hi: float = np.inf) -> np.ndarray:
    """A finite float64 column within [lo, hi]; anything else is an error naming its row."""
    try:
        values = df[column].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        coerced = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        row = int(np.flatnonzero(np.isnan(coerced) & df[column].notna().to_numpy())[0])
        raise MatchTableError(
            f"{what} row {row}: {column} {df[column].iloc[row]!r} is not a number (rule: {column}_numeric)",
            rule=f"{column}_numeric",
            row=row,
            column=column,
        ) from None
    bad = ~np.isfinite(values) | (values < lo) | (values > hi)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        rule = f"{column}_finite" if not np.isfinite(values[row]) else f"{column}_in_range"
        bounds = "a finite number" if rule.endswith("finite") else f"within [{lo:g}, {hi:g}]"
        raise MatchTableError(
            f"{what} row {row}: {column} {float(values[row])!r} is not {bounds} ({int(bad.sum())} bad value(s); rule: {rule})",
            rule=rule,
            row=row,
            column=column,
        )
    return values


@dataclass(frozen=True)
class Matches:
    """A validated, integer-coded match table.

    ``agent[i]`` and ``test_case[i]`` index ``agent_ids`` and ``test_case_ids``
    (both sorted), so codes and output rows are independent of row order.
    """

    agent: np.ndarray  # int64 codes
    test_case: np.ndarray  # int64 codes
    score: np.ndarray  # float64 in [0, 1]
    metric: np.ndarray  # float64, finite
    agent_ids: np.ndarray  # object (str)
    test_case_ids: np.ndarray  # object (str)
    flavour: Flavour

    def __len__(self) -> int:
        return len(self.score)

    def reordered(self, order: np.ndarray) -> Matches:
        """The same matches, rows taken in ``order`` (ids and codes unchanged)."""
        return replace(
            self, agent=self.agent[order], test_case=self.test_case[order], score=self.score[order], metric=self.metric[order]
        )


def encode_matches(matches: Any, what: str = "match table") -> Matches:
    """Validate a match table (pandas or polars) and encode its ids as integers."""
    flavour = flavour_of(matches)
    df = to_pandas(matches)
    require_columns(df, MATCH_COLUMNS, what)
    if len(df) == 0:
        raise MatchTableError(f"{what} has no rows (rule: non_empty)", rule="non_empty")
    test_case_raw = ids_of(df, "test_case_id", what)
    agent_raw = ids_of(df, "agent_id", what)
    score = floats_of(df, "score", what, 0.0, 1.0)
    metric = floats_of(df, "metric", what)
    test_case, test_case_ids = pd.factorize(test_case_raw, sort=True)
    agent, agent_ids = pd.factorize(agent_raw, sort=True)
    return Matches(
        agent=agent.astype(np.int64),
        test_case=test_case.astype(np.int64),
        score=score,
        metric=metric,
        agent_ids=np.asarray(agent_ids, dtype=object),
        test_case_ids=np.asarray(test_case_ids, dtype=object),
        flavour=flavour,
    )
