"""The inputs Dagster observes: each benchmark's files, the harness logs, and what the quarantine report shows.

Each is an observable source asset whose data version is a digest of its files' versions
(:mod:`agielo_dagster.domain.inputs`): a new, changed or removed file gives a new data version, and what reads it
becomes stale. ``benchmarks_sensor`` and ``agielo run`` record the observations (``agielo_dagster.pending``); "Observe"
in the UI runs these functions.
"""

import warnings

import dagster as dg

from agielo_dagster.domain.inputs import benchmark_listings, incoming_digest, problems_digest

from .common import OWNERS
from .partitions import benchmark_partitions

INGEST_GROUP = "ingest"


def observed(name: str, description: str, partitions_def=None):
    """One observable source asset (a multi-asset of one, so that its spec maps like any other's; a beta API in
    Dagster 1.13, used on purpose)."""
    spec = dg.AssetSpec(name, description=description, group_name=INGEST_GROUP, owners=OWNERS, partitions_def=partitions_def)

    def decorate(fn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dg.BetaWarning)
            decorator = dg.multi_observable_source_asset(
                specs=[spec], name=name, partitions_def=partitions_def, required_resource_keys={"storage"}
            )
            return decorator(fn)

    return decorate


@observed(
    "raw_uploads",
    "A benchmark's files: raw/<benchmark>/ (uploads, benchmark.yaml, the tag file) and the uploads derived from harness "
    "logs. Its data version is a digest of their versions (content hashes; ETags on S3).",
    benchmark_partitions,
)
def raw_uploads(context: dg.AssetExecutionContext):
    listing = benchmark_listings(context.resources.storage.store).get(context.partition_key)
    return dg.ObserveResult(data_version=dg.DataVersion(listing.digest if listing else "no files"))


@observed("incoming_logs", "Harness logs under incoming/: a digest of their versions and of the readers' optional packages.")
def incoming_logs(context: dg.AssetExecutionContext):
    return dg.ObserveResult(data_version=dg.DataVersion(incoming_digest(context.resources.storage.store)))


@observed(
    "upload_problems",
    "What the quarantine report is built from: every upload ledger, the refused entries of raw/, the harness logs' "
    "errors and the judgment sets' outcomes.",
)
def upload_problems(context: dg.AssetExecutionContext):
    return dg.ObserveResult(data_version=dg.DataVersion(problems_digest(context.resources.storage.store)))


SOURCES = frozenset({raw_uploads.key, incoming_logs.key, upload_problems.key})
