"""Partitions: one per benchmark. Uploads are rows of each benchmark's upload ledger, not partitions,
so the number of partition keys grows with benchmarks, never with benchmarks × agents."""

import dagster as dg

benchmark_partitions = dg.DynamicPartitionsDefinition(name="benchmarks")
