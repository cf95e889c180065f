"""Ratings of a benchmark: one engine pass gives snapshots, ratings and the reliability report."""

import io
import time

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain import figures as figs
from agielo_dagster.domain.lineage import CODE_VERSION, inputs_digest
from agielo_dagster.domain.report import png_data_uri, render_report
from agielo_dagster.rating import binned_calibration, competency_gaps, rate

from .automation import ON_UPSTREAM_CHANGE, STORAGE_RETRY, warehouse_out
from .matches import load_benchmark_spec
from .partitions import benchmark_partitions
from .raw import accepted_path


class RatingConfig(dg.Config):
    seed: int = 42
    shuffles: int = 1


@dg.multi_asset(
    outs={
        "rating_snapshots": warehouse_out(
            "fraction, kind, id, mu, sigma: every agent at 1%…100% of the matches, test cases at 10/25/50/100%."
        ),
        "test_case_ratings": warehouse_out(
            "Difficulty of every test case: test_case_id, mu, sigma, matches, mean_score, mean_metric."
        ),
        "agent_ratings": warehouse_out("Competency of every agent: agent_id, mu, sigma, matches, mean_score, mean_metric."),
        "reliability_reports": warehouse_out("fraction, rho_test_cases, rho_agents, mae, mse as the share of matches grows."),
    },
    retry_policy=STORAGE_RETRY,
    partitions_def=benchmark_partitions,
    ins={"match_tables": dg.AssetIn(metadata={"columns": ["test_case_id", "agent_id", "metric", "score"]})},
)
def ratings(context: dg.AssetExecutionContext, config: RatingConfig, match_tables: pd.DataFrame):
    result = rate(match_tables, seed=config.seed, shuffles=config.shuffles)
    agents = result.agents.sort_values(["mu", "agent_id"], ascending=[False, True])
    hardest = result.test_cases.nlargest(5, "mu")
    final = result.reliability.iloc[-1]
    common = {"seed": config.seed, "shuffles": config.shuffles, "code_version": CODE_VERSION, "matches": len(match_tables)}
    yield dg.Output(result.snapshots, "rating_snapshots", metadata=common)
    yield dg.Output(
        result.test_cases,
        "test_case_ratings",
        metadata=common
        | {
            "hardest_test_cases": dg.MetadataValue.md(
                hardest[["test_case_id", "mu", "sigma", "mean_metric"]].to_markdown(index=False)
            )
        },
    )
    yield dg.Output(
        result.agents,
        "agent_ratings",
        metadata=common
        | {
            "top_agents": dg.MetadataValue.md(
                agents.head(10)[["agent_id", "mu", "sigma", "mean_metric"]].to_markdown(index=False)
            )
        },
    )
    yield dg.Output(
        result.reliability,
        "reliability_reports",
        metadata=common
        | {
            "rho_test_cases_at_100": float(final["rho_test_cases"]),
            "rho_agents_at_100": float(final["rho_agents"]),
            "mae_at_100": float(final["mae"]),
            "mse_at_100": float(final["mse"]),
        },
    )


