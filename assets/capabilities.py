"""Capabilities of a benchmark: its test cases' tags, every agent's rating per slice, and ability masses.

Tags come from ``raw/<benchmark>/test_cases.<csv|parquet|jsonl>`` (validated, in the ledger) and
from the uploads' metadata columns that give each test case one value (read from at most 50
uploads, so the cost does not grow with the number of agents); the tag file wins column by column.
Benchmarks without tags get empty tables.
"""

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain.copies import AcceptedCopies
from agielo_dagster.domain.ledger import first_accepted, read_summary, read_tag_file
from agielo_dagster.domain.lineage import RATING_VERSION
from agielo_dagster.domain.matches import rated_matches
from agielo_dagster.domain.meaning import level_words
from agielo_dagster.domain.stored import Stored

from .common import benchmark_output, frame_table, retried_on_storage_errors
from .partitions import benchmark_partitions

ABILITIES_TAG = "abilities"
SLICE_COLUMNS = ["tag", "value", "agent_id", "mu", "mu_lo", "mu_hi", "delta", "test_cases"]


def benchmark_tags(storage: ObjectStorage, benchmark: str) -> pa.Table | None:
    """The test cases' tags: the tag file merged over the uploads' metadata (None when there are none)."""
    from agielo_dagster.domain.tags import merge_tags, tags_from_metadata

    store = storage.store
    metadata = []
    uploads = first_accepted(store, benchmark)
    copies = AcceptedCopies.read(store, benchmark) if uploads else None
    for row in uploads:
        names = [n for n in copies.schema(row).names if n.startswith("meta.")]
        if names:
            metadata.append(copies.read_one(row, columns=["test_case_id", *names]))
    from_metadata = tags_from_metadata(metadata) if metadata else None
    if from_metadata is not None and from_metadata.num_columns < 2:
        from_metadata = None
    return merge_tags(read_tag_file(store, benchmark), from_metadata)


TAGS_KNOWN_RULE = "tags_known_test_cases"


def tag_coverage(tags: pa.Table, test_case_ratings: pa.Table | None, source: str) -> dict:
    """How many tagged test cases the benchmark rates; a ``tag_warning`` naming the rule when some or all are unknown.

    Tags of unknown test cases are kept (an upload may rate them later) but tag nothing: with none known,
    the benchmark has no slices, which the warning says instead of leaving the tag file silently unused.
    """
    if tags.num_rows == 0 or tags.num_columns < 2:
        return {}
    ids = pc.unique(tags.column("test_case_id").cast(pa.string()))
    known = pc.is_in(ids, value_set=pc.unique(test_case_ratings.column("test_case_id").cast(pa.string())))
    rated = int(pc.sum(known).as_py() or 0)
    out: dict = {"tagged_test_cases": len(ids), "tagged_test_cases_rated": rated}
    if rated < len(ids):
        examples = ", ".join(repr(v) for v in ids.filter(pc.invert(known)).slice(0, 3).to_pylist())
        if rated == 0:
            what = f"none of its {len(ids)} test-case ids is rated in this benchmark (e.g. {examples}): no slices"
        else:
            what = f"{len(ids) - rated} of its {len(ids)} test-case ids are not rated in this benchmark (e.g. {examples})"
        out["tag_warning"] = f"{source}: {what} (rule: {TAGS_KNOWN_RULE})"
    return out


