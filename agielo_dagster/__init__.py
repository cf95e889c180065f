"""agielo-dagster: difficulty-aware AI evaluation with AGI-Elo ratings, as a Dagster project."""

__version__ = "0.1.0"
