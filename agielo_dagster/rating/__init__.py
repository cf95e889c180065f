"""The AGI-Elo rating engine: pure functions over data frames, no Dagster, no I/O.

>>> from agielo_dagster.rating import rate, competency_gaps
>>> result = rate(matches)                      # doctest: +SKIP
>>> competency_gaps(result.test_cases, result.agents)  # doctest: +SKIP
"""

from .estimators import HodgeRankResult, bootstrap, hodge_rank, pairwise_wins, plackett_luce, rasch, robustness
from .frames import MatchTableError
from .glicko import (
    DEFAULT_LEVEL,
    DEFAULT_SHUFFLES,
    DEFAULT_SNAPSHOT_FRACTIONS,
    DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    RatingResult,
    g,
    glicko_expected,
    place_agents,
    rate,
    update_match,
    update_rating_period,
)
from .graph import DisconnectedMatchesWarning
from .heldout import heldout_check
from .parquet import rate_parquet, read_matches
from .predict import (
    combined_sigma,
    competency_gaps,
    expected_metric,
    expected_score,
    hard_cases,
    oracle_rating,
    share_beaten,
)
from .reliability import binned_calibration, reliability
from .scoring import (
    SCORING_NAMES,
    Scoring,
    ScoringError,
    binary,
    identity,
    make_scoring,
    minmax,
)
from .simulate import simulate_matches

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_SHUFFLES",
    "DisconnectedMatchesWarning",
    "combined_sigma",
    "heldout_check",
    "rate_parquet",
    "read_matches",
    "robustness",
    "rasch",
    "plackett_luce",
    "pairwise_wins",
    "hodge_rank",
    "bootstrap",
    "DEFAULT_SNAPSHOT_FRACTIONS",
    "HodgeRankResult",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS",
    "SCORING_NAMES",
    "MatchTableError",
    "RatingResult",
    "Scoring",
    "ScoringError",
    "binary",
    "binned_calibration",
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
    "rate",
    "reliability",
    "share_beaten",
    "simulate_matches",
    "update_match",
    "update_rating_period",
]
