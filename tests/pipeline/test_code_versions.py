"""A code version per concern (``agielo_dagster.domain.lineage``): a change of presentation re-renders the
report and re-rates nothing; a change of the engine re-rates. Dagster's own staleness (asset code versions)
and the benchmark's question agree."""

import dagster as dg
import pyarrow.parquet as pq
import pytest
from agielo_dagster.assets.common import RUN_TAG
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._time import get_current_datetime

from agielo_dagster.definitions import defs
from agielo_dagster.domain.layout import warehouse_path
from agielo_dagster.domain.lineage import PRESENTATION_VERSION, RATING_VERSION
from agielo_dagster.domain.status import CODE_KEY, DIGEST_KEY, benchmark_state
from agielo_dagster.outputs import benchmark_outputs

from .conftest import BENCHMARK_OUTPUTS, write_benchmark

REPORT = "benchmark_reports"
RATINGS = [n for n in BENCHMARK_OUTPUTS if n != REPORT]


def with_code_version(defs: dg.Definitions, selection: dg.AssetSelection, version: str) -> dg.Definitions:
    """The same definitions, the selected assets declared with another code version (as after a code change)."""
    return defs.map_resolved_asset_specs(func=lambda spec: spec.replace_attributes(code_version=version), selection=selection)


def dagster_stale(defs: dg.Definitions, instance, names) -> dict[str, bool]:
    """Dagster's own staleness of each asset's ``quiz`` partition (as the UI shows it; the resolver is internal)."""
    graph = defs.resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    resolver = CachingStaleStatusResolver(instance, graph, loading_context=view)
    return {n: resolver.get_status(dg.AssetKey(n), "quiz") == StaleStatus.STALE for n in names}


def footer(root, name: str) -> dict:
    return {k.decode(): v.decode() for k, v in (pq.read_schema(root / warehouse_path(name, "quiz")).metadata or {}).items()}


def test_the_concerns_have_their_own_code_versions():
    outputs = benchmark_outputs(defs.resolve_asset_graph())
    assert outputs.code_version(REPORT) == PRESENTATION_VERSION != RATING_VERSION
    assert {outputs.code_version(n) for n in RATINGS} == {RATING_VERSION}


@pytest.mark.slow  # one rating run and one re-rendering (about 10 s alone)
def test_presentation_changes_re_render_and_engine_changes_re_rate(daemon, root):
    write_benchmark(root, "quiz", [1300.0, 1600.0], test_cases=20)
    assert all(r.success for r in daemon.settle())
    store, instance = daemon.storage.store, daemon.instance
    assert not any(dagster_stale(daemon.defs, instance, BENCHMARK_OUTPUTS).values())
    # lineage: every output records its inputs digest and its concern's code version
    assert {footer(root, n)[CODE_KEY] for n in RATINGS} == {RATING_VERSION}
    assert footer(root, REPORT)[CODE_KEY] == PRESENTATION_VERSION
    digest = footer(root, REPORT)[DIGEST_KEY]
    assert {footer(root, n).get(DIGEST_KEY, digest) for n in RATINGS} == {digest}
    rated = {n: (root / warehouse_path(n, "quiz")).read_bytes() for n in RATINGS}

    # presentation: the report is stale, the ratings are not; the run re-renders the report alone
    daemon.defs = with_code_version(daemon.defs, dg.AssetSelection.assets(REPORT), "presentation-2")
    assert dagster_stale(daemon.defs, instance, BENCHMARK_OUTPUTS) == {n: n == REPORT for n in BENCHMARK_OUTPUTS}
    outputs = benchmark_outputs(daemon.defs.resolve_asset_graph())
    state = benchmark_state(store, "quiz", outputs, RATING_VERSION)
    assert state.stale and state.redo == (REPORT,)
    runs = daemon.settle()
    assert [r.success for r in runs] == [True]
    written = {e.asset_key.to_user_string() for r in runs for e in r.get_asset_materialization_events()}
    assert written == {REPORT}
    assert {n: (root / warehouse_path(n, "quiz")).read_bytes() for n in RATINGS} == rated
    assert footer(root, REPORT)[CODE_KEY] == "presentation-2" and footer(root, REPORT)[DIGEST_KEY] == digest
    assert not any(dagster_stale(daemon.defs, instance, BENCHMARK_OUTPUTS).values())
    assert not benchmark_state(store, "quiz", outputs, RATING_VERSION).stale

    # the engine: every rating is stale (and the report after them); the inputs digest carries the engine's
    # version, so the question asks for a whole run, not a re-rendering
    engine = dg.AssetSelection.tag(RUN_TAG, "rating") - dg.AssetSelection.assets(REPORT)
    changed = with_code_version(daemon.defs, engine, "engine-2")
    assert all(dagster_stale(changed, instance, RATINGS).values())
    state = benchmark_state(store, "quiz", outputs, "engine-2")
    assert state.stale and state.redo == () and state.rated_digest != state.inputs_digest
