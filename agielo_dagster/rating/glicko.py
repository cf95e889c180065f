"""Glicko-1 ratings of test cases and agents: the sequential update, :func:`rate` and :func:`place_agents`.

Every (agent, test case) result is a match. The agent scores S, the test case
1 − S. Each match is its own rating period: both players are updated from their
pre-match values with the standard Glicko-1 equations (Glickman 1999), with
q = ln 10 / 400 and g(σ) = 1 / √(1 + 3q²σ²/π²)::

    E   = 1 / (1 + 10^(−g(σ_j)(μ_i − μ_j)/400))
    σ'² = 1 / (1/σ² + q² g(σ_j)² E (1 − E))
    μ'  = μ + q σ'² g(σ_j) (S − E)

σ only shrinks (no rating-period inflation, no floor), as in the AGI-Elo paper.

One order of the matches decides a lot (on a benchmark of near-tied agents, two seeds
disagree on the ranking), so :func:`rate` plays ``shuffles`` orders and reports their
mean. Orders come in antithetic pairs: a random permutation and the same permutation
read backwards. A match early in one is late in the other, which makes the pair's
mean markedly less noisy than two independent orders (measured on the demo's
benchmarks: the spread of rating differences falls as if 3.6 independent orders had
been played). ``shuffles=1`` is the paper's single order, unchanged.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import _kernels as K
from .checks import check_start
from .cores import usable_cores
from .frames import (
    Flavour,
    Matches,
    MatchTableError,
    encode_matches,
    floats_of,
    ids_of,
    require_columns,
    to_flavour,
    to_pandas,
)
from .graph import components, warn_if_disconnected
from .intervals import agent_intervals, interval_ranks, order_variance, z_of
from .order_reliability import RELIABILITY_COLUMNS, OrderReliability

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_SHUFFLES",
    "DEFAULT_SNAPSHOT_FRACTIONS",
    "DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS",
    "Q",
    "RatingResult",
    "g",
    "glicko_expected",
    "match_orders",
    "place_agents",
    "rate",
    "snapshot_ends",
    "update_match",
    "update_rating_period",
]

Q = K.Q
DEFAULT_SNAPSHOT_FRACTIONS: tuple[float, ...] = tuple(round(k / 100, 2) for k in range(1, 101))
DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)
DEFAULT_SHUFFLES = 16
"""Orders :func:`rate` averages by default (8 antithetic pairs): the smallest K for which every pair of
10 seeds ranks the demo's agents alike (Kendall τ_b ≥ 0.98 on ``rank`` on digits and breast_cancer);
see docs/engine.md, "Order-robust ratings"."""
DEFAULT_LEVEL = 0.95


def g(sigma: Any) -> np.ndarray:
    """Glicko's attenuation g(σ) = 1 / √(1 + 3q²σ²/π²) of an opponent's rating deviation."""
    sigma = np.asarray(sigma, dtype=np.float64)
    return 1.0 / np.sqrt(1.0 + 3.0 * Q * Q * sigma * sigma / (math.pi * math.pi))


def glicko_expected(mu: Any, mu_opponent: Any, sigma_opponent: Any) -> np.ndarray:
    """Glicko's expected score E of a player rated ``mu`` against an opponent N(μ_j, σ_j²)."""
    diff = np.asarray(mu, dtype=np.float64) - np.asarray(mu_opponent, dtype=np.float64)
    return 1.0 / (1.0 + 10.0 ** (-g(sigma_opponent) * diff / 400.0))


def update_rating_period(mu: float, sigma: float, opponent_mu: Any, opponent_sigma: Any, scores: Any) -> tuple[float, float]:
    """One Glicko-1 rating period of one player against several opponents.

    Parameters
    ----------
    mu, sigma : float
        The player's rating before the period.
    opponent_mu, opponent_sigma, scores : array_like
        One entry per game: the opponent's rating and the player's score in [0, 1].

    Returns
    -------
    (mu', sigma') : tuple of float
    """
    opp_mu = np.asarray(opponent_mu, dtype=np.float64)
    opp_g = g(opponent_sigma)
    s = np.asarray(scores, dtype=np.float64)
    e = 1.0 / (1.0 + 10.0 ** (-opp_g * (mu - opp_mu) / 400.0))
    inv_d2 = Q * Q * np.sum(opp_g * opp_g * e * (1.0 - e))
    new_var = 1.0 / (1.0 / (sigma * sigma) + inv_d2)
    return float(mu + Q * new_var * np.sum(opp_g * (s - e))), float(math.sqrt(new_var))


