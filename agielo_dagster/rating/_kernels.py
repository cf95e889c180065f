"""Compiled loops of the engine (numba, ``nogil``: safe to run in parallel Python threads).

Nothing here allocates per match in Python or keeps global state; random numbers come
from explicitly seeded generators passed in.
"""

from __future__ import annotations

import math

import numba
import numpy as np

Q = math.log(10.0) / 400.0


@numba.njit(cache=True, nogil=True, error_model="numpy")
def g1(sigma):
    """Glicko's g(σ) of one rating deviation (written as in earlier versions: the same bits)."""
    return 1.0 / math.sqrt(1.0 + 3.0 * Q * Q * sigma * sigma / (math.pi * math.pi))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def match_update(mu_a, sig_a, mu_t, sig_t, s):
    """One AGI-Elo match: both players updated from their pre-match values (Glicko-1, one-game period)."""
    g_t = g1(sig_t)
    g_a = g1(sig_a)
    e_a = 1.0 / (1.0 + 10.0 ** (-g_t * (mu_a - mu_t) / 400.0))
    e_t = 1.0 / (1.0 + 10.0 ** (-g_a * (mu_t - mu_a) / 400.0))
    var_a = 1.0 / (1.0 / (sig_a * sig_a) + Q * Q * g_t * g_t * e_a * (1.0 - e_a))
    var_t = 1.0 / (1.0 / (sig_t * sig_t) + Q * Q * g_a * g_a * e_t * (1.0 - e_t))
    return (
        mu_a + Q * var_a * g_t * (s - e_a),
        math.sqrt(var_a),
        mu_t + Q * var_t * g_a * ((1.0 - s) - e_t),
        math.sqrt(var_t),
    )


@numba.njit(cache=True, nogil=True, error_model="numpy")
def run_segment(agent, test_case, score, done, stop, reverse, a_mu, a_sig, t_mu, t_sig, t_played, rec_slot, rec_mu, rec_sig):
    """Play matches ``done:stop`` of an order, updating the state in place.

    The arrays hold the matches in processing order; with ``reverse`` the order is read
    backwards (match k is row ``n − 1 − k``), which is the antithetic twin of the forward order.
    Each test case's state after its match 1, 2, 4, 8, … is recorded: ``rec_mu[l, rec_slot[t]]``,
    ``rec_sig[l, rec_slot[t]]`` after match 2^l (levels ``l < rec_mu.shape[0]``, none with an empty
    array; none for a test case whose slot is −1); ``t_played`` counts each test case's matches so far.
    """
    n = len(agent)
    levels = rec_mu.shape[0]
    for k in range(done, stop):
        i = n - 1 - k if reverse else k
        a = agent[i]
        t = test_case[i]
        mu_a, sig_a, mu_t, sig_t = match_update(a_mu[a], a_sig[a], t_mu[t], t_sig[t], score[i])
        a_mu[a] = mu_a
        a_sig[a] = sig_a
        t_mu[t] = mu_t
        t_sig[t] = sig_t
        c = t_played[t] + 1
        t_played[t] = c
        if c & (c - 1) == 0:
            level = 0
            while (1 << level) < c:
                level += 1
            if level < levels and rec_slot[t] >= 0:
                rec_mu[level, rec_slot[t]] = mu_t
                rec_sig[level, rec_slot[t]] = sig_t


@numba.njit(cache=True, nogil=True)
def relabel_by_first_match(test_case, n_test_cases):
    """Recode ``test_case`` in place so that test cases are numbered in the order of their first match; returns
    ``new_of_old`` (test cases never played come last). An order's matches then read and write the test cases' state
    nearly in sequence instead of at random (one match each: exactly in sequence)."""
    new_of_old = np.full(n_test_cases, -1, dtype=np.int32)
    k = 0
    for i in range(len(test_case)):
        t = test_case[i]
        c = new_of_old[t]
        if c < 0:
            c = k
            new_of_old[t] = k
            k += 1
        test_case[i] = c
    for t in range(n_test_cases):
        if new_of_old[t] < 0:
            new_of_old[t] = k
            k += 1
    return new_of_old


@numba.njit(cache=True, nogil=True)
def first_positions(test_case, reverse, out):
    """Each test case's first match's position in the order (``out`` starts at the number of matches)."""
    n = len(test_case)
    for k in range(n):
        t = test_case[n - 1 - k if reverse else k]
        if k < out[t]:
            out[t] = k


