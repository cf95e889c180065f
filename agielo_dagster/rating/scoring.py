"""Scoring functions: the match score S = f(M) in [0, 1] of a raw metric M, and f⁻¹.

A scoring function is chosen by name and parameters (as in a benchmark's
``benchmark.yaml``)::

    >>> s = make_scoring("minmax", {"lo": 0, "hi": 10, "higher_is_better": False})
    >>> s.score([0.0, 2.5, 10.0])
    array([1.  , 0.75, 0.  ])
    >>> s.metric([0.75])
    array([2.5])

Values outside the declared range are an error naming the row; nothing is clipped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SCORING_NAMES", "Scoring", "ScoringError", "binary", "identity", "make_scoring", "minmax"]

SCORING_NAMES = ("identity", "binary", "minmax")


class ScoringError(ValueError):
    """A metric value that the scoring function cannot score.

    Attributes
    ----------
    row : int | None
        0-based position of the first offending value (``None`` for configuration errors).
    rule : str
        Short name of the violated rule, e.g. ``"metric_in_range"``.
    count : int
        How many values break the rule.
    """

    def __init__(self, message: str, *, rule: str, row: int | None = None, count: int = 0):
        super().__init__(message)
        self.rule = rule
        self.row = row
        self.count = count


@dataclass(frozen=True)
class Scoring:
    """A scoring function f (metric → score in [0, 1]) and its inverse.

    Use :func:`identity`, :func:`binary`, :func:`minmax` or :func:`make_scoring`
    rather than building one directly.

    Parameters
    ----------
    name : {"identity", "binary", "minmax"}
    lo, hi : float
        The metric's declared range (``-inf, inf`` for ``binary``).
    higher_is_better : bool
        ``False`` for metrics such as displacement error or latency.
    threshold : float
        ``binary`` only: the metric scores 1 when ``metric >= threshold``.
    """

    name: str
    lo: float = 0.0
    hi: float = 1.0
    higher_is_better: bool = True
    threshold: float = math.nan

    def score(self, metric: Any, *, source: str = "metric") -> np.ndarray:
        """f(M): the match score of each metric value, as float64 in [0, 1].

        Raises :class:`ScoringError` naming the first bad row (NaN, ±inf, or
        outside ``[lo, hi]``); ``source`` prefixes the message (e.g. a file name).
        """
        m = _as_float_array(metric, source)
        _check_finite(m, source)
        if self.name == "binary":
            return (m >= self.threshold).astype(np.float64)
        bad = (m < self.lo) | (m > self.hi)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ScoringError(
                f"{source} row {row}: metric {float(m[row])!r} is outside [{self.lo:g}, {self.hi:g}] "
                f"declared by scoring '{self.name}' ({int(bad.sum())} value(s) out of range; rule: metric_in_range)",
                rule="metric_in_range",
                row=row,
                count=int(bad.sum()),
            )
        s = (m - self.lo) / (self.hi - self.lo)
        return s if self.higher_is_better else 1.0 - s

    def metric(self, score: Any) -> np.ndarray:
        """f⁻¹(S): the metric value that scores ``score``.

        For ``binary`` the inverse is the probability of reaching the threshold,
        which for a 0/1 metric (accuracy, pass@1) is the expected metric itself.
        """
        s = np.asarray(score, dtype=np.float64)
        if self.name == "binary":
            return s.copy()
        span = self.hi - self.lo
        return self.lo + s * span if self.higher_is_better else self.hi - s * span

    def is_worse(self, metric: Any, threshold: float) -> np.ndarray:
        """True where ``metric`` is worse than ``threshold`` in this metric's direction."""
        m = np.asarray(metric, dtype=np.float64)
        return m < threshold if self.higher_is_better else m > threshold

    def to_config(self) -> dict[str, Any]:
        """The ``{"scoring": name, "params": {...}}`` form accepted by :func:`make_scoring`."""
        if self.name == "identity":
            return {"scoring": "identity", "params": {}}
        if self.name == "binary":
            return {"scoring": "binary", "params": {"threshold": self.threshold}}
        return {
            "scoring": "minmax",
            "params": {"lo": self.lo, "hi": self.hi, "higher_is_better": self.higher_is_better},
        }


def identity() -> Scoring:
    """Metric already in [0, 1] (accuracy, AP, mAP, PDM score, pass-all): S = M."""
    return Scoring("identity", 0.0, 1.0, True)


def binary(threshold: float = 0.5) -> Scoring:
    """S = 1 if M ≥ threshold else 0; any finite metric is accepted."""
    threshold = _finite_param("binary", "threshold", threshold)
    return Scoring("binary", -math.inf, math.inf, True, threshold)


def minmax(lo: float, hi: float, higher_is_better: bool = True) -> Scoring:
    """S = (M − lo) / (hi − lo), or 1 − that when lower metric values are better."""
    lo = _finite_param("minmax", "lo", lo)
    hi = _finite_param("minmax", "hi", hi)
    if not lo < hi:
        raise ScoringError(f"scoring 'minmax' needs lo < hi, got lo={lo:g}, hi={hi:g}", rule="scoring_params")
    if not isinstance(higher_is_better, bool):
        raise ScoringError(
            f"scoring 'minmax' parameter higher_is_better must be true or false, got {higher_is_better!r}",
            rule="scoring_params",
        )
    return Scoring("minmax", lo, hi, higher_is_better)


_FACTORIES = {"identity": identity, "binary": binary, "minmax": minmax}


def make_scoring(name: str, params: Mapping[str, Any] | None = None) -> Scoring:
    """Build a scoring function from its name and parameters (e.g. from ``benchmark.yaml``)."""
    if name not in _FACTORIES:
        raise ScoringError(f"unknown scoring function {name!r}; known: {', '.join(SCORING_NAMES)}", rule="scoring_known")
    params = dict(params or {})
    try:
        return _FACTORIES[name](**params)
    except TypeError as exc:
        raise ScoringError(f"scoring {name!r}: bad parameters {params!r} ({exc})", rule="scoring_params") from None


def _finite_param(name: str, param: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ScoringError(f"scoring {name!r} parameter {param} must be a number, got {value!r}", rule="scoring_params")
    if not math.isfinite(value):
        raise ScoringError(f"scoring {name!r} parameter {param} must be finite, got {value!r}", rule="scoring_params")
    return float(value)


def _as_float_array(values: Any, source: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = np.asarray(values, dtype=object)
        for row, v in enumerate(arr):
            try:
                float(v)
            except (TypeError, ValueError):
                raise ScoringError(
                    f"{source} row {row}: metric {v!r} is not a number (rule: metric_numeric)",
                    rule="metric_numeric",
                    row=row,
                ) from None
        raise


def _check_finite(m: np.ndarray, source: str) -> None:
    bad = ~np.isfinite(m)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ScoringError(
            f"{source} row {row}: metric {float(m[row])!r} is not a finite number "
            f"({int(bad.sum())} value(s) NaN or ±inf; rule: metric_finite)",
            rule="metric_finite",
            row=row,
            count=int(bad.sum()),
        )
