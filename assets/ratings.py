"""Ratings of a benchmark (one engine call: snapshots, ratings, reliability) and its competency gaps."""

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.layout import warehouse_path
from agielo_dagster.domain.ledger import read_ledger
from agielo_dagster.domain.lineage import CODE_VERSION
from agielo_dagster.domain.status import DIGEST_KEY
from agielo_dagster.rating.predict import competency_gaps

from .common import benchmark_output, digest_of, frame_table, retried_on_storage_errors
from .partitions import benchmark_partitions

ENGINE_COLUMNS = ["test_case_id", "agent_id", "metric", "score"]
SEED = 42


@dg.multi_asset(
    outs={
        "rating_snapshots": benchmark_output(
            "fraction, kind, id, mu, sigma: every agent at 1%…100% of the matches, test cases at 10/25/50/100%."
        ),
        "test_case_ratings": benchmark_output(
            "Difficulty of every test case: test_case_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd, "
            "component, and its rating history (mu_after_j, sigma_after_j) that places new agents."
        ),
        "agent_ratings": benchmark_output(
            "Competency of every agent: agent_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd, the 95% "
            "interval mu_lo..mu_hi (match order and sampling of test cases), rank, rank_lo, rank_hi (ties by interval), "
            "component."
        ),
        "reliability_reports": benchmark_output(
            "fraction, rho_test_cases, rho_agents, mae, mse, matches_outside_bins, orders as the share of matches grows."
        ),
    },
    partitions_def=benchmark_partitions,
    deps=[dg.AssetDep("match_tables"), dg.AssetDep("provisional_matches")],
)
def ratings(context: dg.AssetExecutionContext, storage: ObjectStorage):
    from agielo_dagster.rating import DEFAULT_SHUFFLES, rate_parquet  # the engine (and numba) load when a run rates

    store = storage.store
    path = warehouse_path("match_tables", context.partition_key)
    with retried_on_storage_errors(context):
        digest = (store.parquet_metadata(path) or {}).get(DIGEST_KEY, "")
        source = store.parquet_source(path)
        partial = store.read_table(warehouse_path("provisional_matches", context.partition_key), columns=ENGINE_COLUMNS)
    # straight from the parquet file, a row group at a time: no match table is held in memory
    result = rate_parquet(source, seed=SEED, shuffles=DEFAULT_SHUFFLES)
    agent_table = with_provisional_agents(result.agents, result.test_cases, partial)
    agents = agent_table.to_pandas().sort_values(["rank", "mu", "agent_id"], ascending=[True, False, True])
    test_cases = result.test_cases.select(["test_case_id", "mu", "sigma", "mean_metric"]).to_pandas()
    final = result.reliability.to_pandas().iloc[-1]
    common = {
        "inputs_digest": digest,
        "seed": SEED,
        "orders": DEFAULT_SHUFFLES,
        "code_version": CODE_VERSION,
        "matches": result.n_matches,
        "components": result.n_components,
    }
    yield dg.Output(result.snapshots, "rating_snapshots", metadata=common)
    yield dg.Output(
        result.test_cases,
        "test_case_ratings",
        metadata=common | {"hardest_test_cases": frame_table(test_cases.nlargest(10, "mu"), list(test_cases.columns), digits=3)},
    )
    yield dg.Output(
        agent_table,
        "agent_ratings",
        metadata=common
        | {
            "provisional_agents": int(agents["provisional"].sum()),
            "top_agents": frame_table(
                agents, ["rank", "rank_lo", "rank_hi", "agent_id", "mu", "mu_lo", "mu_hi", "mean_metric", "provisional"], digits=1
            ),
        },
    )
    yield dg.Output(
        result.reliability,
        "reliability_reports",
        metadata=common
        | {
            "rho_test_cases_at_100": round(float(final["rho_test_cases"]), 4),
            "rho_agents_at_100": round(float(final["rho_agents"]), 4),
            "mae_at_100": round(float(final["mae"]), 4),
            "mse_at_100": round(float(final["mse"]), 5),
            "matches_outside_bins_at_100": int(final["matches_outside_bins"]),
        },
    )


