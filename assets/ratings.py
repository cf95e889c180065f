"""Ratings of a benchmark (one engine call: snapshots, ratings, reliability) and its competency gaps."""

import json

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.ledger import read_exclude, read_model, read_scoring
from agielo_dagster.domain.lineage import RATING_VERSION
from agielo_dagster.domain.standing import FRAGILITY_KEY
from agielo_dagster.domain.stored import Stored
from agielo_dagster.domain.suspects import EXCLUSION_KEY
from agielo_dagster.rating.frames import row_positions
from agielo_dagster.rating.predict import competency_gaps
from agielo_dagster.rating.schema import MATCH_COLUMNS
from agielo_dagster.rating.settings import DEFAULT_LEVEL

from .common import benchmark_asset, benchmark_output, frame_table, retried_on_storage_errors
from .partitions import benchmark_partitions

SEED = 42
TWINS = 10  # calibrated twins of the benchmark rated for the reliability yardstick (one rating pass each)
MAX_RECORDED = 1000  # excluded test cases named in agent_ratings' parquet metadata (the report's); all are counted
TWIN_MAX_MATCHES = 250_000  # above it the yardstick stays null: 10 twins of 1,000,000 matches take about 21 s on 2 busy cores


@dg.multi_asset(
    outs={
        "rating_snapshots": benchmark_output(
            "fraction, kind, id, mu, sigma: every agent at 1%…100% of the matches (a tall benchmark's at every k-th: "
            "docs/engine.md), test cases at 10/25/50/100%."
        ),
        "test_case_ratings": benchmark_output(
            "Difficulty of every test case: test_case_id, mu (its posterior mean under the benchmark's model), sigma, "
            "discrimination with its interval, flag (likely_mislabeled, saturated, unsolved, uninformative) and "
            "flag_reason, matches, mean_score, mean_metric, component (model glicko: mu_order_sd and the rating history "
            "mu_after_j, sigma_after_j that places new agents)."
        ),
        "agent_ratings": benchmark_output(
            "Competency of every agent: agent_id, mu, sigma, matches, mean_score, mean_metric, the "
            f"{DEFAULT_LEVEL:.0%} interval mu_lo..mu_hi (against the mean of the agent's component), rank, rank_lo, rank_hi "
            "(rank = 1 + the agents whose interval lies wholly above), "
            "component, provisional, and status (rated, provisional, disconnected: outside the main component, unranked; "
            "unplaced: a partial upload of test cases the benchmark does not rate) with its status_reason."
        ),
        "reliability_reports": benchmark_output(
            "fraction, rho_test_cases, rho_agents, mae, mse, matches_outside_bins, orders as the share of matches grows; "
            "on the 100% row mae_twin, mae_twin_hi (95%) and miscalibration_visible: the binned MAE that perfectly "
            "calibrated twins of the benchmark reach (10 twins; null above 250,000 matches)."
        ),
    },
    partitions_def=benchmark_partitions,
)
def ratings(context: dg.AssetExecutionContext, storage: ObjectStorage, match_tables: Stored, provisional_matches: Stored):
    from agielo_dagster.rating import RatingSettings, rate_parquet  # the engine (and numba) load when a run rates
    from agielo_dagster.rating.standing import top_tier

    store = storage.store
    with retried_on_storage_errors(context):
        if not match_tables.exists:  # withdrawn: no accepted upload left
            for name in ("rating_snapshots", "test_case_ratings", "agent_ratings", "reliability_reports"):
                yield dg.Output(None, name, metadata={"withdrawn": True})
            return
        digest = match_tables.digest
        source = match_tables.source()
        partial = provisional_matches.read(list(MATCH_COLUMNS))
        model, exclude = read_model(store, context.partition_key), read_exclude(store, context.partition_key)
    # straight from the parquet file, a row group at a time: no match table is held in memory
    settings = RatingSettings(seed=SEED, model=model)  # benchmark.yaml's model, the engine's defaults otherwise
    result = rate_parquet(source, settings=settings)
    # the rated matches, read once for what needs them in memory: an exclusion, the twins, fragility (each has a limit)
    matches, exclusion, moves = None, {}, None
    if exclude or result.n_matches <= max(TWIN_MAX_MATCHES, FRAGILITY_MAX_MATCHES):
        with retried_on_storage_errors(context):
            matches = match_tables.read(list(MATCH_COLUMNS))
    if exclude:  # benchmark.yaml's exclude: re-rated without the test cases it names or flags
        matches, exclusion, result, moves = rated_without(context, matches, result, exclude, settings)
    reliability_table, yardstick = reliability_with_yardstick(result, matches)
    agent_table = with_provisional_agents(result.agents, result.test_cases, partial, model)
    agents = agent_table.to_pandas().sort_values(["rank", "mu", "agent_id"], ascending=[True, False, True])
    by_status = agents["status"].value_counts()
    # the ten hardest in Arrow: a wide benchmark's millions of test-case rows are not converted for them (issue 25)
    hardest = result.test_cases.select(["test_case_id", "mu", "sigma", "mean_metric"])
    mu = hardest.column("mu")
    key = pa.table({"mu": pc.if_else(pc.is_nan(mu), float("-inf"), mu)})  # as nlargest: NaN never among them
    hardest = hardest.take(pc.select_k_unstable(key, 10, [("mu", "descending")])).to_pandas().dropna(subset=["mu"])
    # fragility of #1 (issue 22), re-rated as the ratings were: in the metadata, and in the table's own parquet
    # metadata, which the report and the explorer read
    fragility = fragility_metadata(context, agents, result, matches)
    recorded = {**(agent_table.schema.metadata or {}), FRAGILITY_KEY.encode(): json.dumps(fragility, sort_keys=True).encode()}
    if moves is not None:  # what the exclusion changed, for the report
        recorded[EXCLUSION_KEY.encode()] = json.dumps(moves, sort_keys=True, default=float).encode()
    agent_table = agent_table.replace_schema_metadata(recorded)
    final = result.reliability.to_pandas().iloc[-1]
    common = {
        "inputs_digest": digest,
        "model": settings.model,
        "seed": settings.seed,
        **({"orders": settings.orders} if settings.model == "glicko" else {}),
        "code_version": RATING_VERSION,
        "matches": result.n_matches,
        "components": result.n_components,
    }
    yield dg.Output(result.snapshots, "rating_snapshots", metadata=common)
    yield dg.Output(
        result.test_cases,
        "test_case_ratings",
        metadata=common
        | exclusion
        | {
            "test_cases_outside_main_component": int(pc.sum(pc.not_equal(result.test_cases.column("component"), 0)).as_py() or 0),
            "hardest_test_cases": frame_table(
                hardest.sort_values("mu", ascending=False, kind="stable"), list(hardest.columns), digits=3
            ),
        },
    )
    yield dg.Output(
        agent_table,
        "agent_ratings",
        metadata=common
        | exclusion
        | {
            "provisional_agents": int(by_status.get("provisional", 0)),
            **{f"{status}_agents": int(by_status.get(status, 0)) for status in ("disconnected", "unplaced")},
            "top_tier": ", ".join(top_tier(agents)),
            **fragility,
            "top_agents": frame_table(
                agents, ["rank", "rank_lo", "rank_hi", "agent_id", "mu", "mu_lo", "mu_hi", "mean_metric", "status"], digits=1
            ),
        },
    )
    yield dg.Output(
        reliability_table,
        "reliability_reports",
        metadata=common
        | {
            "rho_test_cases_at_100": round(float(final["rho_test_cases"]), 4),
            "rho_agents_at_100": round(float(final["rho_agents"]), 4),
            "mae_at_100": round(float(final["mae"]), 4),
            "mse_at_100": round(float(final["mse"]), 5),
            "matches_outside_bins_at_100": int(final["matches_outside_bins"]),
            "twins": yardstick.twins if yardstick else 0,
        }
        | (
            {
                "mae_twin_at_100": round(yardstick.mae_twin, 4),
                "mae_twin_hi_at_100": round(yardstick.mae_twin_hi, 4),
                "miscalibration_visible": yardstick.miscalibration_visible,
            }
            if yardstick
            else {}
        ),
    )


