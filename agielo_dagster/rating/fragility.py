"""Fragility of #1: the fewest test cases whose removal changes which agent is rated first.

Intervals say how far a rating could move under resampling; they do not say whether a handful of
test cases decide the headline. On a public LLM arena, removing 2 of 57,477 votes flips the leader,
and bootstrap intervals do not show it. :func:`fragility_of_first` answers that question for the
top tier (the leader and the agents whose intervals overlap it).

"First" is what the ratings publish: the agent with the highest μ among ``candidates`` (the main
component's agents), rated as the benchmark is (``settings``: its model, and Glicko's seed and
orders), by :func:`~agielo_dagster.rating.ratings.fitted_ratings` (no tables). A logistic model's
re-ratings start from the whole benchmark's fit (or the nearest re-rating) and stop at 0.01 of each rating's
standard error, a few passes each; where the first two are closer than that can tell apart, they go on to the
ratings' own precision. Removing a test case removes every match it took part in.

Two methods:

- ``exact`` (small benchmarks): every set of 1, 2, … test cases is removed and re-rated, in order
  of size, until one changes the leader. It runs when the sets to try before the approximation's
  answer number at most ``max_subsets``.
- ``approx`` (large ones): a one-step approximation ranks the test cases by how much they favour the
  leader over each challenger. With the test-case ratings held fixed, an agent's rating solves its
  score equation Σₜ (Sₜ − Eₜ) = 0, so removing test case t moves it by about
  −(Sₜ − Eₜ) / (q Σ E(1 − E)) (q = ln 10 / 400; Glicko's ratings). A logistic model's one step is
  its own: the agents' score loses test case t's part u_t and every agent moves by −H⁻¹ u_t (H the
  fit's Hessian; one solve per challenger). Removing the test cases in order of their effect on
  μ_leader − μ_challenger, the prefix that closes the gap is re-rated for real, and lengthened (or
  shortened) until the re-rated leader changes. The answer is verified, so it is an upper bound on
  the exact one: removing those test cases does change who is first; fewer might. When no prefix
  changes the leader, a slower fallback removes one test case at a time, re-rating and
  re-linearizing after each (at most ``MAX_STEPS``).
  ``tests/rating/test_fragility.py`` compares both methods on small simulated benchmarks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .frames import Matches, MatchTableError, Plain, Table, encode_matches
from .logistic import DERIVED_TOLERANCE
from .logistic_rate import gap_steps
from .ratings import fitted_ratings
from .result import Fitted, RatingResult
from .settings import RatingSettings, Setting

__all__ = ["Fragility", "fragility_of_first"]

Q = math.log(10.0) / 400.0
MAX_STEPS = 60
"""Re-ratings the one-at-a-time fallback may spend (one per test case removed)."""
TIE = 1e-6
"""Elo: ratings closer than this are tied (a re-rating started from another fit leaves two mathematically equal ratings
about 1e-10 Elo apart)."""
MAX_CHALLENGERS = 20
"""Challengers whose predicted prefixes are verified by re-rating, those predicted shortest first (a tall benchmark's
tier can be every agent; the answer stays a verified upper bound)."""
RECENT = 3
"""Re-ratings kept to start the next from the nearest (each holds a logistic fit's per-match arrays)."""


@dataclass(frozen=True)
class Fragility:
    """How many test cases decide who is first.

    Attributes
    ----------
    leader : str
        The agent rated first on all test cases.
    removals : int | None
        The fewest test cases whose removal changes who is first (``exact``), or a verified
        upper bound on it (``approx``); None when no removal of up to ``max_removals`` test cases
        (``approx``: of the test cases the approximation ranks) changes it.
    new_leader : str | None
        Who is first once they are removed (the runner-up it flips to).
    removed : tuple of str
        The test cases removed.
    method : {"exact", "approx"}
    tier : tuple of str
        The agents considered as challengers, the leader first.
    test_cases : int
        Test cases of the benchmark.
    re_ratings : int
        Re-ratings run (the search's cost).
    """

    leader: str
    removals: int | None
    new_leader: str | None
    removed: tuple[str, ...]
    method: str
    tier: tuple[str, ...]
    test_cases: int
    re_ratings: int

    def as_metadata(self) -> dict[str, Plain]:
        """Plain values for asset metadata: ``fragility_of_first`` (None: nothing found) and its companions."""
        return {
            "fragility_of_first": None if self.removals is None else int(self.removals),
            "fragility_leader": self.leader,
            "fragility_flips_to": self.new_leader or "",
            "fragility_method": self.method,
            "fragility_removed_test_cases": ", ".join(self.removed[:20]) + (" …" if len(self.removed) > 20 else ""),
            "fragility_tier": ", ".join(self.tier),
            "fragility_test_cases": int(self.test_cases),
        }


def fragility_of_first(
    matches: Table,
    *,
    tier: Sequence[str] | None = None,
    candidates: Sequence[str] | None = None,
    settings: Mapping[str, Setting] | None = None,
    max_subsets: int = 2000,
    max_exact_matches: int = 10_000_000,
    max_removals: int | None = None,
    result: RatingResult | None = None,
) -> Fragility:
    """The fewest test cases whose removal changes which agent is rated first.

    Parameters
    ----------
    matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: the benchmark's matches.
    tier : sequence of str, optional
        The challengers: the agents whose intervals overlap the leader's (e.g. ``rank == 1`` in
        ``agent_ratings``). Default, or when it holds the leader alone: the runner-up by μ.
    candidates : sequence of str, optional
        The agents that can be first (default: every agent; pass the main component's agents).
    settings : mapping, optional
        The ratings' settings (a result's ``settings``, or :class:`~agielo_dagster.rating.RatingSettings`'
        fields; default: :func:`~agielo_dagster.rating.rate`'s defaults).
    max_subsets, max_exact_matches : int, int
        The exact search runs when it needs at most ``max_subsets`` re-ratings and at most
        ``max_exact_matches`` matches re-rated in all; else the verified approximation is the answer.
    max_removals : int, optional
        Search no further than this many test cases (default: half of them).
    result : RatingResult, optional
        What :func:`~agielo_dagster.rating.rate` returned for these matches with these ``settings``: its fit is
        the whole benchmark's (a logistic model's), instead of a fit of its own.

    Returns
    -------
    Fragility
    """
    for name, value in (("max_subsets", max_subsets), ("max_exact_matches", max_exact_matches)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    m = encode_matches(matches)
    ids = m.agent_ids
    code = {a: i for i, a in enumerate(ids.tolist())}  # by hash: a tall benchmark's tier can be every agent
    for name, given in (("tier", tier), ("candidates", candidates)):
        unknown = sorted(set(map(str, given or ())) - code.keys())
        if unknown:
            raise MatchTableError(
                f"{name} names agent {unknown[0]!r}, which has no match (rule: agent_known)", rule="agent_known"
            )
    allowed = np.ones(m.n_agents, dtype=bool)
    if candidates is not None:
        allowed[:] = False
        allowed[[code[str(a)] for a in candidates]] = True
    if allowed.sum() < 2:
        raise MatchTableError("fragility of first needs at least 2 candidate agents (rule: two_agents)", rule="two_agents")
    limit = m.n_test_cases // 2 if max_removals is None else int(max_removals)
    settings = RatingSettings.of(settings or {})
    fitted = None if result is None else result.fitted
    ours = fitted is not None and fitted.state is not None and fitted.state.model == settings.model
    whole = fitted if ours and result.n_matches == len(m) else None
    search = _Search(m, allowed, settings, whole)
    a_mu, t_mu = search.ratings(np.ones(m.n_test_cases, dtype=bool))
    leader = search.first(a_mu)
    challengers = [code[str(a)] for a in (tier or ()) if code[str(a)] != leader]
    if not challengers:
        order = np.argsort(-np.where(allowed, a_mu, -np.inf), kind="stable")
        challengers = [int(order[1])]
    tier_ids = (str(ids[leader]), *sorted(str(ids[c]) for c in challengers))

    ranked = _ranked_removals(search, m, a_mu, t_mu, leader, challengers)
    approx = _verified_prefix(search, ranked, leader, limit)
    if approx is None:
        approx = _stepwise(search, leader, challengers, min(limit, MAX_STEPS))
    upper = approx[0] if approx else limit + 1
    method = "approx"
    subsets = _subsets_below(m.n_test_cases, min(upper, limit + 1))
    if subsets <= max_subsets and subsets * len(m) <= max_exact_matches:
        exact = _exhaustive(search, leader, min(upper - 1, limit))
        method = "exact"
        if exact is not None:
            approx = exact
    if approx is None:
        return Fragility(str(ids[leader]), None, None, (), method, tier_ids, m.n_test_cases, search.calls)
    k, removed, new_leader = approx
    return Fragility(
        str(ids[leader]),
        k,
        str(ids[new_leader]),
        tuple(str(m.test_case_ids[t]) for t in removed),
        method,
        tier_ids,
        m.n_test_cases,
        search.calls,
    )


class _Search:
    """Re-rates the benchmark without some test cases and says who is first; counts its calls."""

    def __init__(self, m: Matches, allowed: np.ndarray, settings: RatingSettings, whole: Fitted | None = None):
        self.m, self.allowed, self.settings = m, allowed, settings
        self.calls = 0
        self.whole = whole  # the whole benchmark's fit
        self.recent: list[tuple[np.ndarray, Fitted]] = []  # the last re-ratings: (test cases kept, fit)

    def ratings(self, keep_test_cases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sub = self.m.subset(keep_test_cases[self.m.test_case])
        played = np.bincount(sub.agent, minlength=self.m.n_agents) > 0
        if self.whole is not None and keep_test_cases.all():
            fitted = self.whole
        else:
            self.calls += 1
            # from the fit of the nearest set of test cases (a prefix's bisection: a few apart), the whole's included
            every = np.ones_like(keep_test_cases)
            near = min([(every, self.whole), *self.recent], key=lambda r: np.count_nonzero(r[0] != keep_test_cases))
            fitted = fitted_ratings(sub, self.settings, near[1], tolerance=None if near[1] is None else DERIVED_TOLERANCE)
            if near[1] is not None and self._undecided(fitted, played):  # who is first is within the fit's precision
                fitted = fitted_ratings(sub, self.settings, fitted)
            if self.whole is None:
                self.whole = fitted
            elif self.settings.model != "glicko":
                self.recent = [*self.recent[-(RECENT - 1) :], (keep_test_cases.copy(), fitted)]
        return np.where(played, fitted.agent_mu, -np.inf), fitted.test_case_mu

    def _undecided(self, fitted: Fitted, played: np.ndarray) -> bool:
        """Whether a logistic fit stopped at DERIVED_TOLERANCE leaves the first rating and the next below it closer
        than its error can be (each within a few times its last step: 10 × DERIVED_TOLERANCE of their standard
        errors). Agents tied to the bit (the same results) are no matter of precision: the first id leads them."""
        if fitted.state is None:
            return False
        mu = np.where(self.allowed & played, fitted.agent_mu, -np.inf)
        first = int(np.argmax(mu))
        below = np.where(mu < mu[first], mu, -np.inf)
        second = int(np.argmax(below))
        if not np.isfinite(below[second]):
            return False
        sigma = fitted.agent_sigma[first] + fitted.agent_sigma[second]
        return bool(mu[first] - mu[second] <= 10.0 * DERIVED_TOLERANCE * sigma)

    def first(self, a_mu: np.ndarray) -> int:
        # ties (within the fit's own precision: a re-rating starts from another fit) go to the first id, as the tables sort
        mu = np.where(self.allowed, a_mu, -np.inf)
        return int(np.flatnonzero(mu >= mu.max() - TIE)[0])

    def leader_without(self, removed: Sequence[int]) -> int:
        return self.first(self.ratings_without(removed))

    def ratings_without(self, removed: Sequence[int]) -> np.ndarray:
        """The candidates' ratings without the test cases ``removed`` (−inf for the others)."""
        keep = np.ones(self.m.n_test_cases, dtype=bool)
        keep[list(removed)] = False
        return np.where(self.allowed, self.ratings(keep)[0], -np.inf)


def _ranked_removals(
    search: _Search, m: Matches, a_mu, t_mu, leader: int, challengers: list[int]
) -> list[tuple[int, np.ndarray]]:
    """Per challenger, the test cases in order of the one-step change of μ_leader − μ_challenger their removal makes
    (a logistic model's: of its fit; Glicko's: of each agent's score equation against the test cases), and how many
    the step predicts to close the gap: the ``MAX_CHALLENGERS`` predicted shortest, shortest first."""
    state = search.whole.state if search.whole is not None and len(m) == len(search.m) else None
    if state is None and search.settings.model != "glicko":
        state = fitted_ratings(m, search.settings, search.whole).state
    if state is not None:
        delta = np.array(gap_steps(m, state, leader, challengers)).reshape(len(challengers), m.n_test_cases)
    else:  # change of μ_L − μ_C when the test case goes: each one's own score equation, the leader's row first
        row = np.full(m.n_agents, -1)
        row[[leader, *challengers]] = np.arange(len(challengers) + 1)
        mine = row[m.agent] >= 0  # only these agents' rows: not agents × test cases
        a, t = m.agent[mine], m.test_case[mine]
        e = 1.0 / (1.0 + 10.0 ** ((t_mu[t] - a_mu[a]) / 400.0))
        information = np.bincount(a, Q * e * (1.0 - e), m.n_agents)
        own = np.zeros((len(challengers) + 1, m.n_test_cases))
        own[row[a], t] = (m.score[mine] - e) / np.maximum(information[a], 1e-12)
        delta = own[1:] - own[0]
    gap = a_mu[leader] - a_mu[np.asarray(challengers)]
    order = np.argsort(delta, axis=1, kind="stable")
    ranked = np.take_along_axis(delta, order, axis=1)
    closes = gap[:, None] + np.cumsum(ranked, axis=1) < 0
    predicted = np.where(closes.any(axis=1), closes.argmax(axis=1) + 1, m.n_test_cases)
    first = np.argsort(predicted, kind="stable")[:MAX_CHALLENGERS]  # those verified (a tall tier can be every agent)
    return [(int(predicted[c]), order[c][ranked[c] < 0] if (ranked[c] < 0).any() else order[c]) for c in first]


def _verified_prefix(search: _Search, ranked, leader: int, limit: int):
    """The shortest verified prefix over the challengers: (k, removed, new leader) or None."""
    best = None
    for predicted, order in ranked:  # the challengers predicted shortest first
        cap = min(limit, len(order), best[0] - 1 if best else limit)
        if cap < 1 or (best is not None and predicted > cap):  # predicted to need more than the answer in hand
            continue
        found = _shortest_flipping_prefix(search, order, leader, min(max(predicted, 1), cap), cap)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    return best


def _shortest_flipping_prefix(search: _Search, order: np.ndarray, leader: int, start: int, cap: int):
    """From ``start``, lengthen the prefix of ``order`` (doubling) until the re-rated leader changes, then
    shorten it while it still does, at the point where the re-rated leader's margin crosses 0 by its secant (a
    step that does not halve the bracket is followed by a bisection): (k, removed, new leader), or None up to ``cap``."""
    flipped: dict[int, int | None] = {}
    margin: dict[int, float] = {}

    def flips(j: int) -> int | None:
        if j not in flipped:
            mu = search.ratings_without(order[:j])
            new, margin[j] = search.first(mu), float(mu[leader] - np.delete(mu, leader).max())  # < 0: behind
            flipped[j] = new if new != leader else None
        return flipped[j]

    flips(0)  # the whole benchmark's margin: no re-rating
    lo, hi, j = 0, None, start
    while j <= cap:
        if flips(j) is not None:
            hi = j
            break
        lo, j = j, (min(2 * j, cap) if j < cap else cap + 1)
    if hi is None:
        return None
    halved = True
    while hi - lo > 1:  # the prefix of length lo keeps the leader; hi changes it (nearly monotone in practice)
        width, mid = hi - lo, (lo + hi) // 2
        if halved and margin[lo] > margin[hi]:
            mid = min(max(lo + round(width * margin[lo] / (margin[lo] - margin[hi])), lo + 1), hi - 1)
        if flips(mid) is not None:
            hi = mid
        else:
            lo = mid
        halved = hi - lo <= width // 2
    return hi, tuple(int(t) for t in order[:hi]), flips(hi)


def _stepwise(search: _Search, leader: int, challengers: list[int], steps: int):
    """The fallback when no one-step prefix flips: remove one test case at a time, re-linearizing at the
    re-rated ratings each time (the test case that most favours the leader over its closest challenger)."""
    keep = np.ones(search.m.n_test_cases, dtype=bool)
    removed: list[int] = []
    for _ in range(steps):
        a_mu, t_mu = search.ratings(keep)
        now = search.first(a_mu)
        if now != leader:
            return len(removed), tuple(removed), now
        live = search.m.subset(keep[search.m.test_case])
        closest = challengers[int(np.argmax(a_mu[challengers]))]
        ((_, order),) = _ranked_removals(search, live, np.where(np.isfinite(a_mu), a_mu, 0.0), t_mu, leader, [closest])
        order = [int(t) for t in order if keep[t]]
        if not order:
            return None
        keep[order[0]] = False
        removed.append(order[0])
    a_mu, _ = search.ratings(keep)
    now = search.first(a_mu)
    return (len(removed), tuple(removed), now) if now != leader else None


def _subsets_below(n: int, k: int) -> int:
    """Re-ratings an exhaustive search of every set of 1 … k − 1 test cases needs."""
    return sum(math.comb(n, j) for j in range(1, max(k, 1)))


def _exhaustive(search: _Search, leader: int, up_to: int):
    """Every set of 1 … ``up_to`` test cases, smallest first: the first that changes the leader, or None."""
    for size in range(1, up_to + 1):
        for removed in itertools.combinations(range(search.m.n_test_cases), size):
            new = search.leader_without(removed)
            if new != leader:
                return size, removed, new
    return None
