"""Histogram bins for ratings, shared by the figures and the explorer."""

from __future__ import annotations

import numpy as np

__all__ = ["histogram_edges"]


def histogram_edges(values: np.ndarray, bins: int = 60) -> np.ndarray:
    """``bins`` equal bins over the values, at least 1 Elo wide in all: ratings equal up to rounding
    (a benchmark one agent plays, where the joint fit leaves test cases 1e-13 apart) get one visible
    bar, where numpy refuses to cut so small a range into finite bins."""
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.linspace(lo, max(hi, lo + 1.0), bins + 1)
