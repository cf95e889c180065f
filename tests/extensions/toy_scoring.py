"""A toy scoring function, written as a new one would be: one module, registered with one line in SCORINGS."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agielo_dagster.rating.scoring.base import Scoring


@dataclass(frozen=True)
class Percent(Scoring):
    """A metric in percent, [0, 100]: S = M / 100."""

    name = "percent"
    lo = 0.0
    hi = 100.0
    higher_is_better = True

    def scores(self, m: np.ndarray) -> np.ndarray:
        return m / 100.0

    def metric(self, score: Any) -> np.ndarray:
        return 100.0 * np.asarray(score, dtype=np.float64)