def update_match(
    mu_agent: Any, sigma_agent: Any, mu_test_case: Any, sigma_test_case: Any, score: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The AGI-Elo update of one match (vectorized over independent matches).

    The agent scores ``score``, the test case ``1 − score``; both are updated
    from their pre-match values. Returns ``(mu_agent', sigma_agent', mu_test_case', sigma_test_case')``.
    """
    args = np.broadcast_arrays(
        *(np.asarray(a, dtype=np.float64) for a in (mu_agent, sigma_agent, mu_test_case, sigma_test_case, score))
    )
    out = [np.empty(args[0].shape) for _ in range(4)]
    for idx in np.ndindex(args[0].shape):
        r = K.match_update(*(float(a[idx]) for a in args))
        for o, v in zip(out, r, strict=True):
            o[idx] = v
    return tuple(o if o.ndim else o[()] for o in out)


def snapshot_ends(fractions: Any, n_matches: int) -> np.ndarray:
    """How many matches have been played at each snapshot fraction.

    Follows the authors' milestones: the state after match ``int(f·(n − 1))``
    (0-based), i.e. ``int(f·(n − 1)) + 1`` matches; 1.0 is every match.
    """
    f = np.asarray(fractions, dtype=np.float64)
    return np.floor(f * (n_matches - 1) + 1e-9).astype(np.int64) + 1


# ---------------------------------------------------------------------------------------------
# orders


@dataclass(frozen=True)
class _Pair:
    """One permutation of the matches (``kind`` "numpy", "bucket" or "rows") and whether its reverse is played too."""

    kind: str
    seed: Any
    with_reverse: bool


def _n_buckets(n: int) -> int:
    return max(1, n // 16384)


NUMPY_ORDER_LIMIT = 1 << 25
"""Up to this many matches the first order is numpy's permutation (the paper's, as in earlier versions)."""


def _pairs(n_matches: int, seed: int | None, shuffle: bool, shuffles: int) -> list[_Pair]:
    """The antithetic pairs behind ``shuffles`` orders.

    Order 0 is ``numpy.random.default_rng(seed).permutation(n)`` (the single order of
    ``shuffles=1``), order 1 its reverse; orders 2p and 2p + 1 (p ≥ 1) are a permutation
    drawn by a cache-friendly bucket shuffle keyed by ``SeedSequence(seed)`` spawned
    with ``p``, and its reverse. Above ``NUMPY_ORDER_LIMIT`` matches (33,554,432) order 0
    too comes from the bucket shuffle (spawned with 0): numpy's Fisher-Yates over 10⁸ matches
    takes 5 s, bound by memory latency, where the bucket shuffle takes 2.
    """
    if isinstance(shuffles, bool) or not isinstance(shuffles, (int, np.integer)) or shuffles < 1:
        raise ValueError(f"shuffles must be an integer >= 1, got {shuffles!r}")
    if not shuffle:
        if shuffles != 1:
            raise ValueError("shuffles > 1 needs shuffle=True: row order is a single order")
        return [_Pair("rows", None, False)]
    entropy = np.random.SeedSequence(seed)
    pairs = []
    for p in range((shuffles + 1) // 2):
        with_reverse = 2 * p + 1 < shuffles
        if p == 0 and n_matches <= NUMPY_ORDER_LIMIT:
            pairs.append(_Pair("numpy", seed if seed is not None else entropy, with_reverse))
        else:
            child = np.random.SeedSequence(entropy.entropy, spawn_key=(p,))
            pairs.append(_Pair("bucket", np.uint64(child.generate_state(1, np.uint64)[0]), with_reverse))
    return pairs


def match_orders(n_matches: int, *, seed: int | None, shuffle: bool, shuffles: int = 1) -> list[np.ndarray]:
    """The processing order(s) of the matches, as row-index permutations.

    ``shuffle=False`` is row order (only one order exists, so ``shuffles`` must be 1).
    Otherwise ``shuffles`` orders in antithetic pairs (see :func:`rate`): the first is
    ``numpy.random.default_rng(seed).permutation(n)`` whatever ``shuffles`` is (up to
    ``NUMPY_ORDER_LIMIT`` matches), the second the first read backwards.
    """
    out = []
    for pair in _pairs(n_matches, seed, shuffle, shuffles):
        idx = _pair_indices(pair, n_matches)
        out.append(idx)
        if pair.with_reverse:
            out.append(idx[::-1].copy())
    return out


def _pair_indices(pair: _Pair, n: int) -> np.ndarray:
    if pair.kind == "rows":
        return np.arange(n, dtype=np.int64)
    if pair.kind == "numpy":
        return np.random.default_rng(pair.seed).permutation(n).astype(np.int64)
    idx = np.empty(n, dtype=np.int64)
    none = np.empty(0)
    K.shuffled_copy(
        pair.seed,
        _n_buckets(n),
        np.arange(n, dtype=np.int64),
        np.zeros(n, np.int32),
        np.zeros(n),
        none,
        idx,
        np.empty(n, np.int32),
        np.empty(n),
        none,
    )
    return idx


@dataclass
class _Ordered:
    """The matches copied in one processing order (codes uint16 or int32, scores float64 or lossless float32)."""

    agent: np.ndarray
    test_case: np.ndarray
    score: np.ndarray
    metric: np.ndarray | None = None


def _score_dtype(score: np.ndarray) -> type:
    """float32 when every score is exactly a float32 (0/1 outcomes, most graded metrics stored as such): half the memory."""
    return np.float32 if K.exact_in_float32(score) else np.float64


def _code_dtype(n_codes: int) -> type:
    """uint16 codes when they fit (up to 65,536 players of a kind), else int32: the ordered copies stay small."""
    return np.uint16 if n_codes <= 1 << 16 else np.int32


def _ordered(m: Matches, pair: _Pair, score_dtype, with_metric: bool) -> _Ordered:
    n = len(m)
    if pair.kind == "rows":
        return _Ordered(m.agent, m.test_case, m.score.astype(score_dtype, copy=False), m.metric if with_metric else None)
    out = _Ordered(np.empty(n, _code_dtype(m.n_agents)), np.empty(n, _code_dtype(m.n_test_cases)), np.empty(n, score_dtype))
    if pair.kind == "numpy":
        order = np.random.default_rng(pair.seed).permutation(n)
        K.gather(order, m.agent, m.test_case, m.score, out.agent, out.test_case, out.score)
        if with_metric:
            out.metric = out.score if m.metric is m.score else np.empty(n)
            if out.metric is not out.score:
                K.gather_values(order, m.metric, out.metric)
        return out
    carry = with_metric and m.metric is not m.score  # only the first order carries the metric (for the reliability)
    metric, out_metric = (m.metric, np.empty(n)) if carry else (np.empty(0), np.empty(0))
    K.shuffled_copy(
        pair.seed, _n_buckets(n), m.agent, m.test_case, m.score, metric, out.agent, out.test_case, out.score, out_metric
    )
    if with_metric:
        out.metric = out_metric if carry else out.score
    return out


HISTORY_LEVELS = 8
"""Each test case's state is recorded after its match 1, 2, 4, …, 128 (then its final rating)."""


@dataclass
class _Run:
    """One order's final state, its snapshots and the test cases' states after match 1, 2, 4, …"""

    a_mu: np.ndarray
    a_sig: np.ndarray
    t_mu: np.ndarray
    t_sig: np.ndarray
    a_mu_at: np.ndarray
    a_sig_at: np.ndarray
    t_mu_at: np.ndarray
    t_sig_at: np.ndarray
    t_mu_after: np.ndarray
    t_sig_after: np.ndarray


def history_levels(m: Matches) -> int:
    """How many of the levels 1, 2, 4, …, 128 some test case plays beyond (the others would stay empty)."""
    most = int(np.bincount(m.test_case, minlength=1).max()) if len(m) else 0
    return sum((1 << depth) < most for depth in range(HISTORY_LEVELS))


