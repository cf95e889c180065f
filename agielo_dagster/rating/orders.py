"""The orders' pass: match orders (antithetic pairs), one Glicko-1 pass per order on a thread pool, the
first order's reliability measured beside it, and the moments over the orders (:class:`OrderMoments`).

:func:`~agielo_dagster.rating.glicko.rate` builds its tables from what :func:`run_orders` returns;
:func:`final_ratings` is the pass alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _kernels as K
from .checks import check_start
from .cores import usable_cores
from .frames import Matches
from .order_moments import OrderMoments
from .order_reliability import OrderReliability


def snapshot_ends(fractions: ArrayLike, n_matches: int) -> np.ndarray:
    """How many matches have been played at each snapshot fraction.

    Follows the authors' milestones: the state after match ``int(f·(n − 1))``
    (0-based), i.e. ``int(f·(n − 1)) + 1`` matches; 1.0 is every match.
    """
    f = np.asarray(fractions, dtype=np.float64)
    return np.floor(f * (n_matches - 1) + 1e-9).astype(np.int64) + 1


AGENT_SNAPSHOT_CELLS = 1 << 20
"""Agents × snapshot fractions up to which every agent is kept at every fraction."""

AGENT_SNAPSHOTS_PER_MATCH = 2
"""Above :data:`AGENT_SNAPSHOT_CELLS`, the most agent snapshot cells kept per match."""


def agent_snapshot_fractions(fractions: ArrayLike, n_matches: int, n_agents: int) -> np.ndarray:
    """The fractions at which the agents' snapshots are kept: all of them, except where many agents play few matches
    each (a tall benchmark: 100,000 agents of 5 matches held 100 snapshots each, 7.5 KB an agent in the orders and
    the table, 5 times the memory bound's 300 bytes a match); there every k-th fraction counted from the last is kept,
    the fewest k that keeps at most :data:`AGENT_SNAPSHOTS_PER_MATCH` cells a match. The reliability is measured at
    every fraction all the same."""
    f = np.asarray(fractions, dtype=np.float64)
    cells = n_agents * len(f)
    if cells <= AGENT_SNAPSHOT_CELLS or cells <= AGENT_SNAPSHOTS_PER_MATCH * n_matches:
        return f
    stride = -(-cells // (AGENT_SNAPSHOTS_PER_MATCH * n_matches))
    return f[::-1][::stride][::-1].copy()


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


def _pairs(n_matches: int, seed: int | None, row_order: bool, orders: int) -> list[_Pair]:
    """The antithetic pairs behind ``orders`` match orders.

    Order 0 is ``numpy.random.default_rng(seed).permutation(n)`` (the single order of
    ``orders=1``), order 1 its reverse; orders 2p and 2p + 1 (p ≥ 1) are a permutation
    drawn by a cache-friendly bucket shuffle keyed by ``SeedSequence(seed)`` spawned
    with ``p``, and its reverse. Above ``NUMPY_ORDER_LIMIT`` matches (33,554,432) order 0
    too comes from the bucket shuffle (spawned with 0): numpy's Fisher-Yates over 10⁸ matches
    takes 5 s, bound by memory latency, where the bucket shuffle takes 2.
    """
    if isinstance(orders, bool) or not isinstance(orders, (int, np.integer)) or orders < 1:
        raise ValueError(f"orders must be an integer >= 1, got {orders!r}")
    if row_order:
        if orders != 1:
            raise ValueError("orders > 1 needs row_order=False: row order is a single order")
        return [_Pair("rows", None, False)]
    entropy = np.random.SeedSequence(seed)
    pairs = []
    for p in range((orders + 1) // 2):
        with_reverse = 2 * p + 1 < orders
        if p == 0 and n_matches <= NUMPY_ORDER_LIMIT:
            pairs.append(_Pair("numpy", seed if seed is not None else entropy, with_reverse))
        else:
            child = np.random.SeedSequence(entropy.entropy, spawn_key=(p,))
            pairs.append(_Pair("bucket", np.uint64(child.generate_state(1, np.uint64)[0]), with_reverse))
    return pairs


def match_orders(n_matches: int, *, seed: int | None, row_order: bool = False, orders: int = 1) -> list[np.ndarray]:
    """The processing order(s) of the matches, as row-index permutations.

    ``row_order=True`` is the table's row order (only one order exists, so ``orders`` must be 1).
    Otherwise ``orders`` match orders in antithetic pairs (see :func:`rate`): the first is
    ``numpy.random.default_rng(seed).permutation(n)`` whatever ``orders`` is (up to
    ``NUMPY_ORDER_LIMIT`` matches), the second the first read backwards.
    """
    out = []
    for pair in _pairs(n_matches, seed, row_order, orders):
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
    new_of_old: np.ndarray | None = None  # set when ``test_case`` holds codes relabeled by first match (relabeled)


RELABEL_FROM = 1 << 17
"""From this many test cases, an order's own copy numbers its test cases by their first match (``relabeled``).

A Glicko pass reads and writes each match's test-case state (μ, σ, matches played, history slot): over a wide
benchmark's millions of test cases in a random order, each a cache miss. Numbered by first match, a pass walks them
nearly in sequence (one match each: exactly). 1 agent × 4M test cases, one pass: 3.2 s with codes in sequence
against 5.6 s at random. Every value played is the same, so every rating is the same, bit for bit."""


def relabeled(o: _Ordered, n_test_cases: int) -> _Ordered:
    """``o`` with its test cases numbered by first match, in place, when there are at least ``RELABEL_FROM``."""
    if n_test_cases >= RELABEL_FROM and o.new_of_old is None:
        o.new_of_old = K.relabel_by_first_match(o.test_case, n_test_cases)
    return o


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


@dataclass(frozen=True)
class _Layout:
    """What every order of one rating records: its snapshot ends, starting ratings and which test cases keep a history.

    A test case of one match (most of a wide benchmark's) is at its start until that match and at its
    final rating after it: its snapshots are read from its final rating and the match's position in the
    order, so an order keeps snapshot and history columns only for the ``recorded`` test cases of two or
    more matches (issue 25).
    """

    ends: np.ndarray
    tc_ends: np.ndarray
    a_ends: np.ndarray  # where the agents' snapshots are kept (``ends``, or every k-th of them: agent_snapshot_fractions)
    n_a: int
    n_t: int
    init_mu: float
    init_sigma: float
    levels: int
    slot: np.ndarray  # each test case's column in the recorded arrays, −1 for a test case of one match
    kept: np.ndarray | None  # the recorded test cases, None when every test case is

    @classmethod
    def of(cls, m: Matches, ends, tc_ends, init_mu: float, init_sigma: float, a_ends=None) -> _Layout:
        played = np.bincount(m.test_case, minlength=m.n_test_cases)
        slot = history_slots(played)
        kept = np.flatnonzero(slot >= 0)
        return cls(
            ends,
            tc_ends,
            ends if a_ends is None else a_ends,
            m.n_agents,
            m.n_test_cases,
            init_mu,
            init_sigma,
            history_levels(played),
            slot,
            None if len(kept) == m.n_test_cases else kept,
        )

    @property
    def recorded(self) -> int:
        return self.n_t if self.kept is None else len(self.kept)

    def state_bytes(self) -> int:
        """What one order in play holds: μ, σ and snapshots of every agent, each test case's μ, σ, count and
        match position, and the recorded test cases' snapshots and histories (relabeled: its new code and slot, and
        μ and σ handed back in the matches' codes)."""
        per_recorded = 16 * (len(self.tc_ends) + self.levels)
        per_test_case = 16 + 8 + 4 + (4 + 4 + 16 if self.n_t >= RELABEL_FROM else 0)
        return 16 * self.n_a * (1 + len(self.a_ends)) + self.n_t * per_test_case + per_recorded * self.recorded


@dataclass
class _Run:
    """One order's final state, its snapshots and the test cases' states after match 1, 2, 4, …

    ``t_mu_kept``/``t_sig_kept`` are the recorded test cases' snapshots; ``t_first`` each test case's
    first match's position in the order (read for the others' snapshots, empty when every test case is
    recorded).
    """

    a_mu: np.ndarray
    a_sig: np.ndarray
    t_mu: np.ndarray
    t_sig: np.ndarray
    a_mu_at: np.ndarray
    a_sig_at: np.ndarray
    t_mu_kept: np.ndarray
    t_sig_kept: np.ndarray
    t_first: np.ndarray
    t_mu_after: np.ndarray
    t_sig_after: np.ndarray
    layout: _Layout

    def test_case_snapshots(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every test case's (μ, σ) at each snapshot end, one end at a time (made as it is read): the very values the
        order passed through."""
        lay = self.layout
        for k, end in enumerate(lay.tc_ends):
            if lay.kept is None:
                yield self.t_mu_kept[k], self.t_sig_kept[k]
                continue
            played = self.t_first < end
            mu = np.where(played, self.t_mu, lay.init_mu)
            sig = np.where(played, self.t_sig, lay.init_sigma)
            del played
            mu[lay.kept], sig[lay.kept] = self.t_mu_kept[k], self.t_sig_kept[k]
            yield mu, sig


def history_levels(matches_per_test_case: np.ndarray) -> int:
    """How many of the levels 1, 2, 4, …, 128 some test case plays beyond (the others would stay empty)."""
    most = int(matches_per_test_case.max()) if len(matches_per_test_case) else 0
    return sum((1 << depth) < most for depth in range(HISTORY_LEVELS))


def history_slots(matches_per_test_case: np.ndarray) -> np.ndarray:
    """Each test case's column in the recorded histories, −1 for a test case of one match (its history is its
    final rating): a wide benchmark, most of whose test cases play once, records only the others (issue 25)."""
    kept = matches_per_test_case >= 2
    slot = np.full(len(kept), -1, dtype=np.int32)
    slot[kept] = np.arange(int(kept.sum()), dtype=np.int32)
    return slot


def _play(o: _Ordered, reverse: bool, lay: _Layout, on_segment=None) -> _Run:
    n, n_a, n_t, recorded = len(o.agent), lay.n_a, lay.n_t, lay.recorded
    a_mu, a_sig = np.full(n_a, lay.init_mu), np.full(n_a, lay.init_sigma)
    t_mu, t_sig = np.full(n_t, lay.init_mu), np.full(n_t, lay.init_sigma)
    new = o.new_of_old  # None, or the codes of ``o.test_case`` are relabeled: the state is kept in them, and handed back
    if new is not None and on_segment is not None:
        raise ValueError("an order measured as it is played keeps the matches' own codes")
    slot, kept = lay.slot, lay.kept
    if new is not None:
        slot = np.empty_like(lay.slot)
        slot[new] = lay.slot
        kept = None if lay.kept is None else new[lay.kept]
    t_first = np.empty(0, dtype=np.int64)
    if lay.kept is not None:
        t_first = np.full(n_t, n, dtype=np.int32 if n < 2**31 else np.int64)
        K.first_positions(o.test_case, reverse, t_first)
    run = _Run(
        a_mu,
        a_sig,
        t_mu,
        t_sig,
        np.empty((len(lay.a_ends), n_a)),
        np.empty((len(lay.a_ends), n_a)),
        np.empty((len(lay.tc_ends), recorded)),
        np.empty((len(lay.tc_ends), recorded)),
        t_first,
        np.full((lay.levels, recorded), np.nan),
        np.full((lay.levels, recorded), np.nan),
        lay,
    )
    t_played = np.zeros(n_t, dtype=np.int32)
    done = 0
    for stop in np.unique(np.concatenate([lay.ends, lay.tc_ends, [n]])):
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
            slot,
            run.t_mu_after,
            run.t_sig_after,
        )
        if on_segment is not None:
            on_segment(done, stop, a_mu, t_mu)
        done = stop
        for k in np.flatnonzero(lay.a_ends == stop):
            run.a_mu_at[k], run.a_sig_at[k] = a_mu, a_sig
        for k in np.flatnonzero(lay.tc_ends == stop):
            if kept is None:
                run.t_mu_kept[k], run.t_sig_kept[k] = (t_mu, t_sig) if new is None else (t_mu[new], t_sig[new])
            else:
                run.t_mu_kept[k], run.t_sig_kept[k] = t_mu[kept], t_sig[kept]
    if new is not None:
        run.t_mu, run.t_sig = t_mu[new], t_sig[new]
        if len(t_first):
            run.t_first = t_first[new]
    return run


ORDER_STATE_BUDGET = 128 << 20
"""Bytes of order state (each player's rating, snapshots and history, and its ordered copy of the matches) the
pool's orders may hold at once.

At least one order plays beside the first whatever its size; on 2 cores a benchmark of 2 million test
cases played once each (28 bytes a test case and 10-16 a match: ~85 MB an order) then plays one, where
two would add their state to the peak (issue 25). Orders give the same bits whatever the number playing
at once."""


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

    def __init__(self, o: _Ordered, ends, n_a: int, n_t: int, pool):
        self.measurer = OrderReliability(o.agent, o.test_case, o.score, n_a, n_t)
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
        sample = self.measurer.sample
        with np.errstate(invalid="ignore", divide="ignore"):
            t_mean = self.t_sum / self.t_count if sample is None else self.t_sum[sample] / self.t_count[sample]
            args = (a_mu.copy(), t_mu.copy(), self.a_sum / self.a_count, t_mean, self.a_count.copy())
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

    def play(self, reverse: bool, layout: _Layout) -> _Run:
        with self.lock:
            if self.copy is None:
                self.copies.acquire()
                self.copy = relabeled(_ordered(self.m, self.pair, self.score_dtype, False), self.m.n_test_cases)
            o = self.copy
        try:
            return _play(o, reverse, layout)
        finally:
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.copy = None
                    self.copies.release()


def run_orders(
    m: Matches,
    pairs,
    ends,
    tc_ends,
    init_mu: float,
    init_sigma: float,
    with_reliability: bool,
    workers: int,
    then=None,
    agent_ends=None,
):
    """Play every order (in parallel threads), the first with its reliability (measured at ``ends``; the agents'
    snapshots are kept at ``agent_ends``, by default the same).

    The first order runs on the calling thread; the pool takes the others, a pair's two
    orders side by side on one shared copy, and the reliability measurements of the first.
    ``then(moments)`` runs on the calling thread as soon as every order is done, while the last
    reliability measurements finish. Returns (the orders' :class:`OrderMoments`, reliability rows,
    measurer, what ``then`` returned).
    """
    layout = _Layout.of(m, ends, tc_ends, init_mu, init_sigma, agent_ends)
    score_dtype = _score_dtype(m.score)
    pool = ThreadPoolExecutor(workers) if workers > 1 else _Inline()
    try:
        first = _ordered(m, pairs[0], score_dtype, with_reliability)
        moments = OrderMoments()
        tasks = []
        if pairs[0].with_reverse:
            tasks.append(lambda: _play(first, True, layout))
        copies = threading.BoundedSemaphore(max(2, workers))
        for pair in pairs[1:]:
            shared = _SharedCopy(m, pair, score_dtype, copies)
            tasks.append(lambda shared=shared: shared.play(False, layout))
            if pair.with_reverse:
                tasks.append(lambda shared=shared: shared.play(True, layout))
        # players take the orders strictly in sequence, so that no finished order waits long for an earlier one
        copy_bytes = len(m) * sum(np.dtype(t).itemsize for t in (first.agent.dtype, first.test_case.dtype, score_dtype))
        playing = max(1, min(workers, ORDER_STATE_BUDGET // max(1, layout.state_bytes() + copy_bytes)))
        queue, taking = iter(enumerate(tasks, start=1)), threading.Lock()

        def player():
            while True:
                with taking:
                    item = next(queue, None)
                if item is None:
                    return
                moments.put(item[0], item[1]())

        futures = [pool.submit(player) for _ in range(playing)]
        # where memory holds the players back, the first order's reliability is measured as it plays, on this
        # thread (which would otherwise wait for the players): no measurement queues copies of the ratings
        measuring = pool if playing == workers else _Inline()
        rel = _FirstOrderReliability(first, ends, m.n_agents, m.n_test_cases, measuring) if with_reliability else None
        first_run = _play(first, False, layout, on_segment=rel)
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
    orders: int,
    row_order: bool = False,
    workers: int | None = None,
    init_mu=1500.0,
    init_sigma=350.0,
):
    """(μ, mixture σ) of agents and test cases over ``orders`` match orders: :func:`rate` without tables, snapshots or reliability.

    Players without a match keep their starting rating.
    """
    check_start(init_mu, init_sigma)
    workers = default_workers() if workers is None else int(workers)
    end = np.array([len(m)], dtype=np.int64)
    moments, _, _, _ = run_orders(
        m, _pairs(len(m), seed, row_order, orders), end, end, float(init_mu), float(init_sigma), False, workers
    )
    return moments.mean("a_mu"), moments.sigma("a_mu", "a_sig"), moments.mean("t_mu"), moments.sigma("t_mu", "t_sig")
