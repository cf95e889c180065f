"""Adaptive test-case selection: place a new agent from a small share of a benchmark.

A benchmark that has been rated carries a frozen rating (μ_j, σ_j) for every test case. A new
agent need not be run on all of them: the test cases whose difficulty is near its rating say the
most about it (an agent rated 2200 learns almost nothing from a test case rated 1200 it is sure to
solve). :func:`place_sequentially` runs the loop: select a batch with :func:`select_test_cases`,
reveal its results, place the agent with :func:`place_on_subset` (under the benchmark's model, against
the frozen ratings), and repeat until the interval is narrow enough or the budget is spent.

The default design is a stratified random sample: the test cases are cut into strata of equal size
by difficulty, each batch is drawn at random within strata, with more of it from the strata near
the agent's current estimate (Neyman allocation, each stratum's share ∝ its size × the spread of a
result there), and each result then stands for N_h/n_h test cases of its stratum
(:func:`stratum_weights`). Choosing by difficulty alone (greedy maximum information, as a CAT
does) is more efficient when the agent fits the rating model and biased when it does not, which
real classifiers do not; the stratified sample stays an estimate of the whole benchmark.

The Fisher information of one match of an agent of rating θ against a test case N(μ_j, σ_j²) is::

    I_j(θ) = q² g(σ_j)² E (1 − E),   E = 1 / (1 + 10^(−g(σ_j)(θ − μ_j)/400)),   q = ln 10 / 400

(the precision it adds in the Glicko update). With the agent known only as N(μ, σ²), the
expected information ∫ I_j(θ) N(θ; μ, σ²) dθ is taken by Gauss–Hermite quadrature: a wide σ
favours test cases over a wider band of difficulty.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .frames import Table, ids_of, require_columns, to_pandas
from .intervals import z_of
from .schema import MATCH_COLUMNS
from .settings import DEFAULT_MODEL
from .strata import (
    DEFAULT_SPREAD,
    SEQUENTIAL_METHODS,
    _candidates,
    _check_budget,
    _information_at,
    default_strata,
    difficulty_strata,
    expected_information,
    neyman_shares,
    select_test_cases,
    stratum_weights,
)
from .subset_placement import joint_scale, place_on_subset, place_provisional_agents

__all__ = [
    "SequentialPlacement",
    "difficulty_strata",
    "expected_information",
    "joint_scale",
    "neyman_shares",
    "place_on_subset",
    "place_provisional_agents",
    "place_sequentially",
    "placement_study",
    "select_test_cases",
    "stratum_weights",
    "study_summary",
]


@dataclass
class SequentialPlacement:
    """What :func:`place_sequentially` found.

    Attributes
    ----------
    placement : pandas.DataFrame
        The last placement: one row of :func:`place_on_subset` (``agent_id, mu, sigma, mu_lo, mu_hi, …``).
    test_case_ids : list of str
        The test cases evaluated, in the order they were chosen.
    history : pandas.DataFrame
        One row per batch: ``step, evaluated, mu, sigma, mu_lo, mu_hi, width``.
    stopped : str
        ``max_width`` (the interval got narrow enough), ``budget`` or ``exhausted`` (no test case left).
    matches : pandas.DataFrame
        The revealed results the placement rests on.
    """

    placement: pd.DataFrame
    test_case_ids: list[str]
    history: pd.DataFrame
    stopped: str
    matches: pd.DataFrame = field(repr=False)


def _revealer(results: Table | Callable[[list[str]], Table]) -> Callable[[list[str]], pd.DataFrame]:
    """A function from test-case ids to the agent's results on them."""
    if callable(results):
        return lambda ids: to_pandas(results(list(ids)))
    frame = to_pandas(results)
    require_columns(frame, MATCH_COLUMNS, "results")
    if frame["agent_id"].nunique() > 1:
        raise ValueError(f"results must be one agent's, got {frame['agent_id'].nunique()} agents")
    keyed = frame.assign(_key=ids_of(frame, "test_case_id", "results").astype(str))
    return lambda ids: keyed[keyed["_key"].isin(ids)].drop(columns="_key")


def _budget_of(budget: Any, n_test_cases: int) -> int:
    """An integer budget, or a share in (0, 1) of the benchmark's test cases (at least one)."""
    if isinstance(budget, float) and not isinstance(budget, bool):
        if not 0.0 < budget < 1.0:
            raise ValueError(f"a fractional budget must be inside (0, 1), got {budget}")
        return max(1, int(round(budget * n_test_cases)))
    return _check_budget(budget)


