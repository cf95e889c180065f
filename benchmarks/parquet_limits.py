"""What the parquet decoded-size bound costs, and what it saves: seconds and peak memory (RSS).

Each file is built in one process and read in a fresh one (peak RSS is per process; the baseline is taken
after the file's bytes are loaded), reading it ``--repeat`` times and keeping the fastest:

- ordinary: a 1M-row upload (string ids, float metric, a string note with 1,000 distinct values) read by
  ``read_upload`` with the default 256 MiB limit: the time every accepted parquet upload pays;
- dictionary: a 24 KB file written by pyarrow (10,000 rows of one 10 KB value, 100 MB decoded), 1 MiB limit;
- footer: a file whose footer understates its row group (one 64 MiB value, row group declared 1,000 bytes), 1 MiB limit.

    python benchmarks/parquet_limits.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BUILD = textwrap.dedent(
    """
    import io, sys
    sys.path.insert(0, {repo!r})
    import pyarrow as pa, pyarrow.parquet as pq
    from benchmarks.crafted import _parquet, understated_footer
    kind, path = {kind!r}, {path!r}
    if kind == "ordinary":
        n = 1_000_000
        data = _parquet(pa.table({{"test_case_id": [f"tc_{{i}}" for i in range(n)], "acc": [(i % 100) / 100 for i in range(n)],
                                  "note": [f"n{{i % 1000}}" for i in range(n)]}}))
    elif kind == "dictionary":
        note = pa.DictionaryArray.from_arrays(pa.array([0] * 10_000, pa.int32()), pa.array(["y" * 10_000]))
        data = _parquet(pa.table({{"test_case_id": [str(i) for i in range(10_000)], "note": note}}))
    else:
        data = understated_footer()
    open(path, "wb").write(data)
    """
)

READ = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from agielo_dagster.domain.contract import BenchmarkSpec, IngestError
    from agielo_dagster.domain.readers import read_rows, read_upload
    from agielo_dagster.rating.scoring import identity
    kind, path, repeat = {kind!r}, {path!r}, {repeat}
    data = open(path, "rb").read()
    base = int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1])
    times, outcome = [], ""
    for _ in range(repeat):
        t = time.perf_counter()
        try:
            if kind == "ordinary":
                table = read_upload(data, "raw/b/a.parquet", BenchmarkSpec("b", "acc", identity()), max_bytes=256 << 20)
                outcome = f"accepted, {{table.num_rows:,}} rows"
            else:
                outcome = f"accepted, {{read_rows(data, 'raw/b/a.parquet', max_bytes=1 << 20).nbytes:,}} bytes decoded"
        except IngestError as exc:
            outcome = f"refused ({{exc.rule}})"
        times.append(time.perf_counter() - t)
    peak = int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1])
    print(f"{{kind:10}} {{len(data):>11,}} bytes  {{min(times):7.3f}} s  +{{(peak - base) / 1024:7.1f}} MiB peak  {{outcome}}")
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("ordinary", "dictionary", "footer"):
            path = str(Path(tmp) / f"{kind}.parquet")
            subprocess.run([sys.executable, "-c", BUILD.format(repo=str(REPO), kind=kind, path=path)], check=True, cwd=REPO)
            code = READ.format(repo=str(REPO), kind=kind, path=path, repeat=args.repeat)
            subprocess.run([sys.executable, "-c", code], check=False, cwd=REPO)


if __name__ == "__main__":
    main()
