"""Untrusted files decoded in a process of their own, under hard OS limits (:mod:`.worker` is that process).

:func:`decode` hands a batch of files to a warm decoder process and gets back, for each, its table (Arrow IPC, never
pickle) or its :class:`~..contract.IngestError`. The decoder's limits are the kernel's, not predictions of what a
decoder will allocate: its writable memory (``RLIMIT_DATA``) is what it holds at a request's start plus the request's
bytes plus :func:`memory_budget`; each file may use :func:`cpu_cap` CPU seconds (``RLIMIT_CPU``, set again before each
file) and :func:`wall_cap` seconds of wall time (watched from here). A file that passes a limit, or on which the
decoder crashes or aborts (a C++ exception escaping pyarrow included), is rejected alone with rule ``decode_limit``
or ``decode_crash``; the other files of the batch are decoded again by a fresh process.

Which file was being decoded is read from a shared page the decoder writes before each file (:data:`PROGRESS`), so
a death is pinned on its file without decoding the batch again one by one.
"""

from __future__ import annotations

import atexit
import json
import math
import mmap
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..contract import (
    DECODE_CPU_SECONDS,
    DECODE_CPU_SECONDS_PER_MIB,
    DECODE_MEMORY_FLOOR,
    DECODE_WALL_FACTOR,
    PARQUET_EXPANSION,
    IngestError,
)
from .common import _cut

FRAME = struct.Struct("<Q")
PROGRESS = struct.Struct("<q")  # the file being decoded: -1 before the first, len(files) while they are checked together
STARTING = -1
START_SECONDS = 120.0  # a decoder's start and the reading of a request (imports on a busy machine take seconds)
IDLE_DECODERS = 2  # warm decoders kept per process (one per thread reading at once)
_ENVIRONMENT = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")  # what a decoder inherits: no credentials


class DecoderUnavailable(RuntimeError):
    """No decoder process could start or read a request: the environment is broken, not an upload (retry the step)."""


def memory_budget(max_bytes: int) -> int:
    """The writable memory a decoder may add to a request's bytes: :data:`PARQUET_EXPANSION` times the upload limit,
    at least :data:`DECODE_MEMORY_FLOOR`."""
    return max(PARQUET_EXPANSION * max_bytes, DECODE_MEMORY_FLOOR)


def cpu_cap(size: int, base: float = DECODE_CPU_SECONDS) -> int:
    """CPU seconds a file of ``size`` bytes may take to decode and check."""
    return math.ceil(base + DECODE_CPU_SECONDS_PER_MIB * size / (1 << 20))


def wall_cap(cpu: float) -> float:
    """Wall-clock seconds a file may take (a busy machine gives a process a fraction of a core)."""
    return DECODE_WALL_FACTOR * cpu + 10.0


def write_frame(stream, data) -> None:
    stream.write(FRAME.pack(len(data)))
    stream.write(data)


def read_exactly(stream, n: int) -> bytearray:
    """``n`` bytes from a raw stream; EOFError if it ends first."""
    out = bytearray(n)
    view, got = memoryview(out), 0
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            raise EOFError(f"the stream ended after {got} of {n} bytes")
        got += k
    return out


@dataclass(frozen=True)
class Cost:
    """What one :meth:`Decoder.decode` call cost its decoder processes: the highest peak resident memory
    (``VmHWM``; for a process that died, ``None`` where unknown) and the CPU seconds they spent."""

    peak_bytes: int | None
    cpu_seconds: float
    restarts: int


class _Died(Exception):
    def __init__(self, progress: int, status: int | None, usage, timed_out: float | None = None, answer: str = ""):
        super().__init__(progress, status)
        self.progress, self.status, self.timed_out, self.answer = progress, status, timed_out, answer
        self.cpu = usage.ru_utime + usage.ru_stime if usage else 0.0
        self.peak = usage.ru_maxrss * 1024 if usage else None  # at most: it starts at the parent's size (vfork)

    def error(self, file: str, cap: int) -> IngestError:
        if self.answer:
            return IngestError(file, "decode_crash", f"the decoder's answer for this file is not a valid table ({self.answer})")
        if self.timed_out is not None:
            return IngestError(file, "decode_limit", f"decoding took more than {self.timed_out:.0f} s; split the file")
        status = self.status or 0
        if status == -signal.SIGXCPU:
            return IngestError(file, "decode_limit", f"decoding used more than {cap} CPU seconds; split the file")
        if status == -signal.SIGKILL:
            return IngestError(file, "decode_limit", "the decoder was killed (out of memory?); split the file")
        if status < 0:
            name = signal.Signals(-status).name if -status in signal.valid_signals() else str(-status)
            return IngestError(file, "decode_crash", f"the decoder crashed ({name}) on this file; it is damaged or hostile")
        return IngestError(file, "decode_crash", f"the decoder stopped (exit status {status}) on this file")


