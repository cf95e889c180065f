"""Memory a step frees goes back to the system, so that the next step starts from the process's floor.

Two allocators keep what a step frees by default, and a wide benchmark's steps free a lot (arrays of
a million test cases, tens of MB each):

- glibc raises its mmap threshold to the size of every large block freed (up to 32 MiB), so later
  arrays below that size come from the heap, where freed memory stays in the process;
- Arrow's jemalloc pool keeps freed pages for reuse.

So blocks of 128 KiB and more are always mapped (and unmapped when freed), and Arrow allocates
through the system allocator. Measured on `agielo run` of 1 agent × 1,000,000 test cases with 3
partial uploads: peak RSS 1,716 -> 1,493 MiB (issue 25). Unset where the user set
``ARROW_DEFAULT_MEMORY_POOL``; a no-op outside glibc.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MMAP_THRESHOLD", "give_back_freed_memory", "return_freed_memory", "reusing_freed_memory"]

MMAP_THRESHOLD = 128 << 10
REUSE_THRESHOLD = 32 << 20  # glibc's own ceiling for its adaptive threshold (64-bit)
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl)
        return None


def return_freed_memory() -> None:
    """Fix glibc's mmap threshold and choose Arrow's system pool (read when pyarrow first allocates)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def give_back_freed_memory() -> None:
    """Hand what the process freed so far back to the system (Arrow's pool, glibc's heap): between steps, so that a
    step starts from what is alive, not from the last one's peak."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


@contextmanager
def reusing_freed_memory() -> Iterator[None]:
    """Keep freed blocks of up to 32 MiB in the heap for reuse inside the block, then give them back.

    For many short-lived mid-sized arrays (the demo's classifiers, trained fold after fold): mapping and
    unmapping each, with the fixed threshold, cost the demo's training 8 of its 26 CPU-seconds in page
    faults and system time.
    """
    libc = _libc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, REUSE_THRESHOLD)
    try:
        yield
    finally:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.malloc_trim(0)


return_freed_memory()