def _play(
    o: _Ordered,
    reverse: bool,
    ends,
    tc_ends,
    n_a: int,
    n_t: int,
    init_mu: float,
    init_sigma: float,
    levels: int = HISTORY_LEVELS,
    on_segment=None,
) -> _Run:
    n = len(o.agent)
    a_mu, a_sig = np.full(n_a, init_mu), np.full(n_a, init_sigma)
    t_mu, t_sig = np.full(n_t, init_mu), np.full(n_t, init_sigma)
    run = _Run(
        a_mu,
        a_sig,
        t_mu,
        t_sig,
        np.empty((len(ends), n_a)),
        np.empty((len(ends), n_a)),
        np.empty((len(tc_ends), n_t)),
        np.empty((len(tc_ends), n_t)),
        np.full((levels, n_t), np.nan),
        np.full((levels, n_t), np.nan),
    )
    t_played = np.zeros(n_t, dtype=np.int64)
    done = 0
    for stop in np.unique(np.concatenate([ends, tc_ends, [n]])):
        K.run_segment(
            o.agent,
            o.test_case,
            o.score,
            done,
            stop,
            reverse,
            a_mu,
            a_sig,
            t_mu,
            t_sig,
            t_played,
            run.t_mu_after,
            run.t_sig_after,
        )
        if on_segment is not None:
            on_segment(done, stop, a_mu, t_mu)
        done = stop
        for k in np.flatnonzero(ends == stop):
            run.a_mu_at[k], run.a_sig_at[k] = a_mu, a_sig
        for k in np.flatnonzero(tc_ends == stop):
            run.t_mu_at[k], run.t_sig_at[k] = t_mu, t_sig
    return run


ORDER_STATE_BUDGET = 128 << 20
"""Bytes of order state (each player's rating, snapshots and history) the pool's orders may hold at once.

At least one order plays beside the first whatever its size; on 2 cores a benchmark of a million
test cases (72 MB an order) then plays one, where two or more would add their state to the peak
(issue 25). Orders give the same bits whatever the number playing at once."""


def order_state_bytes(n_a: int, n_t: int, ends, tc_ends, levels: int) -> int:
    """What one order in play holds: μ, σ, snapshots and history of every player, and each test case's count."""
    return 16 * n_a * (1 + len(ends)) + n_t * (16 * (1 + len(tc_ends) + levels) + 8)


class _Inline:
    """An executor that runs each task at once (one worker: no threads)."""

    def submit(self, fn, *args, **kwargs) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            f.set_exception(exc)
        return f

    def shutdown(self, wait: bool = True) -> None:
        pass


def default_workers() -> int:
    """The cores this process may use (affinity and cgroup quota, or ``AGIELO_THREADS``)."""
    return usable_cores()


