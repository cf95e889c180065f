"""What rating a match table returns: :class:`RatingResult` (its tables) and :class:`Fitted` (ratings alone, for re-ratings)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .frames import Table, to_pandas

__all__ = ["Fitted", "RatingResult"]


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


@dataclass(frozen=True)
class RatingResult:
    """What :func:`rate` returns.

    Attributes
    ----------
    test_cases : DataFrame or pyarrow.Table
        ``test_case_id, mu, sigma, matches, mean_score, mean_metric, component``: the test case's
        difficulty (``mu``) and its uncertainty (``sigma``). ``mean_score`` is the test case's own score
        (1 − the agents' mean S), ``mean_metric`` the agents' mean metric on it. The logistic models'
        ``mu`` is the posterior mean given the agents' ratings and ``sigma`` its sd. Every model adds
        ``discrimination, discrimination_lo, discrimination_hi, flag, flag_reason`` after ``sigma``
        (:mod:`agielo_dagster.rating.item_quality`: the 2PL's own discrimination, else one fitted per test
        case). Glicko's add ``mu_order_sd`` (the
        spread of ``mu`` over the orders) and the history ``mu_after_<j>, sigma_after_<j>``
        (j = 1, 2, 4, …: the rating after the test case's j-th match, which
        :func:`~agielo_dagster.rating.placement.place_agents` replays a newcomer against).
    agents : DataFrame or pyarrow.Table
        ``agent_id, mu, sigma, matches, mean_score, mean_metric, mu_lo, mu_hi, rank, rank_lo, rank_hi,
        component`` (Glicko's add ``mu_order_sd``):

        - ``mu``: the agent's competency; ``sigma``: the standard error of its difference from the
          mean of its component's agents; ``mu_lo, mu_hi``: the ``level`` interval (95 % by default;
          the logistic model's keeps its likelihood's shape: longer outwards for an agent that its test
          cases place from one side);
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
    fitted : Fitted or None
        A logistic model's fit, in the codes of the encoded matches (sorted ids): where re-ratings of nearly the same
        matches (twins, removals) start.
    """

    test_cases: Table
    agents: Table
    snapshots: Table
    reliability: Table | None
    settings: dict = field(repr=False)
    n_matches: int = 0
    n_components: int = 1
    fitted: Fitted | None = field(default=None, repr=False, compare=False)

    def component_of(self, kind: str = "agent") -> pd.Series:
        """Which players are in which component: a Series id → component, for ``kind`` "agent" or "test_case"."""
        table = to_pandas(self.agents if kind == "agent" else self.test_cases)
        return table.set_index(f"{kind}_id")["component"]