@numba.njit(cache=True, nogil=True)
def running_sums(agent, test_case, metric, done, stop, a_count, a_sum, t_count, t_sum):
    for i in range(done, stop):
        a_count[agent[i]] += 1
        a_sum[agent[i]] += metric[i]
        t_count[test_case[i]] += 1
        t_sum[test_case[i]] += metric[i]


@numba.njit(cache=True, nogil=True)
def exact_in_float32(x):
    """Whether every value survives a round trip through float32."""
    for i in range(len(x)):
        if np.float64(np.float32(x[i])) != x[i]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def gather(order, agent, test_case, score, out_agent, out_test_case, out_score):
    """The matches taken in ``order`` (one pass of random reads, sequential writes)."""
    for i in range(len(order)):
        j = order[i]
        out_agent[i] = agent[j]
        out_test_case[i] = test_case[j]
        out_score[i] = score[j]


@numba.njit(cache=True, nogil=True)
def gather_values(order, values, out):
    for i in range(len(order)):
        out[i] = values[order[i]]


@numba.njit(cache=True, nogil=True)
def _splitmix(x):
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    z = x
    z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def _uniform(key, i):
    """A uniform double in [0, 1) from a 64-bit key and a counter (SplitMix64; no hidden state)."""
    return float(_splitmix(key ^ _splitmix(np.uint64(i))) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True)
def shuffled_copy(key, n_buckets, agent, test_case, score, metric, out_agent, out_test_case, out_score, out_metric):
    """A uniformly random permutation of the matches, written straight into the output arrays.

    Each match draws a bucket (a uniform key's leading part), is scattered into its bucket in
    one sequential pass, and each bucket is then shuffled in cache (Fisher-Yates): sorting by
    iid uniform keys, so every order is equally likely. Cache-friendly where a plain
    Fisher-Yates over 10⁸ matches is bound by memory latency. ``metric`` and ``out_metric``
    may be empty (then no metric is carried).
    """
    n = len(agent)
    carry = len(out_metric) > 0
    start = np.zeros(n_buckets + 1, dtype=np.int64)
    for i in range(n):
        start[int(_uniform(key, i) * n_buckets) + 1] += 1
    for b in range(n_buckets):
        start[b + 1] += start[b]
    fill = start[:-1].copy()
    for i in range(n):
        b = int(_uniform(key, i) * n_buckets)
        p = fill[b]
        fill[b] = p + 1
        out_agent[p] = agent[i]
        out_test_case[p] = test_case[i]
        out_score[p] = score[i]
        if carry:
            out_metric[p] = metric[i]
    key2 = _splitmix(key ^ np.uint64(0x5851F42D4C957F2D))
    for b in range(n_buckets):
        lo = start[b]
        for j in range(start[b + 1] - 1, lo, -1):
            r = lo + int(_uniform(key2, j) * (j - lo + 1))
            out_agent[j], out_agent[r] = out_agent[r], out_agent[j]
            out_test_case[j], out_test_case[r] = out_test_case[r], out_test_case[j]
            out_score[j], out_score[r] = out_score[r], out_score[j]
            if carry:
                out_metric[j], out_metric[r] = out_metric[r], out_metric[j]


@numba.njit(cache=True, nogil=True)
def group_by(codes, n_groups, values_a, values_b, out_a, out_b):
    """Stable counting sort of rows by ``codes``: ``out_*`` hold the rows group by group, in row order.

    Returns the group starts (length ``n_groups + 1``).
    """
    start = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(len(codes)):
        start[codes[i] + 1] += 1
    for c in range(n_groups):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    for i in range(len(codes)):
        c = codes[i]
        p = fill[c]
        fill[c] = p + 1
        out_a[p] = values_a[i]
        out_b[p] = values_b[i]
    return start


_BIN_CHUNK = 2048  # matches binned at a time: the bins of a chunk are computed first, in loops that vectorize


