"""What the archive check of Inspect ``.eval`` logs costs, and what it saves: seconds and peak memory (RSS).

Each case runs in its own process (peak RSS is per process) with inspect_ai imported before the baseline:

- bombs: a member expanding to ``--bomb-mib`` MiB of zeros (deflate, zstd), its size declared honestly or as
  1,000 bytes (a lying central directory); refused by the check, and read without it (``--unchecked``, off by
  default: it takes as much memory as the bomb expands to, twice for deflate);
- an honest archive of ``--honest-mib`` MiB of JSON text in 1 MiB members, compressing about 2:1 (zstd, as Inspect writes): the
  check's own time, which every accepted log pays on top of inspect_ai's reading.

    python benchmarks/archive_limits.py [--bomb-mib 1024] [--honest-mib 128] [--unchecked]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CASE = textwrap.dedent(
    """
    import io, json, sys, time, zipfile
    sys.path.insert(0, {repo!r})
    from benchmarks.crafted import deflated_zeros, zip_bytes, zstd_zeros
    from agielo_dagster.domain.harness import inspect_log
    from agielo_dagster.domain.harness.archive import check_archive
    import inspect_ai.log  # noqa: F401 - its import is not the archive's cost
    kind, method, mib, declared, checked = {kind!r}, {method}, {mib}, {declared!r}, {checked}
    if kind == "bomb":
        size = mib << 20
        stream = deflated_zeros(size) if method == 8 else zstd_zeros(size)
        data = zip_bytes([("header.json", method, stream, size if declared == "honest" else 1000)])
    else:
        import zipfile_zstd  # noqa: F401 - inspect_ai's zstd support for zipfile
        import os
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=93) as archive:
            for i in range(mib):  # 1 MiB members of JSON text that compresses about 2:1, like model transcripts
                text = os.urandom(1 << 19).hex()
                archive.writestr(f"samples/{{i}}_epoch_1.json", json.dumps({{"id": i, "epoch": 1, "input": text}}).encode())
        data = buffer.getvalue()
    if not checked:
        inspect_log.check_archive = lambda *args: None
    before = int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1])
    start = time.perf_counter()
    if kind == "bomb":
        result = inspect_log.read_inspect(["incoming/inspect/x.eval"], lambda path: data)
        outcome = ",".join(e.rule for e in result.errors) or "accepted"
    else:
        check_archive(data, "incoming/inspect/x.eval", 256 << 20)
        outcome = "within the limit"
    seconds = time.perf_counter() - start
    grown = (int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]) - before) // 1024
    print(f"{{len(data):>11,}} bytes  {{seconds:6.2f}} s  peak RSS +{{grown:,}} MiB  {{outcome}}")
    """
)


def run(label: str, **case) -> None:
    code = CASE.format(repo=str(REPO), **case)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    line = (
        done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else f"failed: {done.stderr[-300:]}"
    )
    print(f"{label:<48} {line}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mib", type=int, default=1024)
    parser.add_argument("--honest-mib", type=int, default=128)
    parser.add_argument("--unchecked", action="store_true", help="also read the bombs without the check (memory!)")
    args = parser.parse_args()
    for method, name in ((8, "deflate"), (93, "zstd")):
        for declared in ("honest", "lying"):
            label = f"{args.bomb_mib} MiB {name} bomb, size declared {declared}"
            run(label, kind="bomb", method=method, mib=args.bomb_mib, declared=declared, checked=True)
            if args.unchecked:
                run(label + ", unchecked", kind="bomb", method=method, mib=args.bomb_mib, declared=declared, checked=False)
    run(
        f"check of an honest {args.honest_mib} MiB log (zstd)",
        kind="honest",
        method=93,
        mib=args.honest_mib,
        declared="",
        checked=True,
    )


if __name__ == "__main__":
    main()
