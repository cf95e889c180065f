"""The settings of a rating, typed and checked once: :class:`RatingSettings`.

:func:`~agielo_dagster.rating.glicko.rate` builds one from its keyword arguments; the pipeline builds one
and hands it to :func:`~agielo_dagster.rating.parquet.rate_parquet`. ``orders`` is the number of match
orders averaged; ``row_order=True`` plays the matches in the table's order instead (a single order).
Their earlier names, ``shuffles`` and ``shuffle`` (``shuffle=False`` is ``row_order=True``), are still
read, with a :class:`DeprecationWarning`, here and by every engine function taking them
(:func:`accepts_old_names`, through :func:`take_old_names`).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeAlias, TypeVar

import numpy as np

from .checks import check_start
from .intervals import z_of

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_ORDERS",
    "DEFAULT_SHUFFLES",
    "DEFAULT_SNAPSHOT_FRACTIONS",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS",
    "RatingSettings",
    "Setting",
    "OLD_NAMES",
    "accepts_old_names",
    "take_old_names",
]

DEFAULT_SNAPSHOT_FRACTIONS: tuple[float, ...] = tuple(round(k / 100, 2) for k in range(1, 101))
DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)
DEFAULT_ORDERS = 16
"""Orders :func:`rate` averages by default (8 antithetic pairs): the smallest K for which every pair of
10 seeds ranks the demo's agents alike (Kendall τ_b ≥ 0.98 on ``rank`` on digits and breast_cancer);
see docs/engine.md, "Order-robust ratings"."""
DEFAULT_SHUFFLES = DEFAULT_ORDERS  # the earlier name, kept for imports
DEFAULT_LEVEL = 0.95
Setting: TypeAlias = "int | float | bool | Iterable[float] | None"
"""The value of one rating setting, as :meth:`RatingSettings.of` reads it (fractions as any sequence)."""


def check_fractions(fractions: Iterable[float], name: str) -> np.ndarray:
    f = np.asarray(tuple(fractions), dtype=np.float64)
    if f.ndim != 1 or len(f) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of fractions")
    if not (np.all(f > 0) and np.all(f <= 1) and np.all(np.diff(f) > 0)):
        raise ValueError(f"{name} must increase strictly within (0, 1], got {f.tolist()}")
    return f


OLD_NAMES = {"shuffles": "orders", "shuffle": "row_order"}
"""Earlier names of settings, still read: ``shuffle`` negated (``shuffle=False`` is ``row_order=True``)."""


def take_old_names(given: dict[str, Setting], *, stacklevel: int = 3) -> None:
    """Read the :data:`OLD_NAMES` of settings in ``given`` under their names now (in place), each with a warning.

    The one place the old names are read: :meth:`RatingSettings.of`, :func:`accepts_old_names` and the
    pipeline's configs call it. Both names given must agree (``None`` counts as not given).
    """
    for old, new in OLD_NAMES.items():
        was = given.pop(old, None)
        if was is None:
            continue
        warnings.warn(f"the setting '{old}' is now '{new}'", DeprecationWarning, stacklevel=stacklevel)
        value = (not was) if new == "row_order" else was
        if given.get(new) not in (None, value):
            raise TypeError(f"{new}={given[new]!r} and {old}={was!r} disagree: give {new} only")
        given[new] = value


_P = ParamSpec("_P")
_R = TypeVar("_R")


def accepts_old_names(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func``, which takes ``orders`` (or ``row_order``), still called with their :data:`OLD_NAMES`, with a warning."""

    @functools.wraps(func)
    def calling(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        take_old_names(kwargs, stacklevel=3)
        return func(*args, **kwargs)

    return calling


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class RatingSettings:
    """What :func:`~agielo_dagster.rating.glicko.rate` does, checked on construction (see ``rate`` for each field).

    ``row_order=True`` plays the matches in the table's order, a single order (``orders`` must be 1);
    otherwise each order is a seeded random permutation: with ``orders=1`` the AGI-Elo paper's procedure.
    """

    seed: int | None = 42
    row_order: bool = False
    init_mu: float = 1500.0
    init_sigma: float = 350.0
    snapshot_fractions: tuple[float, ...] = DEFAULT_SNAPSHOT_FRACTIONS
    test_case_snapshot_fractions: tuple[float, ...] = DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS
    orders: int = DEFAULT_ORDERS
    with_reliability: bool = True
    level: float = DEFAULT_LEVEL
    workers: int | None = None
    refine: bool | None = None

    def __post_init__(self) -> None:
        for name in ("snapshot_fractions", "test_case_snapshot_fractions"):
            object.__setattr__(self, name, tuple(check_fractions(getattr(self, name), name).tolist()))
        check_start(self.init_mu, self.init_sigma)
        z_of(self.level)
        if not _is_int(self.orders) or self.orders < 1:
            raise ValueError(f"orders must be an integer >= 1, got {self.orders!r}")
        if self.row_order and self.orders != 1:
            raise ValueError(f"orders={self.orders} needs row_order=False: row order is a single order")
        if self.workers is not None and (not _is_int(self.workers) or self.workers < 1):
            raise ValueError(f"workers must be an integer >= 1, got {self.workers!r}")
        if self.seed is not None and not _is_int(self.seed):
            raise ValueError(f"seed must be an integer or None, got {self.seed!r}")

    @classmethod
    def of(cls, settings: Mapping[str, Setting] | None = None, /, **kwargs: Setting) -> RatingSettings:
        """From keyword arguments or a mapping (a result's ``settings``); :data:`OLD_NAMES` are read, with a warning."""
        given = {**(settings or {}), **kwargs}
        take_old_names(given, stacklevel=4)
        unknown = set(given) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown rating setting(s) {', '.join(sorted(unknown))}")
        return cls(**given)

    @property
    def refines(self) -> bool:
        """Whether the joint refinement replaces the Glicko ratings: ``refine``, by default unless a single order."""
        return self.orders != 1 if self.refine is None else bool(self.refine)

    def reproducing(self) -> dict[str, Setting]:
        """The settings a result carries, to reproduce it: fractions as tuples, ``refine`` resolved."""
        return dict(
            seed=self.seed,
            row_order=self.row_order,
            init_mu=self.init_mu,
            init_sigma=self.init_sigma,
            snapshot_fractions=self.snapshot_fractions,
            test_case_snapshot_fractions=self.test_case_snapshot_fractions,
            orders=self.orders,
            level=self.level,
            refine=self.refines,
        )