@dg.asset(
    retry_policy=STORAGE_RETRY,
    partitions_def=benchmark_partitions,
    ins={
        "test_case_ratings": dg.AssetIn(),
        "agent_ratings": dg.AssetIn(metadata={"columns": ["agent_id", "mu"]}),
        "input_manifests": dg.AssetIn(),
        "reliability_reports": dg.AssetIn(),
        "rating_snapshots": dg.AssetIn(),
        "match_tables": dg.AssetIn(metadata={"columns": ["test_case_id", "agent_id", "metric", "score"]}),
    },
    automation_condition=ON_UPSTREAM_CHANGE,
    io_manager_key="warehouse_io_manager",
    group_name="ratings",
    code_version=CODE_VERSION,
    kinds={"pandas", "parquet"},
    description="Each agent's gap to an oracle that solves every test case (50/90/99% confidence), the share of "
    "test cases it beats, and the lineage of the row: its upload, the benchmark's inputs and the code version. "
    "Renders the benchmark's figures and its HTML report (warehouse/figures/, warehouse/reports/).",
)
def competency_gap_tables(
    context: dg.AssetExecutionContext,
    storage: ObjectStorage,
    test_case_ratings: pd.DataFrame,
    agent_ratings: pd.DataFrame,
    input_manifests: pd.DataFrame,
    reliability_reports: pd.DataFrame,
    rating_snapshots: pd.DataFrame,
    match_tables: pd.DataFrame,
) -> pd.DataFrame:
    benchmark = context.partition_key
    spec = load_benchmark_spec(storage, benchmark)
    gaps = competency_gaps(test_case_ratings, agent_ratings, scoring=spec.scoring)
    sources = input_manifests[["agent_id", "source_path", "source_version"]]
    digest = inputs_digest(input_manifests[["source_path", "source_version"]].itertuples(index=False))
    gaps = gaps.merge(sources, on="agent_id", how="left", validate="one_to_one")
    gaps["inputs_digest"] = digest
    gaps["code_version"] = CODE_VERSION
    hardest = hardest_test_cases(storage, benchmark, test_case_ratings, input_manifests)
    started = time.perf_counter()
    drawn = {
        "rating_distribution": figs.rating_distribution(
            test_case_ratings, agent_ratings, title=f"{benchmark}: difficulty and competency"
        ),
        "reliability_curves": figs.reliability_curves(reliability_reports, title=f"{benchmark}: reliability"),
        "agent_trajectories": figs.agent_trajectories(rating_snapshots, title=f"{benchmark}: agent ratings"),
        "calibration": figs.calibration(
            binned_calibration(match_tables, test_case_ratings, agent_ratings), title=f"{benchmark}: calibration"
        ),
        "competency_gap": figs.competency_gap(gaps, title=f"{benchmark}: competency gap"),
    }
    figures = {name: figs.to_png(fig) for name, fig in drawn.items()}
    for name, png in figures.items():
        storage.write_bytes(f"warehouse/figures/{benchmark}/{name}.png", png)
    report = render_report(
        benchmark, figures, gaps, hardest, reliability_reports, input_manifests, CODE_VERSION, digest, spec.description
    )
    report_path = f"warehouse/reports/{benchmark}.html"
    storage.write_bytes(report_path, report.encode())
    render_seconds = time.perf_counter() - started
    top = gaps.head(10)[["agent_id", "rating", "gap_50", "gap_90", "gap_99", "pct_beaten_50"]]
    context.add_output_metadata(
        {
            "top_agents_with_gaps": dg.MetadataValue.md(top.to_markdown(index=False, floatfmt=".1f")),
            "hardest_test_cases": dg.MetadataValue.md(hardest.to_markdown(index=False, floatfmt=".1f")),
            "hardest_test_case_rating": float(gaps["hardest_test_case_rating"].iloc[0]),
            "inputs_digest": digest,
            "code_version": CODE_VERSION,
            "report": dg.MetadataValue.path(storage.uri(report_path)),
            "render_seconds": render_seconds,
            **{f"figure_{name}": dg.MetadataValue.md(f"![{name}]({png_data_uri(png)})") for name, png in figures.items()},
        }
    )
    return gaps


def hardest_test_cases(
    storage: ObjectStorage, benchmark: str, test_cases: pd.DataFrame, manifest: pd.DataFrame, n: int = 10
) -> pd.DataFrame:
    """The n hardest test cases with their metadata columns (a value that differs between uploads shows as 'varies')."""
    hardest = test_cases.nlargest(n, "mu")[["test_case_id", "mu", "sigma", "mean_metric"]].rename(columns={"mu": "rating"})
    values: dict[str, dict[str, set]] = {}
    for agent in manifest["agent_id"]:
        data = storage.read_bytes(accepted_path(benchmark, agent))
        meta = [c for c in pq.read_schema(io.BytesIO(data)).names if c.startswith("meta.")]
        if not meta:
            continue  # no metadata columns: nothing to read
        frame = pq.read_table(io.BytesIO(data), columns=["test_case_id", *meta]).to_pandas()
        frame = frame[frame["test_case_id"].isin(hardest["test_case_id"])]
        for row in frame.itertuples(index=False):
            for column, value in zip(meta, row[1:], strict=True):
                values.setdefault(column.removeprefix("meta."), {}).setdefault(row[0], set()).add(str(value))
    for column, by_case in values.items():
        hardest[column] = [
            (next(iter(by_case[t])) if len(by_case.get(t, ())) == 1 else ("varies" if by_case.get(t) else ""))
            for t in hardest["test_case_id"]
        ]
    return hardest.reset_index(drop=True)