class Decoder:
    """One decoder process, started on first use and again after it dies; not for two threads at once.

    ``cpu_seconds`` is the base of each file's CPU cap (:func:`cpu_cap`); ``last_cost`` is what the last
    :meth:`decode` call cost.
    """

    def __init__(self, *, cpu_seconds: float = DECODE_CPU_SECONDS):
        self.cpu_seconds = cpu_seconds
        self.last_cost = Cost(None, 0.0, 0)
        self._process: subprocess.Popen | None = None
        self._progress: mmap.mmap | None = None
        self._owner = os.getpid()

    def decode(self, op: str, params: dict, items: Sequence[tuple[bytes, str]], max_bytes: int) -> list:
        """Each ``(data, file)`` decoded by ``op`` (``uploads``, ``rows`` or ``tags``): its table or its IngestError."""
        outcomes: list = [None] * len(items)
        queue, peak, cpu, restarts, failures = [list(range(len(items)))], 0, 0.0, 0, 0
        while queue:
            request = queue.pop()
            if not request:
                continue
            try:
                got, request_peak, request_cpu = self._request(op, params, [items[i] for i in request], max_bytes)
            except _Died as died:
                cpu += died.cpu
                restarts += 1
                peak = None if peak is None or died.peak is None else max(peak, died.peak)
                p = died.progress
                if p == STARTING:
                    failures += 1
                    if failures > 1:
                        raise DecoderUnavailable(f"the decoder failed to start or to read a request ({died.status})") from None
                    queue.append(request)
                elif p < len(request) or len(request) == 1:
                    culprit = request[min(p, len(request) - 1)]
                    outcomes[culprit] = died.error(items[culprit][1], cpu_cap(len(items[culprit][0]), self.cpu_seconds))
                    queue.append([i for i in request if i != culprit])
                else:  # while the files were checked together, or the answer written: each alone
                    queue.extend([i] for i in reversed(request))
                continue
            peak = None if peak is None else max(peak, request_peak)
            cpu += request_cpu
            for i, outcome in zip(request, got, strict=True):
                outcomes[i] = outcome
        self.last_cost = Cost(peak, cpu, restarts)
        return outcomes

    @property
    def pid(self) -> int | None:
        """The decoder process's id while it runs (for operators and tests that watch it), else None."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def close(self) -> None:
        """Let the decoder process go (it exits when its input closes); idempotent."""
        process, self._process = self._process, None
        if process is not None and self._owner == os.getpid():
            try:
                process.stdin.close()
                process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
            process.stdout.close()

    def _started(self) -> subprocess.Popen:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self.close()
        with tempfile.TemporaryFile() as shared:  # a page of its own: an old process may still hold the last one
            shared.truncate(mmap.PAGESIZE)
            self._progress = mmap.mmap(shared.fileno(), mmap.PAGESIZE)
            self._process = self._spawn(shared.fileno())
        return self._process

    def _spawn(self, progress_fd: int) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k in _ENVIRONMENT}
        env.update(
            ARROW_DEFAULT_MEMORY_POOL="system",  # RLIMIT_DATA holds for malloc; mimalloc and jemalloc reserve ahead
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            MALLOC_ARENA_MAX="2",
            MALLOC_MMAP_THRESHOLD_="1048576",  # glibc: blocks of 1 MiB or more go back to the system when freed
            MALLOC_TRIM_THRESHOLD_="1048576",
            PYTHONDONTWRITEBYTECODE="1",
        )
        return subprocess.Popen(
            [sys.executable, "-m", "agielo_dagster.domain.readers.worker", str(progress_fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            env=env,
            pass_fds=(progress_fd,),
            close_fds=True,
        )

    def _where(self) -> int:
        return PROGRESS.unpack_from(self._progress)[0]

    def _request(self, op: str, params: dict, items: list[tuple[bytes, str]], max_bytes: int) -> tuple[list, int, float]:
        process = self._started()
        sizes = [memoryview(data).nbytes for data, _ in items]
        caps = [cpu_cap(size, self.cpu_seconds) for size in sizes]
        header = {"op": op, "params": params, "max_bytes": max_bytes, "files": [f for _, f in items], "sizes": sizes}
        header["cpu"] = caps + [cpu_cap(sum(sizes), self.cpu_seconds)]
        PROGRESS.pack_into(self._progress, 0, STARTING)
        try:
            write_frame(process.stdin, json.dumps(header).encode())
            if sum(sizes) <= 16 << 20:
                process.stdin.write(b"".join(data for data, _ in items))
            else:
                for data, _ in items:
                    process.stdin.write(data)
        except (BrokenPipeError, OSError):
            raise self._reaped(process, None) from None
        timed_out = self._watch(process, header["cpu"])
        if timed_out is not None:
            raise self._reaped(process, timed_out)
        try:
            answer = json.loads(read_exactly(process.stdout, FRAME.unpack(read_exactly(process.stdout, FRAME.size))[0]))
            limit = memory_budget(max_bytes) + sum(sizes) + (1 << 30)  # no answer is larger than what made it
            groups = []
            for size in answer["groups"]:
                if size > limit:
                    raise EOFError(f"an answer of {size:,} bytes")
                with pa.ipc.open_stream(pa.py_buffer(read_exactly(process.stdout, size))) as reader:
                    groups.append(reader.read_all())
        except (EOFError, OSError, ValueError, pa.ArrowException):
            raise self._reaped(process, None) from None
        for table in groups:
            try:
                table.validate(full=True)  # a decoder that went wrong cannot hand over an unsafe table
            except pa.ArrowException as exc:
                raise self._reaped(process, None, _cut(str(exc))) from None
        if answer.get("retire"):
            self.close()
        return [_outcome(entry, groups) for entry in answer["outcomes"]], answer["peak"], answer["cpu"]

    def _watch(self, process: subprocess.Popen, caps: list[int]) -> float | None:
        """Wait for the answer; the seconds a file was allowed, if it took longer (the process is then killed).
        ``caps``: each file's CPU cap, then that of the checks made together (and of the answer)."""
        last, since = None, time.monotonic()
        while not select.select([process.stdout], [], [], 0.25)[0]:
            where, now = self._where(), time.monotonic()
            if where != last:
                last, since = where, now
                continue
            allowed = START_SECONDS if where == STARTING else wall_cap(caps[min(where, len(caps) - 1)])
            if now - since > allowed:
                process.kill()
                return allowed
        return None

    def _reaped(self, process: subprocess.Popen, timed_out: float | None, answer: str = "") -> _Died:
        """The decoder's death, once it is reaped: where it was, how it ended, the CPU it used."""
        where = self._where()
        try:
            process.stdin.close()
        except OSError:
            pass
        try:  # (a decoder still running once its input is closed finishes its file, within its caps)
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            process.wait()
            usage = None
        process.stdout.close()
        self._process = None
        return _Died(where, process.returncode, usage, timed_out, answer)