@numba.njit(cache=True, nogil=True, error_model="numpy")
def binned_errors_by_agent(start, played, csr_test_case, csr_score, a_mu, t_mu, bin_lo, bin_width, n_bins):
    """The authors' binned calibration over each agent's first ``played[a]`` matches.

    ``csr_*`` hold each agent's matches in processing order (rows ``start[a]:start[a+1]``).
    Bins of d = μ_a − μ_t are left-closed, ``bin_lo + bin_width·b``. Each (agent, bin) compares
    the mean score with 1/(1 + 10^(−d̄/400)). Returns (weight: the matches in bins, Σ count·|err|,
    Σ count·err², matches outside the bins), summed over (agent, bin) in order, with the
    arithmetic of earlier versions (the same bits).

    Each chunk of matches is binned first and accumulated second: the binning has no
    dependency between matches, and the accumulation no division, about 4× faster than one
    loop. The test cases' ratings are gathered into the chunk before they are binned: the
    compiler does not vectorize a loop that gathers (gathers are slow on some x86 cores), and
    the binning itself is written without branches (clamped, then selected) so that it does.
    """
    span = bin_width * n_bins
    last = np.float64(n_bins)
    count = np.zeros(n_bins + 1)  # bin n_bins: outside
    ssum = np.zeros(n_bins + 1)
    dsum = np.zeros(n_bins + 1)
    chunk_bin = np.empty(_BIN_CHUNK, dtype=np.int32)
    chunk_d = np.empty(_BIN_CHUNK)
    w = 0.0
    abs_err = 0.0
    sq_err = 0.0
    outside = 0
    for a in range(len(played)):
        count[:] = 0.0
        ssum[:] = 0.0
        dsum[:] = 0.0
        mu_a = a_mu[a]
        end = start[a] + played[a]
        for c0 in range(start[a], end, _BIN_CHUNK):
            size = min(_BIN_CHUNK, end - c0)
            for i in range(size):
                chunk_d[i] = t_mu[csr_test_case[c0 + i]]
            for i in range(size):
                d = mu_a - chunk_d[i]
                x = d - bin_lo
                q = x / bin_width
                q = q if q > 0.0 else 0.0
                q = q if q < last else last  # a quotient rounded up to n_bins is outside, as it always was
                inside = (x >= 0.0) & (x < span)
                chunk_bin[i] = np.int32(q) if inside else np.int32(n_bins)  # q >= 0: truncation is floor
                chunk_d[i] = d
            for i in range(size):
                b = chunk_bin[i]
                count[b] += 1.0
                ssum[b] += csr_score[c0 + i]
                dsum[b] += chunk_d[i]
        outside += int(count[n_bins])
        for b in range(n_bins):
            c = count[b]
            if c > 0:
                err = 1.0 / (1.0 + 10.0 ** (-(dsum[b] / c) / 400.0)) - ssum[b] / c
                w += c
                abs_err += c * abs(err)
                sq_err += c * err * err
    return w, abs_err, sq_err, outside


@numba.njit(cache=True, nogil=True)
def pearson(x, y):
    n = len(x)
    mx = x.sum() / n
    my = y.sum() / n
    sxx = 0.0
    syy = 0.0
    sxy = 0.0
    for i in range(n):
        dx = x[i] - mx
        dy = y[i] - my
        sxx += dx * dx
        syy += dy * dy
        sxy += dx * dy
    if sxx == 0.0 or syy == 0.0:
        return np.nan
    return sxy / np.sqrt(sxx * syy)


_INSERTION_RUN = 32  # runs of keys sharing their sorted bits up to this long settle by insertion
_SORT_BITS = 32  # the leading bits a key is radix-sorted by; closer values are ordered by the settling pass


@numba.njit(cache=True, nogil=True)
def _sorted_keys(xs, bits):
    """Keys of ``xs`` (order-preserving bit pattern on top, position in the low ``bits``), sorted by their top 32 bits.

    A stable LSD radix sort (11-bit digits, three passes, fewer when a digit is the same for
    every key) that releases the GIL, unlike numpy's sort, so that snapshots rank in parallel.
    """
    n = len(xs)
    bits_of_x = (xs + 0.0).view(np.uint64)  # −0.0 + 0.0 is +0.0: the two zeros tie, as they compare equal
    sign = np.uint64(1) << np.uint64(63)
    keys = np.empty(n, dtype=np.uint64)
    for i in range(n):
        v = bits_of_x[i]
        k = ~v if v & sign else v | sign
        keys[i] = ((k >> bits) << bits) | np.uint64(i)
    buf = np.empty(n, dtype=np.uint64)
    hist = np.zeros(2048, dtype=np.int64)
    shift = 64 - _SORT_BITS
    while shift < 64:
        width = min(11, 64 - shift)
        mask = np.uint64((1 << width) - 1)
        hist[:] = 0
        for i in range(n):
            hist[np.int64((keys[i] >> np.uint64(shift)) & mask)] += 1
        if hist.max() < n:
            total = 0
            for d in range(1 << width):
                c = hist[d]
                hist[d] = total
                total += c
            for i in range(n):
                d = np.int64((keys[i] >> np.uint64(shift)) & mask)
                buf[hist[d]] = keys[i]
                hist[d] += 1
            keys, buf = buf, keys
        shift += width
    return keys


