"""Nightly per-benchmark estimators: how AGI-Elo compares with other methods, and how sure it is.

The estimators (scipy) are imported inside the assets: loading the code location stays fast.
"""

import itertools

import dagster as dg
import numpy as np
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.ledger import read_model, read_scoring
from agielo_dagster.domain.matches import rated_matches
from agielo_dagster.domain.stored import Stored

from .common import benchmark_asset, frame_table


class UncertaintyConfig(dg.Config):
    resamples: int = 200
    seed: int = 42


def _nightly(description: str) -> dict:
    return benchmark_asset(description, "estimators", run="nightly")


@dg.asset(
    **_nightly(
        "The benchmark's ratings against the AGI-Elo paper's Glicko pass, Plackett-Luce (ONEBench) and the mean "
        "metric: Kendall τ, Spearman ρ and top-k agreement of the agent rankings, per pair of methods, among the agents "
        "with a rank (jointly rated in the main component; provisional, disconnected and unplaced agents are left out). "
        "Materialized nightly."
    ),
)
def estimator_comparison(
    context: dg.AssetExecutionContext, match_tables: Stored, test_case_ratings: Stored, agent_ratings: Stored
) -> pd.DataFrame | None:
    if not (match_tables.exists and agent_ratings.exists):
        return None  # withdrawn: no accepted upload left
    from scipy.stats import kendalltau, spearmanr

    from agielo_dagster.rating import plackett_luce, rate

    agents = agent_ratings.read(["agent_id", "mu", "rank"]).to_pandas()
    matches = rated_matches(test_case_ratings, match_tables).to_pandas()
    # only agents with a rank are compared: a provisional, disconnected or unplaced agent has none (and no
    # matches in the joint table, or only in another component), so the other methods cannot rank it beside them
    ranked = agents[agents["rank"].notna()].astype({"agent_id": str})
    keep = matches["agent_id"].astype(str).isin(set(ranked["agent_id"]))
    if not keep.all():
        matches = matches[keep].assign(agent_id=lambda m: m["agent_id"].astype(str))
    ratings = pd.DataFrame({"agielo": ranked.set_index("agent_id")["mu"]})
    ratings["plackett_luce"] = plackett_luce(matches, alpha=0.1, by="score").set_index("agent_id")["rating"]
    ratings["glicko"] = rate(matches, model="glicko", with_reliability=False).agents.set_index("agent_id")["mu"]
    ratings["mean_metric"] = matches.groupby("agent_id", observed=True)["score"].mean()
    k = min(5, len(ratings))
    rows = []
    for a, b in itertools.combinations(ratings.columns, 2):
        top_a, top_b = set(ratings[a].nlargest(k).index), set(ratings[b].nlargest(k).index)
        rows.append(
            {
                "method_a": a,
                "method_b": b,
                "kendall_tau": float(kendalltau(ratings[a], ratings[b])[0]),
                "spearman": float(spearmanr(ratings[a], ratings[b])[0]),
                "top_k": k,
                "top_k_agreement": len(top_a & top_b) / k,
            }
        )
    table = pd.DataFrame(rows)
    ranks = ratings.rank(ascending=False, method="min").astype("Int64").sort_values("agielo")
    context.add_output_metadata(
        {
            "agreement": frame_table(table, list(table.columns), digits=3),
            "ranks_by_method": frame_table(ranks.reset_index(names="agent_id"), ["agent_id", *ranks.columns]),
            "min_kendall_tau": float(table["kendall_tau"].min()) if len(table) else float("nan"),
            "agents_compared": len(ratings),
            "agents_left_out": len(agents) - len(ranked),
            "matches": len(matches),
        }
    )
    return table


@dg.asset(
    **_nightly(
        "Bootstrap confidence intervals (resampling test cases) of agent ratings, competency gaps and "
        "Plackett-Luce ratings. Materialized nightly."
    ),
)
def rating_uncertainty(
    context: dg.AssetExecutionContext, config: UncertaintyConfig, match_tables: Stored, test_case_ratings: Stored
) -> pd.DataFrame | None:
    if not match_tables.exists:
        return None  # withdrawn
    from agielo_dagster.rating import bootstrap

    matches = rated_matches(test_case_ratings, match_tables).to_pandas()
    table = bootstrap(matches, n_resamples=config.resamples, seed=config.seed)
    ratings = table[table["quantity"] == "rating"].sort_values("estimate", ascending=False)
    context.add_output_metadata(
        {
            "resamples": config.resamples,
            "seed": config.seed,
            "matches": len(matches),
            "rating_intervals": frame_table(ratings, ["agent_id", "estimate", "low", "high"], limit=10),
            "median_rating_ci_width": float(np.median(ratings["high"] - ratings["low"])),
        }
    )
    return table


@dg.asset(
    **_nightly(
        "The held-out predictive check beside reliability_reports: 5-fold over matches, each match predicted from "
        "ratings fitted without it; log-loss and Brier score (binary metrics) or MAE in metric units (graded), for "
        "the ratings, the ratings with σ, the ratings through a calibrated link (graded), the additive two-way model, and "
        "the agent-mean and test-case-mean baselines; the metadata name the default prediction, its margin over the "
        "baselines and a verdict. Materialized nightly."
    ),
)
def reliability_heldout(
    context: dg.AssetExecutionContext, storage: ObjectStorage, match_tables: Stored, test_case_ratings: Stored
) -> pd.DataFrame | None:
    if not match_tables.exists:
        return None  # withdrawn
    from agielo_dagster.rating import heldout_check
    from agielo_dagster.rating.heldout import heldout_summary

    scoring = read_scoring(storage.store, context.partition_key)
    settings = {"model": read_model(storage.store, context.partition_key)}  # the benchmark's model, as rated
    matches = rated_matches(test_case_ratings, match_tables)
    table = heldout_check(matches, folds=5, seed=0, scoring=scoring, settings=settings).to_pandas()
    summary = {k: round(float(v), 4) if isinstance(v, float) else v for k, v in heldout_summary(table).items()}
    context.add_output_metadata({"check": frame_table(table, list(table.columns), limit=20, digits=4), **summary})
    return table
