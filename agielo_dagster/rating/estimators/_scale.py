"""The Elo scale shared by the estimators: E[S] = 1 / (1 + 10^(−Δ/400)) = σ(Δ · ln 10 / 400)."""

import math

import numpy as np

LOGIT_TO_ELO = 400.0 / math.log(10.0)


def to_elo(logits: np.ndarray, *, center: float = 1500.0) -> np.ndarray:
    """Logit-scale strengths as Elo-scale ratings with mean ``center``."""
    elo = np.asarray(logits, dtype=np.float64) * LOGIT_TO_ELO
    return elo - elo.mean() + center