_FEW_VALUES = 256  # up to this many distinct values, ranks come from counting them (binary metrics' means have ~20)
_FEW_SLOTS = 1024  # the open-addressing table of those values: a power of two, four times as many
_FEW_SHIFT = 54  # 64 − log2(_FEW_SLOTS): the top bits of a multiplicative hash


@numba.njit(cache=True, nogil=True)
def _ranks_of_few_values(xs, ranks):
    """Fill ``ranks`` with the average ranks of ``xs`` if it holds at most ``_FEW_VALUES`` distinct values.

    Returns False, with ``ranks`` unfinished, as soon as a value beyond that many turns up.
    Ranks are whole or half numbers, exact in float64, so they equal the sorting path's bit for bit.
    """
    n = len(xs)
    bits_of_x = (xs + 0.0).view(np.uint64)  # the two zeros tie, as they compare equal
    slot_bits = np.empty(_FEW_SLOTS, dtype=np.uint64)
    slot_value = np.full(_FEW_SLOTS, -1, dtype=np.int64)
    values = np.empty(_FEW_VALUES)
    which = np.empty(n, dtype=np.int32)
    k = 0
    for i in range(n):
        v = bits_of_x[i]
        h = np.int64((v * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(_FEW_SHIFT))
        while slot_value[h] >= 0 and slot_bits[h] != v:
            h = (h + 1) & (_FEW_SLOTS - 1)
        if slot_value[h] < 0:
            if k == _FEW_VALUES:
                return False
            slot_bits[h] = v
            slot_value[h] = k
            values[k] = xs[i] + 0.0
            k += 1
        which[i] = slot_value[h]
    count = np.zeros(k, dtype=np.int64)
    for i in range(n):
        count[which[i]] += 1
    rank_of = np.empty(k)
    below = 0
    for d in np.argsort(values[:k]):
        rank_of[d] = below + 0.5 * (count[d] - 1) + 1.0
        below += count[d]
    for i in range(n):
        ranks[i] = rank_of[which[i]]
    return True


@numba.njit(cache=True, nogil=True)
def _ranks(xs):
    """Average ranks (ties share their mean) of ``xs``; float64 without NaN."""
    n = len(xs)
    ranks = np.empty(n)
    if _ranks_of_few_values(xs, ranks):
        return ranks
    bits = np.uint64(1)
    while (np.uint64(1) << bits) < np.uint64(n):
        bits += np.uint64(1)
    keys = _sorted_keys(xs, bits)
    mask = (np.uint64(1) << bits) - np.uint64(1)
    top_shift = np.uint64(64 - _SORT_BITS)
    run = np.empty(n, dtype=np.int64)
    i = 0
    while i < n:
        top = keys[i] >> top_shift
        j = i
        while j + 1 < n and (keys[j + 1] >> top_shift) == top:
            j += 1
        if j == i:
            ranks[np.int64(keys[i] & mask)] = i + 1.0
            i += 1
            continue
        # keys that share their sorted bits: exact order by the full value, then ties
        m = j - i + 1
        for q in range(m):
            run[q] = np.int64(keys[i + q] & mask)
        if m > _INSERTION_RUN:
            # a long run (values within 1e-6 of each other in relative terms: a wide benchmark's test cases
            # rated after one match each, millions of them): a merge sort, never an insertion sort's m²
            within = run[:m].copy()
            run[:m] = within[np.argsort(xs[within], kind="mergesort")]
        else:
            for q in range(1, m):
                v = run[q]
                r = q - 1
                while r >= 0 and xs[run[r]] > xs[v]:
                    run[r + 1] = run[r]
                    r -= 1
                run[r + 1] = v
        q = 0
        while q < m:
            e = q
            while e + 1 < m and xs[run[e + 1]] == xs[run[q]]:
                e += 1
            rank = i + 0.5 * (q + e) + 1.0
            for z in range(q, e + 1):
                ranks[run[z]] = rank
            q = e + 1
        i = j + 1
    return ranks


@numba.njit(cache=True, nogil=True)
def _spearman_played(rating, mean_metric):
    idx = np.flatnonzero(~np.isnan(mean_metric))
    if len(idx) < 2:
        return np.nan
    x = np.empty(len(idx))
    y = np.empty(len(idx))
    for i in range(len(idx)):
        x[i] = rating[idx[i]]
        y[i] = mean_metric[idx[i]]
    return pearson(_ranks(x), _ranks(y))


_COMPILED_RANKS_FROM = 4096  # players; fewer are ranked by numpy's sort, and the ranking kernels are never compiled


def average_ranks(xs: np.ndarray) -> np.ndarray:
    """``_ranks`` by numpy's stable sort: the same exact ranks, without compiling the kernels (~8 CPU-s on first use)."""
    order = np.argsort(xs, kind="stable")
    ordered = xs[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))  # −0.0 and 0.0 compare equal: a tie
    ends = np.append(starts[1:], len(xs)) - 1
    ranks = np.empty(len(xs))
    ranks[order] = np.repeat(0.5 * (starts + ends) + 1.0, ends - starts + 1)
    return ranks


