"""Capability slices and capability queries: ratings on exactly the test cases that exercise a capability.

- :func:`slice_ratings`: for every tag value shared by enough test cases (a *slice*), every
  agent's rating on that slice against the frozen test-case ratings, with an interval, and the
  slice's difficulty profile. The placement is the benchmark model's placement from a subset of the
  test cases (:func:`~agielo_dagster.rating.place_on_subset`; Glicko's:
  :func:`~agielo_dagster.rating.place_agents`), so a slice rating sits on the same scale as the
  benchmark's ratings: an agent rated 1400 on ``subject = math`` and 1600 overall is
  weaker on math by that much, against the same test cases as everyone else.
- :func:`query_ranking`: ONEBench's capability query. The selected test cases (across
  benchmarks, say, by :func:`agielo_dagster.domain.query.select`) rank the agents measured on
  them by Plackett-Luce, with percentile intervals from resampling the test cases.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .frames import Matches, MatchTableError, Table, encode_matches, flavour_of, require_columns, to_flavour, to_pandas
from .graph import warn_disconnected
from .intervals import interval_ranks, z_of
from .placement import place_agents
from .schema import MATCH_COLUMNS
from .settings import DEFAULT_LEVEL, DEFAULT_MODEL, DEFAULT_ORDERS
from .subset_placement import place_on_subset

__all__ = ["SLICE_COLUMNS", "query_ranking", "slice_ratings", "slice_test_cases"]

SLICE_COLUMNS = (
    "tag",
    "value",
    "agent_id",
    "mu",
    "mu_lo",
    "mu_hi",
    "sigma",
    "matches",
    "mean_score",
    "mean_metric",
    "overall_mu",
    "delta",
    "test_cases",
    "slice_mean_difficulty",
    "slice_difficulty_p10",
    "slice_difficulty_p50",
    "slice_difficulty_p90",
)


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def slice_test_cases(tags: Table, *, known: Iterable[str] | None = None) -> pd.DataFrame:
    """Every (tag, value, test case) of a tag table: one row per test case and value, multi-valued tags exploded.

    ``tags`` has ``test_case_id`` and one column per tag (text, or lists of text for a
    multi-valued tag such as the abilities a test case needs); missing values are skipped.
    ``known``, if given, keeps only those test-case ids. Returns ``tag, value, test_case_id``.
    """
    df = to_pandas(tags)
    require_columns(df, ("test_case_id",), "tag table")
    ids = df["test_case_id"].astype(str)
    keep = np.ones(len(df), dtype=bool) if known is None else ids.isin(pd.Index(np.asarray(known, dtype=object).astype(str)))
    frames = []
    for tag in df.columns:
        if tag == "test_case_id":
            continue
        values = df[tag][keep]
        column = pd.DataFrame({"test_case_id": ids[keep].to_numpy(dtype=object), "value": values.to_numpy(dtype=object)})
        if column["value"].map(_is_list).any():
            column["value"] = column["value"].map(lambda v: list(v) if _is_list(v) else ([] if _missing(v) else [v]))
            column = column.explode("value")
        column = column[~column["value"].map(_missing).astype(bool).to_numpy()]  # a mask even when empty
        column["value"] = column["value"].astype(str)
        frames.append(column.assign(tag=str(tag)).drop_duplicates(["value", "test_case_id"]))
    if not frames:
        return pd.DataFrame(
            {"tag": pd.Series(dtype=object), "value": pd.Series(dtype=object), "test_case_id": pd.Series(dtype=object)}
        )
    return pd.concat(frames, ignore_index=True)[["tag", "value", "test_case_id"]]


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if _is_list(value):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def slice_ratings(
    matches: Table,
    test_cases: Table,
    tags: Table,
    *,
    min_test_cases: int = 20,
    level: float = DEFAULT_LEVEL,
    max_values_per_tag: int = 50,
    model: str = DEFAULT_MODEL,
    orders: int = DEFAULT_ORDERS,
    seed: int | None = 42,
) -> Table:
    """Every agent's rating on every slice (tag value) with at least ``min_test_cases`` rated test cases.

    Parameters
    ----------
    matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: the benchmark's matches.
    test_cases : DataFrame or pyarrow.Table
        The frozen test-case ratings (``test_cases`` of :func:`~agielo_dagster.rating.rate`).
    tags : DataFrame or pyarrow.Table
        ``test_case_id`` plus one column per tag (text, or lists of text: a test case with
        abilities ``[algebra, geometry]`` is in both slices). Test cases without matches are ignored.
    min_test_cases : int
        Smallest slice rated (test cases of the benchmark carrying the value).
    level : float
        Confidence level of ``mu_lo, mu_hi``.
    max_values_per_tag : int
        At most this many slices per tag, the largest first (an id-like tag makes no slices).
    model : str
        The benchmark's rating model (``glicko``: placed by replay, with ``orders`` and ``seed``).

    Returns
    -------
    DataFrame (the flavour of ``matches``)
        One row per slice and agent measured on it (:data:`SLICE_COLUMNS`): the placement's
        ``mu, mu_lo, mu_hi, sigma, matches, mean_score, mean_metric`` on the slice;
        ``overall_mu`` (the same placement on every test case) and ``delta = mu − overall_mu``;
        the slice's ``test_cases`` and its difficulty profile (mean, 10th, 50th and 90th percentile
        of the test-case ratings). Sorted by tag, slice size (largest first), value, then ``mu``.
    """
    if isinstance(min_test_cases, bool) or not isinstance(min_test_cases, (int, np.integer)) or min_test_cases < 1:
        raise ValueError(f"min_test_cases must be an integer >= 1, got {min_test_cases!r}")
    z_of(level)
    flavour = flavour_of(matches)
    frame = to_pandas(matches)
    require_columns(frame, MATCH_COLUMNS, "match table")
    tc = to_pandas(test_cases)
    require_columns(tc, ("test_case_id", "mu"), "test-case table")
    rating_of = pd.Series(tc["mu"].to_numpy(dtype=np.float64), index=tc["test_case_id"].astype(str))
    match_ids = frame["test_case_id"].astype(str)

    def place(rows: pd.DataFrame) -> pd.DataFrame:
        if model == "glicko":
            return to_pandas(place_agents(rows, tc, level=level, orders=orders, seed=seed))
        return to_pandas(place_on_subset(rows, tc, level=level, model=model))

    overall = place(frame).set_index("agent_id")["mu"]
    members = slice_test_cases(tags, known=match_ids.unique())
    rows = []
    for tag, by_tag in members.groupby("tag", sort=True):
        sizes = by_tag.groupby("value").size()
        sizes = sizes[sizes >= min_test_cases]
        order = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:max_values_per_tag]
        for value, size in order:
            ids = by_tag["test_case_id"][by_tag["value"] == value].to_numpy(dtype=object)
            rating = rating_of.reindex(ids).to_numpy()
            placed = place(frame[match_ids.isin(ids).to_numpy()])
            placed.insert(0, "value", value)
            placed.insert(0, "tag", tag)
            placed["overall_mu"] = overall.reindex(placed["agent_id"]).to_numpy()
            placed["delta"] = placed["mu"] - placed["overall_mu"]
            placed["test_cases"] = int(size)
            placed["slice_mean_difficulty"] = float(np.nanmean(rating))
            for q in (10, 50, 90):
                placed[f"slice_difficulty_p{q}"] = float(np.nanpercentile(rating, q))
            rows.append(placed.sort_values(["mu", "agent_id"], ascending=[False, True], kind="stable"))
    if not rows:
        out = pd.DataFrame({c: pd.Series(dtype=object if c in ("tag", "value", "agent_id") else float) for c in SLICE_COLUMNS})
    else:
        out = pd.concat(rows, ignore_index=True)[list(SLICE_COLUMNS)]
    return to_flavour(out, flavour)


# ---------------------------------------------------------------------------------------------
# capability queries


def _weighted_wins(table: np.ndarray, present: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pairwise wins (½ per tie) over test cases, each counted ``weights[t]`` times."""
    n_a = table.shape[1]
    wins = np.zeros((n_a, n_a))
    for i in range(n_a):
        rows = present[:, i] & (weights > 0)
        w = weights[rows]
        mine, theirs, both = table[rows, i][:, None], table[rows], present[rows]
        wins[i] = w @ (((mine > theirs) & both) + 0.5 * ((mine == theirs) & both))
    np.fill_diagonal(wins, 0.0)
    return wins


