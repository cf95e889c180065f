"""Dagster software-defined assets of the agielo pipeline."""
