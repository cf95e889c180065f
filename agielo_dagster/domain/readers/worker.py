"""The decoder process: untrusted files read under hard OS limits, each outcome answered as Arrow IPC or as an error.

Started by :class:`~.isolation.Decoder` as ``python -m agielo_dagster.domain.readers.worker FD`` (``FD``: the shared
page where it says which file it is on), with an environment that holds no credentials. It serves requests on stdin
until stdin closes; every frame is an 8-byte little-endian length, then that many bytes:

- request: a JSON header (``op``, ``params``, ``max_bytes``, ``files``, ``sizes``, ``cpu``: each file's CPU cap, then
  the cap of the checks made together), then the files' bytes back to back;
- answer: a JSON header (``outcomes``: ``["t", group, offset, rows]`` or ``["e", problems, message]`` a file,
  ``groups``: the size of each Arrow IPC stream that follows, one per schema, ``peak``: ``VmHWM`` in bytes, ``cpu``:
  the request's CPU seconds, ``retire``: whether it exits now), then the streams.

Its limits: no core dumps and no files written (``RLIMIT_CORE``, ``RLIMIT_FSIZE``), at most 64 open files; a request's
writable memory (``RLIMIT_DATA``, which malloc honours; pyarrow's pool is the system allocator here) is what the
process holds when it starts plus the request's bytes plus :func:`~.isolation.memory_budget`; each file's CPU seconds
(``RLIMIT_CPU``, whose ``SIGXCPU`` ends the process) are set again before it is read.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import resource
import signal
import sys
import time

from .isolation import FRAME, PROGRESS, memory_budget, read_exactly, write_frame


def _vm(key: str) -> int:
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def _ops():
    """What a request may ask for: ``uploads`` (the input contract, a batch at a time), ``rows`` and ``tags``."""
    import importlib

    from ..contract import BenchmarkSpec, IngestError
    from ..tags import _read_tags
    from .common import _guarded
    from .upload import _read_rows, _read_uploads

    def uploads(items, params, max_bytes, on_item):
        module, name = params["scoring"]["class"].split(":")  # the class the caller built (and so checked)
        scoring = getattr(importlib.import_module(module), name)(**params["scoring"]["params"])
        spec = BenchmarkSpec(params["name"], params["metric"], scoring)
        return _read_uploads(items, spec, max_bytes, on_item)

    def each(read):
        def run(items, params, max_bytes, on_item):
            out = []
            for i, (data, file) in enumerate(items):
                on_item(i)
                try:
                    out.append(_guarded(file, lambda data=data, file=file: read(data, file, max_bytes)))
                except IngestError as err:
                    out.append(err)
            return out

        return run

    return {"uploads": uploads, "rows": each(_read_rows), "tags": each(_read_tags)}


def _answer(outcomes: list) -> tuple[list, list]:
    """(outcome entries, one table per schema): the tables of one schema travel as one."""
    import pyarrow as pa

    entries, groups, rows = [], {}, {}
    for outcome in outcomes:
        if isinstance(outcome, pa.Table):
            schema = outcome.schema.to_string()  # (hashing the Schema costs 26 µs a table)
            group = groups.setdefault(schema, [])
            entries.append(["t", schema, rows.get(schema, 0), outcome.num_rows])
            rows[schema] = rows.get(schema, 0) + outcome.num_rows
            group.append(outcome)
        else:
            problems = [[p.file, p.rule, p.detail, p.row, p.line] for p in outcome.problems]
            entries.append(["e", problems, str(outcome)])
    tables, index = [], {}
    for schema, members in groups.items():
        index[schema] = len(tables)
        tables.append(members[0] if len(members) == 1 else pa.concat_tables(members).combine_chunks())
    for entry in entries:
        if entry[0] == "t":
            entry[1] = index[entry[1]]
    return entries, tables


def _write_ipc(sink, table) -> None:
    import pyarrow as pa

    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def _warm_up(ops) -> None:
    """Read one small file of each format before serving: the modules and kernels that load on first use are then
    part of the size a request's memory limit starts from, not of a request's budget."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ...rating.scoring import Identity

    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"test_case_id": ["a"], "m": [1.0]}), sink)
    files = [(b"test_case_id,m\na,1\n", "w.csv"), (b'{"test_case_id": "a", "m": 1}\n', "w.jsonl")]
    files.append((sink.getvalue().to_pybytes(), "w.parquet"))
    params = {"name": "w", "metric": "m", "scoring": {"class": f"{Identity.__module__}:Identity", "params": {}}}
    for _ in range(2):
        _answer(ops["uploads"](files, params, 1 << 20, lambda i: None))


def main() -> None:
    progress = mmap.mmap(int(sys.argv[1]), PROGRESS.size)
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write to a file fails, rather than ending the process
    for limit, value in ((resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_NOFILE, 64)):
        resource.setrlimit(limit, (value, value))
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    ops = _ops()
    _warm_up(ops)
    data_hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    start = _vm(b"VmData:")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            head = stdin.read(FRAME.size)
            if len(head) < FRAME.size:
                return
            request = json.loads(read_exactly(stdin, FRAME.unpack(head)[0]))
            sizes, files, caps = request["sizes"], request["files"], request["cpu"]
            memory = _vm(b"VmData:") + sum(sizes) + memory_budget(request["max_bytes"])
            resource.setrlimit(resource.RLIMIT_DATA, (min(memory, data_hard) if data_hard >= 0 else memory, data_hard))
            items = [(stdin.read(n), f) for n, f in zip(sizes, files, strict=True)]
        except (OSError, ValueError, EOFError):
            return

        def on_item(i: int, caps: list[int] = caps) -> None:
            PROGRESS.pack_into(progress, 0, i)
            soft = math.ceil(time.process_time()) + caps[min(i, len(caps) - 1)]
            resource.setrlimit(resource.RLIMIT_CPU, (soft if cpu_hard < 0 else min(soft, cpu_hard), cpu_hard))

        began = time.process_time()
        outcomes = ops[request["op"]](items, request["params"], request["max_bytes"], on_item)
        del items
        on_item(len(sizes) + 1)  # the answer
        entries, tables = _answer(outcomes)
        del outcomes
        sizes = []
        for table in tables:  # streamed to the pipe below, never copied into a buffer: first their sizes
            _write_ipc(counter := pa.MockOutputStream(), table)
            sizes.append(counter.size())
        kept = _vm(b"VmData:") - sum(t.get_total_buffer_size() for t in tables) - start
        retire = kept > memory_budget(0)  # memory kept past a request (fragments): a fresh process next time
        answer = {"outcomes": entries, "groups": sizes, "peak": _vm(b"VmHWM:")}
        answer.update(cpu=time.process_time() - began, retire=retire)
        write_frame(stdout, json.dumps(answer).encode())
        for table in tables:
            _write_ipc(pa.PythonFile(stdout, mode="w"), table)
        stdout.flush()
        del tables
        if retire:
            return


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # the caller went away (killed, or done): nothing to answer, nothing to report
        os._exit(0)