def rated_without(context, matches: pa.Table, result, exclude: tuple[str, ...], settings):
    """(the matches kept, metadata, the result, the record) of rating without the test cases ``exclude`` names (ids) or
    whose flag it names; the metadata and the record (:func:`~agielo_dagster.domain.suspects.exclusion_of`) list them
    with why, and how every agent's rank and rating moved."""
    from agielo_dagster.rating.frames import encode_matches
    from agielo_dagster.rating.ratings import rate_encoded

    flags = result.test_cases.select(["test_case_id", "flag"])
    ids = pc.cast(flags.column("test_case_id"), pa.string())
    named = pc.is_in(ids, pa.array(exclude, pa.string()))
    out = flags.filter(pc.or_(named, pc.is_in(flags.column("flag"), pa.array(exclude, pa.string())))).to_pandas()
    if out.empty or len(out) == flags.num_rows:  # nothing to leave out, or nothing would be left to rate
        context.log.warning(f"exclude {list(exclude)} leaves out {len(out)} of {flags.num_rows} test cases: ignored")
        return None, {"excluded_test_cases": 0}, result, None
    out["why"] = out["flag"].where(out["flag"].isin(exclude), "named in benchmark.yaml")
    kept = matches.filter(
        pc.invert(pc.is_in(pc.cast(matches.column("test_case_id"), pa.string()), pa.array(out["test_case_id"].astype(str))))
    )
    again = rate_encoded(encode_matches(kept), settings)
    moved = _standing(again).join(_standing(result), rsuffix="_with_them").reset_index()
    moved = moved.assign(mu_moved=moved["mu"] - moved["mu_with_them"], gap_moved=moved["gap_90"] - moved["gap_90_with_them"])
    moved = moved.sort_values("rank", kind="stable")[list(MOVED_COLUMNS)].astype({"agent_id": str})
    metadata = {
        "excluded_test_cases": len(out),
        "excluded": frame_table(out[["test_case_id", "why"]].astype(str), ["test_case_id", "why"]),
        "moved_by_exclusion": frame_table(moved, list(MOVED_COLUMNS), digits=1),
    }
    record = {
        "excluded": out[["test_case_id", "why"]].astype(str).head(MAX_RECORDED).to_dict("records"),
        "excluded_test_cases": len(out),
        "moved": moved.to_dict("records"),
    }
    return kept, metadata, again, record


