"""The AGI-Elo rating engine: pure functions over data frames, no Dagster, no I/O.

>>> from agielo_dagster.rating import rate, competency_gaps
>>> result = rate(matches)                      # doctest: +SKIP
>>> competency_gaps(result.test_cases, result.agents)  # doctest: +SKIP

The package loads lazily: ``from agielo_dagster.rating import rate`` imports the Glicko engine
only, not the estimators (scipy) or the parquet reader, so that command-line tools start quickly.
"""

from importlib import import_module

# the function, bound eagerly: its submodule shares its name and would shadow it once imported
from .reliability import reliability

_HOME = {
    "AbilityMasses": "abilities",
    "ability_masses": "abilities",
    "alignment_rate": "abilities",
    "query_ranking": "slices",
    "slice_ratings": "slices",
    "DEFAULT_LEVEL": "settings",
    "DEFAULT_ORDERS": "settings",
    "DEFAULT_SNAPSHOT_FRACTIONS": "settings",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS": "settings",
    "DisconnectedMatchesWarning": "graph",
    "HodgeRankResult": "estimators",
    "MatchTableError": "frames",
    "MODELS": "settings",
    "RatingResult": "result",
    "RatingSettings": "settings",
    "Table": "frames",
    "SCORINGS": "scoring",
    "Scoring": "scoring",
    "ScoringError": "scoring",
    "binary": "scoring",
    "binned_calibration": "reliability",
    "calibration_twins": "reliability",
    "CalibrationYardstick": "reliability",
    "bootstrap": "estimators",
    "check_scores": "checks",
    "check_start": "checks",
    "combined_sigma": "predict",
    "competency_gaps": "predict",
    "expected_metric": "predict",
    "expected_score": "predict",
    "g": "glicko",
    "glicko_expected": "glicko",
    "hard_cases": "predict",
    "heldout_check": "heldout",
    "hodge_rank": "estimators",
    "identity": "scoring",
    "make_scoring": "scoring",
    "minmax": "scoring",
    "oracle_rating": "predict",
    "pairwise_wins": "estimators",
    "place_agents": "placement",
    "place_on_subset": "subset_placement",
    "place_provisional_agents": "subset_placement",
    "place_sequentially": "selection",
    "plackett_luce": "estimators",
    "rate": "ratings",
    "rate_parquet": "parquet",
    "ranks_among": "intervals",
    "select_test_cases": "strata",
    "stratum_weights": "strata",
    "read_matches": "parquet",
    "robustness": "estimators",
    "share_beaten": "predict",
    "ScoreLink": "predict",
    "score_link": "predict",
    "simulate_matches": "simulate",
    "update_match": "glicko",
    "update_rating_period": "glicko",
}


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_HOME])


__all__ = [
    "AbilityMasses",
    "ability_masses",
    "alignment_rate",
    "query_ranking",
    "slice_ratings",
    "DEFAULT_LEVEL",
    "DEFAULT_ORDERS",
    "DisconnectedMatchesWarning",
    "combined_sigma",
    "heldout_check",
    "rate_parquet",
    "read_matches",
    "robustness",
    "plackett_luce",
    "pairwise_wins",
    "hodge_rank",
    "bootstrap",
    "check_scores",
    "check_start",
    "DEFAULT_SNAPSHOT_FRACTIONS",
    "HodgeRankResult",
    "MODELS",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS",
    "SCORINGS",
    "MatchTableError",
    "RatingResult",
    "RatingSettings",
    "Table",
    "Scoring",
    "ScoringError",
    "binary",
    "binned_calibration",
    "calibration_twins",
    "CalibrationYardstick",
    "competency_gaps",
    "expected_metric",
    "expected_score",
    "g",
    "glicko_expected",
    "hard_cases",
    "identity",
    "make_scoring",
    "minmax",
    "oracle_rating",
    "place_agents",
    "place_on_subset",
    "place_sequentially",
    "rate",
    "ranks_among",
    "select_test_cases",
    "stratum_weights",
    "reliability",
    "share_beaten",
    "ScoreLink",
    "score_link",
    "simulate_matches",
    "update_match",
    "update_rating_period",
]
