"""Runs a job in this process the way ``JobDefinition.execute_in_process`` does, without keeping its outputs.

``execute_in_process`` keeps every step's output value in memory until the run ends (for
``ExecuteInProcessResult.output_for_node``). ``agielo run`` never reads them back: the IO manager has
written them. On a wide benchmark they are the rating tables (test cases, snapshots: about 300 bytes a
test case), held through the steps after the ratings, so that the report step started about 700 MB
above the run's floor with 2 million test cases (issue 25). Dagster 1.13 offers no public switch for
it; this follows ``JobDefinition.execute_in_process`` step for step with the capture off (the
release is pinned, and ``tests/test_inprocess.py`` checks that it still does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dagster as dg


def execute_in_process_without_outputs(
    job: dg.JobDefinition,
    *,
    run_config: Mapping[str, object] | None = None,
    instance: dg.DagsterInstance,
    partition_key: str | None = None,
    raise_on_error: bool = True,
    asset_selection: Sequence[dg.AssetKey] | None = None,
    tags: Mapping[str, str] | None = None,
) -> dg.ExecuteInProcessResult:
    """``job.execute_in_process(...)`` with these arguments, whose result has every event but no output values."""
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.definitions.partitions.context import partition_loading_context
    from dagster._core.execution.execute_in_process import (
        core_execute_in_process,
        merge_run_tags,
        type_check_and_normalize_args,
    )

    run_config, op_selection, asset_selection, resource_defs, partition_key, input_values = type_check_and_normalize_args(
        run_config=run_config,
        partition_key=partition_key,
        op_selection=None,
        asset_selection=asset_selection,
        input_values=None,
        resources=None,
    )
    ephemeral = job.as_ephemeral_job(
        resource_defs=resource_defs, input_values=input_values, op_selection=op_selection, asset_selection=asset_selection
    )
    if partition_key and ephemeral.partitions_def:
        with partition_loading_context(dynamic_partitions_store=instance) as ctx:
            ephemeral.validate_partition_key(partition_key=partition_key, selected_asset_keys=set(asset_selection), context=ctx)
    if not run_config and ephemeral.partitioned_config and partition_key:
        run_config = ephemeral.partitioned_config.get_run_config_for_partition_key(partition_key)
    return core_execute_in_process(
        job=InMemoryJob(job_def=ephemeral),
        run_config=run_config,
        instance=instance,
        output_capturing_enabled=False,
        raise_on_error=raise_on_error,
        run_tags=merge_run_tags(
            job_def=job,
            partition_key=partition_key,
            tags=tags,
            asset_selection=asset_selection,
            instance=instance,
            run_config=run_config,
        ),
        run_id=None,
        asset_selection=frozenset(asset_selection),
    )