class _FirstOrderReliability:
    """Measures reliability at each snapshot of the first order, handing the work to the pool."""

    def __init__(self, o: _Ordered, ends, n_a: int, n_t: int, pool, workers: int):
        self.measurer = OrderReliability(o.agent, o.test_case, o.score, n_a)
        self.o = o
        self.ends = ends
        self.a_count, self.a_sum = np.zeros(n_a, dtype=np.int64), np.zeros(n_a)
        self.t_count, self.t_sum = np.zeros(n_t, dtype=np.int64), np.zeros(n_t)
        self.pool = pool
        # each measurement waiting holds about 3 per-test-case arrays: let up to ~64 MB of them queue, so
        # that the order plays on at full speed rather than waiting for the measurements
        self.slots = threading.BoundedSemaphore(max(2, min(len(ends), (64 << 20) // (24 * (n_t + n_a) + 1))))
        self.futures: dict[int, Future] = {}

    def __call__(self, done, stop, a_mu, t_mu) -> None:
        K.running_sums(
            self.o.agent, self.o.test_case, self.o.metric, done, stop, self.a_count, self.a_sum, self.t_count, self.t_sum
        )
        hits = np.flatnonzero(self.ends == stop)
        if not len(hits):
            return
        with np.errstate(invalid="ignore", divide="ignore"):
            args = (a_mu.copy(), t_mu.copy(), self.a_sum / self.a_count, self.t_sum / self.t_count, self.a_count.copy())
        self.slots.acquire()
        future = self.pool.submit(self._measure, args)
        for k in hits:
            self.futures[int(k)] = future

    def _measure(self, args):
        try:
            return self.measurer.measure(*args)
        finally:
            self.slots.release()

    def table(self) -> np.ndarray:
        out = np.full((len(self.ends), 5), np.nan)
        for k, future in self.futures.items():
            out[k] = future.result()
        return out


class _SharedCopy:
    """One pair's ordered copy, made by whichever of its two orders starts first and dropped when both are done.

    At most ``copies`` such copies exist at a time (the first order's aside): about 8 bytes a
    match each for 10⁸ matches.
    """

    def __init__(self, m: Matches, pair: _Pair, score_dtype, copies: threading.BoundedSemaphore):
        self.m, self.pair, self.score_dtype, self.copies = m, pair, score_dtype, copies
        self.lock = threading.Lock()
        self.copy: _Ordered | None = None
        self.left = 2 if pair.with_reverse else 1

    def play(self, reverse: bool, state) -> _Run:
        with self.lock:
            if self.copy is None:
                self.copies.acquire()
                self.copy = _ordered(self.m, self.pair, self.score_dtype, False)
            o = self.copy
        try:
            return _play(o, reverse, *state)
        finally:
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.copy = None
                    self.copies.release()


class OrderMoments:
    """Mean, mixture σ and spread over the orders of every per-player array, accumulated as the orders finish.

    Each order's arrays are released once added, so memory does not grow with the number of
    orders (per-test-case histories and snapshots are most of it on benchmarks with many test
    cases). Orders are added in a fixed order, so sums are reproducible; with one order the
    results are that order's arrays, bit for bit.
    """

    PAIRS = (
        ("a_mu", "a_sig"),
        ("t_mu", "t_sig"),
        ("a_mu_at", "a_sig_at"),
        ("t_mu_at", "t_sig_at"),
        ("t_mu_after", "t_sig_after"),
    )

    def __init__(self):
        self.k = 0
        self.first: dict[str, np.ndarray] = {}
        self.sum: dict[str, np.ndarray] = {}  # Σ (x − first), shifted for precision
        self.sum_sq: dict[str, np.ndarray] = {}
        self.sig_sq: dict[str, np.ndarray] = {}
        self.agent_mu: dict[int, np.ndarray] = {}  # per order: the intervals need each order's agent ratings
        self.lock = threading.Lock()
        self.waiting: dict[int, _Run] = {}
        self.next = 1

    def agents_by_order(self) -> np.ndarray:
        """Each order's agent ratings, rows in the orders' own sequence (antithetic pairs side by side)."""
        return np.stack([self.agent_mu[i] for i in sorted(self.agent_mu)])

    def put(self, index: int, run: _Run) -> None:
        """Add order ``index`` (≥ 1) from any thread; orders are added in sequence 1, 2, …, as soon as possible.

        A fixed sequence keeps the sums reproducible; adding as soon as possible keeps at most a
        few orders' arrays waiting. Order 0 (the first, with its reliability) is added last.
        """
        with self.lock:
            self.waiting[index] = run
            while self.next in self.waiting:
                self.add(self.waiting.pop(self.next), self.next)
                self.next += 1

    def add(self, run: _Run, index: int = 0) -> None:
        """Take an order's arrays (kept, not copied, as the first order's: no caller writes to them again)."""
        for mu_key, sig_key in self.PAIRS:
            mu, sig = getattr(run, mu_key), getattr(run, sig_key)
            if self.k == 0:
                self.first[mu_key], self.first[sig_key] = mu, sig
                continue
            if self.k == 1:  # the sums start with the second order: one order needs none of them
                self.sum[mu_key], self.sum_sq[mu_key] = np.zeros_like(mu), np.zeros_like(mu)
                first_sig = self.first[sig_key]
                self.sig_sq[mu_key] = first_sig * first_sig
            x = mu - self.first[mu_key]
            self.sum[mu_key] += x
            self.sum_sq[mu_key] += x * x
            self.sig_sq[mu_key] += sig * sig
        self.agent_mu[index] = run.a_mu
        self.k += 1

    def release(self) -> None:
        """Drop the per-player sums once the tables are built (``k`` stays): the first order's reliability may
        still be measuring, and on a wide benchmark these arrays are about 240 bytes a test case."""
        for kept in (self.first, self.sum, self.sum_sq, self.sig_sq):
            kept.clear()

    def drop(self, mu_key: str, sig_key: str) -> None:
        """Drop one pair's arrays once the tables have read them (a wide benchmark's test-case snapshots are
        most of the orders' memory: 5 arrays of 8 bytes per test case and fraction)."""
        for kept in (self.first, self.sum, self.sum_sq, self.sig_sq):
            kept.pop(mu_key, None)
            kept.pop(sig_key, None)

    def mean(self, mu_key: str) -> np.ndarray:
        if self.k == 1:
            return self.first[mu_key].copy()
        return self.first[mu_key] + self.sum[mu_key] / self.k

    def _variance(self, mu_key: str) -> np.ndarray:
        """Population variance of μ over the orders."""
        mean_shift = self.sum[mu_key] / self.k
        return np.maximum(self.sum_sq[mu_key] / self.k - mean_shift * mean_shift, 0.0)

    def sigma(self, mu_key: str, sig_key: str) -> np.ndarray:
        """σ of the mixture of the orders' posteriors N(μ_k, σ_k²): √(mean σ² + population variance of μ)."""
        if self.k == 1:
            return self.first[sig_key].copy()
        return np.sqrt(self.sig_sq[mu_key] / self.k + self._variance(mu_key))

    def order_sd(self, mu_key: str) -> np.ndarray:
        if self.k == 1:
            return np.full(self.first[mu_key].shape, np.nan)
        return np.sqrt(self._variance(mu_key) * self.k / (self.k - 1))


def run_orders(
    m: Matches, pairs, ends, tc_ends, init_mu: float, init_sigma: float, with_reliability: bool, workers: int, then=None
):
    """Play every order (in parallel threads), the first with its reliability.

    The first order runs on the calling thread; the pool takes the others, a pair's two
    orders side by side on one shared copy, and the reliability measurements of the first.
    ``then(moments)`` runs on the calling thread as soon as every order is done, while the last
    reliability measurements finish. Returns (the orders' :class:`OrderMoments`, reliability rows,
    measurer, what ``then`` returned).
    """
    n_a, n_t = m.n_agents, m.n_test_cases
    # a benchmark of few agents and many test cases keeps only the history levels it reaches
    state = (ends, tc_ends, n_a, n_t, init_mu, init_sigma, history_levels(m))
    score_dtype = _score_dtype(m.score)
    pool = ThreadPoolExecutor(workers) if workers > 1 else _Inline()
    try:
        first = _ordered(m, pairs[0], score_dtype, with_reliability)
        moments = OrderMoments()
        tasks = []
        if pairs[0].with_reverse:
            tasks.append(lambda: _play(first, True, *state))
        copies = threading.BoundedSemaphore(max(2, workers))
        for pair in pairs[1:]:
            shared = _SharedCopy(m, pair, score_dtype, copies)
            tasks.append(lambda shared=shared: shared.play(False, state))
            if pair.with_reverse:
                tasks.append(lambda shared=shared: shared.play(True, state))
        # players take the orders strictly in sequence, so that no finished order waits long for an earlier one
        playing = max(1, min(workers, ORDER_STATE_BUDGET // max(1, order_state_bytes(n_a, n_t, ends, tc_ends, state[-1]))))
        queue, taking = iter(enumerate(tasks, start=1)), threading.Lock()

        def player():
            while True:
                with taking:
                    item = next(queue, None)
                if item is None:
                    return
                moments.put(item[0], item[1]())

        futures = [pool.submit(player) for _ in range(playing)]
        rel = _FirstOrderReliability(first, ends, n_a, n_t, pool, workers) if with_reliability else None
        first_run = _play(first, False, *state, on_segment=rel)
        for future in futures:
            future.result()
        moments.add(first_run)
        del first_run  # summed (or kept as the first): its test-case arrays need not outlive the sums
        done = None
        if then is not None:
            done = then(moments)
            moments.release()
        rel_table = rel.table() if rel is not None else None
        measurer = rel.measurer if rel is not None else None
    finally:
        pool.shutdown(wait=True)
    return moments, rel_table, measurer, done


def final_ratings(
    m: Matches,
    *,
    seed: int | None,
    shuffles: int,
    shuffle: bool = True,
    workers: int | None = None,
    init_mu=1500.0,
    init_sigma=350.0,
):
    """(μ, mixture σ) of agents and test cases over ``shuffles`` orders: :func:`rate` without tables, snapshots or reliability.

    Players without a match keep their starting rating.
    """
    check_start(init_mu, init_sigma)
    workers = default_workers() if workers is None else int(workers)
    end = np.array([len(m)], dtype=np.int64)
    moments, _, _, _ = run_orders(
        m, _pairs(len(m), seed, shuffle, shuffles), end, end, float(init_mu), float(init_sigma), False, workers
    )
    return moments.mean("a_mu"), moments.sigma("a_mu", "a_sig"), moments.mean("t_mu"), moments.sigma("t_mu", "t_sig")


@dataclass(frozen=True)
class RatingResult:
    """What :func:`rate` returns.

    Attributes
    ----------
    test_cases : DataFrame or pyarrow.Table
        ``test_case_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd, component``
        and the test case's history, ``mu_after_<j>, sigma_after_<j>`` for j = 1, 2, 4, …, 128
        below its number of matches (NaN beyond): its rating after its j-th match, mean and
        mixture σ over the orders, which :func:`place_agents` replays a newcomer against.
        ``mean_score`` is the test case's own score (1 − S), ``mean_metric`` the agents' mean
        metric on it.
    agents : DataFrame or pyarrow.Table
        ``agent_id, mu, sigma, matches, mean_score, mean_metric, mu_order_sd, mu_lo, mu_hi,
        rank, rank_lo, rank_hi, component``:

        - ``mu``: the mean over the orders; ``sigma``: the standard deviation of the mixture
          of the orders' Glicko posteriors, √(mean σ² + variance of μ across orders);
          refined (the default; see ``refine``): the joint
          refinement's rating and its standard error relative to the component's mean
          (:mod:`agielo_dagster.rating.refine`);
        - ``mu_order_sd``: the spread of the Glicko μ across the orders (NaN with a single order);
        - ``mu_lo, mu_hi``: the ``level`` interval (95 % by default) accounting for the
          match order and for the sampling of test cases (see
          :mod:`agielo_dagster.rating.intervals`); refined: μ ± z·``sigma``;
        - ``rank``: 1 + the number of agents of the same component whose interval lies
          entirely above this one (agents no interval separates share a rank, as LMArena
          ranks by confidence interval); ``rank_lo`` (= ``rank``) and ``rank_hi``: the best
          and worst ranks the intervals allow;
        - ``component``: the connected component of the match graph (0 = the largest);
          ratings and ranks compare only within a component.
    snapshots : DataFrame or pyarrow.Table
        ``fraction, kind, id, mu, sigma``: the state after that share of the matches
        (mean and mixture σ over the orders).
    reliability : DataFrame or pyarrow.Table or None
        ``fraction, rho_test_cases, rho_agents, mae, mse, matches_outside_bins, orders``
        (see :mod:`agielo_dagster.rating.reliability`).
    settings : dict
        The arguments of :func:`rate`, to reproduce the result.
    n_matches : int
    n_components : int
        Connected components of the (agent, test case) graph; more than one also warns
        (:class:`~agielo_dagster.rating.DisconnectedMatchesWarning`).
    """

    test_cases: Any
    agents: Any
    snapshots: Any
    reliability: Any
    settings: dict = field(repr=False)
    n_matches: int = 0
    n_components: int = 1

    def component_of(self, kind: str = "agent") -> pd.Series:
        """Which players are in which component: a Series id → component, for ``kind`` "agent" or "test_case"."""
        table = to_pandas(self.agents if kind == "agent" else self.test_cases)
        return table.set_index(f"{kind}_id")["component"]


def _check_fractions(fractions: Any, name: str) -> np.ndarray:
    f = np.asarray(tuple(fractions), dtype=np.float64)
    if f.ndim != 1 or len(f) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of fractions")
    if not (np.all(f > 0) and np.all(f <= 1) and np.all(np.diff(f) > 0)):
        raise ValueError(f"{name} must increase strictly within (0, 1], got {f.tolist()}")
    return f


def rate(
    matches: Any,
    *,
    seed: int | None = 42,
    shuffle: bool = True,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
    snapshot_fractions: Any = DEFAULT_SNAPSHOT_FRACTIONS,
    test_case_snapshot_fractions: Any = DEFAULT_TEST_CASE_SNAPSHOT_FRACTIONS,
    shuffles: int = DEFAULT_SHUFFLES,
    with_reliability: bool = True,
    level: float = DEFAULT_LEVEL,
    workers: int | None = None,
    refine: bool | None = None,
) -> RatingResult:
    """Rate every test case and agent of a match table with sequential Glicko-1, over several match orders.

    Parameters
    ----------
    matches : pandas or polars DataFrame, or pyarrow.Table
        ``test_case_id, agent_id, metric, score``: one row per match; each (agent, test case)
        pair at most once. Ids may be strings or dictionary-encoded strings (Arrow).
    seed : int
        Seed of the match orders; the same seed gives bit-identical results, whatever
        ``workers`` is.
    shuffle : bool
        ``False`` processes the matches in row order (then ``shuffles`` must be 1).
    init_mu, init_sigma : float
        Every player's starting rating: ``init_mu`` within ±10,000, ``init_sigma`` in (0, 1000]
        (:func:`~agielo_dagster.rating.checks.check_start`).
    snapshot_fractions : sequence of float
        Shares of the matches after which agent ratings (and reliability) are recorded.
    test_case_snapshot_fractions : sequence of float
        Shares after which test-case ratings are recorded (fewer: there are many test cases).
    shuffles : int
        Orders to average (``DEFAULT_SHUFFLES`` = 16: eight antithetic pairs). ``shuffles=1`` is
        the AGI-Elo paper's single order, as in earlier versions of this engine.
    with_reliability : bool
        Compute the reliability table during the first order's pass (see
        :func:`~agielo_dagster.rating.reliability`).
    level : float
        Confidence level of ``mu_lo, mu_hi`` and of the ranks.
    workers : int
        Threads for the orders and the reliability (default: the cores available).
    refine : bool or None
        Replace the Glicko ratings and intervals by the joint refinement of
        :mod:`agielo_dagster.rating.refine`: an unbiased scale and calibrated intervals at any
        spread of the agents, dense or sparse, binary or graded, its level the Glicko scale's at
        the median agent. ``None`` (the default) refines unless ``shuffles`` is 1: several orders
        are this engine's ratings, refined; a single order is the AGI-Elo paper's procedure and
        reproduces its published ratings exactly, so it stays Glicko alone (pass ``refine=True``
        to refine it too). Skipped, with a :class:`~agielo_dagster.rating.refine.RefinementSkippedWarning`,
        above ``refine.MAX_AGENTS`` agents or ``refine.MAX_PAIRS`` agent pairs sharing a test case.

    Returns
    -------
    RatingResult
        Tables in the flavour of ``matches`` (pandas, polars or pyarrow).

    Notes
    -----
    Cost, for 1,000,000 matches on 2 cores: one order's Glicko pass about 0.07 s; its 100
    snapshots and reliability about 0.25 s of CPU, spread over the cores (the whole job with
    one order, from a pandas table of string ids: median 0.26–0.27 s); each further order about
    0.04 s of wall time (16 orders: about 0.9 s). For 10⁸ matches use :func:`rate_parquet`: one order
    in about 23 s and 3.2 GiB, 16 in about 85 s and 4.8 GiB. See ``benchmarks/rate_1m.py``
    and ``benchmarks/rate_100m.py``.
    """
    settings = dict(
        seed=seed,
        shuffle=shuffle,
        init_mu=init_mu,
        init_sigma=init_sigma,
        snapshot_fractions=snapshot_fractions,
        test_case_snapshot_fractions=test_case_snapshot_fractions,
        shuffles=shuffles,
        with_reliability=with_reliability,
        level=level,
        workers=workers,
        refine=refine,
    )
    return rate_encoded(encode_matches(matches), settings)


def rate_defaults() -> dict:
    """The keyword arguments of :func:`rate` with their defaults."""
    import inspect

    return {k: p.default for k, p in inspect.signature(rate).parameters.items() if p.kind is p.KEYWORD_ONLY}


def rate_encoded(m: Matches, settings: dict, *, warn: bool = True) -> RatingResult:
    """:func:`rate` on an already encoded match table, with ``settings`` its keyword arguments."""
    unknown = set(settings) - set(rate_defaults())
    if unknown:
        raise TypeError(f"rate() got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
    settings = {**rate_defaults(), **settings}
    seed, shuffle, shuffles, level = settings["seed"], settings["shuffle"], settings["shuffles"], settings["level"]
    init_mu, init_sigma, workers = settings["init_mu"], settings["init_sigma"], settings["workers"]
    with_reliability = settings["with_reliability"]
    refine = shuffles != 1 if settings["refine"] is None else bool(settings["refine"])
    snapshot_fractions, test_case_snapshot_fractions = settings["snapshot_fractions"], settings["test_case_snapshot_fractions"]
    fractions = _check_fractions(snapshot_fractions, "snapshot_fractions")
    tc_fractions = _check_fractions(test_case_snapshot_fractions, "test_case_snapshot_fractions")
    check_start(init_mu, init_sigma)
    z_of(level)
    pairs = _pairs(len(m), seed, shuffle, shuffles)
    workers = default_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    n, n_a, n_t = len(m), m.n_agents, m.n_test_cases
    ends, tc_ends = snapshot_ends(fractions, n), snapshot_ends(tc_fractions, n)
    played_tc_ends = tc_ends[tc_ends < n]  # a wide benchmark's orders keep 16 bytes a test case fewer each
    n_components, a_comp, t_comp = components(m)
    if warn:
        warn_if_disconnected(n_components, a_comp, m.agent_ids, "rate")

    def tables(o: OrderMoments):
        """The rating tables from the orders (run while the reliability of the first order is still measured)."""
        a_mu_k = o.agents_by_order()
        # the test cases' snapshots at the last match are their final ratings (the same sums): not played twice;
        # read first and dropped, like the histories, so that the rest of the tables is built without their sums
        before_end = o.mean("t_mu_at"), o.sigma("t_mu_at", "t_sig_at")
        o.drop("t_mu_at", "t_sig_at")
        after_mu_mean, after_sig = o.mean("t_mu_after"), o.sigma("t_mu_after", "t_sig_after")
        o.drop("t_mu_after", "t_sig_after")
        a_mu, t_mu = o.mean("a_mu"), o.mean("t_mu")
        a_sig, t_sig = o.sigma("a_mu", "a_sig"), o.sigma("t_mu", "t_sig")
        final_t = t_mu, t_sig  # Glicko's, also where the refinement replaces them below
        a_n, a_score, a_metric, t_n, t_score, t_metric = K.summaries(m.agent, m.test_case, m.score, m.metric, n_a, n_t)
        a_mean_metric, t_mean_metric = a_metric / a_n, t_metric / t_n

        _, lo, hi = agent_intervals(m, a_mu, a_sig, t_mu, t_sig, order_variance(a_mu_k), level)
        # --- refinement hook (rating/refine.py): the joint fit replaces the Glicko ratings and intervals
        if refine:
            from .refine import refine_ratings

            r = refine_ratings(m, a_mu, t_mu, t_sig, a_comp, t_comp, init_mu=float(init_mu), init_sigma=float(init_sigma))
            z = z_of(level)
            a_mu, t_mu, t_sig = r.agent_mu, r.test_case_mu, r.test_case_sigma
            a_sig = np.where(r.refined, r.agent_se, a_sig)
            lo = np.where(r.refined, a_mu - z * r.agent_se, lo)
            hi = np.where(r.refined, a_mu + z * r.agent_se, hi)
        # --- end of the refinement hook
        rank, rank_lo, rank_hi = interval_ranks(lo, hi, a_comp)
        agents = pd.DataFrame(
            {
                "agent_id": m.agent_ids,
                "mu": a_mu,
                "sigma": a_sig,
                "matches": a_n,
                "mean_score": a_score / a_n,
                "mean_metric": a_mean_metric,
                "mu_order_sd": o.order_sd("a_mu"),
                "mu_lo": lo,
                "mu_hi": hi,
                "rank": rank,
                "rank_lo": rank_lo,
                "rank_hi": rank_hi,
                "component": a_comp,
            }
        )
        t_mu_at = [*before_end[0], *[final_t[0]] * (len(tc_ends) - len(played_tc_ends))]
        t_sig_at = [*before_end[1], *[final_t[1]] * (len(tc_ends) - len(played_tc_ends))]
        test_cases = pd.DataFrame(
            {
                "test_case_id": m.test_case_ids,
                "mu": t_mu,
                "sigma": t_sig,
                "matches": t_n,
                "mean_score": 1.0 - t_score / t_n,
                "mean_metric": t_mean_metric,
                "mu_order_sd": o.order_sd("t_mu"),
                "component": t_comp,
            }
        )
        for depth in range(HISTORY_LEVELS):
            j = 1 << depth
            if j < t_n.max():
                test_cases[f"mu_after_{j}"] = np.where(j < t_n, after_mu_mean[depth], np.nan)
                test_cases[f"sigma_after_{j}"] = np.where(j < t_n, after_sig[depth], np.nan)
        snapshots = _snapshot_table(
            fractions,
            m.agent_ids,
            o.mean("a_mu_at"),
            o.sigma("a_mu_at", "a_sig_at"),
            tc_fractions,
            m.test_case_ids,
            t_mu_at,
            t_sig_at,
        )
        return agents, test_cases, snapshots, a_mu, t_mu, a_mean_metric, t_mean_metric, a_n

    moments, rel_table, measurer, done = run_orders(
        m, pairs, ends, played_tc_ends, float(init_mu), float(init_sigma), with_reliability, workers, then=tables
    )
    agents, test_cases, snapshots, a_mu, t_mu, a_mean_metric, t_mean_metric, a_n = done

    reliability = None
    if rel_table is not None:
        orders = np.ones(len(fractions), dtype=np.int64)
        if moments.k > 1 and fractions[-1] == 1.0:
            # the published ratings: the mean over the orders, measured on every match
            rel_table[-1] = measurer.measure(a_mu, t_mu, a_mean_metric, t_mean_metric, a_n.astype(np.int64))
            orders[-1] = moments.k
        reliability = pd.DataFrame(
            dict(
                zip(
                    RELIABILITY_COLUMNS,
                    [fractions, *rel_table[:, :4].T, rel_table[:, 4].astype(np.int64), orders],
                    strict=True,
                )
            )
        )
    settings = dict(
        seed=seed,
        shuffle=shuffle,
        init_mu=init_mu,
        init_sigma=init_sigma,
        snapshot_fractions=tuple(fractions.tolist()),
        test_case_snapshot_fractions=tuple(tc_fractions.tolist()),
        shuffles=shuffles,
        level=level,
        refine=bool(refine),
    )
    flav = m.flavour
    return RatingResult(
        test_cases=to_flavour(test_cases, flav),
        agents=to_flavour(agents, flav),
        snapshots=_from_arrow(snapshots, flav),
        reliability=None if reliability is None else to_flavour(reliability, flav),
        settings=settings,
        n_matches=n,
        n_components=n_components,
    )


def _mixture_sigma(mu_k: np.ndarray, sig_k: np.ndarray) -> np.ndarray:
    """σ of the mixture of the orders' posteriors N(μ_k, σ_k²): √(mean σ² + population variance of μ)."""
    if mu_k.shape[0] == 1:
        return sig_k[0].copy()
    return np.sqrt((sig_k * sig_k).mean(axis=0) + mu_k.var(axis=0))


def _snapshot_table(fractions, agent_ids, a_mu_at, a_sig_at, tc_fractions, test_case_ids, t_mu_at, t_sig_at):
    """The snapshots as one pyarrow table, one chunk per fraction and kind: the ids are converted to
    strings once and every chunk of a kind shares them, as it shares its ``kind`` array; ``mu`` and
    ``sigma`` are views of the snapshot arrays. A wide benchmark's test-case rows are not copied.

    (A pandas frame per kind, concatenated and converted, held three copies of the test cases'
    rows at once: 600 bytes a test case, the peak of ``rate`` on a benchmark of one agent.)
    """
    import pyarrow as pa

    chunks: dict[str, list] = {name: [] for name in ("fraction", "kind", "id", "mu", "sigma")}
    for kind, fr, ids, mu_at, sig_at in (
        ("agent", fractions, agent_ids, a_mu_at, a_sig_at),
        ("test_case", tc_fractions, test_case_ids, t_mu_at, t_sig_at),
    ):
        n = len(ids)
        strings = pa.array(np.asarray(ids, dtype=object), pa.large_string())
        kinds = pa.array([kind], pa.large_string()).take(pa.array(np.zeros(n, dtype=np.int64)))
        for k, f in enumerate(np.asarray(fr, dtype=np.float64)):
            chunks["fraction"].append(pa.array(np.full(n, f)))
            chunks["kind"].append(kinds)
            chunks["id"].append(strings)
            chunks["mu"].append(pa.array(np.ascontiguousarray(mu_at[k], dtype=np.float64)))
            chunks["sigma"].append(pa.array(np.ascontiguousarray(sig_at[k], dtype=np.float64)))
    types = {
        "fraction": pa.float64(),
        "kind": pa.large_string(),
        "id": pa.large_string(),
        "mu": pa.float64(),
        "sigma": pa.float64(),
    }
    return pa.table({name: pa.chunked_array(c, types[name]) for name, c in chunks.items()})


def _from_arrow(table, flavour: Flavour) -> Any:
    """A pyarrow table as the caller's flavour."""
    if flavour == "arrow":
        return table
    if flavour == "pandas":
        return table.to_pandas()
    import polars as pl

    return pl.from_arrow(table)


# ---------------------------------------------------------------------------------------------
# placement


def _histories(tc: pd.DataFrame, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(matches, μ and precision after match 1, 2, 4, …, final μ, final precision) of the known test cases."""
    final_mu = floats_of(tc, "mu", "test-case table")[pos]
    if "sigma" not in tc.columns:  # opponents count as exactly known
        final_prec = np.full(len(pos), np.inf)
    else:
        with np.errstate(divide="ignore"):
            final_prec = 1.0 / floats_of(tc, "sigma", "test-case table", 0.0)[pos] ** 2
    levels = []
    while f"mu_after_{1 << len(levels)}" in tc.columns and f"sigma_after_{1 << len(levels)}" in tc.columns:
        j = 1 << len(levels)
        levels.append(
            (tc[f"mu_after_{j}"].to_numpy(dtype=np.float64)[pos], tc[f"sigma_after_{j}"].to_numpy(dtype=np.float64)[pos])
        )
    if not levels or "matches" not in tc.columns:  # no history: the final ratings throughout
        played = np.zeros(len(pos), dtype=np.int64)
        return played, np.full((1, len(pos)), np.nan), np.full((1, len(pos)), np.nan), final_mu, final_prec
    played = tc["matches"].to_numpy(dtype=np.int64)[pos]
    level_mu = np.vstack([mu for mu, _ in levels])
    with np.errstate(divide="ignore", invalid="ignore"):
        level_prec = np.vstack([1.0 / sig**2 for _, sig in levels])
    return played, level_mu, level_prec, final_mu, final_prec


def place_agents(
    new_matches: Any,
    test_cases: Any,
    *,
    level: float = 0.9,
    shuffles: int = DEFAULT_SHUFFLES,
    seed: int | None = 42,
    shuffle: bool = True,
    init_mu: float = 1500.0,
    init_sigma: float = 350.0,
) -> Any:
    """Rate new agents against frozen test-case ratings, where a joint re-rating would put them.

    No existing rating changes: the cheap path when one new model lands. In a joint rating a
    newcomer meets each test case at a random moment of the pass, in the state the test case
    had then (early on still near 1500 with a wide σ, later near its final rating); that,
    not the final ratings, is what its own rating answers to. So each new agent replays its
    matches at uniformly random times u, in time order; at time u the test case has played
    j ~ Binomial(n_t, u) of its n_t matches, and its state after j matches is read from the
    history the test-case table carries (``mu_after_<j>, sigma_after_<j>`` from :func:`rate`,
    interpolated in j between 0, 1, 2, 4, …, n_t). ``shuffles`` replays (antithetic pairs:
    u and 1 − u, j and n_t − j) are averaged, as :func:`rate` averages orders.

    On the demo's benchmarks, each classifier left out and placed lands within 2–3 Elo of its
    joint rating on average, at every level of strength, where against the final ratings alone
    it lands 30–40 Elo too low (``tests/rating/test_place_agents.py``).

    Parameters
    ----------
    new_matches : DataFrame or pyarrow.Table
        ``test_case_id, agent_id, metric, score`` of the new agent(s); any subset of the
        test cases (an adaptive placement may choose them).
    test_cases : DataFrame or pyarrow.Table
        The ``test_cases`` of :func:`rate`: ``test_case_id, mu`` and optionally ``sigma``,
        ``matches`` and the history columns. Without the history the final ratings are used
        throughout (the estimator of earlier versions); without ``sigma`` opponents count as
        exactly known (g = 1).
    level : float
        Confidence level of ``mu_lo, mu_hi``.
    shuffles, seed, shuffle : int, int, bool
        Replays averaged, the seed of their times and slots; ``shuffle=False`` plays each
        agent's matches in row order, evenly spread in time (one replay).
    init_mu, init_sigma : float
        The newcomer's (and every test case's) starting rating.

    Returns
    -------
    DataFrame or pyarrow.Table
        ``agent_id, mu, sigma, mu_lo, mu_hi, matches, mean_score, mean_metric``. ``sigma``
        is the replays' mixture σ; ``mu_lo, mu_hi`` account for the replays' spread and for
        the sampling of the agent's test cases (sandwich variance against the final ratings).
    """
    z = z_of(level)
    check_start(init_mu, init_sigma)
    m = encode_matches(new_matches, "new match table")
    tc = to_pandas(test_cases)
    require_columns(tc, ("test_case_id", "mu"), "test-case table")
    tc_ids = ids_of(tc, "test_case_id", "test-case table")
    lookup = pd.Index(tc_ids.astype(str))
    if not lookup.is_unique:
        dup = lookup[lookup.duplicated()][0]
        raise MatchTableError(
            f"test-case table lists {dup!r} more than once (rule: test_case_unique)",
            rule="test_case_unique",
            column="test_case_id",
        )
    pos = lookup.get_indexer(m.test_case_ids)
    refuse_unknown_test_cases(m, pos)
    played, level_mu, level_prec, final_mu, final_prec = _histories(tc, pos)
    n_a = m.n_agents
    n_t_of = played[m.test_case]
    if not shuffle:
        if shuffles != 1:
            raise ValueError("shuffles > 1 needs shuffle=True: row order is a single order")
        times, slots = np.zeros(len(m)), np.zeros(len(m), dtype=np.int64)
        for a in range(n_a):
            rows = np.flatnonzero(m.agent == a)
            times[rows] = (np.arange(len(rows)) + 0.5) / len(rows)
            slots[rows] = np.floor(times[rows] * (n_t_of[rows] + 1)).astype(np.int64)
        replays = [(times, slots)]
    else:
        rng = np.random.default_rng(np.random.SeedSequence(seed))
        replays = []
        for pair in _pairs(len(m), seed, True, shuffles):
            u = rng.random(len(m))
            j = rng.binomial(n_t_of, u)  # the test case's matches before the newcomer's, at time u
            replays.append((u, j))
            if pair.with_reverse:
                replays.append((1.0 - u, n_t_of - j))  # the antithetic twin: time 1 − u, slot n − j
    mu_k = np.empty((len(replays), n_a))
    sig_k = np.empty((len(replays), n_a))
    by_agent = [np.flatnonzero(m.agent == a) for a in range(n_a)]
    for k, (times, slots) in enumerate(replays):
        for a, rows in enumerate(by_agent):
            rows = rows[np.argsort(times[rows], kind="stable")]
            mu_k[k, a], sig_k[k, a] = K.replay_agent(
                slots[rows],
                m.test_case[rows],
                m.score[rows],
                played,
                level_mu,
                level_prec,
                final_mu,
                final_prec,
                float(init_mu),
                float(init_sigma),
            )
    mu = mu_k.mean(axis=0)
    sigma = _mixture_sigma(mu_k, sig_k)
    # sampling of the agent's test cases: sandwich variance against the final (frozen) ratings
    num, info = _frozen_sandwich(m, mu, final_mu, np.sqrt(1.0 / final_prec))
    with np.errstate(divide="ignore", invalid="ignore"):
        sampling = np.where(info > 0, num / (Q * info) ** 2, np.inf)
    se = np.sqrt(sampling + order_variance(mu_k))
    a_n = np.bincount(m.agent, minlength=n_a)
    agents = pd.DataFrame(
        {
            "agent_id": m.agent_ids,
            "mu": mu,
            "sigma": sigma,
            "mu_lo": mu - z * se,
            "mu_hi": mu + z * se,
            "matches": a_n,
            "mean_score": np.bincount(m.agent, m.score, n_a) / a_n,
            "mean_metric": np.bincount(m.agent, m.metric, n_a) / a_n,
        }
    )
    return to_flavour(agents, m.flavour)


def refuse_unknown_test_cases(m: Matches, pos: np.ndarray) -> None:
    """Refuse new matches on test cases the frozen table has no rating for (``pos`` < 0), naming the first row."""
    if (pos < 0).any():
        unknown = np.asarray(m.test_case_ids)[pos < 0]
        rows = np.flatnonzero(np.isin(m.test_case, np.flatnonzero(pos < 0)))
        raise MatchTableError(
            f"new match table row {rows[0]}: test case {unknown[0]!r} has no frozen rating "
            f"({len(unknown)} unknown test case(s); rule: test_case_known)",
            rule="test_case_known",
            row=int(rows[0]),
            column="test_case_id",
        )


def _frozen_sandwich(m: Matches, a_mu, t_mu, t_sig) -> tuple[np.ndarray, np.ndarray]:
    gt = g(t_sig[m.test_case])
    e = 1.0 / (1.0 + 10.0 ** (-gt * (a_mu[m.agent] - t_mu[m.test_case]) / 400.0))
    num = np.bincount(m.agent, (gt * (m.score - e)) ** 2, m.n_agents)
    info = np.bincount(m.agent, gt * gt * e * (1.0 - e), m.n_agents)
    return num, info
