"""What every scoring function shares: the checks on metric values, the inverse, the ``benchmark.yaml`` form."""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Scoring", "ScoringError", "finite_param"]


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


class Scoring(ABC):
    """A scoring function f (metric → score in [0, 1]) and its inverse.

    A scoring is a frozen dataclass subclass whose fields are its ``benchmark.yaml`` params; it checks them in
    ``__post_init__`` (raising :class:`ScoringError` with rule ``scoring_params``) and is registered by name in
    :data:`~agielo_dagster.rating.scoring.SCORINGS`.

    Attributes
    ----------
    name : str
        The name ``benchmark.yaml`` gives it.
    lo, hi : float
        The metric's declared range (``-inf, inf`` when any finite metric is accepted).
    higher_is_better : bool
        ``False`` for metrics such as displacement error or latency.
    """

    name: ClassVar[str]
    lo: float
    hi: float
    higher_is_better: bool

    @property
    def declares_range(self) -> bool:
        """Whether the metric has a finite declared range: graded scores depend on it (not so for a threshold)."""
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def score(self, metric: ArrayLike, *, source: str = "metric") -> np.ndarray:
        """f(M): the match score of each metric value, as float64 in [0, 1].

        Raises :class:`ScoringError` naming the first bad row (NaN, ±inf, or
        outside ``[lo, hi]``); ``source`` prefixes the message (e.g. a file name).
        """
        m = _as_float_array(metric, source)
        _check_finite(m, source)
        _refuse_first(
            (m < self.lo) | (m > self.hi),
            m,
            source,
            f"is outside [{self.lo:g}, {self.hi:g}] declared by scoring '{self.name}'",
            "out of range",
            "metric_in_range",
        )
        return np.asarray(self.scores(m), dtype=np.float64)

    @abstractmethod
    def scores(self, m: np.ndarray) -> np.ndarray:
        """f of finite metric values inside ``[lo, hi]`` (``score`` has checked them)."""

    @abstractmethod
    def metric(self, score: ArrayLike) -> np.ndarray:
        """f⁻¹(S): the metric value that scores ``score``."""

    def is_worse(self, metric: ArrayLike, threshold: float) -> np.ndarray:
        """True where ``metric`` is worse than ``threshold`` in this metric's direction."""
        m = np.asarray(metric, dtype=np.float64)
        return m < threshold if self.higher_is_better else m > threshold

    def to_config(self) -> dict[str, str | dict[str, float | bool]]:
        """The ``{"scoring": name, "params": {...}}`` form accepted by :func:`~agielo_dagster.rating.make_scoring`."""
        params = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)} if dataclasses.is_dataclass(self) else {}
        return {"scoring": self.name, "params": params}


def finite_param(name: str, param: str, value: object) -> float:
    """A number parameter of scoring ``name`` as a float; anything else (a bool, text, NaN) is ``scoring_params``."""
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
    _refuse_first(~np.isfinite(m), m, source, "is not a finite number", "NaN or ±inf", "metric_finite")


def _refuse_first(bad: np.ndarray, m: np.ndarray, source: str, what: str, why: str, rule: str) -> None:
    """A :class:`ScoringError` naming the first row where ``bad`` holds, and how many do; nothing when none."""
    if bad.any():
        row, count = int(np.flatnonzero(bad)[0]), int(bad.sum())
        raise ScoringError(
            f"{source} row {row}: metric {float(m[row])!r} {what} ({count} value(s) {why}; rule: {rule})",
            rule=rule,
            row=row,
            count=count,
        )
