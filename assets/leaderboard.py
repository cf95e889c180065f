"""The leaderboard across every benchmark: all agents and test cases in one model (ONEBench's pool, issue 41).

Not partitioned: it reads every rated benchmark's matches (provisional ones included) and starts from its own
last fit, so a new upload to one benchmark costs a few passes. Its data version is the digest of the benchmarks'
inputs digests: ``agielo run`` and the sensor materialize it when that digest, or its code, changed
(:func:`agielo_dagster.pending.leaderboard_selection`).
"""

import hashlib
import warnings
from collections.abc import Mapping

import dagster as dg
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.ledger import higher_is_better
from agielo_dagster.domain.matches import rated_matches
from agielo_dagster.domain.store import Store
from agielo_dagster.domain.stored import Stored
from agielo_dagster.rating.settings import DEFAULT_LEVEL

from .common import declared, frame_table, retried_on_storage_errors

POOL = ("agent_leaderboard", "benchmark_scales", "agent_benchmark_ratings")
COLUMNS = ["agent_id", "test_case_id", "score"]


class LeaderboardConfig(dg.Config):
    weigh: str = "test_case"
    """How benchmarks are weighed: "test_case" (each test case once: the likelihood) or "benchmark" (each alike)."""


def _out(description: str) -> dg.AssetOut:
    return dg.AssetOut(**declared(description, "leaderboard"))


def rated(agent_ratings: Mapping[str, Stored]) -> dict[str, Stored]:
    """The benchmarks' stored ratings, by benchmark, the withdrawn ones left out."""
    return {b: agent_ratings[b] for b in sorted(agent_ratings) if agent_ratings[b].exists}


NO_BENCHMARKS = "no benchmark rated"


def pool_digest(agent_ratings: Mapping[str, Stored]) -> str:
    """What the leaderboard was made from: every rated benchmark's inputs digest (``NO_BENCHMARKS`` with none), of
    the ``agent_ratings`` its step loads (a handle per benchmark partition)."""
    ratings = rated(agent_ratings)
    if not ratings:
        return NO_BENCHMARKS
    text = "|".join(f"{b}={stored.digest}" for b, stored in ratings.items())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dg.multi_asset(
    outs={
        "agent_leaderboard": _out(
            "One row per agent over every benchmark, on one scale: agent_id, mu, sigma, the "
            f"{DEFAULT_LEVEL:.0%} interval mu_lo..mu_hi, "
            "rank, rank_lo, rank_hi, benchmarks (how many it was evaluated on), test_cases, component (agents sharing "
            "no test case, directly or through others, are ranked apart), status (rated, provisional, disconnected, "
            "unplaced) and status_reason."
        ),
        "benchmark_scales": _out(
            "Each benchmark on the leaderboard's scale: centre and spread of its difficulties, their 10/50/90% points, "
            "its best agent and saturation (the share of its test cases that agent is expected to pass: near 1, the "
            "benchmark no longer separates the agents), higher_is_better, dispersion."
        ),
        "agent_benchmark_ratings": _out(
            "Per agent and benchmark played: test_cases, mu (its rating in the benchmark's own ratings), mu_on_pool "
            "(that rating on the leaderboard's scale), pool_mu (its pooled rating) and its status there."
        ),
    },
)
def pooled_ratings(
    context: dg.AssetExecutionContext,
    config: LeaderboardConfig,
    storage: ObjectStorage,
    match_tables: dict[str, Stored],  # every benchmark's: not partitioned, the step loads each partition's handle
    provisional_matches: dict[str, Stored],
    test_case_ratings: dict[str, Stored],
    agent_ratings: dict[str, Stored],
):
    from agielo_dagster.rating.pool import rate_pool

    store = storage.store
    with retried_on_storage_errors(context):
        digest = pool_digest(agent_ratings)
        tables, own = {}, []
        for b, stored in rated(agent_ratings).items():
            tables[b] = pooled_matches(match_tables[b], provisional_matches[b], test_case_ratings[b], b)
            ratings = stored.read(["agent_id", "mu", "status"]).to_pandas()
            own.append(ratings.astype({"agent_id": str}).assign(benchmark=b, higher_is_better=higher_is_better(store, b)))
        start = previous_fit(store)
    if not tables:  # every benchmark withdrawn: the leaderboard is removed, and current
        for name in POOL:
            yield versioned(None, name, dg.DataVersion(digest), {"benchmarks": 0})
        return
    own = pd.concat(own, ignore_index=True)
    joint_somewhere = set(own.loc[own["status"] != "provisional", "agent_id"])
    provisional_only = set(own.loc[own["status"] == "provisional", "agent_id"]) - joint_somewhere
    pool = rate_pool(tables, weigh=config.weigh, start=start, provisional=provisional_only)
    leaderboard = with_unplaced(pool.agents, own)
    scales = pool.benchmarks.assign(
        higher_is_better=pool.benchmarks["benchmark"].map(own.groupby("benchmark")["higher_is_better"].first()),
        dispersion=pool.benchmarks["benchmark"].map(pool.fit.dispersions),
    )
    by_benchmark = pool.by_benchmark.merge(
        own[["agent_id", "benchmark", "mu", "status"]], on=["agent_id", "benchmark"], how="left"
    )
    centre = by_benchmark["benchmark"].map(scales.set_index("benchmark")["centre"])
    by_benchmark = by_benchmark.assign(mu_on_pool=by_benchmark["mu"] + centre - 1500.0)[
        ["agent_id", "benchmark", "test_cases", "mu", "mu_on_pool", "pool_mu", "status"]
    ]
    common = {"inputs_digest": digest, "benchmarks": len(tables), "weigh": config.weigh}
    version = dg.DataVersion(digest)  # what leaderboard_selection compares with today's digest
    top = leaderboard[(leaderboard["component"] == 0) & (leaderboard["rank"] == 1)]["agent_id"]
    counts = leaderboard["status"].value_counts()
    yield versioned(
        leaderboard,
        "agent_leaderboard",
        version,
        common
        | {
            "top_tier": ", ".join(top),
            "agents": len(leaderboard),
            "components": int(leaderboard["component"].max()) + 1,
            **{f"{s}_agents": int(counts.get(s, 0)) for s in ("rated", "provisional", "disconnected", "unplaced")},
            "passes": pool.iterations,
            "leaderboard": frame_table(
                shown_ranks(leaderboard),
                ["rank", "rank_lo", "rank_hi", "agent_id", "mu", "mu_lo", "mu_hi", "benchmarks", "status"],
            ),
        },
    )
    yield versioned(
        scales,
        "benchmark_scales",
        version,
        common
        | {
            "scales": frame_table(
                scales, ["benchmark", "test_cases", "agents", "centre", "spread", "saturation", "best_agent"], digits=2
            )
        },
    )
    yield versioned(by_benchmark, "agent_benchmark_ratings", version, common)


