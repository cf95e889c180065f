"""Dagster resources of the agielo pipeline: object storage, IO manager, data-quality suites."""
