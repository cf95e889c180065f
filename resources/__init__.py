"""Dagster resources of the agielo pipeline: the storage root and the warehouse IO manager."""
