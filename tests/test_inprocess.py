"""`agielo run` executes jobs in this process without keeping their outputs (``agielo_dagster/inprocess.py``)."""

import gc

import dagster as dg
import numpy as np

from agielo_dagster.inprocess import execute_in_process_without_outputs


class Big:
    """An output whose instances are counted: the run must not hold one once it is written."""


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]), io_manager_key="sink")
def big(context: dg.AssetExecutionContext) -> Big:
    out = Big()
    out.data = np.zeros(1000) + len(context.partition_key)
    return out


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]), io_manager_key="sink", deps=[big])
def after(context: dg.AssetExecutionContext) -> Big:
    return Big()


class Sink(dg.IOManager):
    def __init__(self):
        self.written = []

    def handle_output(self, context, obj):
        self.written.append((context.asset_key.to_user_string(), context.partition_key))

    def load_input(self, context):
        raise AssertionError("no input is loaded")


def test_the_run_is_the_same_as_execute_in_process_but_keeps_no_output(tmp_path):
    sink = Sink()
    defs = dg.Definitions(assets=[big, after], jobs=[dg.define_asset_job("both", [big, after])], resources={"sink": sink})
    job = defs.resolve_job_def("both")
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        result = execute_in_process_without_outputs(
            job, instance=instance, partition_key="b", tags={"who": "test"}, asset_selection=[dg.AssetKey("big")]
        )
        assert result.success
        run = instance.get_run_by_id(result.run_id)
        assert run.tags["who"] == "test" and run.tags["dagster/partition"] == "b"
        assert [e.asset_key for e in result.get_asset_materialization_events()] == [dg.AssetKey("big")]
        assert sink.written == [("big", "b")]
        gc.collect()
        assert not [o for o in gc.get_objects() if isinstance(o, Big)]  # written, then let go
        # the same job through Dagster's own call keeps it (for output_for_node)
        kept = job.execute_in_process(instance=instance, partition_key="b", asset_selection=[dg.AssetKey("big")])
        gc.collect()
        assert [o for o in gc.get_objects() if isinstance(o, Big)] and kept.success
