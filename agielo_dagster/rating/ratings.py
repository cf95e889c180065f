"""Rate every test case and agent of a match table: :func:`rate`, by the model its settings name.

``model="rasch"`` (the default) and ``"2pl"`` fit every match at once (:mod:`.logistic`); ``"glicko"``
is the AGI-Elo paper's sequential Glicko-1 pass over ``orders`` random orders (:mod:`.glicko`), with
``orders=1`` reproducing its published ratings exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .frames import Matches, Table, encode_matches
from .result import Fitted, RatingResult
from .settings import (
    DEFAULT_LEVEL,
    DEFAULT_MODEL,
    DEFAULT_ORDERS,
    DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    RatingSettings,
    Setting,
)

__all__ = ["Fitted", "RatingResult", "fitted_ratings", "rate", "rate_encoded"]


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


def fitted_ratings(
    m: Matches,
    settings: RatingSettings | Mapping[str, Setting],
    start: Fitted | None = None,
    *,
    passes: int | None = None,
    tolerance: float | None = None,
) -> Fitted:
    """The ratings of encoded matches as ``settings`` rate them; ``start`` (a fit of nearly the same matches, with
    the same codes) warm-starts a logistic model's fit, ``passes`` caps its Newton steps (None: to convergence;
    a few steps from a fit of nearly the same data are that fit to first order) and ``tolerance`` is its longest
    step at convergence, in each agent's standard errors (None: the ratings' own)."""
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

    precision = {} if tolerance is None else {"tolerance": tolerance}
    return fitted_logistic(m, settings, None if start is None else start.state, passes, **precision)
