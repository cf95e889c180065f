"""The compiled loops behind :mod:`.frames`: checks and remaps over whole columns.

Kept apart from ``frames`` so that importing it (the command line, Dagster's code server, the
ingest steps) does not import numba; ``frames`` imports this module where a loop runs.
"""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def count_bad(values, lo, hi):
    bad = 0
    for i in range(len(values)):
        v = values[i]
        if not (v >= lo and v <= hi) or not np.isfinite(v):
            bad += 1
    return bad


@numba.njit(cache=True, nogil=True)
def equal(x, y):
    for i in range(len(x)):
        if x[i] != y[i]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def remap(indices, mapping):
    out = np.empty(len(indices), dtype=np.int32)
    for i in range(len(indices)):
        out[i] = mapping[indices[i]]
    return out


@numba.njit(cache=True, nogil=True)
def first_duplicate(agent, test_case, n_agents, n_test_cases, rows):
    """(first row, repeating row, number of repeated rows) of the earliest repeated (agent, test case) pair.

    ``rows`` is scratch space of one integer per match.
    """
    n = len(agent)
    start = np.zeros(n_test_cases + 1, dtype=np.int64)
    for i in range(n):
        start[test_case[i] + 1] += 1
    for t in range(n_test_cases):
        start[t + 1] += start[t]
    fill = start[:-1].copy()
    for i in range(n):  # rows grouped by test case, in row order within a group
        t = test_case[i]
        rows[fill[t]] = i
        fill[t] += 1
    seen_in = np.full(n_agents, -1, dtype=np.int64)
    seen_row = np.zeros(n_agents, dtype=np.int64)
    count = 0
    best_first, best_second = -1, n
    for t in range(n_test_cases):
        for j in range(start[t], start[t + 1]):
            r = rows[j]
            a = agent[r]
            if seen_in[a] == t:
                count += 1
                if r < best_second:
                    best_first, best_second = seen_row[a], r
            else:
                seen_in[a] = t
                seen_row[a] = r
    return best_first, best_second, count


@numba.njit(cache=True, nogil=True)
def count_repeats(agent, test_case, n_test_cases, seen):
    """Rows whose (agent, test case) bit was already set; sets the bits."""
    count = 0
    for i in range(len(agent)):
        cell = np.int64(agent[i]) * n_test_cases + test_case[i]
        word, bit = cell >> 6, np.uint64(1) << np.uint64(cell & 63)
        if seen[word] & bit:
            count += 1
        else:
            seen[word] |= bit
    return count


@numba.njit(cache=True, nogil=True)
def earliest_repeat(agent, test_case, n_test_cases, seen):
    """(first row, repeating row) of the earliest repeating row, given the bits of every pair."""
    seen[:] = 0
    second = -1
    for i in range(len(agent)):
        cell = np.int64(agent[i]) * n_test_cases + test_case[i]
        word, bit = cell >> 6, np.uint64(1) << np.uint64(cell & 63)
        if seen[word] & bit:
            second = i
            break
        seen[word] |= bit
    for i in range(second):
        if agent[i] == agent[second] and test_case[i] == test_case[second]:
            return i, second
    return -1, second