DEFAULT_UNIFORM_SHARE = 0.2


def _draw(pool, size, estimate, uniform_share, used, draws, rng) -> list[str]:
    """Draw test cases with replacement until ``size`` new ones came up; every draw is logged in ``draws``."""
    info = _information_at(pool, estimate)
    n = len(pool)
    root = np.sqrt(info)  # the spread of a test case's term g(S − E) under the model: the optimal draw weight
    p = (1.0 - uniform_share) * root / root.sum() + uniform_share / n
    p = p / p.sum()
    seen = set(pool["test_case_id"].to_numpy()[[d for d, _ in draws]]) if draws else set()
    seen |= set(used)
    if len(seen) >= n:
        return []
    ids = pool["test_case_id"].to_numpy()
    new: list[str] = []
    while len(new) < size and len(seen) < n:
        for j in rng.choice(n, size=max(size, 8), p=p):
            if len(new) >= size:
                break
            draws.append((int(j), float(p[j])))
            if ids[j] not in seen:
                seen.add(ids[j])
                new.append(str(ids[j]))
    return new


def _design_weights(pool, draws) -> pd.Series:
    """Hansen–Hurwitz weights: Σ over the draws that hit a test case of 1/(D·p), D the number of draws."""
    j = np.array([d for d, _ in draws], dtype=np.int64)
    p = np.array([q for _, q in draws])
    weight = np.bincount(j, 1.0 / (len(draws) * p), minlength=len(pool))
    hit = weight > 0
    return pd.Series(weight[hit], index=pool["test_case_id"].to_numpy()[hit])