@dg.multi_asset(
    outs={
        "test_case_tags": benchmark_output(
            "The test cases' tags: test_case_id plus one column per tag (text, or lists for multi-valued tags such as "
            "abilities), from raw/<benchmark>/test_cases.* and the uploads' metadata.",
            group="capabilities",
        ),
        "slice_ratings": benchmark_output(
            "Every agent's rating on every slice (tag value with at least 20 test cases) against the frozen test-case "
            f"ratings, with a {level_words()} interval, delta to its overall rating, and the slice's difficulty profile.",
            group="capabilities",
        ),
        "ability_masses": benchmark_output(
            "TADDL-V ability masses fitted to the test-case ratings, when the test cases carry an 'abilities' tag: "
            "ability, mass, items; the fit's loss and alignment rate in the metadata.",
            group="capabilities",
        ),
    },
    partitions_def=benchmark_partitions,
)
def capabilities(context: dg.AssetExecutionContext, storage: ObjectStorage, match_tables: Stored, test_case_ratings: Stored):
    from agielo_dagster.domain.tags import abilities_of
    from agielo_dagster.rating import ability_masses, slice_ratings

    benchmark = context.partition_key
    store = storage.store
    with retried_on_storage_errors(context):
        if not test_case_ratings.exists:  # withdrawn: no accepted upload left
            for name in ("test_case_tags", "slice_ratings", "ability_masses"):
                yield dg.Output(None, name, metadata={"withdrawn": True})
            return
        tags = benchmark_tags(storage, benchmark)
        summary = read_summary(store, benchmark)
        digest = test_case_ratings.digest
    tag_file = summary.tag_file if summary else None
    common = {"inputs_digest": digest, "code_version": RATING_VERSION}
    if tags is None:
        tags = pa.table({"test_case_id": pa.array([], pa.string())})
    tagged = tags.num_columns > 1 and tags.num_rows > 0
    # read only for a benchmark with tags: most have none, and a wide benchmark's two tables are 10M rows each (about
    # 9 s to load at 1 x 10M, issue 25)
    test_cases = None
    if tagged:
        with retried_on_storage_errors(context):
            test_cases = test_case_ratings.read()
    coverage = tag_coverage(tags, test_cases, tag_file["path"] if tag_file else "the uploads' tag metadata")
    if coverage.get("tag_warning"):
        context.log.warning(coverage["tag_warning"])
    yield dg.Output(tags, "test_case_tags", metadata=common | {"tags": ", ".join(tags.column_names[1:]) or "none"} | coverage)

    slices = pd.DataFrame(columns=SLICE_COLUMNS)
    if tagged:
        with retried_on_storage_errors(context):
            matches = rated_matches(test_case_ratings, match_tables)
        slices = slice_ratings(matches, test_cases, tags)
        del matches
        slices = slices.to_pandas() if isinstance(slices, pa.Table) else slices
    strongest = slices.reindex(slices["delta"].abs().sort_values(ascending=False).index) if len(slices) else slices
    yield dg.Output(
        slices,
        "slice_ratings",
        metadata=common
        | {
            "slices": int(slices[["tag", "value"]].drop_duplicates().shape[0]) if len(slices) else 0,
            "largest_differences": frame_table(strongest, SLICE_COLUMNS, limit=20) if len(slices) else "no slices",
        },
    )

    masses = pd.DataFrame({"ability": pd.Series(dtype=str), "mass": pd.Series(dtype=float), "items": pd.Series(dtype=int)})
    fit_metadata: dict = {"fitted": False}
    if ABILITIES_TAG in tags.column_names and tags.num_rows:
        difficulties = test_cases.select(["test_case_id", "mu"]).to_pandas()
        difficulties = difficulties.rename(columns={"test_case_id": "item_id", "mu": "difficulty"})
        long = abilities_of(tags, ABILITIES_TAG)
        if len(long):
            fit = ability_masses(difficulties, long, max_order=2)
            masses = fit.masses.to_pandas() if isinstance(fit.masses, pa.Table) else fit.masses
            fit_metadata = {
                "fitted": True,
                "loss": round(float(fit.loss), 5),
                "rmse": round(float(fit.rmse), 2),
                "alignment": round(float(fit.alignment), 4),
                "masses": frame_table(masses, list(masses.columns), limit=30, digits=4),
            }
    yield dg.Output(masses, "ability_masses", metadata=common | fit_metadata)
