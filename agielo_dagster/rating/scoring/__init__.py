"""Scoring functions: the match score S = f(M) in [0, 1] of a raw metric M, and f⁻¹.

A scoring function is chosen by name and parameters (as in a benchmark's ``benchmark.yaml``)::

    >>> s = make_scoring("minmax", {"lo": 0, "hi": 10, "higher_is_better": False})
    >>> s.score([0.0, 2.5, 10.0])
    array([1.  , 0.75, 0.  ])
    >>> s.metric([0.75])
    array([2.5])

Values outside the declared range are an error naming the row; nothing is clipped. Each scoring is one
:class:`Scoring` subclass in a module of its own, registered by name in :data:`SCORINGS`: a new one is a new
module plus one line there.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import Scoring, ScoringError
from .binary import Binary
from .identity import Identity
from .minmax import MinMax

__all__ = [
    "SCORINGS",
    "Binary",
    "Identity",
    "MinMax",
    "Scoring",
    "ScoringError",
    "binary",
    "identity",
    "make_scoring",
    "minmax",
    "scoring_names",
]

SCORINGS: dict[str, type[Scoring]] = {scoring.name: scoring for scoring in (Identity, Binary, MinMax)}

# the constructors under the names benchmark.yaml uses: identity(), binary(threshold), minmax(lo, hi, higher_is_better)
identity, binary, minmax = Identity, Binary, MinMax


def scoring_names() -> tuple[str, ...]:
    """The names :func:`make_scoring` knows, as registered in :data:`SCORINGS`."""
    return tuple(SCORINGS)


def make_scoring(name: str, params: Mapping[str, object] | None = None) -> Scoring:
    """Build a scoring function from its name and parameters (e.g. from ``benchmark.yaml``)."""
    if name not in SCORINGS:
        raise ScoringError(f"unknown scoring function {name!r}; known: {', '.join(SCORINGS)}", rule="scoring_known")
    params = dict(params or {})
    try:
        return SCORINGS[name](**params)
    except TypeError as exc:
        raise ScoringError(f"scoring {name!r}: bad parameters {params!r} ({exc})", rule="scoring_params") from None