MOVED_COLUMNS = ("agent_id", "rank", "rank_with_them", "mu", "mu_moved", "gap_90", "gap_90_with_them", "gap_moved")


def _standing(result) -> pd.DataFrame:
    """Each agent's rank, rating and gap to the oracle at 90 % (by agent id; null gap where it has no rating): an
    excluded test case that looked hardest moves every gap, not only the ranks."""
    agents = result.agents.to_pandas().astype({"agent_id": str})
    placed = agents[agents["mu"].notna()][["agent_id", "mu", "component"]]
    gaps = competency_gaps(result.test_cases.select(["mu", "component"]).to_pandas(), placed)
    return agents.set_index("agent_id")[["rank", "mu"]].join(gaps.set_index("agent_id")["gap_90"])


# --- fragility of #1 (issue 22, item 6) -------------------------------------------------------
FRAGILITY_MAX_MATCHES = 200_000
"""Above this many matches the search is skipped: it re-rates the benchmark about a dozen times (1,000,000
simulated matches: 11 re-ratings, about 8 times one `rate` call), which would dominate a leaderboard's re-rating."""


def fragility_metadata(context, agents: pd.DataFrame, result, matches: pa.Table | None) -> dict:
    """``fragility_of_first`` and its companions for ``agent_ratings``: the fewest test cases whose removal
    changes who is first, among the jointly rated agents of the main component, against the top tier
    (``rank == 1``: the agents whose intervals overlap the leader's), from ``result``'s fit and its ``matches``
    (the match table's, less any test case benchmark.yaml excludes; None only above the limit)."""
    from agielo_dagster.rating.fragility import fragility_of_first

    joint = agents[agents["status"] == "rated"]  # the main component's jointly rated agents
    if len(joint) < 2:
        return {"fragility_method": "not computed: fewer than 2 jointly rated agents"}
    if result.n_matches > FRAGILITY_MAX_MATCHES:
        return {"fragility_method": f"not computed: {result.n_matches:,} matches (limit {FRAGILITY_MAX_MATCHES:,})"}
    ids = joint["agent_id"].astype(str)
    tier = ids[joint["rank"] == 1].tolist()
    try:
        found = fragility_of_first(matches, tier=tier, candidates=ids.tolist(), settings=result.settings, result=result)
    except ValueError as exc:  # a figure beside the ratings never fails their run
        context.log.warning(f"fragility of first not computed: {exc}")
        return {"fragility_method": f"not computed: {exc}"}
    return found.as_metadata()