def place_sequentially(
    results: Table | Callable[[list[str]], Table],
    test_cases: Table,
    *,
    budget: int | float,
    batch_size: int = 10,
    first_batch: int | None = None,
    max_width: float | None = None,
    method: str = "stratified",
    level: float = 0.9,
    seed: int = 0,
    spread: float = DEFAULT_SPREAD,
    uniform_share: float = DEFAULT_UNIFORM_SHARE,
    **place_options: float,
) -> SequentialPlacement:
    """Place one new agent by revealing its results a batch at a time, chosen adaptively.

    Each step selects the next batch with :func:`select_test_cases` at the current estimate (a
    difficulty-stratified first batch), reveals the agent's results on it, and places the agent
    with :func:`place_on_subset` on everything revealed so far. It stops when the ``level`` interval is
    at most ``max_width`` Elo wide, when ``budget`` test cases have been evaluated, or when none is
    left. The test-case ratings are never changed.

    Parameters
    ----------
    results : DataFrame or callable
        How to reveal results: the agent's full results (``test_case_id, agent_id, metric, score``,
        one agent; a simulation or a replay of a finished run), or a callable that takes a list of
        test-case ids and returns the agent's results on them (e.g. runs the model). Test cases it
        returns nothing for count as spent but do not inform the placement.
    test_cases : DataFrame or pyarrow.Table
        The frozen test-case ratings, as for :func:`place_agents` (with their history columns).
    budget : int or float
        The most test cases to evaluate, or a share in (0, 1) of the benchmark's (0.05: 5%).
    batch_size : int
        Test cases per step after the first.
    first_batch : int, optional
        Size of the difficulty-stratified first batch (default ``batch_size``).
    max_width : float, optional
        Stop once ``mu_hi − mu_lo`` is at most this (Elo). None: spend the budget.
    method : {"stratified", "importance", "information", "random"}
        ``stratified`` (default): each batch is a random sample, without replacement, from strata of
        difficulty (``default_strata(budget)`` of them), Neyman-allocated at the current estimate
        (see :func:`select_test_cases`); the placement weighs each result by N_h/n_h of its stratum
        (:func:`stratum_weights`), so it answers to the whole benchmark. Measured at 5% on the demo's
        two benchmarks and two simulated ones, 3 seeds: median |error| 25.5 Elo against 34.2 for a
        weighted random sample (``benchmarks/placement.py``). ``importance``: draws
        with replacement with probabilities p_j = (1 − u)·√I_j/Σ√I + u/N, weighted 1/(n·p)
        (Hansen–Hurwitz; about random at the median, with a heavier tail). ``information``: the
        greedy batches of :func:`select_test_cases`, unweighted (more efficient when the model fits,
        biased when it does not: on the demo's classifiers it lands far off). ``random``: a uniform
        random sample without replacement, each result weighted N/n, for comparison.
    level : float
        Confidence level of the interval (and of the stopping rule).
    seed : int
        Seed of the selection (step k uses the seed spawned from (seed, k)) and of :func:`place_agents`.
    spread : float
        The batch's repulsion in difficulty (``information``; see :func:`select_test_cases`).
    uniform_share : float
        Share of the sample allocated in proportion to the strata's sizes (``stratified``) or of the
        draw probability spread uniformly (``importance``), in (0, 1]: bounds every weight.
    **place_options
        Passed to :func:`place_on_subset` (``orders``, ``init_mu``, ``init_sigma``).

    Returns
    -------
    SequentialPlacement
        The final placement, the test cases used in order, one history row per step and why it stopped.
    """
    reveal = _revealer(results)
    z_of(level)  # a bad level fails before any result is revealed
    tc = to_pandas(test_cases)
    require_columns(tc, ("test_case_id", "mu"), "test-case table")
    total = _budget_of(budget, len(tc))
    step_size = _check_budget(batch_size)
    first = step_size if first_batch is None else _check_budget(first_batch)
    if max_width is not None and not (math.isfinite(max_width) and max_width > 0):
        raise ValueError(f"max_width must be a positive number of Elo, got {max_width!r}")
    if method not in SEQUENTIAL_METHODS:
        raise ValueError(f"method must be one of {', '.join(SEQUENTIAL_METHODS)}, got {method!r}")
    if not (isinstance(uniform_share, (int, float)) and 0.0 < uniform_share <= 1.0):
        raise ValueError(f"uniform_share must be in (0, 1], got {uniform_share!r}")
    pool = _candidates(tc, ())
    n_strata = default_strata(total, len(pool))  # the design's strata: fixed by the budget
    draws: list[tuple[int, float]] = []  # (test case, its draw probability), every draw of method="importance"
    used: list[str] = []
    revealed: list[pd.DataFrame] = []
    history: list[dict] = []
    placement: pd.DataFrame | None = None
    estimate: tuple[float, float] | None = None
    stopped = "budget"
    step = 0
    while len(used) < total:
        size = min(first if step == 0 else step_size, total - len(used))
        step_seed = int(np.random.SeedSequence([seed, step]).generate_state(1)[0])
        if method == "importance":
            ids = _draw(pool, size, estimate, uniform_share, used, draws, np.random.default_rng(step_seed))
        else:
            batch = select_test_cases(
                tc,
                size,
                agent_rating=estimate,
                exclude=used,
                method=method,
                seed=step_seed,
                spread=spread,
                n_strata=n_strata,
                uniform_share=uniform_share,
            )
            ids = batch["test_case_id"].tolist()
        if not ids:
            stopped = "exhausted"
            break
        used.extend(ids)
        rows = reveal(ids)
        if len(rows):
            revealed.append(rows)
        step += 1
        if not revealed:
            continue
        matches = pd.concat(revealed, ignore_index=True)
        if method == "stratified":
            design = stratum_weights(pool, matches["test_case_id"].astype(str), n_strata=n_strata)
        elif method == "importance":
            design = _design_weights(pool, draws)
        elif method == "random":  # a uniform sample: each test case stands for N/n of the benchmark
            design = pd.Series(len(pool) / len(used), index=pd.Index(used))
        else:
            design = None
        placement = to_pandas(place_on_subset(matches, tc, level=level, seed=seed, design=design, **place_options))
        row = placement.iloc[0]
        estimate = (float(row["theta"]), float(row["theta_se"]))
        width = float(row["mu_hi"] - row["mu_lo"])
        history.append(
            dict(
                step=step,
                evaluated=len(used),
                mu=row["mu"],
                sigma=row["sigma"],
                mu_lo=row["mu_lo"],
                mu_hi=row["mu_hi"],
                width=width,
            )
        )
        if max_width is not None and width <= max_width:
            stopped = "max_width"
            break
    if len(used) >= total and stopped != "max_width":
        stopped = "budget"
    if placement is None:
        raise ValueError("no results were revealed for any selected test case: nothing to place")
    return SequentialPlacement(
        placement=placement,
        test_case_ids=used,
        history=pd.DataFrame(history),
        stopped=stopped,
        matches=pd.concat(revealed, ignore_index=True),
    )


