"""``minmax``: a metric on a declared range [lo, hi], mapped linearly onto [0, 1]."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .base import Scoring, ScoringError, finite_param


@dataclass(frozen=True)
class MinMax(Scoring):
    """S = (M − lo) / (hi − lo), or 1 − that when lower metric values are better."""

    name = "minmax"
    lo: float
    hi: float
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "lo", finite_param(self.name, "lo", self.lo))
        object.__setattr__(self, "hi", finite_param(self.name, "hi", self.hi))
        if not self.lo < self.hi:
            raise ScoringError(f"scoring 'minmax' needs lo < hi, got lo={self.lo:g}, hi={self.hi:g}", rule="scoring_params")
        if not isinstance(self.higher_is_better, bool):
            raise ScoringError(
                f"scoring 'minmax' parameter higher_is_better must be true or false, got {self.higher_is_better!r}",
                rule="scoring_params",
            )

    def scores(self, m: np.ndarray) -> np.ndarray:
        s = (m - self.lo) / (self.hi - self.lo)
        return s if self.higher_is_better else 1.0 - s

    def metric(self, score: ArrayLike) -> np.ndarray:
        s = np.asarray(score, dtype=np.float64)
        span = self.hi - self.lo
        return self.lo + s * span if self.higher_is_better else self.hi - s * span