# ---------------------------------------------------------------------------------------------


def reliability_with_yardstick(result, matches: pa.Table | None):
    """The reliability table with the twins' yardstick on its 100 % row (null columns above ``TWIN_MAX_MATCHES``);
    ``matches`` as :func:`fragility_metadata` takes them."""
    from agielo_dagster.rating.reliability import calibration_twins, with_yardstick

    if result.n_matches > TWIN_MAX_MATCHES:
        return with_yardstick(result.reliability, None), None
    yardstick = calibration_twins(matches, result, twins=TWINS, seed=SEED)
    return with_yardstick(result.reliability, yardstick), yardstick


def with_provisional_agents(agents: pa.Table, test_cases: pa.Table, partial: pa.Table, model: str) -> pa.Table:
    """The joint agents, the provisional ones placed against the frozen ratings, and every agent's status.

    Each provisional agent is placed under the benchmark's ``model`` against the frozen test-case ratings
    (``place_provisional_agents``): on the scale of the joint ratings.

    A provisional agent gets its interval at the joint table's level; only its test cases that the
    benchmark rates are used, in one component: the main one when any of them lies there (else the
    first other). It is placed from its results weighted by difficulty stratum (``stratum_weights``:
    what a plan's stratified sample was drawn by), so that its rating answers to the whole benchmark.
    It takes no rank and moves nobody's: its ``rank`` is null, and ``rank_lo``..``rank_hi`` are the
    ranks its interval allows among the jointly rated agents of its component (``ranks_among``; a
    placement from a few dozen test cases is often "somewhere from 2nd to 7th"). A partial upload
    none of whose test cases the benchmark rates is kept as one ``unplaced`` row; ``status`` and
    ``status_reason`` say where each agent stands (``agent_standings``: rated, provisional,
    disconnected, unplaced).
    """
    from agielo_dagster.rating.standing import agent_standings

    joint = agents.append_column("provisional", pa.array([False] * agents.num_rows))
    rows, counts = _placed_partial_uploads(joint, test_cases, partial, model)
    table = pa.concat_tables([joint, rows]) if rows is not None else joint
    standings = agent_standings(table.to_pandas(), counts)
    schema = joint.schema.append(pa.field("status", pa.string())).append(pa.field("status_reason", pa.string()))
    out = pa.Table.from_pandas(standings[schema.names], schema=schema, preserve_index=False)
    return out.replace_schema_metadata(joint.schema.metadata)  # no pandas dtypes recorded: nullable ints read back as floats


