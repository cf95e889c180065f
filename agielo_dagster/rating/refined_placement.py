"""A newcomer placed on the refined scale by the refinement's own pairwise equations, the rated agents fixed.

:func:`place_refined` solves one agent's equation of step 1 of
:func:`~agielo_dagster.rating.refine.refine_ratings` against the rated agents it shares test cases
with; :func:`place_on_refined` does so for each new agent of a match table. The interval is the
rated agents' own: z·se from the sandwich clustered by test case, reaching farther on a side where
the newcomer's Firth-penalized likelihood is flat (:func:`profile_reach_one`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._kernels import Q
from .intervals import z_of
from .refine import _MAX_DOUBLINGS, _MAX_ITER, _MAX_STEP, _TOL, _binary

__all__ = ["PairRecord", "RefinedPlacement", "place_on_refined", "place_refined", "profile_reach_one"]


@dataclass(frozen=True)
class PairRecord:
    """A newcomer's decisive results against fixed rivals, one element per (rival, shared test case) pair:
    its wins ``w_ab``, the pair's decisive weight ``n`` = w_ab + w_ba, the rival's rating ``mu_b`` and the
    test case's design weight ``d``."""

    w_ab: np.ndarray
    n: np.ndarray
    mu_b: np.ndarray
    d: np.ndarray

    def penalized(self, mu: float, firth: float) -> tuple[float, float, float]:
        """(Firth-penalized log-likelihood, Fisher information, curvature) at ``mu``.

        ℓ(μ) = Σ d [w_ab log E + w_ba log(1 − E)] + ½ firth log I(μ), I = q² Σ d n E(1 − E): the
        function whose maximum :func:`place_refined` solves for."""
        x = Q * (mu - self.mu_b)
        log_e, log_not = -np.logaddexp(0.0, -x), -np.logaddexp(0.0, x)
        e = np.exp(log_e)
        v = self.d * self.n * e * (1.0 - e)
        total = max(float(v.sum()), 1e-300)
        s1 = float((v * (1.0 - 2.0 * e)).sum())
        s2 = float((v * ((1.0 - 2.0 * e) ** 2 - 2.0 * e * (1.0 - e))).sum())
        ll = float((self.d * (self.w_ab * log_e + (self.n - self.w_ab) * log_not)).sum())
        curvature = Q * Q * (total - 0.5 * firth * (s2 / total - (s1 / total) ** 2))
        return ll + 0.5 * firth * math.log(Q * Q * total), Q * Q * total, curvature


def profile_reach_one(mu: float, se: float, z: float, pairs: PairRecord, firth: float) -> tuple[float, float]:
    """How far below and above ``mu`` (its penalized maximum) the newcomer's ``z`` interval reaches.

    The one-agent form of :func:`~agielo_dagster.rating.refine.profile_reach`: the penalized
    log-likelihood's drop scaled to the standard error, D(μ) = 2[ℓ(μ̃) − ℓ(μ)] / (c se²), c the
    larger of its curvature and the Fisher information at μ̃, so that D ≈ ((μ − μ̃)/se)² where ℓ is
    quadratic; each side reaches where D = z², and never less than z·se.
    """
    l0, info, curvature = pairs.penalized(mu, firth)
    target = 0.5 * z * z * max(curvature, info) * se * se

    def ruled_out(distance: float, side: float) -> bool:
        return l0 - pairs.penalized(mu + side * distance, firth)[0] >= target

    reach = []
    for side in (-1.0, 1.0):
        lo = z * se
        if ruled_out(lo, side):
            reach.append(lo)
            continue
        hi = 2.0 * lo
        for _ in range(_MAX_DOUBLINGS):
            if ruled_out(hi, side):
                break
            lo, hi = hi, 2.0 * hi
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if ruled_out(mid, side) else (mid, hi)
        reach.append(hi)
    return reach[0], reach[1]


@dataclass(frozen=True)
class RefinedPlacement:
    """What :func:`place_refined` returns for one newcomer.

    Attributes
    ----------
    mu, se : float
        The newcomer's rating on the refined scale and its standard error (sandwich clustered by
        test case, at least the model's 1/√I; NaN when it shares no comparison with a rated agent).
    comparisons : float
        Σ (w_ab + w_ba) over its (rated agent, shared test case) pairs: the decisive results it rests on.
    iterations : int
        Newton iterations.
    below, above : float
        How far the ``z`` interval reaches below and above ``mu`` (Elo): z·se, or farther on a side
        where the newcomer's penalized likelihood is flat (:func:`profile_reach_one`); NaN with ``se``.
    """

    mu: float
    se: float
    comparisons: float
    iterations: int
    below: float = math.nan
    above: float = math.nan


