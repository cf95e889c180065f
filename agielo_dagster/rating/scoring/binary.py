"""``binary``: a pass/fail threshold on any finite metric."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .base import Scoring, finite_param


@dataclass(frozen=True)
class Binary(Scoring):
    """S = 1 if M ≥ threshold else 0; any finite metric is accepted, so no range is declared."""

    name = "binary"
    lo = -math.inf
    hi = math.inf
    higher_is_better = True
    threshold: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", finite_param(self.name, "threshold", self.threshold))

    def scores(self, m: np.ndarray) -> np.ndarray:
        return (m >= self.threshold).astype(np.float64)

    def metric(self, score: ArrayLike) -> np.ndarray:
        # the probability of reaching the threshold: for a 0/1 metric (accuracy, pass@1) the expected metric itself
        return np.array(score, dtype=np.float64)