# ---------------------------------------------------------------------------------------------
# the leave-one-agent-out study


def placement_study(
    matches: Table,
    *,
    share: float = 0.05,
    methods: tuple[str, ...] = ("stratified", "importance", "information", "random", "full"),
    batch_size: int = 10,
    seeds: tuple[int, ...] = (0,),
    level: float = 0.9,
    benchmark: str = "",
    model: str = DEFAULT_MODEL,
) -> pd.DataFrame:
    """How well a new agent is placed from ``share`` of a benchmark: each agent left out in turn.

    The other agents are rated jointly with :func:`rate` (``model``: the frozen test-case ratings); the
    left-out agent's test cases are then chosen from its real results, revealed one batch at a time
    with :func:`place_sequentially` (``share`` of the test cases), and it is compared with its
    rating in the joint rating of every agent. ``full`` uses all its results. The agent is placed as
    the pipeline places a partial upload (:func:`place_provisional_agents`).

    Parameters
    ----------
    matches : DataFrame
        ``test_case_id, agent_id, metric, score`` of every agent.
    share : float
        The budget, as a share of the test cases.
    methods : tuple of str
        Methods of :func:`place_sequentially`, and ``full``.
    batch_size : int
        Test cases revealed per step.
    seeds : tuple of int
        One sequential placement per seed and agent (``full`` once).
    level : float
        Level of the intervals.
    benchmark : str
        A label for the rows.
    model : str
        The rating model of the joint rating and of the placements.

    Returns
    -------
    pandas.DataFrame
        One row per (agent, method, seed): ``benchmark, agent_id, method, seed, joint_mu, mu, mu_lo,
        mu_hi, error, covered, used`` (``error = mu − joint_mu``; ``used`` test cases evaluated).
    """
    from .ratings import rate

    frame = to_pandas(matches)
    joint = to_pandas(rate(frame, model=model, seed=1, with_reliability=False).agents).set_index("agent_id")["mu"]
    rows = []
    for agent in joint.index:
        mine = frame[frame["agent_id"].astype(str) == str(agent)]
        others = frame[frame["agent_id"].astype(str) != str(agent)]
        rest = to_pandas(rate(others, model=model, seed=2, with_reliability=False).test_cases)
        for method in methods:
            for seed in seeds if method != "full" else seeds[:1]:
                if method == "full":
                    results, used = mine, len(mine)
                else:
                    run = place_sequentially(
                        mine, rest, budget=share, batch_size=batch_size, method=method, level=level, seed=seed, model=model
                    )
                    results, used = run.matches, len(run.test_case_ids)
                placed = place_provisional_agents(results, rest, level=level, model=model).iloc[0]
                rows.append(
                    dict(
                        benchmark=benchmark,
                        agent_id=str(agent),
                        method=method,
                        seed=seed,
                        joint_mu=float(joint[agent]),
                        mu=float(placed["mu"]),
                        mu_lo=float(placed["mu_lo"]),
                        mu_hi=float(placed["mu_hi"]),
                        used=int(used),
                    )
                )
    out = pd.DataFrame(rows)
    out["error"] = out["mu"] - out["joint_mu"]
    out["covered"] = (out["mu_lo"] <= out["joint_mu"]) & (out["joint_mu"] <= out["mu_hi"])
    return out


def study_summary(rows: pd.DataFrame, by: tuple[str, ...] = ("method",)) -> pd.DataFrame:
    """The study's figures per group: median |error|, Spearman of placed vs joint ratings, coverage, width, test cases used.

    Spearman is taken within each benchmark and seed (agents of one benchmark against each other)
    and averaged.
    """

    def figures(group: pd.DataFrame) -> pd.Series:
        spearman = [g["mu"].rank().corr(g["joint_mu"].rank()) for _, g in group.groupby(["benchmark", "seed"]) if len(g) > 2]
        return pd.Series(
            {
                "median_abs_error": float(group["error"].abs().median()),
                "mean_abs_error": float(group["error"].abs().mean()),
                "spearman": float(np.mean(spearman)) if spearman else np.nan,
                "coverage": float(group["covered"].mean()),
                "median_width": float((group["mu_hi"] - group["mu_lo"]).median()),
                "test_cases_used": float(group["used"].mean()),
                "placements": len(group),
            }
        )

    return rows.groupby(list(by), sort=False)[list(rows.columns)].apply(figures)