def versioned(value, name: str, version: dg.DataVersion, metadata: dict) -> dg.Output:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # Output's data_version, used on purpose: the UI shows it
        return dg.Output(value, name, data_version=version, metadata=metadata)


def shown_ranks(leaderboard: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with its ranks as text for the UI's table: a provisional or unplaced agent's missing rank is "–"."""
    ranks = ["rank", "rank_lo", "rank_hi"]
    return leaderboard.assign(**{c: leaderboard[c].astype("string").fillna("–") for c in ranks})


def pooled_matches(match_tables: Stored, provisional_matches: Stored, test_case_ratings: Stored, benchmark: str):
    """The benchmark's matches, its provisional agents' included, on the test cases it rates, encoded: in Arrow
    throughout (a wide benchmark's millions of test-case ids are never Python strings)."""
    from agielo_dagster.rating.frames import encode_matches, plain_ids

    rows = plain_ids(rated_matches(test_case_ratings, match_tables, provisional_matches))
    # the pool reads scores alone: the metric column is the score's very array (no copy)
    return encode_matches(rows.append_column("metric", rows.column("score")), f"{benchmark}'s matches")


def previous_fit(store: Store):
    """The last leaderboard's fit, where the next one starts (None: none, or unreadable): the step's own previous
    outputs, so not inputs (Dagster has no self-dependency), read through the handle its inputs load as."""
    from agielo_dagster.rating.pool import PoolFit

    try:
        agents = Stored.of(store, "agent_leaderboard").read(["agent_id", "mu"]).to_pandas()
        scales = Stored.of(store, "benchmark_scales").read(["benchmark", "centre", "spread", "dispersion"]).to_pandas()
    except (OSError, ValueError, KeyError):
        return None
    agents = agents.dropna()
    scales = scales.set_index("benchmark")
    return PoolFit(
        dict(zip(agents["agent_id"].astype(str), agents["mu"], strict=True)),
        scales["centre"].to_dict(),
        scales["spread"].to_dict(),
        scales["dispersion"].to_dict(),
    )


def with_unplaced(agents: pd.DataFrame, own: pd.DataFrame) -> pd.DataFrame:
    """The pooled agents, and a row for every agent of a benchmark's ratings without a match in the pool."""
    missing = sorted(set(own["agent_id"]) - set(agents["agent_id"]))
    if not missing:
        return agents
    rows = pd.DataFrame({"agent_id": missing, "benchmarks": 0, "test_cases": 0, "component": -1, "status": "unplaced"})
    rows["status_reason"] = "none of its results is on a test case its benchmarks rate: it has no rating"
    return pd.concat([agents, rows], ignore_index=True).astype({"rank": "Int64", "rank_lo": "Int64", "rank_hi": "Int64"})