def spearman_played(rating: np.ndarray, mean_metric: np.ndarray) -> float:
    """Spearman ρ (average ranks for ties) over the players that have played (mean not NaN).

    Small inputs rank with numpy (a fresh install's demo then compiles none of the ranking kernels); both paths give
    the same ranks, exact half-integers, and the same compiled Pearson, so the same bits."""
    rating, mean_metric = np.asarray(rating, dtype=np.float64), np.asarray(mean_metric, dtype=np.float64)
    if len(mean_metric) >= _COMPILED_RANKS_FROM:
        return float(_spearman_played(rating, mean_metric))
    played = ~np.isnan(mean_metric)
    if played.sum() < 2:
        return np.nan
    return float(pearson(average_ranks(rating[played]), average_ranks(mean_metric[played])))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def sandwich_sums(agent, test_case, score, a_mu, a_sig, t_mu, t_sig, n_agents):
    """Per agent: Σ g²(S − E)²/(1 − h)² and Σ g²E(1 − E) over its matches, at the given ratings.

    E = 1/(1 + 10^(−g(σ_t)(μ_a − μ_t)/400)); h = q²σ_t²g(σ_a)²E(1 − E) is the share of the
    test case's information that came from this very match (its rating absorbed the result),
    so (S − E)/(1 − h) is the residual the agent would see against the test case rated without it.
    """
    g_t = np.empty(len(t_sig))
    for t in range(len(t_sig)):
        g_t[t] = g1(t_sig[t])
    lev_a = np.empty(len(a_sig))  # q²g(σ_a)²
    for a in range(len(a_sig)):
        ga = g1(a_sig[a])
        lev_a[a] = Q * Q * ga * ga
    num = np.zeros(n_agents)
    info = np.zeros(n_agents)
    for i in range(len(agent)):
        a = agent[i]
        t = test_case[i]
        gt = g_t[t]
        e = 1.0 / (1.0 + math.exp(-gt * (a_mu[a] - t_mu[t]) * Q))
        v = e * (1.0 - e)
        h = min(lev_a[a] * t_sig[t] * t_sig[t] * v, 0.5)
        r = gt * (score[i] - e) / (1.0 - h)
        num[a] += r * r
        info[a] += gt * gt * v
    return num, info


@numba.njit(cache=True, nogil=True)
def summaries(agent, test_case, score, metric, n_agents, n_test_cases):
    """Per agent and per test case: matches, Σ score, Σ metric (one pass)."""
    a_n = np.zeros(n_agents, dtype=np.int64)
    a_s = np.zeros(n_agents)
    a_m = np.zeros(n_agents)
    t_n = np.zeros(n_test_cases, dtype=np.int64)
    t_s = np.zeros(n_test_cases)
    t_m = np.zeros(n_test_cases)
    for i in range(len(agent)):
        a = agent[i]
        t = test_case[i]
        a_n[a] += 1
        a_s[a] += score[i]
        a_m[a] += metric[i]
        t_n[t] += 1
        t_s[t] += score[i]
        t_m[t] += metric[i]
    return a_n, a_s, a_m, t_n, t_s, t_m


