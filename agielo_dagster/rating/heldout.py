"""Held-out predictive check: do the ratings predict matches they were not fitted on?

k-fold over matches: each match falls in one of ``folds`` folds at random; for each fold
the ratings are fitted on the other folds and every match of the fold is predicted from
them. The predictions are scored against what happened:

- binary scores (every score 0 or 1): **log-loss** −mean(S log p + (1 − S) log(1 − p)),
  with p kept within [1e-15, 1 − 1e-15], and the **Brier score** mean (p − S)²;
- graded scores: **MAE in metric units**, mean |f⁻¹(p) − M| (f the benchmark's scoring,
  identity by default, so E[M] = f⁻¹(E[S])), and the Brier score of the scores.

Methods, all fitted on the same training folds:

- ``agielo``: the ratings of :func:`~agielo_dagster.rating.rate` (as ``settings`` rate them: the
  benchmark's model), p = 1/(1 + 10^(−(R_a − R_t)/400)), the paper's prediction;
- ``agielo_sigma``: the same ratings with their uncertainty, p = 1/(1 + 10^(−g(σ)(R_a − R_t)/400)),
  σ = √(σ_a² + σ_t²) (the logistic-normal approximation behind Glicko's g; a logistic model's σ_a
  is the agent's own 1/√information, σ_t the test case's posterior sd);
- ``agielo_population`` (binary scores only): the model's prediction with the agents as a population
  (:func:`population_predictions`: each agent's posterior on a grid, its prior the agents' normal
  distribution fitted by marginal likelihood): what a rating from a handful of results should predict;
- ``agielo_calibrated`` (graded scores only): the same ratings through a calibrated link,
  p = link(R_a − R_t), the isotonic regression of the training scores on the training
  matches' rating differences (:func:`~agielo_dagster.rating.predict.score_link`);
- ``additive``: the additive two-way model in score units, p = m + α_a + β_t (agent effect plus
  test-case effect, least squares on the training scores, kept within [0, 1]);
- ``agent_mean``: the agent's mean training score; ``test_case_mean``: the mean training
  score agents reached on the test case.

A player with no training match is predicted from where a fit from nothing leaves it (a logistic model's
agent and test case at 1500, even where the fold's fit starts from another fold's), a zero effect, or the
mean training score.

The **default prediction** (:func:`default_method`) is what the check is about: ``agielo_population`` on
binary scores (the model's posterior predictive), ``agielo_calibrated``
on graded ones (the logistic link misses their level there: docs/engine.md, "The held-out check").
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .frames import Matches, Plain, Table, encode_matches, to_flavour, to_pandas
from .predict import combined_sigma, expected_score, link_from_diffs
from .ratings import fitted_ratings
from .scoring import Scoring, identity
from .settings import RatingSettings, Setting

__all__ = [
    "HELDOUT_COLUMNS",
    "HELDOUT_METHODS",
    "additive_fit",
    "default_method",
    "heldout_check",
    "heldout_predictions",
    "heldout_summary",
]

HELDOUT_METHODS = (
    "agielo_population",
    "agielo",
    "agielo_sigma",
    "agielo_calibrated",
    "additive",
    "agent_mean",
    "test_case_mean",
)
HELDOUT_COLUMNS = ("method", "measure", "value", "matches", "folds", "folds_better_than_default")
EPS = 1e-15
TOLERANCE = 0.02  # the default prediction may trail the best baseline by this share and still "match" it


def default_method(binary: bool) -> str:
    """The prediction the check stands for: ``agielo_population`` on binary scores, ``agielo_calibrated`` on graded ones."""
    return "agielo_population" if binary else "agielo_calibrated"


POPULATION_GRID = 61  # points of the agents' rating on which their population and posteriors are held
BLOCK = 1 << 14  # test cases (or predicted matches) × POPULATION_GRID held at once: 8 MiB


def population_predictions(fitted, train: Matches, agent: np.ndarray, test_case: np.ndarray) -> np.ndarray:
    """Binary scores: each match's probability under the model with the agents as a population.

    A rating is an estimate of one agent's competency; a prediction is better off knowing where agents of the
    benchmark tend to be (an examinee who answered 4 of 4 training questions is not certain to answer the fifth).
    The agents' ratings are taken as drawn from N(m, s²), fitted by maximum marginal likelihood (EM on a grid of
    ratings), each agent's posterior on that grid is its prior times the likelihood of its training results
    (each result's probability over its test case's posterior: Glicko's g), and a match is predicted by the
    posterior mean of its probability.
    """
    from scipy import sparse

    mu_t, sd_t = fitted.test_case_mu, fitted.test_case_sigma
    played = np.bincount(train.agent, minlength=train.n_agents) > 0
    known = fitted.agent_mu[played]
    grid = np.linspace(known.min() - 800.0, known.max() + 800.0, POPULATION_GRID) if len(known) else np.zeros(1)

    def curves(rows) -> np.ndarray:  # each test case's probability at each grid point (Glicko's g for its posterior)
        return np.clip(expected_score(grid[None, :], mu_t[rows][:, None], sigma=sd_t[rows][:, None]), 1e-12, 1.0 - 1e-12)

    # a result's probability depends on its test case and the grid point only: each test case's curve once, and an
    # agent's log-likelihood its successes' and failures' sums of it, BLOCK test cases at a time (all at once held
    # test cases × grid points: 61 times a wide benchmark's matches)
    shape = (train.n_agents, train.n_test_cases)
    wins = sparse.csc_array((train.score, (train.agent, train.test_case)), shape=shape)
    losses = sparse.csc_array((1.0 - train.score, (train.agent, train.test_case)), shape=shape)
    log_lik = np.zeros((train.n_agents, len(grid)))
    for lo in range(0, train.n_test_cases, BLOCK):
        block = np.arange(lo, min(lo + BLOCK, train.n_test_cases))
        p = curves(block)
        log_lik += wins[:, block] @ np.log(p) + losses[:, block] @ np.log1p(-p)
    log_lik -= log_lik.max(axis=1, keepdims=True)
    # agents of the same results share a likelihood: EM runs over the distinct ones, each weighed by its agents
    lik, of_agent, agents = _unique_rows(np.exp(log_lik))
    share = agents / train.n_agents
    mean, var = float(known.mean()) if len(known) else 1500.0, max(float(known.var()), 100.0**2)
    for _ in range(200):
        prior = np.exp(-0.5 * (grid - mean) ** 2 / var)
        post = lik * prior
        post /= post.sum(axis=1, keepdims=True)
        mean_next = float(share @ (post @ grid))
        var_next = max(float(share @ (post @ (grid - mean_next) ** 2)), 1.0)
        done = abs(mean_next - mean) < 1e-6 and abs(var_next - var) < 1e-6 * var
        mean, var = mean_next, var_next
        if done:
            break
    out = np.empty(len(agent))
    for lo in range(0, len(agent), BLOCK):
        rows = slice(lo, lo + BLOCK)
        out[rows] = np.einsum("ij,ij->i", post[of_agent[agent[rows]]], curves(test_case[rows]))
    return out


def _unique_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(x, axis=0, return_inverse=True, return_counts=True)``, by a lexsort of the columns (np.unique
    compares whole rows as bytes: 0.21 of 0.6 CPU-s of a 10,000 × 5 held-out check, measured 2026-11-29)."""
    order = np.lexsort(x.T[::-1])
    ranked = x[order]
    new = np.ones(len(x), dtype=bool)
    new[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(len(x), dtype=np.int64)
    inverse[order] = group
    return ranked[new], inverse, np.bincount(group)


def additive_fit(
    agent: np.ndarray, test_case: np.ndarray, score: np.ndarray, n_agents: int, n_test_cases: int, *, tol: float = 1e-10
) -> tuple[float, np.ndarray, np.ndarray]:
    """Least-squares m + α_a + β_t by backfitting (alternating exact means); effects of players without a match are 0.

    Each half step is the exact minimizer given the other effects, so the squared error falls
    monotonically to the least-squares fit. Stops when no effect moves by more than ``tol``.
    The fit is unique up to a shift between α and β; the effects are then centred over the
    matches (match-weighted mean 0 each, m the mean score), so that a player without a match,
    effect 0, is predicted as an average one.
    """
    overall = float(score.mean())
    a_n = np.maximum(np.bincount(agent, minlength=n_agents), 1)
    t_n = np.maximum(np.bincount(test_case, minlength=n_test_cases), 1)
    alpha, beta = np.zeros(n_agents), np.zeros(n_test_cases)
    for _ in range(1000):
        alpha_new = np.bincount(agent, score - overall - beta[test_case], n_agents) / a_n
        beta_new = np.bincount(test_case, score - overall - alpha_new[agent], n_test_cases) / t_n
        moved = max(np.abs(alpha_new - alpha).max(), np.abs(beta_new - beta).max())
        alpha, beta = alpha_new, beta_new
        if moved < tol:
            break
    shift_a, shift_t = float(alpha[agent].mean()), float(beta[test_case].mean())
    return overall + shift_a + shift_t, alpha - shift_a, beta - shift_t


def heldout_folds(n_matches: int, folds: int, seed: int | None) -> np.ndarray:
    """The fold of every match: ``default_rng(seed).permutation(n) % folds`` (folds differ in size by at most one)."""
    if not isinstance(folds, (int, np.integer)) or isinstance(folds, bool) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, got {folds!r}")
    if n_matches < folds:
        raise ValueError(f"{n_matches} matches cannot fill {folds} folds")
    return np.random.default_rng(seed).permutation(n_matches) % folds


def heldout_predictions(m: Matches, fold: np.ndarray, settings: RatingSettings) -> dict[str, np.ndarray]:
    """Every match's predicted score by each method, fitted without the match's fold (the ratings as ``settings``
    rate them; a logistic model's fit of each fold starts from the one before)."""
    from .logistic import DERIVED_TOLERANCE  # on use: the package loads without numba

    n_a, n_t = m.n_agents, m.n_test_cases
    binary = bool(np.all((m.score == 0.0) | (m.score == 1.0)))
    graded_only, binary_only = {"agielo_calibrated"}, {"agielo_population"}
    out = {name: np.empty(len(m)) for name in HELDOUT_METHODS if name not in (graded_only if binary else binary_only)}
    fitted = None
    for f in np.unique(fold):
        test = fold == f
        train = m.subset(~test)
        a, t = m.agent[test], m.test_case[test]
        fitted = fitted_ratings(train, settings, fitted, tolerance=DERIVED_TOLERANCE)  # predictions need no finer
        a_mu, a_sig, t_mu, t_sig = fitted.agent_mu, fitted.agent_sigma, fitted.test_case_mu, fitted.test_case_sigma
        out["agielo"][test] = expected_score(a_mu[a], t_mu[t])
        if binary:
            out["agielo_population"][test] = population_predictions(fitted, train, a, t)
        out["agielo_sigma"][test] = expected_score(a_mu[a], t_mu[t], sigma=combined_sigma(a_sig[a], t_sig[t]))
        if not binary:
            link = link_from_diffs(a_mu[train.agent] - t_mu[train.test_case], train.score)
            out["agielo_calibrated"][test] = expected_score(a_mu[a], t_mu[t], link=link)
        overall, alpha, beta = additive_fit(train.agent, train.test_case, train.score, n_a, n_t)
        out["additive"][test] = np.clip(overall + alpha[a] + beta[t], 0.0, 1.0)
        overall = train.score.mean()
        a_n = np.bincount(train.agent, minlength=n_a)
        t_n = np.bincount(train.test_case, minlength=n_t)
        with np.errstate(invalid="ignore", divide="ignore"):
            a_mean = np.where(a_n > 0, np.bincount(train.agent, train.score, n_a) / a_n, overall)
            t_mean = np.where(t_n > 0, np.bincount(train.test_case, train.score, n_t) / t_n, overall)
        out["agent_mean"][test] = a_mean[a]
        out["test_case_mean"][test] = t_mean[t]
    return out


def heldout_check(
    matches: Table,
    *,
    folds: int = 5,
    seed: int | None = 0,
    scoring: Scoring | None = None,
    settings: Mapping[str, Setting] | None = None,
) -> Table:
    """How well ratings fitted without a match predict it, beside simple baselines.

    Parameters
    ----------
    matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``.
    folds : int
        Folds of the k-fold split over matches (each match is held out once).
    seed : int
        Seed of the split.
    scoring : Scoring
        The benchmark's scoring, to express predictions in metric units (identity by default).
    settings : mapping, optional
        How the ratings are fitted (a result's ``settings``; default: :func:`~agielo_dagster.rating.rate`'s).

    Returns
    -------
    DataFrame (flavour of ``matches``)
        ``method, measure, value, matches, folds, folds_better_than_default``: for binary scores
        the measures ``log_loss`` and ``brier``; for graded ones ``mae`` (metric units) and
        ``brier``. Lower is better. Methods: ``agielo, agielo_sigma, agielo_calibrated`` (graded
        only), ``additive, agent_mean, test_case_mean`` (module docstring), the default
        prediction (:func:`default_method`) first. ``folds_better_than_default``: in how many
        folds the method's measure, taken on that fold's matches, is below the default's.

    """
    m = encode_matches(matches)
    fold = heldout_folds(len(m), folds, seed)
    predictions = heldout_predictions(m, fold, RatingSettings.of(settings or {}))
    binary = bool(np.all((m.score == 0.0) | (m.score == 1.0)))
    f = scoring or identity()
    losses = {}  # method -> measure -> loss of every match
    for method, p in predictions.items():
        losses[method] = {"brier": (p - m.score) ** 2}
        if binary:
            q = np.clip(p, EPS, 1.0 - EPS)
            losses[method] = {"log_loss": -(m.score * np.log(q) + (1.0 - m.score) * np.log(1.0 - q)), **losses[method]}
        else:
            losses[method] = {"mae": np.abs(f.metric(p) - m.metric), **losses[method]}
    default = default_method(binary)
    n_fold = np.bincount(fold, minlength=folds)

    def by_fold(loss: np.ndarray) -> np.ndarray:
        return np.bincount(fold, loss, folds) / n_fold

    rows = []
    for method in sorted(losses, key=lambda name: name != default):
        for measure, loss in losses[method].items():
            better = int(np.sum(by_fold(loss) < by_fold(losses[default][measure])))
            rows.append(
                {
                    "method": method,
                    "measure": measure,
                    "value": float(loss.mean()),
                    "matches": len(m),
                    "folds": folds,
                    "folds_better_than_default": better,
                }
            )
    return to_flavour(pd.DataFrame(rows, columns=list(HELDOUT_COLUMNS)), m.flavour)


def heldout_summary(table: Table) -> dict[str, Plain]:
    """The headline of a :func:`heldout_check` table: the default prediction against the baselines.

    Returns
    -------
    dict
        ``measure`` (``log_loss`` on binary scores, ``mae`` on graded ones), ``default_method``,
        ``default`` (its value), ``<baseline>`` and ``default_vs_<baseline>_pct`` (100·(default /
        baseline − 1): negative is better) for ``test_case_mean`` and ``additive``, and ``verdict``:
        ``"ok"`` when the default is at least as good as the test-case mean and within 2 % of the
        additive fit, otherwise a sentence naming what it trails.
    """
    frame = to_pandas(table)
    measure = "log_loss" if (frame["measure"] == "log_loss").any() else "mae"
    values = frame[frame["measure"] == measure].set_index("method")["value"]
    default = default_method(measure == "log_loss")
    out: dict[str, Plain] = {"measure": measure, "default_method": default, "default": float(values[default])}
    for baseline in ("test_case_mean", "additive"):
        out[baseline] = float(values[baseline])
        out[f"default_vs_{baseline}_pct"] = round(float(100.0 * (values[default] / values[baseline] - 1.0)), 2)
    behind = []
    if values[default] > values["test_case_mean"]:
        behind.append(f"worse than the test-case mean ({out['default_vs_test_case_mean_pct']:+.1f} %)")
    if values[default] > (1.0 + TOLERANCE) * values["additive"]:
        behind.append(f"more than {100 * TOLERANCE:g} % behind the additive fit ({out['default_vs_additive_pct']:+.1f} %)")
    out["verdict"] = "ok" if not behind else f"{default} {measure}: " + " and ".join(behind)
    return out
