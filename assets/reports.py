"""benchmark_reports: the paper's figures and a self-contained HTML report per benchmark.

Written last in a rating run: its output (one row per artifact) records the inputs digest that
says the whole benchmark is current. Figures go to ``warehouse/figures/<benchmark>/``, the report
to ``warehouse/reports/<benchmark>.html``; both stay bounded in pixels and bytes whatever the
number of agents.
"""

import hashlib

import dagster as dg
import pandas as pd
import pyarrow as pa
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.exports import jsonl_bytes, spreadsheet_csv
from agielo_dagster.domain.layout import (
    explorer_path,
    figure_path,
    figures_folder,
    in_folder,
    report_path,
    suspects_path,
    suspects_twin_path,
)
from agielo_dagster.domain.ledger import first_accepted, higher_is_better, read_summary
from agielo_dagster.domain.lineage import RATING_VERSION
from agielo_dagster.domain.matches import rated_matches, test_case_metadata
from agielo_dagster.domain.standing import fragility_of
from agielo_dagster.domain.stored import Stored
from agielo_dagster.domain.suspects import SUSPECT_COLUMNS, exclusion_of, suspect_table

from .common import benchmark_asset, frame_table, retried_on_storage_errors

HARDEST_SHOWN = 10


@dg.asset(
    **benchmark_asset(
        "The benchmark's figures (rating distribution, reliability, agent trajectories, calibration, competency "
        "gap) and its static HTML report; one row per artifact with its path, size and hash.",
        "reports",
        kinds=("parquet", "html"),
    ),
)
def benchmark_reports(
    context: dg.AssetExecutionContext,
    storage: ObjectStorage,
    test_case_ratings: Stored,
    agent_ratings: Stored,
    reliability_reports: Stored,
    competency_gap_tables: Stored,
    input_manifests: Stored,
    match_tables: Stored,
    test_case_tags: Stored,
    slice_ratings: Stored,
    ability_masses: Stored,
    rating_snapshots: Stored,
) -> dg.Output:
    # matplotlib is imported here, where it is used, so that loading the code location stays fast
    from agielo_dagster.domain import figures as figs
    from agielo_dagster.domain.explorer import render_explorer
    from agielo_dagster.domain.report import png_data_uri, render_report
    from agielo_dagster.domain.trajectories import streamed_trajectories
    from agielo_dagster.rating import binned_calibration

    benchmark = context.partition_key
    store = storage.store
    with retried_on_storage_errors(context):
        withdrawn = not competency_gap_tables.exists
    if withdrawn:  # no accepted upload left
        with retried_on_storage_errors(context):
            figures = [in_folder(figures_folder(benchmark), n) for n in store.list_dir(figures_folder(benchmark))]
            for path in [
                report_path(benchmark),
                explorer_path(benchmark),
                suspects_path(benchmark),
                suspects_twin_path(benchmark),
                *figures,
            ]:
                store.remove(path)
            store.remove_empty_folder(figures_folder(benchmark))
        return dg.Output(None, metadata={"withdrawn": True})
    with retried_on_storage_errors(context):
        digest = competency_gap_tables.digest
        ratings, matches = agent_ratings.read(), rated_matches(test_case_ratings, match_tables)
        cases = test_case_ratings.read([*REPORT_TEST_CASE_COLUMNS, *SUSPECT_COLUMNS[1:-1]])  # not the rating histories
        manifests, tags, slices, masses = (t.read() for t in (input_manifests, test_case_tags, slice_ratings, ability_masses))
        gaps, reliability = competency_gap_tables.read().to_pandas(), reliability_reports.read().to_pandas()
    agents = ratings.to_pandas()
    fragility = fragility_of(ratings.schema.metadata)
    # before the test cases are converted: on a wide benchmark its look-up of their ids is the report's peak
    calibration = binned_calibration(matches, cases, agents[agents["mu"].notna()]).to_pandas()
    test_cases = report_test_cases(cases)
    # the figures, the hardest test cases and the explorer's difficulty axis show the main component (rated and
    # provisional agents, its test cases): the others are on no common scale; the tables list every agent
    on_scale = agents[agents["status"].isin(["rated", "provisional"])] if "status" in agents else agents
    gaps_on_scale = gaps[gaps["status"].isin(["rated", "provisional"])] if "status" in gaps else gaps
    main_cases = test_cases
    if "component" in test_cases and (test_cases["component"] != 0).any():  # no copy of a benchmark all on one scale
        main_cases = test_cases[test_cases["component"] == 0]
    with retried_on_storage_errors(context):
        summary = read_summary(store, benchmark)
        description = summary.description if summary else ""
        direction = higher_is_better(store, benchmark)
        hardest = main_cases.nlargest(HARDEST_SHOWN, "mu")[["test_case_id", "mu", "sigma", "mean_metric"]]
        hardest = hardest.rename(columns={"mu": "rating"}).astype({"test_case_id": str})
        if summary is not None:
            uploads = first_accepted(store, benchmark)
            hardest = hardest.merge(
                test_case_metadata(store, benchmark, uploads, list(hardest["test_case_id"])), on="test_case_id"
            )
        drawn = {
            "rating_distribution": figs.rating_distribution(
                main_cases, on_scale, title=f"{benchmark}: difficulty and competency"
            ),
            "reliability_curves": figs.reliability_curves(reliability, title=f"{benchmark}: reliability"),
            "agent_trajectories": figs.agent_trajectories(  # streamed: the agents' row groups alone are read
                streamed_trajectories(lambda: rating_snapshots.parts(["fraction", "id", "mu"], where={"kind": "agent"})),
                title=f"{benchmark}: agent ratings",
            ),
            "calibration": figs.calibration(calibration, title=f"{benchmark}: calibration"),
            "competency_gap": figs.competency_gap(gaps_on_scale, title=f"{benchmark}: competency gap"),
        }
        pngs = {name: figs.to_png(fig) for name, fig in drawn.items()}
        suspects = suspect_table(cases, matches, agents)
        for name, png in pngs.items():
            store.write_bytes(figure_path(benchmark, name), png)
        html = render_report(
            benchmark,
            pngs,
            gaps,
            hardest,
            reliability,
            manifests,  # converted only as far as the report shows it
            f"{RATING_VERSION} (engine), {context.assets_def.code_versions_by_key[context.asset_key]} (report)",
            digest,
            description,
            agents=agents,
            fragility=fragility,
            higher_is_better=direction,
            suspects=suspects,
            exclusion=exclusion_of(ratings.schema.metadata),
        ).encode()
        store.write_bytes(report_path(benchmark), html)
        explorer = render_explorer(
            benchmark,
            agents,
            main_cases,  # already converted (not a second copy): the main component's test cases
            tags=tags if tags.num_columns > 1 else None,
            slices=slices if slices.num_rows else None,
            masses=masses if masses.num_rows else None,
            reliability=reliability,
            calibration=calibration,
            gaps=gaps,
            description=description,
            fragility=fragility,
            higher_is_better=direction,
            suspects=suspects,
        ).encode()
        store.write_bytes(explorer_path(benchmark), explorer)
        # for annotators: the suspects with each agent's score (the jsonl twin first: the csv is what people look for)
        exported = {suspects_twin_path(benchmark): jsonl_bytes(suspects), suspects_path(benchmark): spreadsheet_csv(suspects)}
        for path, data in exported.items():
            if len(suspects):
                store.write_bytes(path, data)
            else:
                store.remove(path)
    artifacts = pd.DataFrame(
        [
            {"artifact": name, "path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, path, data in [
                *((n, figure_path(benchmark, n), p) for n, p in pngs.items()),
                ("report", report_path(benchmark), html),
                ("explorer", explorer_path(benchmark), explorer),
                *((("suspects", p, d) for p, d in exported.items()) if len(suspects) else ()),
            ]
        ]
    )
    return dg.Output(
        artifacts,
        metadata={
            "inputs_digest": digest,
            "code_version": context.assets_def.code_versions_by_key[context.asset_key],
            "rating_version": RATING_VERSION,
            "report": dg.MetadataValue.path(store.uri(report_path(benchmark))),
            "explorer": dg.MetadataValue.path(store.uri(explorer_path(benchmark))),
            "suspect_test_cases": len(suspects),
            **({"suspects": dg.MetadataValue.path(store.uri(suspects_path(benchmark)))} if len(suspects) else {}),
            "hardest_test_cases": frame_table(hardest, list(hardest.columns), limit=HARDEST_SHOWN),
            **{f"figure_{name}": dg.MetadataValue.md(f"![{name}]({png_data_uri(png)})") for name, png in pngs.items()},
        },
    )


REPORT_TEST_CASE_COLUMNS = ("test_case_id", "mu", "sigma", "matches", "mean_metric", "component")
"""What the figures, the hardest test cases and the explorer read of the test cases (and their ``meta.`` columns)."""


def report_test_cases(test_case_ratings: pa.Table) -> pd.DataFrame:
    """The test cases' columns the report reads, converted without consolidating them into one block or a table of
    unique strings (the ids are unique): a wide benchmark's histories, order spreads and mean scores are not copied, nor its columns twice."""
    names = [c for c in test_case_ratings.column_names if c in REPORT_TEST_CASE_COLUMNS or c.startswith("meta.")]
    return test_case_ratings.select(names).to_pandas(split_blocks=True, deduplicate_objects=False)