def _placed_partial_uploads(
    joint: pa.Table, test_cases: pa.Table, partial: pa.Table, model: str
) -> tuple[pa.Table | None, pd.DataFrame]:
    """The provisional agents' rows, and per partial upload its test cases, unknown ones and ones outside its component."""
    counts = pd.DataFrame({"agent_id": [], "test_cases": [], "unknown": [], "outside": []})
    if partial.num_rows == 0:
        return None, counts
    from agielo_dagster.rating import DEFAULT_LEVEL, place_provisional_agents, ranks_among

    # in proportion to the partial uploads' own matches: the test-case table is never converted whole, nor its ids hashed
    at = row_positions(test_cases.column("test_case_id"), partial.column("test_case_id"))
    results = partial.select(["agent_id", "test_case_id"]).to_pandas().astype(str)
    results["component"] = test_cases.column("component").take(pa.array(at, mask=at < 0)).to_numpy(zero_copy_only=False)
    known = results.dropna(subset=["component"])
    home = known.groupby("agent_id")["component"].min()  # the main component (0) when any of its test cases lie there
    used = (results["component"] == results["agent_id"].map(home)).to_numpy()
    is_known = results["component"].notna()
    per_agent = results.assign(known=is_known, used=used).groupby("agent_id", sort=True)
    counts = pd.DataFrame(
        {
            "test_cases": per_agent["test_case_id"].nunique(),
            "unknown": results[~is_known].groupby("agent_id")["test_case_id"].nunique(),
            "outside": per_agent["known"].sum() - per_agent["used"].sum(),
        }
    )
    counts = counts.fillna({"unknown": 0}).astype({"unknown": "int64"}).rename_axis("agent_id").reset_index()
    if home.empty:
        return None, counts  # unplaced, every one: none of their test cases is rated
    components = test_cases.column("component")
    single = pc.all(pc.equal(components, 0)).as_py()
    frames = []
    for c in sorted(home.unique()):
        theirs = test_cases if single else test_cases.filter(pc.equal(components, int(c)))
        mine = partial.filter(pa.array(used & (results["component"] == c).to_numpy()))
        ref = joint.filter(pc.and_(pc.equal(joint.column("component"), int(c)), pc.invert(joint.column("provisional"))))
        placed = place_provisional_agents(mine, theirs, level=DEFAULT_LEVEL, model=model)
        ref_lo, ref_hi = (ref.column(k).to_numpy(zero_copy_only=False) for k in ("mu_lo", "mu_hi"))
        best, worst = ranks_among(placed["mu_lo"], placed["mu_hi"], ref_lo, ref_hi)
        frames.append(placed.assign(component=int(c), rank_lo=best, rank_hi=worst))
    placed = pd.concat(frames, ignore_index=True)
    rows = pd.DataFrame({c: pd.Series([None] * len(placed), dtype=object) for c in joint.column_names})
    for column in placed.columns:
        if column in rows:
            rows[column] = placed[column].to_numpy()
    rows["provisional"] = True
    return pa.Table.from_pandas(rows[joint.column_names], schema=joint.schema, preserve_index=False), counts


