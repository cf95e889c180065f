"""What decoding uploads in the decoder process costs against decoding them in the caller's process.

The same batches (as the ledger sends them: at most 1,000 uploads or 16 MiB) read both ways, interleaved, best of
``--repeat``: ``in-process`` is the readers' own ``_read_uploads``; ``isolated`` is ``read_uploads`` through a warm
decoder (its start, about 0.4 s, is paid once a process and not counted). Wall seconds, and CPU seconds of both
processes together:

- tall: ``--uploads`` small csv uploads of 5 rows (the tall shape's 200,000 uploads × 5, scaled);
- wide csv and wide parquet: one upload of 1M rows (ids, a metric, a text note);
- tall ledger: the whole ledger step over those ``--uploads`` files on disk (reading them, the
  accepted copies), the decoder reading a batch while the ledger reads the next from storage.

    python benchmarks/isolation.py [--uploads 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import resource
import time

MAX = 256 << 20
READ_UPLOADS = 1_000


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def shapes(uploads: int) -> dict[str, list[tuple[bytes, str]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tall = []
    for a in range(uploads):
        body = "".join(f"case-{i},{(a + i) % 2}\n" for i in range(5))
        tall.append((f"test_case_id,correct\n{body}".encode(), f"raw/tall/model_{a}.csv"))
    n = 1_000_000
    ids = [f"tc_{i}" for i in range(n)]
    correct = [(i % 100) / 100 for i in range(n)]
    notes = [f"n{i % 1000}" for i in range(n)]
    csv = "test_case_id,correct,note\n" + "".join(f"{i},{c},{t}\n" for i, c, t in zip(ids, correct, notes, strict=True))
    sink = io.BytesIO()
    pq.write_table(pa.table({"test_case_id": ids, "correct": correct, "note": notes}), sink)
    return {
        "tall": tall,
        "wide csv": [(csv.encode(), "raw/wide/model.csv")],
        "wide parquet": [(sink.getvalue(), "raw/wide/model.parquet")],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from agielo_dagster.domain.contract import parse_benchmark_spec
    from agielo_dagster.domain.readers import read_uploads
    from agielo_dagster.domain.readers.isolation import Decoder, _idle
    from agielo_dagster.domain.readers.upload import _read_uploads

    spec = parse_benchmark_spec(b"metric: correct\nscoring: identity\n", "tall", "raw/tall/benchmark.yaml")
    read_uploads([(b"test_case_id,correct\na,1\n", "raw/tall/warm.csv")], spec)  # the decoder started once
    decoder = _idle[0] if _idle else Decoder()

    def in_process(batch):
        return _read_uploads(batch, spec, MAX), 0.0

    def isolated(batch):
        out = read_uploads(batch, spec, max_bytes=MAX)
        return out, decoder.last_cost.cpu_seconds

    print(f"{'shape':14} {'way':10} {'wall s':>8} {'cpu s':>8} {'µs/upload':>10}")
    for name, items in shapes(args.uploads).items():
        batches = [items[i : i + READ_UPLOADS] for i in range(0, len(items), READ_UPLOADS)]
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):
            for way, read in (("in-process", in_process), ("isolated", isolated)):
                wall, cpu, decoder_cpu = time.perf_counter(), _cpu(), 0.0
                for batch in batches:
                    outcomes, spent = read(batch)
                    decoder_cpu += spent
                    assert all(not isinstance(o, Exception) for o in outcomes), outcomes[:3]
                wall, cpu = time.perf_counter() - wall, _cpu() - cpu + decoder_cpu
                if way not in best or wall < best[way][0]:
                    best[way] = (wall, cpu)
        report(name, best, len(items))
    ledger(args.uploads, args.repeat, spec)


def report(name: str, best: dict[str, tuple[float, float]], uploads: int) -> None:
    for way, (wall, cpu) in best.items():
        print(f"{name:14} {way:10} {wall:8.3f} {cpu:8.3f} {1e6 * wall / uploads:10.1f}")
    ratio = best["isolated"][0] / best["in-process"][0]
    print(f"{name:14} {'ratio':10} {ratio:8.2f} {best['isolated'][1] / best['in-process'][1]:8.2f}")


def ledger(uploads: int, repeat: int, spec) -> None:
    """refresh_ledger over ``uploads`` small csv files, with each reader (the caller's CPU only: see the module doc)."""
    import shutil
    import tempfile
    from pathlib import Path

    from agielo_dagster.domain.ledger import refresh_ledger
    from agielo_dagster.domain.readers import read_uploads
    from agielo_dagster.domain.readers.upload import _read_uploads
    from agielo_dagster.domain.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "raw" / "tall"
        folder.mkdir(parents=True)
        (folder / "benchmark.yaml").write_text("metric: correct\nscoring: identity\n")
        for a in range(uploads):
            body = "".join(f"case-{i},{(a + i) % 2}\n" for i in range(5))
            (folder / f"model_{a}.csv").write_text(f"test_case_id,correct\n{body}")
        readers = {"in-process": lambda items, spec, max_bytes: _read_uploads(items, spec, max_bytes), "isolated": read_uploads}
        best: dict[str, tuple[float, float]] = {}
        for _ in range(repeat):
            for way, reader in readers.items():
                shutil.rmtree(Path(tmp) / "warehouse", ignore_errors=True)
                wall, cpu = time.perf_counter(), _cpu()
                update = refresh_ledger(Store(tmp), "tall", read_uploads=reader)
                wall, cpu = time.perf_counter() - wall, _cpu() - cpu
                assert len(update.ledger.accepted) == uploads
                if way not in best or wall < best[way][0]:
                    best[way] = (wall, cpu)
        report("tall ledger", best, uploads)


if __name__ == "__main__":
    main()
