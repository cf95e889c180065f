"""The settings of a rating, typed and checked once: :class:`RatingSettings`.

:func:`~agielo_dagster.rating.rate` builds one from its keyword arguments; the pipeline builds one
and hands it to :func:`~agielo_dagster.rating.parquet.rate_parquet`. ``model`` is the rating model
(:data:`MODELS`); for ``"glicko"``, ``orders`` is the number of match orders averaged and
``row_order=True`` plays the matches in the table's order instead (a single order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_ORDERS",
    "DEFAULT_SNAPSHOT_FRACTIONS",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS",
    "DEFAULT_MODEL",
    "MODELS",
    "RatingSettings",
    "Setting",
]

DEFAULT_SNAPSHOT_FRACTIONS: tuple[float, ...] = tuple(round(k / 100, 2) for k in range(1, 101))
DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)
DEFAULT_ORDERS = 16
"""Orders :func:`rate` averages by default (8 antithetic pairs): the smallest K for which every pair of
10 seeds ranks the demo's agents alike (Kendall τ_b ≥ 0.98 on ``rank`` on digits and breast_cancer);
see docs/engine.md, "Order-robust ratings"."""
DEFAULT_LEVEL = 0.95
MODELS = ("rasch", "2pl", "glicko")
"""The rating models: ``rasch`` (the default: every match at once, :mod:`.logistic`), ``2pl`` (the same with a
discrimination per test case) and ``glicko`` (the AGI-Elo paper's sequential pass, :mod:`.glicko`)."""
DEFAULT_MODEL = "rasch"
LOGISTIC_SNAPSHOT_FRACTIONS: tuple[float, ...] = tuple(round(k / 10, 1) for k in range(1, 11))
"""Where the logistic models record snapshots unless told (each is a fit of the matches played so far)."""
Setting: TypeAlias = "str | int | float | bool | Iterable[float] | None"
"""The value of one rating setting, as :meth:`RatingSettings.of` reads it (fractions as any sequence)."""


def check_fractions(fractions: Iterable[float], name: str) -> np.ndarray:
    f = np.asarray(tuple(fractions), dtype=np.float64)
    if f.ndim != 1 or len(f) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of fractions")
    if not (np.all(f > 0) and np.all(f <= 1) and np.all(np.diff(f) > 0)):
        raise ValueError(f"{name} must increase strictly within (0, 1], got {f.tolist()}")
    return f


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class RatingSettings:
    """What :func:`~agielo_dagster.rating.glicko.rate` does, checked on construction (see ``rate`` for each field).

    ``row_order=True`` plays the matches in the table's order, a single order (``orders`` must be 1);
    otherwise each order is a seeded random permutation: with ``orders=1`` the AGI-Elo paper's procedure.
    """

    model: str = DEFAULT_MODEL
    seed: int | None = 42
    row_order: bool = False
    init_mu: float = 1500.0
    init_sigma: float = 350.0
    snapshot_fractions: tuple[float, ...] | None = None
    test_case_snapshot_fractions: tuple[float, ...] = DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS
    orders: int = DEFAULT_ORDERS
    with_reliability: bool = True
    level: float = DEFAULT_LEVEL
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {self.model!r}")
        if self.snapshot_fractions is None:
            paper = self.model == "glicko"
            object.__setattr__(self, "snapshot_fractions", DEFAULT_SNAPSHOT_FRACTIONS if paper else LOGISTIC_SNAPSHOT_FRACTIONS)
        for name in ("snapshot_fractions", "test_case_snapshot_fractions"):
            object.__setattr__(self, name, tuple(check_fractions(getattr(self, name), name).tolist()))
        from .checks import check_start  # here: settings load without numba (the command line reads MODELS)
        from .intervals import z_of

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
        """From keyword arguments or a mapping (a result's ``settings``)."""
        given = {**(settings or {}), **kwargs}
        unknown = set(given) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown rating setting(s) {', '.join(sorted(unknown))}")
        return cls(**given)

    def reproducing(self) -> dict[str, Setting]:
        """The settings a result carries, to reproduce it: fractions as tuples."""
        return dict(
            model=self.model,
            seed=self.seed,
            row_order=self.row_order,
            init_mu=self.init_mu,
            init_sigma=self.init_sigma,
            snapshot_fractions=self.snapshot_fractions,
            test_case_snapshot_fractions=self.test_case_snapshot_fractions,
            orders=self.orders,
            level=self.level,
        )