@dg.asset(
    **benchmark_asset(
        "Each agent's gap to an oracle that solves every test case (50/90/99% confidence), the share of test "
        "cases it beats, its rank range and status (as in agent_ratings: main-component agents first, measured against the "
        "main component's test cases; disconnected ones against their own; unplaced ones without a gap), and the lineage of "
        "the row: its upload, the benchmark's inputs digest and the code version."
    ),
)
def competency_gap_tables(
    context: dg.AssetExecutionContext,
    storage: ObjectStorage,
    test_case_ratings: Stored,
    agent_ratings: Stored,
    input_manifests: Stored,
    match_tables: Stored,
) -> dg.Output:
    benchmark = context.partition_key
    with retried_on_storage_errors(context):
        if not agent_ratings.exists:  # withdrawn
            return dg.Output(None, metadata={"withdrawn": True})
        digest = agent_ratings.digest
        scoring = read_scoring(storage.store, benchmark)
        # no ids: the gaps never read them, and a wide benchmark's are millions of strings to convert
        test_cases = test_case_ratings.read(["mu", "component"]).to_pandas()
        agents = agent_ratings.read().to_pandas()
        sources = input_manifests.read(["agent_id", "source_path", "source_version"]).to_pandas()
    gaps = gap_table(test_cases, agents, scoring)
    gaps = gaps.merge(sources, on="agent_id", how="left", validate="one_to_one")
    gaps["inputs_digest"] = digest
    gaps["code_version"] = RATING_VERSION
    range_metadata = {}
    if scoring is not None:  # what graded gaps rest on: the declared metric range (issue 22, item 4)
        range_metadata = stated_range(context, match_tables, benchmark, scoring, gaps)
    return dg.Output(
        gaps,
        metadata={
            "inputs_digest": digest,
            "code_version": RATING_VERSION,
            "top_agents_with_gaps": frame_table(
                gaps, ["agent_id", "rating", "gap_50", "gap_90", "gap_99", "pct_beaten_50", "status"]
            ),
            "hardest_test_case_rating": round(float(gaps["hardest_test_case_rating"].iloc[0]), 1),
            **range_metadata,
        },
    )


STANDING_COLUMNS = ["rank", "rank_lo", "rank_hi", "provisional", "status", "status_reason"]
STATUS_ORDER = {"rated": 0, "provisional": 0, "disconnected": 1, "unplaced": 2}


def gap_table(test_cases: pd.DataFrame, agents: pd.DataFrame, scoring) -> pd.DataFrame:
    """Every agent's gap (each measured within its own component), with its standing; the main component first.

    Rows: the main component's agents (rated and provisional) by rating, then the disconnected ones,
    then the unplaced ones (no rating, so no gap: their gap columns are null).
    """
    agents = agents.astype({"agent_id": str})
    placed = agents[agents["mu"].notna()]
    gaps = competency_gaps(test_cases, placed[["agent_id", "mu", "component"]], scoring=scoring)
    gaps = agents[["agent_id", *[c for c in STANDING_COLUMNS if c in agents]]].merge(
        gaps, on="agent_id", how="left", validate="one_to_one"
    )
    gaps["component"] = gaps["component"].fillna(-1).astype("int64")
    order = gaps["status"].map(STATUS_ORDER).fillna(3)
    gaps = gaps.assign(_order=order).sort_values(["_order", "rating", "agent_id"], ascending=[True, False, True], kind="stable")
    standing = [c for c in STANDING_COLUMNS if c in gaps]
    columns = [c for c in gaps.columns if c not in standing and c != "_order"] + standing
    return gaps[columns].reset_index(drop=True)


def stated_range(context, match_tables: Stored, benchmark: str, scoring, gaps: pd.DataFrame) -> dict:
    """The metric range the gaps assume beside the observed one: metadata, three columns of ``gaps``
    (``assumed_metric_lo``, ``assumed_metric_hi``, ``range_warning``, for the report), and a logged warning
    when the declared range is far wider than the observed one."""
    from agielo_dagster.rating.gap_range import range_assumption

    with retried_on_storage_errors(context):
        metric = match_tables.read(["metric"]).column("metric")
    observed = pc.min_max(metric)
    stated = range_assumption(scoring, float(observed["min"].as_py()), float(observed["max"].as_py()))
    gaps["assumed_metric_lo"] = stated.declared_lo
    gaps["assumed_metric_hi"] = stated.declared_hi
    gaps["range_warning"] = stated.warning
    if stated.far:
        context.log.warning(f"{benchmark}: {stated.warning}")
    return stated.as_metadata()
