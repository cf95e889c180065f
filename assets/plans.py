"""placement_plans: which test cases a new model should be evaluated on next, to be placed cheaply.

`agielo plan --benchmark B --agent NAME --budget N` materializes this asset for one benchmark: the
next N test cases not yet evaluated, a stratified random sample by difficulty, written to
``<root>/plans/<B>/<NAME>.csv`` (spreadsheet-safe: ids that could start a formula get a leading
``'``) with the exact ids in ``<root>/plans/<B>/<NAME>.jsonl``, and kept as the asset's output. Results uploaded for a plan's test
cases make a provisional agent, placed against the frozen test-case ratings with each result
weighted by its stratum; a full upload makes it a regular agent.

The sample is Neyman-allocated at the agent's current rating when it has one (a provisional or
regular agent): more test cases from the strata near its rating, at least one from every stratum,
a fifth of the sample in proportion to the strata's sizes; with no rating yet, at the new-agent
prior N(1500, 350²). The placement study (``tests/rating/test_selection.py``,
``benchmarks/placement.py``) measured this design at 5% of a benchmark: median error 25.5 Elo
against 34.2 for a random sample. Greedy selection by Fisher information, as a CAT does, is biased
on the demo's real classifiers (digits: 87 Elo median error, 30% interval coverage at 5%): they do
not fit the rating model exactly, and test cases chosen near the agent's rating say something
else than the whole benchmark.
"""

import math

import dagster as dg
import pandas as pd
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.contract import IngestError, check_name
from agielo_dagster.domain.exports import jsonl_bytes, spreadsheet_csv
from agielo_dagster.domain.layout import plan_path, plan_twin_path
from agielo_dagster.domain.ledger import read_accepted, read_ledger
from agielo_dagster.domain.stored import Stored

from .common import benchmark_asset, frame_table, retried_on_storage_errors


class PlanConfig(dg.Config):
    agent: str
    budget: int = 50


@dg.asset(
    **benchmark_asset(
        "The next test cases to evaluate a new agent on (a random sample by difficulty stratum of those not yet "
        "evaluated, more of it near the agent's rating; a partial upload is placed with stratum weights and stands for the "
        "whole benchmark), written to <root>/plans/<benchmark>/<agent>.csv: test_case_id, mu, sigma, information.",
        "placement",
        run="on_demand",
        kinds=("parquet", "csv"),
    ),
)
def placement_plans(
    context: dg.AssetExecutionContext,
    config: PlanConfig,
    storage: ObjectStorage,
    test_case_ratings: Stored,
    agent_ratings: Stored,
) -> dg.Output:
    from agielo_dagster.rating import select_test_cases

    benchmark, store = context.partition_key, storage.store
    try:
        agent = check_name(config.agent, "agent", plan_path(benchmark, config.agent))
    except IngestError as err:
        raise dg.Failure(str(err), allow_retries=False) from None
    if config.budget < 1:
        raise dg.Failure(f"budget must be at least 1, got {config.budget}", allow_retries=False)
    with retried_on_storage_errors(context):
        if not test_case_ratings.exists:
            raise dg.Failure(f"benchmark {benchmark!r} has no ratings yet: rate it first (agielo run)", allow_retries=False)
        test_cases = test_case_ratings.read()
        ratings = agent_ratings.read().to_pandas().astype({"agent_id": str})
        ledger = read_ledger(store, benchmark)
        done: list[str] = []
        row = next((r for r in ledger.accepted if r["agent"] == agent), None) if ledger is not None else None
        if row is not None:
            done = read_accepted(store, benchmark, row, columns=["test_case_id"]).column("test_case_id").to_pylist()
    known = ratings[ratings["agent_id"] == agent]
    if "status" in known:  # a disconnected agent's rating is on another scale; an unplaced one has none
        known = known[known["status"].isin(["rated", "provisional"])]
    rating = float(known["mu"].iloc[0]) if len(known) else None
    rating = rating if rating is not None and math.isfinite(rating) else None
    estimate = None  # no rating yet: the new-agent prior
    if rating is not None:
        sigma = float(known["sigma"].iloc[0])
        estimate = (rating, sigma) if math.isfinite(sigma) else rating
    plan = select_test_cases(test_cases, config.budget, agent_rating=estimate, exclude=done, method="stratified", seed=0)
    plan = plan.to_pandas() if hasattr(plan, "to_pandas") and not isinstance(plan, pd.DataFrame) else plan
    plan = plan.assign(agent_id=agent)
    with retried_on_storage_errors(context):
        # the csv is for spreadsheets (text cells that could start a formula get a leading '); the jsonl twin
        # beside it keeps every id exactly, for programs (written first: the csv is what the user looks for)
        written = plan.drop(columns="agent_id")
        store.write_bytes(plan_twin_path(benchmark, agent), jsonl_bytes(written))
        store.write_bytes(plan_path(benchmark, agent), spreadsheet_csv(written))
    context.log.info(f"{len(plan)} test case(s) planned for {agent} on {benchmark}: {store.uri(plan_path(benchmark, agent))}")
    return dg.Output(
        plan,
        metadata={
            "agent": agent,
            "planned": len(plan),
            "already_evaluated": len(done),
            "current_rating": round(rating, 1) if rating is not None else "none yet",
            "plan_file": dg.MetadataValue.path(store.uri(plan_path(benchmark, agent))),
            "plan_ids_file": dg.MetadataValue.path(store.uri(plan_twin_path(benchmark, agent))),
            "plan": frame_table(plan, [c for c in ("test_case_id", "mu", "sigma", "information") if c in plan], limit=20),
        },
    )