def query_ranking(
    selected_matches: Table,
    *,
    alpha: float = 0.1,
    resamples: int = 200,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    by: str = "score",
    higher_is_better: bool = True,
) -> Table:
    """Plackett-Luce ranking of the agents on the selected test cases, with bootstrap intervals (ONEBench).

    Parameters
    ----------
    selected_matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score`` of the selected test cases, optionally with a
        ``benchmark`` column: test cases are then told apart by (benchmark, test_case_id), so the
        selection may span benchmarks. Agents need not be measured everywhere: only agents
        measured on the same test case are compared.
    alpha : float
        Plackett-Luce pseudo-wins each way between every pair (keeps an agent that never loses finite).
    resamples : int
        Bootstrap resamples of the test cases (0: no intervals). Each costs one pass over the
        agents² × test cases comparison table.
    level : float
        Interval level of ``rating_lo, rating_hi``.
    seed : int
        Seed of the resamples.
    by : {"score", "metric"}
        What orders the agents on a test case; ``score`` (default) respects lower-is-better metrics
        and makes benchmarks with different metrics comparable.
    higher_is_better : bool
        With ``by="metric"``: ``False`` when a lower metric is better.

    Returns
    -------
    DataFrame (the input's flavour)
        ``agent_id, rating, rating_lo, rating_hi, rating_sd, rank, rank_lo, rank_hi, test_cases,
        comparisons``, best first. ``rating`` is on the Elo scale with the agents' mean at 1500;
        ranks follow :func:`~agielo_dagster.rating.intervals.interval_ranks` (agents whose intervals
        overlap share a rank range).
    """
    from .estimators._scale import LOGIT_TO_ELO
    from .estimators.plackett_luce import bradley_terry_mle, check_ordering, ordering_values

    z_of(level)
    check_ordering(by, higher_is_better)
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 0:
        raise ValueError(f"resamples must be an integer >= 0, got {resamples!r}")
    flavour = flavour_of(selected_matches)
    frame = to_pandas(selected_matches)
    if "benchmark" in frame.columns:
        frame = frame.assign(test_case_id=frame["benchmark"].astype(str) + "\x1f" + frame["test_case_id"].astype(str))
    m: Matches = encode_matches(frame[list(MATCH_COLUMNS)], "selected match table")
    if alpha > 0:  # without pseudo-wins a disconnected graph is an error (rule comparisons_connected)
        warn_disconnected(m, "query_ranking")
    if m.n_agents < 2:
        raise MatchTableError(
            f"the selection measures {m.n_agents} agent(s); a ranking needs at least 2 (rule: query_agents)", rule="query_agents"
        )
    values = ordering_values(m, by, higher_is_better)
    table = np.full((m.n_test_cases, m.n_agents), np.nan)
    table[m.test_case, m.agent] = values
    present = ~np.isnan(table)
    ones = np.ones(m.n_test_cases)
    wins = _weighted_wins(table, present, ones)
    rating = bradley_terry_mle(wins, alpha=alpha) * LOGIT_TO_ELO
    rating = rating - rating.mean() + 1500.0
    if resamples:
        rng = np.random.default_rng(seed)
        draws = np.empty((resamples, m.n_agents))
        for k in range(resamples):
            weights = np.bincount(rng.integers(0, m.n_test_cases, m.n_test_cases), minlength=m.n_test_cases).astype(float)
            theta = bradley_terry_mle(_weighted_wins(table, present, weights), alpha=alpha) * LOGIT_TO_ELO
            draws[k] = theta - theta.mean() + 1500.0
        tail = (1.0 - level) / 2.0
        lo, hi = np.quantile(draws, tail, axis=0), np.quantile(draws, 1.0 - tail, axis=0)
        sd = draws.std(axis=0, ddof=1) if resamples > 1 else np.full(m.n_agents, np.nan)
    else:
        lo, hi, sd = rating.copy(), rating.copy(), np.full(m.n_agents, np.nan)
    rank, rank_lo, rank_hi = interval_ranks(lo, hi, np.zeros(m.n_agents, dtype=np.int64))
    out = pd.DataFrame(
        {
            "agent_id": m.agent_ids,
            "rating": rating,
            "rating_lo": lo,
            "rating_hi": hi,
            "rating_sd": sd,
            "rank": rank,
            "rank_lo": rank_lo,
            "rank_hi": rank_hi,
            "test_cases": present.sum(axis=0),
            "comparisons": (wins + wins.T).sum(axis=1),
        }
    )
    out = out.sort_values(["rating", "agent_id"], ascending=[False, True], kind="stable")
    return to_flavour(out, flavour)
