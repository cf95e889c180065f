"""Rate every test case and agent of a match table: :func:`rate`, by the model its settings name.

``model="rasch"`` (the default) and ``"2pl"`` fit every match at once (:mod:`.logistic`); ``"glicko"``
is the AGI-Elo paper's sequential Glicko-1 pass over ``orders`` random orders (:mod:`.glicko`), with
``orders=1`` reproducing its published ratings exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .frames import Matches, Table, encode_matches, to_pandas
from .settings import (
    DEFAULT_LEVEL,
    DEFAULT_MODEL,
    DEFAULT_ORDERS,
    DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    RatingSettings,
    Setting,
)

__all__ = ["Fitted", "RatingResult", "fitted_ratings", "rate", "rate_encoded"]


@dataclass(frozen=True)
class RatingResult:
    """What :func:`rate` returns.

    Attributes
    ----------
    test_cases : DataFrame or pyarrow.Table
        ``test_case_id, mu, sigma, matches, mean_score, mean_metric, component``: the test case's
        difficulty (``mu``) and its uncertainty (``sigma``). ``mean_score`` is the test case's own score
        (1 − the agents' mean S), ``mean_metric`` the agents' mean metric on it. The logistic models'
        ``mu`` is the posterior mean given the agents' ratings and ``sigma`` its sd; ``2pl`` adds
        ``discrimination, discrimination_lo, discrimination_hi``. Glicko's add ``mu_order_sd`` (the
        spread of ``mu`` over the orders) and the history ``mu_after_<j>, sigma_after_<j>``
        (j = 1, 2, 4, …: the rating after the test case's j-th match, which
        :func:`~agielo_dagster.rating.placement.place_agents` replays a newcomer against).
    agents : DataFrame or pyarrow.Table
        ``agent_id, mu, sigma, matches, mean_score, mean_metric, mu_lo, mu_hi, rank, rank_lo, rank_hi,
        component`` (Glicko's add ``mu_order_sd``):

        - ``mu``: the agent's competency; ``sigma``: the standard error of its difference from the
          mean of its component's agents; ``mu_lo, mu_hi``: the ``level`` interval (95 % by default);
        - ``rank``: 1 + the number of agents of the same component whose interval lies entirely
          above this one (agents no interval separates share a rank); ``rank_lo`` (= ``rank``) and
          ``rank_hi``: the best and worst ranks the intervals allow;
        - ``component``: the connected component of the match graph (0 = the largest); ratings and
          ranks compare only within a component.
    snapshots : DataFrame or pyarrow.Table
        ``fraction, kind, id, mu, sigma``: the ratings after that share of the matches (in the order of
        ``seed``); a logistic model's are fits of the matches played by then (NaN for players not met yet).
    reliability : DataFrame or pyarrow.Table or None
        ``fraction, rho_test_cases, rho_agents, mae, mse, matches_outside_bins, orders`` at each
        snapshot (see :mod:`agielo_dagster.rating.reliability`).
    settings : dict
        The settings of the rating, to reproduce it (:meth:`RatingSettings.reproducing`).
    n_matches : int
    n_components : int
        Connected components of the (agent, test case) graph; more than one also warns
        (:class:`~agielo_dagster.rating.DisconnectedMatchesWarning`).
    """

    test_cases: Table
    agents: Table
    snapshots: Table
    reliability: Table | None
    settings: dict = field(repr=False)
    n_matches: int = 0
    n_components: int = 1

    def component_of(self, kind: str = "agent") -> pd.Series:
        """Which players are in which component: a Series id → component, for ``kind`` "agent" or "test_case"."""
        table = to_pandas(self.agents if kind == "agent" else self.test_cases)
        return table.set_index(f"{kind}_id")["component"]


def rate(
    matches: Table,
    *,
    model: str = DEFAULT_MODEL,
    seed: int | None = 42,
    level: float = DEFAULT_LEVEL,
    snapshot_fractions: Iterable[float] | None = None,
    test_case_snapshot_fractions: Iterable[float] = DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    with_reliability: bool = True,
    orders: int = DEFAULT_ORDERS,
    row_order: bool = False,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
    workers: int | None = None,
) -> RatingResult:
    """Rate every test case and agent of a match table.

    Parameters
    ----------
    matches : pandas or polars DataFrame, or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: one row per match, each (agent, test case) pair at
        most once, ``score`` in [0, 1]. Ids may be strings or dictionary-encoded strings (Arrow).
    model : {"rasch", "2pl", "glicko"}
        ``rasch``: every match at once, P(success) = 1 / (1 + 10^(−(μ_agent − μ_test_case)/400)), the
        test cases a sample of their benchmark (:mod:`agielo_dagster.rating.logistic`); ``2pl``: the same
        with a discrimination per test case; ``glicko``: the AGI-Elo paper's sequential Glicko-1 over
        ``orders`` random orders (:mod:`agielo_dagster.rating.glicko`).
    seed : int
        Seed of the match order behind the snapshots (and of Glicko's orders). A logistic model's
        ratings do not depend on it, nor on the table's row order.
    level : float
        Confidence level of ``mu_lo, mu_hi`` and of the ranks.
    snapshot_fractions : sequence of float
        Shares of the matches after which the agents' ratings (and the reliability) are recorded;
        default: every 10 % (logistic models), every 1 % (``glicko``, as the paper).
    test_case_snapshot_fractions : sequence of float
        Shares after which the test cases' ratings are recorded (fewer: there are many test cases).
    with_reliability : bool
        Measure the reliability table at the snapshots (:mod:`agielo_dagster.rating.reliability`).
    orders, row_order, init_mu, init_sigma, workers
        ``glicko`` only: the orders averaged (``orders=1`` is the paper's single order), the table's row
        order as the single order, every player's starting rating (μ within ±10,000, σ in (0, 1000]),
        and the threads playing the orders (default: the cores available).

    Returns
    -------
    RatingResult
        Tables in the flavour of ``matches`` (pandas, polars or pyarrow).
    """
    settings = RatingSettings.of(
        model=model,
        seed=seed,
        level=level,
        snapshot_fractions=snapshot_fractions,
        test_case_snapshot_fractions=test_case_snapshot_fractions,
        with_reliability=with_reliability,
        orders=orders,
        row_order=row_order,
        init_mu=init_mu,
        init_sigma=init_sigma,
        workers=workers,
    )
    return rate_encoded(encode_matches(matches), settings)


def rate_encoded(m: Matches, settings: RatingSettings | Mapping[str, Setting], *, warn: bool = True) -> RatingResult:
    """:func:`rate` on an already encoded match table, with ``settings`` its keyword arguments (or a mapping of them)."""
    if not isinstance(settings, RatingSettings):
        settings = RatingSettings.of(settings)
    if settings.model == "glicko":
        from .glicko import rate_glicko

        return rate_glicko(m, settings, warn=warn)
    from .logistic_rate import rate_logistic

    return rate_logistic(m, settings, warn=warn)


@dataclass(frozen=True)
class Fitted:
    """Ratings (Elo) as a model fits them, without tables: what re-ratings (twins, folds, removals) need.

    ``agent_sigma`` is the agent's own uncertainty against fixed test cases (a logistic model's 1/√information,
    Glicko's σ), not the interval's; ``state`` is the logistic fit (None for Glicko), to warm-start the next.
    """

    agent_mu: np.ndarray
    agent_sigma: np.ndarray
    test_case_mu: np.ndarray
    test_case_sigma: np.ndarray
    state: object = None


def fitted_ratings(m: Matches, settings: RatingSettings | Mapping[str, Setting], start: Fitted | None = None) -> Fitted:
    """The ratings of encoded matches as ``settings`` rate them; ``start`` (a fit of nearly the same matches, with
    the same codes) warm-starts a logistic model's fit."""
    if not isinstance(settings, RatingSettings):
        settings = RatingSettings.of(settings)
    if settings.model == "glicko":
        from .glicko import final_ratings

        a_mu, a_sig, t_mu, t_sig = final_ratings(
            m,
            seed=settings.seed,
            orders=settings.orders,
            row_order=settings.row_order,
            init_mu=settings.init_mu,
            init_sigma=settings.init_sigma,
            workers=settings.workers,
        )
        return Fitted(a_mu, a_sig, t_mu, t_sig)
    from .logistic_rate import fitted_logistic

    return fitted_logistic(m, settings, None if start is None else start.state)