@numba.njit(cache=True, nogil=True)
def agent_components(agent, test_case, n_agents, n_test_cases):
    """Connected components of the bipartite match graph, found by union-find over agents.

    Returns (root of each agent, first agent met by each test case).
    """
    parent = np.arange(n_agents)
    first = np.full(n_test_cases, -1, dtype=np.int64)
    for i in range(len(agent)):
        a = agent[i]
        t = test_case[i]
        f = first[t]
        if f < 0:
            first[t] = a
            continue
        # find roots with path halving
        x = a
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        y = f
        while parent[y] != y:
            parent[y] = parent[parent[y]]
            y = parent[y]
        if x != y:
            if x < y:
                parent[y] = x
            else:
                parent[x] = y
    for a in range(n_agents):
        x = a
        while parent[x] != x:
            x = parent[x]
        parent[a] = x
    return parent, first


@numba.njit(cache=True, nogil=True, error_model="numpy")
def replay_agent(slot, test_case, score, played, level_mu, level_prec, final_mu, final_prec, init_mu, init_sigma):
    """One new agent's Glicko pass against test cases frozen along their rating histories.

    The matches are given in the order the agent plays them; ``slot[k]`` is how many of its
    ``played[t]`` matches the test case had played when the agent met it. The test case's state
    after j matches is known at j = 0 (the start), 1, 2, 4, 8, … (``level_*``, the mean over
    orders and the precision 1/σ² of the mixture) and at j = ``played`` (its final rating);
    between those points μ and 1/σ² are interpolated linearly in j.
    """
    mu = init_mu
    sig = init_sigma
    levels = level_mu.shape[0]
    init_prec = 1.0 / (init_sigma * init_sigma)
    for k in range(len(slot)):
        t = test_case[k]
        j = slot[k]
        n_t = played[t]
        if j <= 0:
            m, p = init_mu, init_prec
        elif j >= n_t:
            m, p = final_mu[t], final_prec[t]
        else:
            level = 0
            while (2 << level) <= j:
                level += 1
            if level >= levels:  # beyond the recorded levels: between the last one and the final rating
                level = levels - 1
            j0 = 1 << level
            m0, p0 = level_mu[level, t], level_prec[level, t]
            j1 = 2 * j0
            if level + 1 < levels and j1 < n_t:
                m1, p1 = level_mu[level + 1, t], level_prec[level + 1, t]
            else:
                j1 = n_t
                m1, p1 = final_mu[t], final_prec[t]
            w = (j - j0) / (j1 - j0)
            m = (1.0 - w) * m0 + w * m1
            p = (1.0 - w) * p0 + w * p1
        mu, sig, _, _ = match_update(mu, sig, m, 1.0 / math.sqrt(p), score[k])
    return mu, sig


@numba.njit(cache=True, nogil=True)
def add_snapshot_moments(slot, kept_mu, kept_sig, t_first, t_mu, t_sig, end, init_mu, init_sigma, first, s, ss, sig_sq):
    """Add one order's test-case snapshot at ``end`` to the moments over the orders, in one pass.

    A test case with a ``slot`` has its recorded snapshot (``kept_mu[slot]``); any other is at its final rating
    once its one match (at ``t_first``) is played and at its start before. Each element takes the very steps of
    the array form: x = μ − first; s += x; ss += x·x; sig_sq += σ·σ (the temporaries of ten passes over 80 MB
    arrays at 10M test cases, for each snapshot of each order, were most of a wide benchmark's moments)."""
    for i in range(len(slot)):
        j = slot[i]
        if j >= 0:
            mu, sig = kept_mu[j], kept_sig[j]
        elif t_first[i] < end:
            mu, sig = t_mu[i], t_sig[i]
        else:
            mu, sig = init_mu, init_sigma
        x = mu - first[i]
        s[i] += x
        ss[i] += x * x
        sig_sq[i] += sig * sig


@numba.njit(cache=True, nogil=True)
def result_keys(agent, test_case, score_bits, keys):
    """Per agent (row of ``keys``): the sums of a mixed (test case, score) pair and of its mix, and the count."""
    for i in range(len(agent)):
        pair = _splitmix(_splitmix(score_bits[i]) ^ np.uint64(test_case[i]))
        a = agent[i]
        keys[a, 0] += pair
        keys[a, 1] += _splitmix(pair)
        keys[a, 2] += np.uint64(1)
