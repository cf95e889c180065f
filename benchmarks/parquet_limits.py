"""What reading a parquet upload costs, ordinary or forged: the outcome, peak memory and CPU seconds of every process.

Each file is built here, then read by ``read_upload`` in a fresh process (the caller) ``--repeat`` times, the fastest
kept; the caller's code is this checkout's, or ``--code DIR``'s (``git archive main | tar -x -C DIR``: the figures
before a change). Printed per file: the outcome (accepted, or the rule), the caller's CPU seconds (its decoder
process's included) and peak memory growth (``VmHWM``), and where the readers decode in a process of their own
(readers.isolation) that process's peak (``VmHWM``; for one killed at its CPU cap, its ``ru_maxrss``, which counts the
caller's size too: an upper bound) against its bound (its size once warm, plus the file, plus the budget):

- ordinary: a 1M-row upload (string ids, float metric, a string note with 1,000 distinct values) at the default
  256 MiB limit: the time every accepted parquet upload pays;
- each attack of issue 45 at the size and limit it was reported (benchmarks/forged_parquet.ATTACKS).

    python benchmarks/parquet_limits.py [--repeat 3] [--code DIR] [--only WORD]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MiB = 1 << 20

READ = textwrap.dedent(
    """
    import resource, sys, time
    sys.path.insert(0, {code!r})
    from agielo_dagster.domain.contract import IngestError, parse_benchmark_spec
    from agielo_dagster.domain.readers import read_upload
    try:
        from agielo_dagster.domain.readers import isolation
    except ImportError:
        isolation = None
    path, limit, repeat = {path!r}, {limit}, {repeat}
    spec = parse_benchmark_spec("metric: correct\\nscoring: identity\\n", "b", "raw/b/benchmark.yaml")
    data = open(path, "rb").read()

    def hwm():
        return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]) << 10

    def cpu():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    decoder = started = None
    if isolation is not None:  # the warm decoder that read_upload uses (the process's pool holds one)
        read_upload(b"test_case_id,correct\\na,1\\n", "raw/b/warm.csv", spec, max_bytes=limit)
        decoder = isolation._idle[0]
        started = decoder.last_cost.peak_bytes
    base, times, peaks, outcome = hwm(), [], [], ""
    for _ in range(repeat):
        t, c = time.perf_counter(), cpu()
        try:
            table = read_upload(data, "raw/b/a.parquet", spec, max_bytes=limit)
            outcome = f"accepted, {{table.num_rows:,}} rows"
        except IngestError as exc:
            outcome = f"{{exc.rule}}: {{str(exc).split(': ', 1)[1][:60]}}"
        times.append((time.perf_counter() - t, cpu() - c + (decoder.last_cost.cpu_seconds if decoder else 0.0)))
        if decoder is not None:
            peaks.append(decoder.last_cost.peak_bytes)
    wall, spent = min(times)
    line = f"{{len(data):>11,}} B {{wall:7.2f}} s {{spent:7.2f}} cpu s  caller +{{(hwm() - base) / 2**20:6.0f}} MiB"
    if decoder is not None:
        bound = started + len(data) + isolation.memory_budget(limit)
        peak = max((p for p in peaks if p is not None), default=None)
        shown = "?" if peak is None else f"{{peak / 2**20:5.0f}}"
        line += f"  decoder {{shown}} MiB of {{bound / 2**20:5.0f}}"
        decoder.close()
    print(line, " ", outcome, flush=True)
    """
)

BUILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    import io
    import pyarrow as pa, pyarrow.parquet as pq
    from benchmarks.forged_parquet import ATTACKS
    name, path = {name!r}, {path!r}
    if name == "ordinary":
        n = 1_000_000
        sink = io.BytesIO()
        pq.write_table(pa.table({{"test_case_id": [f"tc_{{i}}" for i in range(n)], "correct": [(i % 100) / 100 for i in range(n)],
                                 "note": [f"n{{i % 1000}}" for i in range(n)]}}), sink, compression="zstd")
        data = sink.getvalue()
    else:
        data = ATTACKS[name][1]()
    open(path, "wb").write(data)
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--code", default=str(REPO), help="the checkout whose readers read (default: this one)")
    parser.add_argument("--only", default="", help="only the cases whose name holds this word")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from benchmarks.forged_parquet import ATTACKS

    cases = {"ordinary": 256 * MiB, **{name: limit for name, (limit, _) in ATTACKS.items()}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, limit in cases.items():
            if args.only not in name:
                continue
            path = str(Path(tmp) / "upload.parquet")
            subprocess.run([sys.executable, "-c", BUILD.format(repo=str(REPO), name=name, path=path)], check=True)
            repeat = args.repeat if name == "ordinary" else 1
            print(f"{name} (limit {limit // MiB} MiB)", flush=True)
            code = READ.format(code=args.code, path=path, limit=limit, repeat=repeat)
            subprocess.run([sys.executable, "-c", code], check=False, cwd=tempfile.gettempdir())


if __name__ == "__main__":
    main()
