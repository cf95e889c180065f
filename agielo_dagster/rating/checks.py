"""Input checks every estimator shares: the starting rating, and scores against the benchmark's scoring.

- :func:`check_start`: Glicko's first update moves a player by about q·σ²·g·(S − E), so a starting
  deviation far above Glicko's 350 throws the ratings off the Elo scale (``init_sigma = 1e6``
  put the diabetes regressors near 1,300,000; 1000 still keeps them within about 1,300 of the
  start). ``init_sigma`` must lie in (0, :data:`MAX_INIT_SIGMA`] and ``init_mu`` in
  [−:data:`MAX_ABS_INIT_MU`, :data:`MAX_ABS_INIT_MU`] (ratings are shift-invariant: 1500 is
  a convention, and a start beyond ±10,000 is a typo, not a scale).
- :func:`check_scores`: the engine trusts the ``score`` column (the pipeline computes it from the
  metric under the benchmark's scoring when an upload is accepted, and again when the scoring
  changes); a caller who builds a match table by hand can check it is S = f(M).

Disconnected match graphs are :func:`~agielo_dagster.rating.graph.warn_disconnected`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .frames import Matches, MatchTableError, Table, encode_matches
from .scoring import Scoring, ScoringError

__all__ = ["MAX_ABS_INIT_MU", "MAX_INIT_SIGMA", "SCORE_TOLERANCE", "check_scores", "check_start"]

MAX_INIT_SIGMA = 1000.0
MAX_ABS_INIT_MU = 10_000.0
SCORE_TOLERANCE = 1e-9
"""Largest |S − f(M)| taken as equal (a score written to CSV and read back keeps about 15 digits)."""


def check_start(init_mu: float, init_sigma: float) -> None:
    """Refuse a starting rating off the Elo scale, with a ValueError naming the parameter and its bounds."""
    if not _is_number(init_sigma) or not 0 < init_sigma <= MAX_INIT_SIGMA:
        shown = f"{init_sigma:g}" if _is_number(init_sigma) else repr(init_sigma)
        raise ValueError(
            f"init_sigma {shown} is outside (0, {MAX_INIT_SIGMA:g}]: a starting deviation far above Glicko's 350 "
            "throws the first updates off the Elo scale (1e6 gives ratings in the hundreds of thousands)"
        )
    if not _is_number(init_mu) or not math.isfinite(init_mu) or abs(init_mu) > MAX_ABS_INIT_MU:
        shown = f"{init_mu:g}" if _is_number(init_mu) else repr(init_mu)
        raise ValueError(
            f"init_mu {shown} is outside [{-MAX_ABS_INIT_MU:g}, {MAX_ABS_INIT_MU:g}]: ratings are relative, "
            "and 1500 is the usual start"
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def check_scores(matches: Table, scoring: Scoring, what: str = "match table") -> None:
    """Refuse a match whose ``score`` is not f(``metric``) under ``scoring`` (rule ``score_is_f_of_metric``).

    Raises
    ------
    MatchTableError
        Naming the first such row, its metric, its score and the score the scoring gives, and how
        many rows disagree. A metric outside the scoring's range raises the scoring's own error
        (rule ``metric_in_range``), naming the row.
    """
    m = matches if isinstance(matches, Matches) else encode_matches(matches, what, unique=False)
    try:
        expected = scoring.score(m.metric, source=what)
    except ScoringError as exc:
        raise MatchTableError(str(exc), rule=exc.rule, row=exc.row, column="metric") from None
    bad = np.abs(m.score - expected) > SCORE_TOLERANCE
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise MatchTableError(
            f"{what} row {row}: score {float(m.score[row])!r} is not f(metric) = {float(expected[row])!r} for metric "
            f"{float(m.metric[row])!r} under scoring {scoring.to_config()} ({int(bad.sum())} row(s) disagree; "
            "rule: score_is_f_of_metric)",
            rule="score_is_f_of_metric",
            row=row,
            column="score",
        )