def with_provisional_agents(agents: pa.Table, test_cases: pa.Table, partial: pa.Table) -> pa.Table:
    """The joint agents, and the provisional ones placed against the frozen test-case ratings (``provisional`` marks them).

    A provisional agent gets its interval at the joint table's level; only its test cases that the
    benchmark rates are used. It is placed from its results weighted by difficulty stratum
    (``stratum_weights``: what a plan's stratified sample was drawn by), so that its rating answers
    to the whole benchmark. It takes no rank and moves nobody's: its ``rank`` is null, and
    ``rank_lo``..``rank_hi`` are the ranks its interval allows among the jointly rated agents of its
    component (``ranks_among``; a placement from a few dozen test cases is often "somewhere from 2nd to 7th").
    """
    joint = agents.append_column("provisional", pa.array([False] * agents.num_rows))
    if partial.num_rows:
        ids = partial.column("test_case_id").cast(pa.string())
        partial = partial.filter(pc.is_in(ids, value_set=test_cases.column("test_case_id").cast(pa.string())))
    if partial.num_rows == 0:
        return joint
    from agielo_dagster.rating import DEFAULT_LEVEL, place_provisional_agents, ranks_among

    # in proportion to the partial uploads' own matches: the test-case table is never converted whole
    placed = place_provisional_agents(partial, test_cases, level=DEFAULT_LEVEL)
    rows = pd.DataFrame({c: pd.Series([None] * len(placed), dtype=object) for c in joint.column_names})
    for column in placed.columns:
        if column in rows:
            rows[column] = placed[column].to_numpy()
    # a provisional agent belongs to the component of most of its test cases (the ratings it was placed against)
    at = pc.index_in(partial.column("test_case_id").cast(pa.string()), value_set=test_cases.column("test_case_id").cast(pa.string()))
    played = partial.select(["agent_id"]).to_pandas().astype(str)
    played["component"] = test_cases.column("component").take(at).to_numpy(zero_copy_only=False)
    rows["component"] = placed["agent_id"].map(played.groupby("agent_id")["component"].agg(lambda c: c.mode().min())).to_numpy()
    for c in rows["component"].unique():
        mine = (rows["component"] == c).to_numpy()
        rated = pc.equal(joint.column("component"), c)
        ref_lo, ref_hi = (joint.column(k).filter(rated).to_numpy(zero_copy_only=False) for k in ("mu_lo", "mu_hi"))
        best, worst = ranks_among(placed.loc[mine, "mu_lo"], placed.loc[mine, "mu_hi"], ref_lo, ref_hi)
        rows.loc[mine, "rank_lo"], rows.loc[mine, "rank_hi"] = best, worst
    rows["provisional"] = True
    extra = pa.Table.from_pandas(rows[joint.column_names], schema=joint.schema, preserve_index=False)
    return pa.concat_tables([joint, extra])


@dg.asset(
    partitions_def=benchmark_partitions,
    ins={
        "test_case_ratings": dg.AssetIn(metadata={"columns": ["test_case_id", "mu", "component"]}),
        "agent_ratings": dg.AssetIn(),
        "input_manifests": dg.AssetIn(),
    },
    io_manager_key="warehouse_io_manager",
    group_name="ratings",
    code_version=CODE_VERSION,
    kinds={"parquet"},
    owners=["team:evaluation"],
    description="Each agent's gap to an oracle that solves every test case (50/90/99% confidence), the share of test "
    "cases it beats, and the lineage of the row: its upload, the benchmark's inputs digest and the code version.",
)
def competency_gap_tables(
    context: dg.AssetExecutionContext,
    storage: ObjectStorage,
    test_case_ratings: pa.Table,
    agent_ratings: pa.Table,
    input_manifests: pa.Table,
) -> dg.Output:
    benchmark = context.partition_key
    digest = digest_of(agent_ratings)
    with retried_on_storage_errors(context):
        ledger = read_ledger(storage.store, benchmark)
    scoring = ledger.make_scoring() if ledger else None
    gaps = competency_gaps(test_case_ratings.to_pandas(), agent_ratings.to_pandas(), scoring=scoring)
    sources = input_manifests.to_pandas()[["agent_id", "source_path", "source_version"]]
    gaps = gaps.merge(sources, on="agent_id", how="left", validate="one_to_one")
    provisional = agent_ratings.select(["agent_id", "provisional"]).to_pandas().astype({"agent_id": str})
    gaps = gaps.merge(provisional, on="agent_id", how="left", validate="one_to_one")
    gaps["inputs_digest"] = digest
    gaps["code_version"] = CODE_VERSION
    return dg.Output(
        gaps,
        metadata={
            "inputs_digest": digest,
            "code_version": CODE_VERSION,
            "top_agents_with_gaps": frame_table(
                gaps, ["agent_id", "rating", "gap_50", "gap_90", "gap_99", "pct_beaten_50", "provisional"]
            ),
            "hardest_test_case_rating": round(float(gaps["hardest_test_case_rating"].iloc[0]), 1),
        },
    )
