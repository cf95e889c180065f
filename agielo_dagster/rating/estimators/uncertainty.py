"""Honest error bars: bootstrap over test cases, and robustness to missing measurements.

:func:`~agielo_dagster.rating.rate` reports ``mu_lo, mu_hi`` from the model's curvature; two
resampling complements, both of the default model's ratings (``agielo``):

- :func:`bootstrap` resamples the test cases with replacement (each drawn copy is a distinct
  player) and re-estimates; percentile intervals for agent ratings, competency gaps and
  Plackett-Luce ratings.
- :func:`robustness` drops a share of the measurements at random, re-estimates, and reports
  Kendall τ against the ranking from all measurements (ONEBench's experiment), per method.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from ..frames import Matches, Table, encode_matches, flavour_of, to_flavour
from ..graph import warn_disconnected
from ..ratings import fitted_ratings
from ..settings import RatingSettings
from ._scale import LOGIT_TO_ELO
from .plackett_luce import bradley_terry_mle, wins_of

METHODS = ("agielo", "plackett_luce", "mean_metric")
CONFIDENCES = (0.5, 0.9, 0.99)


def _agielo_ratings(m: Matches) -> tuple[np.ndarray, np.ndarray]:
    """Agent and test-case μ of the default model (no tables)."""
    fitted = fitted_ratings(m, RatingSettings())
    return fitted.agent_mu, fitted.test_case_mu


def _pl_ratings(m: Matches, alpha: float) -> np.ndarray:
    return bradley_terry_mle(wins_of(m), alpha=alpha) * LOGIT_TO_ELO + 1500.0


def _resample_test_cases(m: Matches, rng: np.random.Generator) -> Matches:
    """Draw the test cases with replacement; every drawn copy becomes its own test case."""
    order = np.argsort(m.test_case, kind="stable")
    counts = np.bincount(m.test_case, minlength=len(m.test_case_ids))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    drawn = rng.integers(0, len(m.test_case_ids), len(m.test_case_ids))
    sizes = counts[drawn]
    offsets = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rows = order[np.repeat(starts[drawn], sizes) + offsets]
    return Matches(
        agent=m.agent[rows],
        test_case=np.repeat(np.arange(len(drawn), dtype=np.int32), sizes),
        score=m.score[rows],
        metric=m.metric[rows],
        agent_ids=m.agent_ids,
        test_case_ids=np.arange(len(drawn)).astype(str).astype(object),
        flavour=m.flavour,
    )


def bootstrap(
    matches: Table,
    *,
    n_resamples: int = 200,
    level: float = 0.95,
    seed: int = 0,
    alpha: float = 0.1,
    plackett_luce: bool = True,
) -> Table:
    """Percentile confidence intervals from resampling test cases.

    Parameters
    ----------
    matches : DataFrame
        ``test_case_id, agent_id, metric, score``.
    n_resamples, level, seed : int, float, int
        Number of bootstrap resamples, interval level, and the seed of the resamples.
    alpha : float
        Plackett-Luce pseudo-wins (keeps resamples where an agent never loses finite).
    plackett_luce : bool
        Also bootstrap Plackett-Luce ratings.

    Returns
    -------
    DataFrame
        ``agent_id, quantity, estimate, low, high, sd`` with quantity ∈ {``rating``, ``gap_50``,
        ``gap_90``, ``gap_99``, ``plackett_luce``}; ``estimate`` is computed on all test cases.
    """
    m = encode_matches(matches)
    warn_disconnected(m, "bootstrap")
    rng = np.random.default_rng(seed)

    def quantities(sample: Matches) -> dict[str, np.ndarray]:
        a_mu, t_mu = _agielo_ratings(sample)
        out = {"rating": a_mu}
        for c in CONFIDENCES:
            out[f"gap_{round(100 * c)}"] = t_mu.max() + 400 * np.log10(c / (1 - c)) - a_mu
        if plackett_luce:
            out["plackett_luce"] = _pl_ratings(sample, alpha)
        return out

    estimate = quantities(m)
    draws = [quantities(_resample_test_cases(m, rng)) for _ in range(n_resamples)]
    tail = (1 - level) / 2
    frames = []
    for name, point in estimate.items():
        values = np.array([d[name] for d in draws])
        frames.append(
            pd.DataFrame(
                {
                    "agent_id": m.agent_ids,
                    "quantity": name,
                    "estimate": point,
                    "low": np.quantile(values, tail, axis=0),
                    "high": np.quantile(values, 1 - tail, axis=0),
                    "sd": values.std(axis=0, ddof=1),
                }
            )
        )
    return to_flavour(pd.concat(frames, ignore_index=True), flavour_of(matches))


def agent_scores(m: Matches, method: str, *, alpha: float = 0.1) -> np.ndarray:
    """One score per agent (higher is better) by ``method`` ∈ METHODS."""
    if method == "agielo":
        return _agielo_ratings(m)[0]
    if method == "plackett_luce":
        return _pl_ratings(m, alpha)
    if method == "mean_metric":
        counts = np.bincount(m.agent, minlength=len(m.agent_ids))
        return np.bincount(m.agent, m.score, len(m.agent_ids)) / np.maximum(counts, 1)
    raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")


def robustness(
    matches: Table,
    methods: str | Iterable[str] = METHODS,
    fractions: Iterable[float] = (0.0, 0.5, 0.9, 0.95, 0.99),
    *,
    repeats: int = 5,
    seed: int = 0,
    alpha: float = 0.1,
) -> Table:
    """Kendall τ of each method's agent ranking with a share of measurements dropped, against all of them.

    Returns
    -------
    DataFrame
        ``method, fraction_dropped, kendall_tau`` (mean over ``repeats``), ``kendall_tau_min``,
        ``measurements`` (kept), ``agents`` (still measured).
    """
    m = encode_matches(matches)
    warn_disconnected(m, "robustness")
    methods = [methods] if isinstance(methods, str) else list(methods)
    rng = np.random.default_rng(seed)
    rows = []
    for method in methods:
        full = agent_scores(m, method, alpha=alpha)
        for fraction in fractions:
            taus, kept_agents = [], []
            for _ in range(repeats if fraction > 0 else 1):
                keep = rng.random(len(m)) >= fraction
                sample = Matches(
                    m.agent[keep], m.test_case[keep], m.score[keep], m.metric[keep], m.agent_ids, m.test_case_ids, m.flavour
                )
                scores = agent_scores(sample, method, alpha=alpha)
                measured = np.bincount(sample.agent, minlength=len(m.agent_ids)) > 0
                taus.append(kendalltau(full[measured], scores[measured])[0])
                kept_agents.append(int(measured.sum()))
            rows.append(
                {
                    "method": method,
                    "fraction_dropped": float(fraction),
                    "kendall_tau": float(np.mean(taus)),
                    "kendall_tau_min": float(np.min(taus)),
                    "measurements": int(round(len(m) * (1 - fraction))),
                    "agents": min(kept_agents),
                }
            )
    return to_flavour(pd.DataFrame(rows), flavour_of(matches))
