"""The ledger holds a tall benchmark's many small uploads in bounded batches, with the outcome of one batch."""

import pytest
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.domain import ledger as ledger_module
from agielo_dagster.domain.ledger import refresh_ledger
from agielo_dagster.domain.readers import read_uploads
from agielo_dagster.domain.store import StorageError, Store

ADD = ledger_module.SmallUploads.add


def _outcomes(tmp_path, name, monkeypatch, batch_uploads):
    root = tmp_path / name
    folder = root / "raw" / "quiz"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: binary\n")
    for a in range(7):
        (folder / f"model_{a}.csv").write_text("test_case_id,correct\n" + "".join(f"case-{i},{(a + i) % 2}\n" for i in range(5)))
    (folder / "model_9.csv").write_text("test_case_id,correct\ncase-0,1\ncase-0,0\n")  # a repeated id: rejected
    batches = []

    def held(self, uploads):  # each batch of accepted uploads, as it is handed on to be written
        batches.append(len(uploads))
        return ADD(self, uploads)

    monkeypatch.setattr(ledger_module, "BATCH_UPLOADS", batch_uploads)
    monkeypatch.setattr(ledger_module.SmallUploads, "add", held)
    update = refresh_ledger(Store(str(root)), "quiz", read_uploads=read_uploads)
    rows = {r["path"].rsplit("/", 1)[-1]: (r["status"], r["rule"], r["rows"]) for r in update.ledger.rows}
    return rows, batches


def test_small_uploads_are_held_in_batches_of_at_most_batch_uploads(tmp_path, monkeypatch):
    batched, sizes = _outcomes(tmp_path, "batched", monkeypatch, 3)
    whole, one = _outcomes(tmp_path, "whole", monkeypatch, 1_000)
    assert sizes == [3, 3, 1] and one == [7]
    assert batched == whole
    assert batched["model_9.csv"][0] == "rejected" and sum(s == "accepted" for s, _, _ in batched.values()) == 7


def test_the_scoring_is_read_from_the_ledgers_footer_as_the_ledger_makes_it(tmp_path):
    from agielo_dagster.domain.ledger import read_ledger, read_scoring

    store = Store(str(tmp_path))
    assert read_scoring(store, "graded") is None  # no ledger yet
    folder = tmp_path / "raw" / "graded"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: error\nscoring: minmax\nparams: {lo: 0, hi: 10, higher_is_better: false}\n")
    (folder / "model_a.csv").write_text("test_case_id,error\ncase-0,2.5\ncase-1,7.5\n")
    refresh_ledger(store, "graded", read_uploads=read_uploads)
    made, read = read_ledger(store, "graded").make_scoring(), read_scoring(store, "graded")
    assert read.to_config() == made.to_config() and read.to_config()["scoring"] == "minmax"
    assert read.to_config()["params"]["higher_is_better"] is False
    (tmp_path / "warehouse" / "upload_ledger" / "graded.parquet").write_bytes(b"not parquet")
    assert read_scoring(store, "graded") is None and read_ledger(store, "graded") is None


def test_a_reader_that_fails_unforeseen_rejects_only_the_upload_it_failed_on(tmp_path, monkeypatch):
    """Uploads are read in batches; a reader's own failure on one (not an IngestError) is found again upload by
    upload, so that one upload is rejected as unreadable and the others of its batch keep their outcomes."""
    folder = tmp_path / "raw" / "quiz"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: binary\n")
    for a in range(6):
        (folder / f"model_{a}.csv").write_text("test_case_id,correct\ncase-0,1\ncase-1,0\n")
    monkeypatch.setattr(ledger_module, "READ_UPLOADS", 4)
    batches = []

    def reader(items, spec, *, max_bytes):
        batches.append(len(items))
        if any(file.endswith("model_2.csv") for _, file in items):
            raise MemoryError("the reader ran out of memory")
        return read_uploads(items, spec, max_bytes=max_bytes)

    update = refresh_ledger(Store(str(tmp_path)), "quiz", read_uploads=reader)
    rows = {r["agent"]: r for r in update.ledger.rows}
    assert batches[:2] == [4, 1] and len(batches) == 2 + 4  # the first batch failed, then was read upload by upload
    assert rows["model_2"]["status"] == "rejected" and rows["model_2"]["rule"] == "unreadable"
    assert "MemoryError: the reader ran out of memory" in rows["model_2"]["message"]
    assert sorted(a for a, r in rows.items() if r["status"] == "accepted") == [
        "model_0",
        "model_1",
        "model_3",
        "model_4",
        "model_5",
    ]


def test_a_ledgers_summary_and_first_uploads_are_what_the_whole_ledger_says(tmp_path):
    from agielo_dagster.domain.ledger import first_accepted, read_ledger, read_summary

    store = Store(str(tmp_path))
    assert read_summary(store, "quiz") is None and first_accepted(store, "quiz", 3) == []
    folder = tmp_path / "raw" / "quiz"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: binary\ndescription: a quiz\n")
    for agent in ("zeta", "alpha", "mu", "beta"):  # listed (by path) in another order than by agent
        (folder / f"{agent}.csv").write_text("test_case_id,correct\ncase-0,1\ncase-1,0\n")
    (folder / "typo.csv").write_text("test_case_id,correct\ncase-0,yes\n")  # rejected
    (folder / "notes.txt").write_text("not an upload")  # refused
    (folder / "test_cases.csv").write_text("test_case_id,subject\ncase-0,math\ncase-1,art\n")  # the tag file
    refresh_ledger(store, "quiz", read_uploads=read_uploads)
    whole, summary = read_ledger(store, "quiz"), read_summary(store, "quiz")
    assert summary.accepted == len(whole.accepted) == 4
    assert summary.problems == tuple(whole.problems) and {r["status"] for r in summary.problems} == {"rejected", "refused"}
    assert summary.tag_file == whole.tag_file and summary.tag_file["path"].endswith("test_cases.csv")
    assert summary.description == whole.description == "a quiz"
    for count in (0, 2, 10):
        assert first_accepted(store, "quiz", count) == sorted(whole.accepted, key=lambda r: r["agent"])[:count]
    assert [r["agent"] for r in first_accepted(store, "quiz", 2)] == ["alpha", "beta"]


