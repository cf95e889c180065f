"""Partitions: one per benchmark, and one per uploaded (benchmark, agent) file.

Uploads form a benchmark × agent grid. Only the cells with a file are ever materialized;
the others (an agent name that exists in another benchmark) stay empty. Downstream
assets are partitioned by benchmark and depend on every upload of their benchmark
through a built-in dimension mapping, which declarative automation understands.
"""

import dagster as dg

benchmark_partitions = dg.DynamicPartitionsDefinition(name="benchmarks")
agent_partitions = dg.DynamicPartitionsDefinition(name="agents")
upload_partitions = dg.MultiPartitionsDefinition({"benchmark": benchmark_partitions, "agent": agent_partitions})

uploads_of_benchmark = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="benchmark")


def upload_key(benchmark: str, agent: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"benchmark": benchmark, "agent": agent})


def split_upload_key(key: str) -> tuple[str, str]:
    """(benchmark, agent) of an upload partition key."""
    dims = upload_partitions.get_partition_key_from_str(str(key)).keys_by_dimension
    return dims["benchmark"], dims["agent"]
