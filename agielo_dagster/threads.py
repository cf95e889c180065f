"""Fair to a busy machine: thread pools that sleep when idle, and BLAS that does not fan out.

Idle OpenMP and OpenBLAS threads spin for a while after each parallel region, waiting for the next
one. On a machine shared with other work (a CI runner, a Celery worker host, a laptop) that spinning
is CPU taken from the neighbours, and it grows with the load: the demo beside 3 busy processes used
55 CPU-s instead of 32. The pipeline's own parallelism is the engine's order threads (sized by
``usable_cores``) and Dagster's executors; the BLAS calls it makes are small. So, unless the user set
them: OpenMP spins briefly before it sleeps, OpenBLAS spins as little as it can, and BLAS runs on one thread.

OpenMP's wait is a short spin, not ``OMP_WAIT_POLICY=PASSIVE``: a passive wait puts every thread to
sleep after each of the many small parallel regions, and waking them costs more than it saves (the
demo, idle: 41 s and 41 CPU-s passive, 28 s and 32 CPU-s with a 10,000-iteration spin; beside 3
busy processes the short spin used 36 CPU-s, `benchmarks/busy.py`).

The variables are read when a library loads, so :func:`quiet_thread_pools` runs before numpy is
imported: first thing in the command line and in the code location (``definitions.py``).
:func:`one_blas_thread` covers a process that loaded numpy before calling the pipeline.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

__all__ = ["THREAD_ENVIRONMENT", "one_blas_thread", "quiet_thread_pools"]

THREAD_ENVIRONMENT = {
    "GOMP_SPINCOUNT": "10000",  # libgomp (scikit-learn's, numba's OpenMP): spin ~10 µs, then sleep (default 300,000)
    "OPENBLAS_THREAD_TIMEOUT": "4",  # OpenBLAS: the shortest spin it allows (2^4 cycles)
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "BLIS_NUM_THREADS": "1",
}


def quiet_thread_pools() -> None:
    """Set :data:`THREAD_ENVIRONMENT` where the user has not set the variable (child processes inherit it)."""
    for name, value in THREAD_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


@contextmanager
def one_blas_thread():
    """BLAS limited to one thread while the block runs, also where numpy was loaded before the environment was set."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(os.environ.get("OPENBLAS_NUM_THREADS", "1") or 1), user_api="blas"):
        yield


# importing this module sets the environment: the entry points import it before anything loads numpy
quiet_thread_pools()