def _outcome(entry: list, groups: list[pa.Table]) -> pa.Table | IngestError:
    if entry[0] == "t":
        _, group, offset, length = entry
        return groups[group].slice(offset, length)
    _, problems, message = entry
    errors = [IngestError(file, rule, detail, row, line) for file, rule, detail, row, line in problems]
    errors[0].args = (message,)
    errors[0].problems = tuple(errors)
    return errors[0]


_idle: list[Decoder] = []
_lock = threading.Lock()
_owner = os.getpid()


def decode(op: str, params: dict, items: Sequence[tuple[bytes, str]], max_bytes: int) -> list:
    """:meth:`Decoder.decode` on a warm decoder of this process (one per thread reading at once)."""
    global _idle, _owner
    with _lock:
        if _owner != os.getpid():  # a forked child: the decoders belong to the parent
            _idle, _owner = [], os.getpid()
        decoder = _idle.pop() if _idle else Decoder()
    try:
        return decoder.decode(op, params, items, max_bytes)
    finally:
        with _lock:
            if len(_idle) < IDLE_DECODERS and _owner == os.getpid():
                _idle.append(decoder)
            else:
                decoder.close()


@atexit.register
def _close_idle() -> None:
    with _lock:
        for decoder in _idle:
            decoder.close()
        _idle.clear()