def place_refined(
    score: np.ndarray,
    rival_score: np.ndarray,
    rival_mu: np.ndarray,
    cluster: np.ndarray,
    *,
    weight: np.ndarray | None = None,
    start: float = 1500.0,
    z: float = z_of(0.95),
) -> RefinedPlacement:
    """Place one newcomer on the refined scale by the refinement's own pairwise equations.

    Each element is one (rated agent b, shared test case t) pair: the newcomer's score S_a on t
    (``score``), b's score S_b on t (``rival_score``), b's fixed refined rating (``rival_mu``),
    t's index (``cluster``) and t's design weight d_t (``weight``; 1 if None). The newcomer's
    rating μ solves Σ d_t [w_ab − (w_ab + w_ba) E(μ − μ_b)] = 0 with w_ab = S_a(1 − S_b),
    w_ba = S_b(1 − S_a) (step 1 of :func:`refine_ratings`, one dimension, the rated agents
    fixed), with Firth's correction (½ I'/I, scaled by the pairs' dispersion, capped at 1 as
    there); its standard error is the sandwich clustered by test case, as for the rated agents, and
    never less than the model's 1/√I (a newcomer that wins almost every decisive pair has almost no
    residuals, and the sandwich alone shrinks as the record separates); its ``z`` interval reaches
    z·se each side, farther where the penalized likelihood is flat (an agent that beats, or loses
    to, almost every rival it shares a test case with), as the rated agents' do
    (:func:`~agielo_dagster.rating.refine.profile_reach`).
    """
    s_a = np.asarray(score, dtype=np.float64)
    s_b = np.asarray(rival_score, dtype=np.float64)
    mu_b = np.asarray(rival_mu, dtype=np.float64)
    cluster = np.asarray(cluster, dtype=np.int64)
    d = np.ones(len(s_a)) if weight is None else np.asarray(weight, dtype=np.float64)
    w_ab = s_a * (1.0 - s_b)
    n = w_ab + s_b * (1.0 - s_a)
    keep = (n > 0.0) & (d > 0.0)
    w_ab, n, mu_b, d, cluster = w_ab[keep], n[keep], mu_b[keep], d[keep], cluster[keep]
    total = float((d * n).sum())
    if total <= 0.0:
        return RefinedPlacement(float(start), math.nan, 0.0, 0)
    binary = _binary(s_a) and _binary(s_b)

    def expected(mu):
        return 0.5 * (1.0 + np.tanh(0.5 * Q * (mu - mu_b)))

    def newton(mu, firth):
        it = 0
        for it in range(1, _MAX_ITER + 1):  # noqa: B007 (returned)
            e = expected(mu)
            v = d * n * e * (1.0 - e)
            info = Q * Q * v.sum()
            grad = Q * (d * (w_ab - n * e)).sum()
            if firth > 0.0 and info > 0.0:
                grad += firth * 0.5 * Q * (v * (1.0 - 2.0 * e)).sum() / v.sum()  # ½ I'/I, I = Q²Σv
            step = float(np.clip(grad / max(info, 1e-12), -_MAX_STEP, _MAX_STEP))
            mu += step
            if abs(step) < _TOL:
                break
        return mu, it

    mu, iterations = newton(float(start), 1.0)
    phi = 1.0
    if not binary:
        e = expected(mu)
        var = n * e * (1.0 - e)
        ok = var > 1e-12
        phi = min(float(((w_ab - n * e)[ok] ** 2 / var[ok]).sum()) / max(int(ok.sum()) - 1, 1), 1.0)
        mu, more = newton(mu, phi)
        iterations += more
    e = expected(mu)
    info = Q * Q * float((d * n * e * (1.0 - e)).sum())
    u = np.bincount(cluster, Q * d * (w_ab - n * e))
    se = math.sqrt(max(float((u * u).sum()) / info, 1.0)) / math.sqrt(info) if info > 0 else math.nan
    if not se > 0.0:
        return RefinedPlacement(float(mu), se, total, iterations)
    below, above = profile_reach_one(mu, se, z, PairRecord(w_ab, n, mu_b, d), 1.0 if binary else phi)
    return RefinedPlacement(float(mu), se, total, iterations, below, above)


def place_on_refined(
    new_matches,
    rated_matches,
    rated_agents,
    *,
    level: float = 0.9,
    design=None,
):
    """Place new agents on the refined scale of ``rated_agents`` (a ``rate(..., refine=True)`` agent table).

    Each newcomer is compared, test case by test case, with the rated agents of ``rated_matches``
    that played the same test cases (see :func:`place_refined`); the rated agents' ratings stay
    fixed. ``design`` (test-case id → weight, as for :func:`~agielo_dagster.rating.place_on_subset`)
    weights each shared test case's comparisons. Returns a pandas table ``agent_id, mu, sigma,
    mu_lo, mu_hi, matches, mean_score, mean_metric`` with ``sigma`` the standard error.
    """
    import pandas as pd

    from .frames import to_pandas
    from .schema import MATCH_COLUMNS

    z = z_of(level)
    new = to_pandas(new_matches)[list(MATCH_COLUMNS)]
    rated = to_pandas(rated_matches)[["test_case_id", "agent_id", "score"]]
    mu_of = to_pandas(rated_agents).set_index("agent_id")["mu"].astype(np.float64)
    rated = rated.assign(rival_mu=rated["agent_id"].map(mu_of).to_numpy()).dropna(subset=["rival_mu"])
    rated = rated.rename(columns={"agent_id": "rival", "score": "rival_score"})
    rows = []
    for agent, mine in new.groupby("agent_id", sort=False):
        pairs = mine[["test_case_id", "score"]].merge(rated, on="test_case_id")
        codes, _ = pd.factorize(pairs["test_case_id"])
        weight = None
        if design is not None:
            weight = pairs["test_case_id"].map(pd.Series(design, dtype=np.float64)).fillna(0.0).to_numpy()
        p = place_refined(
            pairs["score"].to_numpy(),
            pairs["rival_score"].to_numpy(),
            pairs["rival_mu"].to_numpy(),
            codes,
            weight=weight,
            start=float(mu_of.mean()),
            z=z,
        )
        rows.append(
            {
                "agent_id": agent,
                "mu": p.mu,
                "sigma": p.se,
                "mu_lo": p.mu - p.below,
                "mu_hi": p.mu + p.above,
                "matches": len(mine),
                "mean_score": float(mine["score"].mean()),
                "mean_metric": float(mine["metric"].mean()),
            }
        )
    return pd.DataFrame(rows)
