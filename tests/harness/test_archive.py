"""Bounded decompression: an Inspect ``.eval`` (a zip) is held to the upload limit uncompressed before inspect_ai reads it.

The archives are built byte by byte (:func:`benchmarks.crafted.zip_bytes`), so that a central directory can lie about a member's
size, as a crafted archive would; the streams are real deflate and zstd.
"""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import textwrap
import zipfile

import pytest

from agielo_dagster.domain.contract import IngestError
from agielo_dagster.domain.harness import read_drop
from agielo_dagster.domain.harness.archive import MAX_ARCHIVE_MEMBERS, check_archive
from agielo_dagster.domain.incoming import read_incoming, refresh_incoming
from agielo_dagster.domain.store import Store
from benchmarks.crafted import DEFLATE, STORED, ZSTD, MiB, deflated_zeros, zip_bytes, zstd_zeros

from ..devserver import REPO


def rule_of(data: bytes, max_bytes: int, path: str = "incoming/inspect/bomb.eval") -> IngestError:
    with pytest.raises(IngestError) as caught:
        check_archive(data, path, max_bytes)
    assert caught.value.file == path and path in str(caught.value)
    return caught.value


def test_the_builder_makes_archives_zipfile_reads():
    data = zip_bytes([("samples/a.json", DEFLATE, deflated_zeros(3000), 3000), ("header.json", STORED, b"{}", 2)])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert [i.file_size for i in archive.infolist()] == [3000, 2]
        assert archive.read("header.json") == b"{}"
    check_archive(data, "x.eval", 3002)  # exactly at the limit: accepted


def test_a_member_declaring_more_than_the_limit_is_refused_unread():
    data = zip_bytes([("samples/1_epoch_1.json", DEFLATE, deflated_zeros(2 * MiB), 2 * MiB)])
    error = rule_of(data, MiB)
    assert error.rule == "archive_size"
    assert "'samples/1_epoch_1.json'" in str(error) and "2,097,152" in str(error) and "1,048,576" in str(error)


def test_members_within_the_limit_each_but_not_in_total_are_refused():
    members = [(f"samples/{i}_epoch_1.json", DEFLATE, deflated_zeros(400_000), 400_000) for i in range(3)]
    error = rule_of(zip_bytes(members), MiB)
    assert error.rule == "archive_size" and "in all" in str(error) and "'samples/2_epoch_1.json'" in str(error)


@pytest.mark.parametrize("method", [DEFLATE, ZSTD])
def test_a_member_expanding_past_its_declared_size_is_refused(method):
    """The central directory is a claim: a 1 KB declaration over a 64 MiB stream is caught while streaming."""
    if method == ZSTD:
        pytest.importorskip("zstandard")
    stream = deflated_zeros(64 * MiB) if method == DEFLATE else zstd_zeros(64 * MiB)
    assert len(stream) < 100_000  # a small archive
    error = rule_of(zip_bytes([("samples/x.json", method, stream, 1000)]), 256 * MiB)
    assert error.rule == "archive_size" and "past the 1,000 bytes it declares" in str(error)


def test_other_compression_methods_and_encryption_are_refused():
    assert rule_of(zip_bytes([("a.json", 12, b"BZh9", 10)]), MiB).rule == "archive_method"  # bzip2
    encrypted = bytearray(zip_bytes([("a.json", STORED, b"{}", 2)]))
    for at in (6, encrypted.index(b"PK\x01\x02") + 8):  # the flag bits, local and central
        encrypted[at] |= 1
    assert rule_of(bytes(encrypted), MiB).rule == "archive_method"


def test_too_many_members_are_refused_before_zipfile_parses_the_directory():
    data = zip_bytes([("a", STORED, b"", 0)])
    end = data.rindex(b"PK\x05\x06")
    forged = data[: end + 8] + struct.pack("<2H", 0xFFFF - 1, 0xFFFF - 1) + data[end + 12 :]  # claims 65,534 members
    check_archive(data, "ok.eval", MiB)
    assert 65_534 <= MAX_ARCHIVE_MEMBERS  # the count alone is allowed: the directory's declared size is what gives it away
    forged = forged[: end + 12] + struct.pack("<I", 1 << 30) + forged[end + 16 :]
    assert rule_of(forged, MiB).rule == "archive_members"


def test_a_corrupt_stream_is_a_named_rejection_not_a_crash():
    error = rule_of(zip_bytes([("samples/x.json", DEFLATE, b"\xff" * 64, 100)]), MiB)
    assert error.rule == "inspect_truncated" and "'samples/x.json'" in str(error)


def test_the_inspect_reader_refuses_the_bomb_with_the_upload_limit():
    pytest.importorskip("inspect_ai", reason="inspect-ai is an optional dependency")
    bomb = zip_bytes([("header.json", STORED, b"{}", 2), ("samples/1_epoch_1.json", DEFLATE, deflated_zeros(8 * MiB), 8 * MiB)])
    files = {"incoming/inspect/bomb.eval": bomb}
    result = read_drop("inspect", list(files), files.__getitem__, max_bytes=MiB)
    assert result.uploads == [] and [(e.file, e.rule) for e in result.errors] == [("incoming/inspect/bomb.eval", "archive_size")]
    # the default limit (256 MiB) lets this size through to inspect_ai, which refuses it as no Inspect log
    result = read_drop("inspect", list(files), files.__getitem__)
    assert [e.rule for e in result.errors] != ["archive_size"]


