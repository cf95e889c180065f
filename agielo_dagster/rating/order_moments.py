"""Mean, mixture σ and spread over the orders of a rating, accumulated as the orders finish.

Its own module beside ``orders`` (which plays the orders): what the orders' arrays add up to, bit for bit in a
fixed order whatever the threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Protocol

import numpy as np

from . import _kernels as K

__all__ = ["OrderMoments", "Run"]


class Run(Protocol):
    """What the moments read of one order's run: ``orders._Run`` (not imported: ``orders`` imports this module)."""

    a_mu: np.ndarray
    t_mu: np.ndarray
    t_sig: np.ndarray
    t_mu_kept: np.ndarray
    t_sig_kept: np.ndarray
    t_first: np.ndarray
    layout: object

    def test_case_snapshots(self) -> Iterator[tuple[np.ndarray, np.ndarray]]: ...


class OrderMoments:
    """Mean, mixture σ and spread over the orders of every per-player array, accumulated as the orders finish.

    Each order's arrays are released once added, so memory does not grow with the number of
    orders (per-test-case histories and snapshots are most of it on benchmarks with many test
    cases). Orders are added in a fixed order, so sums are reproducible; with one order the
    results are that order's arrays, bit for bit. The arrays of one row per snapshot end or history
    level (``ROWS``) are kept and answered as lists of rows: an order's rows are added one at a time,
    and the tables read and drop them one at a time (a wide benchmark's test-case snapshots are
    80 MB a row and sum for 10M test cases).
    """

    PAIRS = (
        ("t_mu_at", "t_sig_at"),  # first: made from the final σ, which adding the (t_mu, t_sig) pair squares in place
        ("a_mu", "a_sig"),
        ("t_mu", "t_sig"),
        ("a_mu_at", "a_sig_at"),
        ("t_mu_after", "t_sig_after"),
    )
    ROWS = frozenset({"a_mu_at", "a_sig_at", "t_mu_at", "t_sig_at", "t_mu_after", "t_sig_after"})

    def __init__(self):
        self.k = 0
        self.first: dict[str, list] = {}
        self.sum: dict[str, list] = {}  # Σ (x − first), shifted for precision
        self.sum_sq: dict[str, list] = {}
        self.sig_sq: dict[str, list] = {}
        self.agent_mu: dict[int, np.ndarray] = {}  # per order: the intervals need each order's agent ratings
        self.lock = threading.Lock()
        self.waiting: dict[int, Run] = {}
        self.next = 1

    def agents_by_order(self) -> np.ndarray:
        """Each order's agent ratings, rows in the orders' own sequence (antithetic pairs side by side)."""
        return np.stack([self.agent_mu[i] for i in sorted(self.agent_mu)])

    def put(self, index: int, run: Run) -> None:
        """Add order ``index`` (≥ 1) from any thread; orders are added in sequence 1, 2, …, as soon as possible.

        A fixed sequence keeps the sums reproducible; adding as soon as possible keeps at most a
        few orders' arrays waiting. Order 0 (the first, with its reliability) is added last.
        """
        with self.lock:
            self.waiting[index] = run
            while self.next in self.waiting:
                self.add(self.waiting.pop(self.next), self.next)
                self.next += 1

    def add(self, run: Run, index: int = 0) -> None:
        """Take an order's arrays (kept, not copied, as the first order's: no caller writes to them again)."""
        for mu_key, sig_key in self.PAIRS:
            if mu_key == "t_mu_at" and self.k >= 1:
                self._add_test_case_snapshots(run)
                continue
            if mu_key == "t_mu_at":
                rows = run.test_case_snapshots()
            elif mu_key in self.ROWS:
                rows = zip(getattr(run, mu_key), getattr(run, sig_key), strict=True)
            else:
                rows = [(getattr(run, mu_key), getattr(run, sig_key))]
            if self.k == 0:
                self.first[mu_key], self.first[sig_key] = [], []
            elif self.k == 1:  # the sums start with the second order: one order needs none of them
                self.sum[mu_key], self.sum_sq[mu_key], self.sig_sq[mu_key] = [], [], []
            for r, (mu, sig) in enumerate(rows):
                self._add_row(mu_key, sig_key, r, mu, sig)
            if self.k == 1:
                del self.first[sig_key]  # from now on only its square is read: 8 bytes a player fewer
        self.agent_mu[index] = run.a_mu
        self.k += 1

    def _add_test_case_snapshots(self, run: Run) -> None:
        """The test cases' snapshots of a second or later order, added without making them (one pass each)."""
        lay, key = run.layout, "t_mu_at"
        if self.k == 1:
            self.sum[key], self.sum_sq[key], self.sig_sq[key] = [], [], []
        for r, end in enumerate(lay.tc_ends):
            if self.k == 1:
                self._start_sums(key, "t_sig_at", r, self.first[key][r])
            K.add_snapshot_moments(
                lay.slot,
                run.t_mu_kept[r],
                run.t_sig_kept[r],
                run.t_first,
                run.t_mu,
                run.t_sig,
                end,
                lay.init_mu,
                lay.init_sigma,
                self.first[key][r],
                self.sum[key][r],
                self.sum_sq[key][r],
                self.sig_sq[key][r],
            )
        if self.k == 1:
            del self.first["t_sig_at"]

    def _start_sums(self, mu_key: str, sig_key: str, r: int, like: np.ndarray) -> None:
        """Row ``r``'s sums at the second order: zeros, and the first order's σ squared (its σ itself is dropped)."""
        self.sum[mu_key].append(np.zeros_like(like))
        self.sum_sq[mu_key].append(np.zeros_like(like))
        first_sig = self.first[sig_key][r]
        self.first[sig_key][r] = None
        self.sig_sq[mu_key].append(first_sig * first_sig)

    def _add_row(self, mu_key: str, sig_key: str, r: int, mu: np.ndarray, sig: np.ndarray) -> None:
        if self.k == 0:
            self.first[mu_key].append(mu)
            self.first[sig_key].append(sig)
            return
        if self.k == 1:
            self._start_sums(mu_key, sig_key, r, mu)
        # one temporary at a time; σ is squared in place: no caller reads an added order's σ again (only its
        # agents' μ is kept)
        x = mu - self.first[mu_key][r]
        self.sum[mu_key][r] += x
        np.multiply(x, x, out=x)
        self.sum_sq[mu_key][r] += x
        del x
        np.multiply(sig, sig, out=sig)
        self.sig_sq[mu_key][r] += sig

    def release(self) -> None:
        """Drop the per-player sums once the tables are built (``k`` stays): the first order's reliability may
        still be measuring, and on a wide benchmark these arrays are about 240 bytes a test case."""
        for kept in (self.first, self.sum, self.sum_sq, self.sig_sq):
            kept.clear()

    def drop(self, mu_key: str, sig_key: str) -> None:
        """Drop one pair's arrays once the tables have read them (a wide benchmark's test-case snapshots are
        most of the orders' memory: 4 arrays of 8 bytes per test case and fraction)."""
        for kept in (self.first, self.sum, self.sum_sq, self.sig_sq):
            kept.pop(mu_key, None)
            kept.pop(sig_key, None)

    def _rows(self, mu_key: str, one_row):
        """``one_row(r)`` for each row of ``mu_key``: a list for the arrays of rows, else the one array."""
        rows = [one_row(r) for r in range(len(self.first[mu_key]))]
        return rows if mu_key in self.ROWS else rows[0]

    def _mean_row(self, mu_key: str, r: int) -> np.ndarray:
        """Row ``r`` of the mean μ over the orders."""
        if self.k == 1:
            return self.first[mu_key][r].copy()
        return self.first[mu_key][r] + self.sum[mu_key][r] / self.k

    def _sigma_row(self, mu_key: str, sig_key: str, r: int) -> np.ndarray:
        """Row ``r`` of the mixture's σ (:meth:`sigma`)."""
        if self.k == 1:
            return self.first[sig_key][r].copy()
        return np.sqrt(self.sig_sq[mu_key][r] / self.k + self._variance(mu_key, r))

    def mean(self, mu_key: str):
        """Mean μ over the orders."""
        return self._rows(mu_key, lambda r: self._mean_row(mu_key, r))

    def _variance(self, mu_key: str, r: int) -> np.ndarray:
        """Population variance of μ over the orders."""
        mean_shift = self.sum[mu_key][r] / self.k
        return np.maximum(self.sum_sq[mu_key][r] / self.k - mean_shift * mean_shift, 0.0)

    def sigma(self, mu_key: str, sig_key: str):
        """σ of the mixture of the orders' posteriors N(μ_k, σ_k²): √(mean σ² + population variance of μ)."""
        return self._rows(mu_key, lambda r: self._sigma_row(mu_key, sig_key, r))

    def mean_and_sigma(self, mu_key: str, sig_key: str) -> tuple[list, list]:
        """:meth:`mean` and :meth:`sigma` of a pair of rows, each row's sums dropped as soon as both are read: a
        wide benchmark's test-case snapshots never hold their sums and both results at once."""
        means, sigmas = [], []
        for r in range(len(self.first[mu_key])):
            means.append(self._mean_row(mu_key, r))
            sigmas.append(self._sigma_row(mu_key, sig_key, r))
            for kept in (self.first, self.sum, self.sum_sq, self.sig_sq):
                for key in (mu_key, sig_key):
                    if key in kept:
                        kept[key][r] = None
        self.drop(mu_key, sig_key)
        return means, sigmas

    def order_sd(self, mu_key: str):
        if self.k == 1:
            return self._rows(mu_key, lambda r: np.full(self.first[mu_key][r].shape, np.nan))
        return self._rows(mu_key, lambda r: np.sqrt(self._variance(mu_key, r) * self.k / (self.k - 1)))
