"""Ability masses: difficulty explained by the abilities a task needs (TADDL-V's DL-V model).

Each ability ``a`` gets a mass M(a) > 0. A task (or test case) ``t`` that needs the abilities
a₁ … aₙ has the difficulty::

    D(t) = Σᵢ M(aᵢ) − Σ_{i<j} Cor(aᵢ, aⱼ) + Σ_{i<j<k} Cor(aᵢ, aⱼ, aₖ) − …      Cor(S) = Σ_{a∈S} log M(a)

truncated after the terms of ``max_order`` abilities (``max_order=1``: the masses add up;
``None``: every order). This is the formula as the issue states it: no text of the TADDL-V
paper was available to check it against. Because Cor(S) is a sum over S, the order-r term
counts every log M(aᵢ) in C(n − 1, r − 1) of the r-subsets, so the whole sum is::

    D(t) = Σᵢ M(aᵢ) + c(n, max_order) · Σᵢ log M(aᵢ),   c(n, R) = Σ_{r=2}^{min(R, n)} (−1)^{r+1} C(n − 1, r − 1)

(c = 0 for one ability or order 1, c = −(n − 1) at order 2, c = −1 with every order). The
masses minimize the L2 loss mean_t (D(t) − y_t)² (plus an optional ridge ``l2 · Σ_a (log M(a))²``)
with scipy's L-BFGS-B over log M(a), within bounds, so every mass stays positive; the fit
starts from the order-1 masses (bounded linear least squares) and from equal masses, and keeps
the better optimum (for ``max_order ≥ 2`` the loss is not convex).

Scale. Masses are positive and the log terms are not scale-free, so the difficulties are
moved to a fit scale first, y = (d − origin) / unit, and every reported difficulty (``fitted``,
:meth:`AbilityMasses.predict`) is moved back, d = origin + unit · D. With the default
``scale="standard"`` the unit is the standard deviation of the difficulties and the origin (the
difficulty of an item that needs nothing) is fitted with the masses, starting one unit below the
easiest item: the data's zero means nothing for AGI-Elo ratings (about 1500 ± 300) or HodgeRank
scores (centred at 0), so both land on the same footing. ``scale=unit`` (a number) fixes the unit
and fits the origin; ``scale="none"`` fits the difficulties as given (origin 0, unit 1);
``scale=(origin, unit)`` fixes both. The unit matters beyond order 1 (log M is not scale-free):
when the data's own unit is known (HodgeRank margins, say), name it. Masses are reported on the fit
scale: one unit of mass is ``unit`` points of difficulty.

Alignment rate (as :func:`~agielo_dagster.rating.hodge_rank` defines it for judged pairs): the
share of item pairs with different difficulties whose order the fitted D reproduces strictly;
a pair the fit ties counts as not aligned. Counted exactly over all pairs in O(n log n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import numba
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .frames import MatchTableError, Table, flavour_of, floats_of, ids_of, require_columns, to_flavour, to_pandas

__all__ = ["AbilityMasses", "ability_masses", "aligned_pairs", "alignment_rate", "order_coefficient"]

LOG_MASS_BOUNDS = (math.log(1e-9), math.log(1e9))

Scale: TypeAlias = Literal["standard", "none"] | float | tuple[float, float]
"""How difficulties map to the fit scale (see :func:`ability_masses`): a rule, a unit, or (origin, unit)."""


def order_coefficient(n_abilities: int, max_order: int | None) -> float:
    """c(n, R): the factor of Σ log M(aᵢ) in D(t) for a task of ``n_abilities`` abilities (module docstring)."""
    top = n_abilities if max_order is None else min(int(max_order), n_abilities)
    return float(sum((-1) ** (r + 1) * math.comb(n_abilities - 1, r - 1) for r in range(2, top + 1)))


@numba.njit(cache=True, nogil=True)
def _concordant(observed_rank, fitted_rank, n_fitted_ranks):
    """(pairs with different observed ranks, pairs the fitted ranks order the same way strictly).

    Items come sorted by observed rank; a Fenwick tree over the fitted ranks counts, for each
    item, the earlier items (strictly easier) with a strictly smaller fitted rank.
    """
    n = len(observed_rank)
    tree = np.zeros(n_fitted_ranks + 1, dtype=np.int64)
    pairs = 0
    aligned = 0
    inserted = 0
    start = 0
    while start < n:
        stop = start
        while stop < n and observed_rank[stop] == observed_rank[start]:
            stop += 1
        for i in range(start, stop):  # query the whole group of ties before inserting any of it
            r = fitted_rank[i]  # 1-based
            below = 0
            j = r - 1
            while j > 0:
                below += tree[j]
                j -= j & -j
            aligned += below
            pairs += inserted
        for i in range(start, stop):
            j = fitted_rank[i]
            while j <= n_fitted_ranks:
                tree[j] += 1
                j += j & -j
            inserted += 1
        start = stop
    return pairs, aligned


def aligned_pairs(observed: ArrayLike, fitted: ArrayLike) -> tuple[int, int]:
    """(aligned pairs, pairs with different observed values): the counts behind :func:`alignment_rate`."""
    obs = np.asarray(observed, dtype=np.float64)
    fit = np.asarray(fitted, dtype=np.float64)
    if obs.shape != fit.shape or obs.ndim != 1:
        raise ValueError(f"observed and fitted must be 1-d of one length, got shapes {obs.shape} and {fit.shape}")
    if not (np.isfinite(obs).all() and np.isfinite(fit).all()):
        raise ValueError("observed and fitted must be finite")
    order = np.argsort(obs, kind="stable")
    obs_rank = np.unique(obs, return_inverse=True)[1][order].astype(np.int64)
    fit_unique, fit_rank = np.unique(fit, return_inverse=True)
    pairs, aligned = _concordant(obs_rank, (fit_rank[order] + 1).astype(np.int64), len(fit_unique))
    return int(aligned), int(pairs)


def alignment_rate(observed: ArrayLike, fitted: ArrayLike) -> float:
    """Share of pairs with different ``observed`` values that ``fitted`` orders the same way (strictly); NaN without such pairs."""
    aligned, pairs = aligned_pairs(observed, fitted)
    return aligned / pairs if pairs else float("nan")


@dataclass(frozen=True)
class AbilityMasses:
    """The fitted masses and the fit's figures; :meth:`predict` gives the difficulty of unseen items.

    Attributes
    ----------
    masses : DataFrame
        ``ability, mass, items`` (mass on the fit scale; items: fitted items that need the ability),
        heaviest first.
    fitted : DataFrame
        ``item_id, difficulty, fitted, residual, abilities`` for every fitted item (data scale).
    loss : float
        Mean squared error of D against the scaled difficulties (fit scale, ridge excluded).
    rmse : float
        Root mean squared error on the data's scale.
    alignment : float
        The alignment rate (module docstring); ``aligned`` of ``pairs`` pairs.
    max_order, origin, unit, l2 : the model and the scale (d = origin + unit · D; origin as fitted).
    items_without_abilities : int
        Items of ``difficulties`` with no ability listed: left out of the fit.
    converged : bool, iterations : int
        L-BFGS-B's verdict and iterations on the kept start.
    """

    masses: Table
    fitted: Table
    loss: float
    rmse: float
    alignment: float
    aligned: int
    pairs: int
    max_order: int | None
    origin: float
    unit: float
    l2: float
    items_without_abilities: int
    converged: bool
    iterations: int
    flavour: str = field(default="pandas", repr=False)

    def predict(self, abilities: Table) -> Table:
        """Difficulties of items from their abilities (long frame ``item_id, ability``), on the data's scale.

        Returns ``item_id, difficulty, abilities, unknown_abilities``; an item that needs an ability
        the fit has not seen gets a NaN difficulty and counts it in ``unknown_abilities``.
        """
        long = _ability_pairs(abilities)
        table = to_pandas(self.masses)
        log_mass = pd.Series(np.log(table["mass"].to_numpy(dtype=np.float64)), index=table["ability"].astype(str))
        items, item_code = np.unique(long["item_id"].to_numpy(dtype=object), return_inverse=True)
        logs = log_mass.reindex(long["ability"]).to_numpy()
        unknown = np.bincount(item_code, np.isnan(logs), len(items)).astype(np.int64)
        n = np.bincount(item_code, minlength=len(items))
        d = _difficulty(item_code, np.nan_to_num(logs), n, len(items), self.max_order)
        d = np.where(unknown > 0, np.nan, self.origin + self.unit * d)
        out = pd.DataFrame({"item_id": items, "difficulty": d, "abilities": n, "unknown_abilities": unknown})
        return to_flavour(out, flavour_of(abilities))


def _difficulty(item_code: np.ndarray, log_mass_of_row: np.ndarray, n: np.ndarray, n_items: int, max_order) -> np.ndarray:
    coef = np.array([order_coefficient(int(k), max_order) for k in range(int(n.max(initial=0)) + 1)])
    mass_sum = np.bincount(item_code, np.exp(log_mass_of_row), n_items)
    log_sum = np.bincount(item_code, log_mass_of_row, n_items)
    return mass_sum + coef[n] * log_sum


def _ability_pairs(abilities: Table) -> pd.DataFrame:
    df = to_pandas(abilities)
    require_columns(df, ("item_id", "ability"), "ability table")
    if len(df) == 0:
        raise MatchTableError("ability table has no rows (rule: non_empty)", rule="non_empty")
    out = pd.DataFrame(
        {
            "item_id": ids_of(df, "item_id", "ability table").astype(str),
            "ability": ids_of(df, "ability", "ability table").astype(str),
        }
    )
    repeated = out.duplicated().to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise MatchTableError(
            f"ability table row {row}: item {out['item_id'].iloc[row]!r} lists ability {out['ability'].iloc[row]!r} again "
            f"({int(repeated.sum())} repeated row(s); rule: ability_unique)",
            rule="ability_unique",
            row=row,
            column="ability",
        )
    return out


def _scale_of(d: np.ndarray, scale: Scale) -> tuple[float, float, bool]:
    """(origin, unit, whether the origin is fitted) of a ``scale`` argument."""
    if isinstance(scale, str):
        if scale == "none":
            return 0.0, 1.0, False
        if scale == "standard":
            sd = float(d.std())
            unit = sd if sd > 0 else 1.0
            return float(d.min()) - unit, unit, True
        raise ValueError(f"scale must be 'standard', 'none', a unit or (origin, unit), got {scale!r}")
    if isinstance(scale, (int, float, np.integer, np.floating)) and not isinstance(scale, bool):
        unit = float(scale)
        if not (math.isfinite(unit) and unit > 0):
            raise ValueError(f"a scale unit must be finite and > 0, got {scale!r}")
        return float(d.min()) - unit, unit, True
    origin, unit = (float(v) for v in scale)
    if not (math.isfinite(origin) and math.isfinite(unit) and unit > 0):
        raise ValueError(f"scale (origin, unit) must be finite with unit > 0, got {scale!r}")
    return origin, unit, False


def ability_masses(
    difficulties: Table,
    abilities: Table,
    *,
    max_order: int | None = 2,
    l2: float = 1e-6,
    scale: Scale = "standard",
    max_iter: int = 2000,
    tol: float = 1e-12,
) -> AbilityMasses:
    """Fit ability masses M(a) > 0 to item difficulties (module docstring: the model, scale and alignment).

    Parameters
    ----------
    difficulties : DataFrame or pyarrow.Table
        ``item_id, difficulty``: one row per item (test case or task), e.g. AGI-Elo test-case
        ratings (``test_case_id, mu`` renamed) or HodgeRank scores (``item, score`` renamed).
    abilities : DataFrame or pyarrow.Table
        ``item_id, ability``: one row per item and ability it needs. Items without a difficulty
        are ignored here (:meth:`AbilityMasses.predict` rates them); items without an ability
        are left out and counted.
    max_order : int or None
        The largest order of the inclusion–exclusion terms (1: masses add; None: every order).
    l2 : float
        Ridge on the log masses (pulls masses toward 1 on the fit scale; keeps an ability that
        only ever appears beside others finite). 0 is plain least squares.
    scale : "standard", "none", a number, or (origin, unit)
        How difficulties map to the fit scale, y = (d − origin) / unit: "standard", unit = their
        standard deviation and origin fitted; a number, that unit and origin fitted; "none", as
        given (origin 0, unit 1); (origin, unit), both fixed.
    max_iter, tol : int, float
        L-BFGS-B's iteration limit and tolerance (``ftol`` and ``gtol``).

    Returns
    -------
    AbilityMasses
    """
    from scipy.optimize import lsq_linear, minimize
    from scipy.sparse import csr_matrix, hstack

    if max_order is not None and (isinstance(max_order, bool) or not isinstance(max_order, (int, np.integer)) or max_order < 1):
        raise ValueError(f"max_order must be an integer >= 1 or None, got {max_order!r}")
    if not (l2 >= 0 and math.isfinite(l2)):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
    flavour = flavour_of(difficulties)
    frame = to_pandas(difficulties)
    require_columns(frame, ("item_id", "difficulty"), "difficulty table")
    if len(frame) == 0:
        raise MatchTableError("difficulty table has no rows (rule: non_empty)", rule="non_empty")
    item_ids = ids_of(frame, "item_id", "difficulty table").astype(str).to_numpy(dtype=object)
    d_all = floats_of(frame, "difficulty", "difficulty table")
    index = pd.Index(item_ids)
    if not index.is_unique:
        row = int(np.flatnonzero(index.duplicated())[0])
        raise MatchTableError(
            f"difficulty table row {row}: item {item_ids[row]!r} appears again (rule: item_unique)",
            rule="item_unique",
            row=row,
            column="item_id",
        )
    long = _ability_pairs(abilities)
    long = long[long["item_id"].isin(index)]
    has = np.isin(item_ids, long["item_id"].to_numpy(dtype=object))
    if not has.any():
        raise MatchTableError(
            "no item of the difficulty table has an ability in the ability table (rule: abilities_known)", rule="abilities_known"
        )
    items, d = item_ids[has], d_all[has]
    item_code = pd.Index(items).get_indexer(long["item_id"])
    ability_names, ability_code = np.unique(long["ability"].to_numpy(dtype=object), return_inverse=True)
    n_items, n_abilities = len(items), len(ability_names)
    origin, unit, fit_origin = _scale_of(d, scale)
    y = (d - origin) / unit

    a_mat = csr_matrix((np.ones(len(long)), (item_code, ability_code)), shape=(n_items, n_abilities))
    n = np.asarray(a_mat.sum(axis=1)).ravel().astype(np.int64)
    coef = np.array([order_coefficient(int(k), max_order) for k in range(int(n.max()) + 1)])[n]
    a_t = a_mat.T.tocsr()

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta = x[:n_abilities]
        mass = np.exp(theta)
        r = a_mat @ mass + coef * (a_mat @ theta) - y
        if fit_origin:
            r += x[-1]
        grad = np.empty_like(x)
        grad[:n_abilities] = (2.0 / n_items) * ((a_t @ r) * mass + a_t @ (coef * r)) + 2.0 * l2 * theta
        if fit_origin:
            grad[-1] = 2.0 * r.mean()
        return float(r @ r / n_items + l2 * theta @ theta), grad

    lo, hi = LOG_MASS_BOUNDS
    design = hstack([a_mat, csr_matrix(np.ones((n_items, 1)))]).tocsr() if fit_origin else a_mat
    lower = np.r_[np.full(n_abilities, math.exp(lo)), [-np.inf] * fit_origin]
    linear = lsq_linear(design, y, bounds=(lower, np.inf), lsmr_tol="auto", max_iter=max(1000, 10 * n_abilities))
    shift0 = float(linear.x[-1]) if fit_origin else 0.0
    even = max(float(np.mean(y)) / float(np.mean(n)), 1e-3)
    starts = [
        np.r_[np.clip(np.log(np.maximum(linear.x[:n_abilities], 1e-3)), lo, hi), [shift0] * fit_origin],
        np.r_[np.full(n_abilities, math.log(even)), [0.0] * fit_origin],
    ]
    bounds = [(lo, hi)] * n_abilities + [(None, None)] * fit_origin
    best = None
    for x0 in starts:
        run = minimize(
            objective,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": max_iter, "ftol": tol, "gtol": tol * 1e-2, "maxcor": 20},
        )
        if best is None or run.fun < best.fun:
            best = run
    theta, shift = best.x[:n_abilities], (float(best.x[-1]) if fit_origin else 0.0)
    origin += unit * shift
    y = (d - origin) / unit
    fitted_y = a_mat @ np.exp(theta) + coef * (a_mat @ theta)
    loss = float(np.mean((fitted_y - y) ** 2))
    fitted_d = origin + unit * fitted_y
    aligned, pairs = aligned_pairs(d, fitted_d)
    masses = pd.DataFrame(
        {"ability": ability_names, "mass": np.exp(theta), "items": np.bincount(ability_code, minlength=n_abilities)}
    ).sort_values(["mass", "ability"], ascending=[False, True], kind="stable")
    fitted = pd.DataFrame({"item_id": items, "difficulty": d, "fitted": fitted_d, "residual": d - fitted_d, "abilities": n})
    return AbilityMasses(
        masses=to_flavour(masses, flavour),
        fitted=to_flavour(fitted, flavour),
        loss=loss,
        rmse=float(np.sqrt(np.mean((fitted_d - d) ** 2))),
        alignment=aligned / pairs if pairs else float("nan"),
        aligned=aligned,
        pairs=pairs,
        max_order=None if max_order is None else int(max_order),
        origin=origin,
        unit=unit,
        l2=float(l2),
        items_without_abilities=int((~has).sum()),
        converged=bool(best.success),
        iterations=int(best.nit),
        flavour=flavour,
    )
