"""The decoder process (readers.isolation, readers.worker): a file on which it dies, or that passes a limit, is
rejected alone with its rule; the other files of the batch get the outcomes they get in the caller's own process;
the process holds no credentials and runs under its limits."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from agielo_dagster.domain.contract import IngestError, parse_benchmark_spec
from agielo_dagster.domain.readers import DecoderUnavailable, read_uploads
from agielo_dagster.domain.readers.isolation import Decoder, cpu_cap, memory_budget, wall_cap
from agielo_dagster.domain.readers.upload import _read_uploads
from benchmarks.forged_parquet import one_region

SPEC = parse_benchmark_spec("metric: correct\nscoring: identity\n", "b", "raw/b/benchmark.yaml")
PARAMS = {"name": "b", "metric": "correct", "scoring": {"class": "agielo_dagster.rating.scoring.identity:Identity", "params": {}}}
CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad" / "uploads"
GOOD = [(f"test_case_id,correct\na,1\nb,{i % 2}\n".encode(), f"raw/b/good_{i}.csv") for i in range(4)]


def rules(outcomes) -> list:
    return [o.num_rows if isinstance(o, pa.Table) else o.rule for o in outcomes]


@pytest.fixture
def decoder():
    decoder = Decoder(cpu_seconds=60)
    decoder.decode("uploads", PARAMS, GOOD[:1], 64 << 20)  # started and warm
    yield decoder
    decoder.close()


@pytest.mark.parametrize(
    ("signal_number", "rule"),
    [(signal.SIGABRT, "decode_crash"), (signal.SIGSEGV, "decode_crash"), (signal.SIGKILL, "decode_limit")],
)
def test_a_decoder_that_dies_on_a_file_rejects_that_file_alone(decoder, signal_number, rule):
    """pyarrow's C++ aborting (SIGABRT), a crash (SIGSEGV) and the kernel's out-of-memory killer (SIGKILL) as the
    decoder meets them: sent while it reads the second file of a batch."""
    items = [GOOD[0], (one_region(200), "raw/b/slow.parquet"), GOOD[1], GOOD[2]]
    pid = decoder.pid
    timer = threading.Timer(1.5, os.kill, (pid, signal_number))
    timer.start()
    try:
        outcomes = decoder.decode("uploads", PARAMS, items, 64 << 20)
    finally:
        timer.cancel()
    assert rules(outcomes) == [2, rule, 2, 2]
    assert str(outcomes[1]).startswith("raw/b/slow.parquet: ")
    assert decoder.last_cost.restarts == 1 and decoder.pid not in (None, pid)


@pytest.mark.slow  # (the wall cap is 16 s at the smallest CPU cap; the quick pass keeps the CPU cap's test)
def test_a_decoder_that_stops_moving_is_killed_at_the_wall_cap():
    decoder = Decoder(cpu_seconds=1)
    try:
        decoder.decode("uploads", PARAMS, GOOD[:1], 64 << 20)
        items = [(one_region(200), "raw/b/slow.parquet"), GOOD[1]]
        timer = threading.Timer(0.5, os.kill, (decoder.pid, signal.SIGSTOP))
        timer.start()
        outcomes = decoder.decode("uploads", PARAMS, items, 64 << 20)
        allowed = wall_cap(cpu_cap(len(items[0][0]), 1))
        assert rules(outcomes) == ["decode_limit", 2]
        assert f"took more than {allowed:.0f} s" in str(outcomes[0])
    finally:
        decoder.close()


def test_the_decoder_holds_no_credentials_and_runs_under_its_limits(decoder, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "planted-secret-45")
    fresh = Decoder()
    try:
        fresh.decode("rows", {}, GOOD[:1], 64 << 20)
        environ = Path(f"/proc/{fresh.pid}/environ").read_bytes()
        limits = {
            line[:26].strip(): line[26:].split()[:2] for line in Path(f"/proc/{fresh.pid}/limits").read_text().splitlines()[1:]
        }
    finally:
        fresh.close()
    assert b"planted-secret-45" not in environ and b"AWS_" not in environ
    assert limits["Max core file size"] == ["0", "0"] and limits["Max file size"] == ["0", "0"]
    assert limits["Max open files"] == ["64", "64"]
    data = int(limits["Max data size"][0])  # set for the last request: what it held, its bytes and the budget
    assert memory_budget(64 << 20) < data < memory_budget(64 << 20) + (1 << 30)
    assert limits["Max cpu time"][0] != "unlimited"


def test_tables_and_errors_cross_the_process_boundary_unchanged():
    """The corpus among good uploads: the decoder's outcomes are those of the readers in the caller's process."""
    items = [*GOOD, *((p.read_bytes(), f"raw/b/{p.name}") for p in sorted(CORPUS.iterdir())), *GOOD]
    isolated = read_uploads(items, SPEC, max_bytes=64 << 10)
    here = _read_uploads([(d, f) for d, f in items], SPEC, 64 << 10)
    for (_, file), got, want in zip(items, isolated, here, strict=True):
        if isinstance(want, IngestError):
            assert isinstance(got, IngestError), file
            if got.rule == "decode_limit":  # (page_bomb.parquet: the decoder's memory limit, before the measured bound)
                assert want.rule == "log_size", file
                continue
            assert (str(got), got.rule, got.row, got.line) == (str(want), want.rule, want.row, want.line), file
            assert [(p.rule, p.row, p.line, p.detail) for p in got.problems] == [
                (p.rule, p.row, p.line, p.detail) for p in want.problems
            ]
        elif want.num_rows:  # (the corpus's far_too_large.csv is refused before either reader)
            assert got.schema == want.schema and got.equals(want), file


def test_a_decoder_that_cannot_start_fails_the_read_and_rejects_nothing(monkeypatch):
    """A broken environment is not an upload's fault: the step fails (and is retried), no file is rejected for it."""
    monkeypatch.setattr(sys, "executable", "/bin/false")
    broken = Decoder()
    with pytest.raises(DecoderUnavailable):
        broken.decode("uploads", PARAMS, GOOD, 64 << 20)