def test_the_rejection_lands_in_the_incoming_ledger(tmp_path):
    pytest.importorskip("inspect_ai", reason="inspect-ai is an optional dependency")
    root = tmp_path / "storage"
    (root / "incoming/inspect").mkdir(parents=True)
    (root / "incoming/inspect/bomb.eval").write_bytes(
        zip_bytes([("samples/1_epoch_1.json", DEFLATE, deflated_zeros(4 * MiB), 4 * MiB)])
    )
    store = Store(root=str(root), max_upload_bytes=MiB)
    refresh_incoming(store)
    (record,) = read_incoming(store)
    (error,) = json.loads(record["errors"])
    assert (error["file"], error["rule"]) == ("incoming/inspect/bomb.eval", "archive_size")
    assert "the upload limit is 1,048,576 uncompressed" in error["message"]
    assert json.loads(record["uploads"]) == []


PROBE = textwrap.dedent(
    """
    import sys, zlib
    sys.path.insert(0, {repo!r})
    from benchmarks.crafted import deflated_zeros, zip_bytes, zstd_zeros
    from agielo_dagster.domain.harness import read_drop
    import inspect_ai.log  # loaded before the baseline: its import is not the archive's cost
    size = {size}
    stream = deflated_zeros(size) if {method} == 8 else zstd_zeros(size)
    archives = {{
        "incoming/inspect/honest.eval": zip_bytes([("header.json", {method}, stream, size)]),
        "incoming/inspect/lying.eval": zip_bytes([("header.json", {method}, stream, 1000)]),
    }}
    def peak_kib():  # this process's own high-water RSS: ru_maxrss would start at the parent's (vfork + exec)
        return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1])
    before = peak_kib()
    result = read_drop("inspect", list(archives), archives.__getitem__)
    after = peak_kib()
    print(sorted((e.file, e.rule) for e in result.errors), len(stream), (after - before) // 1024)
    """
)


@pytest.mark.parametrize("method", [DEFLATE, ZSTD])
def test_a_small_archive_expanding_to_gigabytes_is_refused_within_the_memory_bound(method):
    """A < 3 MB archive whose member expands to 1 GiB (honest or lying about it): refused, peak RSS grows < 64 MiB.

    ``header.json`` is the member inspect_ai reads first. Without the check, the lying deflate archive of 256 MiB
    grew the peak RSS by 509 MiB (zipfile decompresses a member in one call, trimming to the declared size after).
    """
    pytest.importorskip("inspect_ai", reason="inspect-ai is an optional dependency")
    code = PROBE.format(repo=str(REPO), size=1 << 30, method=method)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    errors, compressed, grown_mib = done.stdout.strip().rsplit(" ", 2)
    assert errors == str([("incoming/inspect/honest.eval", "archive_size"), ("incoming/inspect/lying.eval", "archive_size")]), (
        done.stdout
    )
    assert int(compressed) < 3 * MiB
    assert int(grown_mib) < 64, f"peak RSS grew by {grown_mib} MiB while refusing a 1 GiB archive"


@pytest.mark.slow  # about 23 s here; the quick variant is test_the_rejection_lands_in_the_incoming_ledger
def test_the_rejection_shows_in_the_quarantine_report_and_agielo_run(tmp_path):
    """Through the real pipeline (sensor, runs, a Dagster instance) with the resource's upload limit of 1 MiB."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is an optional dependency")
    import dagster as dg
    import pandas as pd
    from agielo_dagster.resources.storage import ObjectStorage

    from agielo_dagster.cli import RunSummary, print_summary

    from ..pipeline.conftest import Daemon

    root = tmp_path / "storage"
    (root / "raw").mkdir(parents=True)
    (root / "incoming/inspect").mkdir(parents=True)
    (root / "incoming/inspect/bomb.eval").write_bytes(
        zip_bytes([("header.json", DEFLATE, deflated_zeros(64 * MiB), 1000)])  # 64 MiB behind a 1,000-byte claim
    )
    with dg.instance_for_test() as instance:
        daemon = Daemon(ObjectStorage(root=str(root), max_upload_bytes=MiB), instance)
        runs = daemon.settle()
        assert runs and all(r.success for r in runs)  # a rejection, not a failed step
        report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
        row = report[report["file"] == "incoming/inspect/bomb.eval"]
        assert list(row["rule"]) == ["archive_size"], report.to_dict("records")
        out = io.StringIO()
        print_summary(daemon.storage.store, RunSummary(), out=out)
        assert "incoming/inspect/bomb.eval" in out.getvalue() and "(rule: archive_size)" in out.getvalue()
