"""``identity``: a metric already in [0, 1] (accuracy, AP, mAP, PDM score, pass-all) is its own score."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .base import Scoring


@dataclass(frozen=True)
class Identity(Scoring):
    """S = M on [0, 1]; no params."""

    name = "identity"
    lo = 0.0
    hi = 1.0
    higher_is_better = True

    def scores(self, m: np.ndarray) -> np.ndarray:
        return m

    def metric(self, score: ArrayLike) -> np.ndarray:
        return np.array(score, dtype=np.float64)
