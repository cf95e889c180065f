"""A benchmark's outputs, read from the asset graph: what its runs write, withdraw and ask about.

Every asset declared with ``benchmark_asset`` or ``benchmark_output`` carries the ``agielo/run`` tag.
The rating jobs select by that tag; this module turns the same tags into the
:class:`~agielo_dagster.domain.status.BenchmarkOutputs` that the withdrawal and the staleness
question take, so a new per-benchmark asset is run, withdrawn and covered without being listed.
"""

import dagster as dg

from .assets.common import RUN_TAG
from .domain.status import BenchmarkOutputs


def benchmark_outputs(graph) -> BenchmarkOutputs:
    """The per-benchmark outputs of an asset graph (``defs.resolve_asset_graph()``, or a job's: then of the
    definitions the job was built from).

    ``rated`` in topological order; ``finals`` the rated outputs no other rated output depends on; the
    code version each is declared with (its concern's: ``agielo_dagster.domain.lineage``).
    """
    graph = getattr(graph, "source_asset_graph", graph)  # a job's graph holds only the job's assets
    tagged = [k for k in graph.toposorted_asset_keys if RUN_TAG in graph.get(k).tags]
    rated = [k for k in tagged if graph.get(k).tags[RUN_TAG] == "rating"]
    finals = [k for k in rated if not set(graph.get(k).child_keys) & set(rated)]
    name = dg.AssetKey.to_user_string
    versions = tuple((name(k), graph.get(k).code_version) for k in tagged if graph.get(k).code_version)
    other = tuple(name(k) for k in tagged if k not in rated)
    return BenchmarkOutputs(tuple(map(name, rated)), tuple(map(name, finals)), other, versions)