def test_the_upload_limit_is_agielo_max_upload_bytes_for_the_store_and_the_resource(tmp_path, monkeypatch):
    """One setting for the storage a run opens (Store, the ObjectStorage resource's default): a larger upload is
    log_size by its listed size, unread; a value that is not a whole number of bytes is refused, not guessed."""
    folder = tmp_path / "raw" / "quiz"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: binary\n")
    (folder / "small.csv").write_text("test_case_id,correct\na,1\n")
    (folder / "large.csv").write_text("test_case_id,correct\n" + "".join(f"case-{i},1\n" for i in range(200)))
    monkeypatch.setenv("AGIELO_MAX_UPLOAD_BYTES", "1024")
    assert ObjectStorage(root=str(tmp_path)).max_upload_bytes == 1024 == ObjectStorage(root=str(tmp_path)).store.max_upload_bytes
    update = refresh_ledger(Store(str(tmp_path)), "quiz", read_uploads=read_uploads)
    rows = {r["path"].rsplit("/", 1)[-1]: (r["status"], r["rule"]) for r in update.ledger.rows}
    assert rows == {"small.csv": ("accepted", ""), "large.csv": ("rejected", "log_size")}
    assert "the limit is 1,024" in next(r["message"] for r in update.ledger.rows if r["rule"] == "log_size")
    for wrong in ("1e6", "-5", "0", "256MiB"):
        monkeypatch.setenv("AGIELO_MAX_UPLOAD_BYTES", wrong)
        with pytest.raises(StorageError, match="AGIELO_MAX_UPLOAD_BYTES must be a whole number of bytes"):
            Store(str(tmp_path))
    monkeypatch.delenv("AGIELO_MAX_UPLOAD_BYTES")
    assert Store(str(tmp_path)).max_upload_bytes == 256 << 20


def test_special_files_and_hidden_names_each_get_their_row_and_are_never_opened(tmp_path):
    """A FIFO under raw/ (which would block a reader forever), a socket and a device are refused, never opened; hidden
    names (an upload still being written, a key like ``..%2fevil.csv``, a hidden folder) are skipped on purpose: each
    has its ledger row and its line in the quarantine report, and an unchanged folder is not read again."""
    import os
    import signal
    import socket
    import stat

    from agielo_dagster.assets.quarantine import read_quarantine

    from agielo_dagster.domain.inputs import benchmark_listings
    from agielo_dagster.domain.ledger import read_summary

    folder = tmp_path / "raw" / "quiz"
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: binary\n")
    (folder / "model_a.csv").write_text("test_case_id,correct\na,1\nb,0\n")
    os.mkfifo(folder / "model_b.csv")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "model_c.csv"))
    try:
        os.mknod(folder / "model_d.csv", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
        device = True
    except PermissionError:  # (mknod needs CAP_MKNOD)
        device = False
    (folder / ".model_e.csv.part").write_text("test_case_id,correct\na,1\n")
    (folder / "..%2fevil.csv").write_text("test_case_id,correct\na,1\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("x")
    signal.alarm(60)  # a FIFO opened would block here: fail instead of hanging
    try:
        store = Store(str(tmp_path))
        update = refresh_ledger(store, "quiz", read_uploads=read_uploads)
        again = refresh_ledger(store, "quiz", read_uploads=read_uploads)
    finally:
        signal.alarm(0)
        server.close()
    rows = {r["path"].rsplit("/", 1)[-1]: (r["status"], r["rule"]) for r in update.ledger.rows}
    expected = {
        "model_a.csv": ("accepted", ""),
        "model_b.csv": ("refused", "not_a_regular_file"),
        "model_c.csv": ("refused", "not_a_regular_file"),
        ".model_e.csv.part": ("skipped", "hidden_name"),
        "..%2fevil.csv": ("skipped", "hidden_name"),
        ".git": ("skipped", "hidden_name"),
    }
    if device:
        expected["model_d.csv"] = ("refused", "not_a_regular_file")
    assert rows == expected
    assert "a FIFO (named pipe), not a regular file" in next(r["message"] for r in update.ledger.rows if "model_b" in r["path"])
    assert again.validated == 0 and not again.written  # nothing read again, nothing rewritten
    summary = read_summary(store, "quiz")
    assert {r["path"].rsplit("/", 1)[-1] for r in summary.skipped} == {".model_e.csv.part", "..%2fevil.csv", ".git"}
    assert {r["rule"] for r in summary.problems} == {"not_a_regular_file"}  # skipped files are no problem
    report = read_quarantine(store)
    assert sorted(report.loc[report["status"] == "skipped", "file"]) == [
        "raw/quiz/..%2fevil.csv",
        "raw/quiz/.git",
        "raw/quiz/.model_e.csv.part",
    ]
    assert (report["status"] == "refused").sum() == 2 + device
    # and the folder reads as unchanged (what Dagster observes of it): these rows do not make it stale run after run
    signal.alarm(60)  # observing opens no special file either
    try:
        assert benchmark_listings(store)["quiz"].digest == benchmark_listings(store)["quiz"].digest
    finally:
        signal.alarm(0)
