"""Accepted copies: small uploads share files, and every copy is what a build from scratch writes, whatever the history."""

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agielo_dagster.domain import copies as copies_module
from agielo_dagster.domain.copies import AcceptedCopies, bucket_file
from agielo_dagster.domain.ledger import read_ledger, refresh_ledger
from agielo_dagster.domain.matches import build_match_table
from agielo_dagster.domain.readers import read_uploads
from agielo_dagster.domain.store import Store

AGENTS = [f"model_{a}" for a in range(6)]


def upload(rows: int, seed: int, meta: bool) -> str:
    header = "test_case_id,correct" + (",split" if meta else "")
    lines = [f"case-{i},{(i * 7 + seed) % 2}" + (",dev" if meta else "") for i in range(rows)]
    return "\n".join([header, *lines]) + "\n"


def refresh(root):
    store = Store(str(root))
    update = refresh_ledger(store, "quiz", read_uploads=read_uploads)
    return store, update


def state(root) -> dict:
    """What the refresh left: every copy's bytes, the ledger's rows and the match table."""
    store = Store(str(root))
    folder = root / "warehouse" / "accepted" / "quiz"
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}
    ledger = read_ledger(store, "quiz")
    table = build_match_table(store, ledger)
    return {"files": files, "ledger": ledger.rows, "matches": table}


def write_raw(root, uploads: dict[str, str]) -> None:
    folder = root / "raw" / "quiz"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "benchmark.yaml").write_text("metric: correct\nscoring: binary\n")
    for agent, text in uploads.items():
        (folder / f"{agent}.csv").write_text(text)


@pytest.fixture
def few_buckets(monkeypatch):
    """Two shared files and uploads of at most 3 rows shared: every history meets a shared file's other members."""
    monkeypatch.setattr(copies_module, "BUCKETS", 2)
    monkeypatch.setattr(copies_module, "SMALL_ROWS", 3)


steps = st.lists(
    st.dictionaries(
        st.sampled_from(AGENTS),
        st.one_of(
            st.none(),  # removed
            st.tuples(st.integers(1, 5), st.integers(0, 3), st.booleans()),  # rows (over 3: a file of its own), seed, metadata
        ),
        min_size=1,
        max_size=4,
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=steps)
def test_any_history_of_uploads_leaves_the_copies_a_fresh_build_writes(tmp_path_factory, few_buckets, history):
    base = tmp_path_factory.mktemp("history")
    uploads: dict[str, str] = {}
    for step in history:
        for agent, change in step.items():
            if change is None:
                uploads.pop(agent, None)
            else:
                uploads[agent] = upload(*change)
        write_raw(base / "incremental", uploads)
        refresh(base / "incremental")
        fresh = base / f"fresh_{len(list(base.iterdir()))}"
        write_raw(fresh, uploads)
        refresh(fresh)
        assert state(base / "incremental") == state(fresh)


def test_a_new_small_upload_rewrites_only_its_own_shared_file(tmp_path):
    write_raw(tmp_path, {a: upload(5, i, False) for i, a in enumerate(AGENTS)})
    refresh(tmp_path)
    folder = tmp_path / "warehouse" / "accepted" / "quiz"
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert all(name.startswith("_bucket-") for name in before) and len(before) > 1
    (tmp_path / "raw" / "quiz" / "newcomer.csv").write_text(upload(4, 1, False))
    _, update = refresh(tmp_path)
    assert update.validated == 1
    after = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    changed = {name for name in after if before.get(name) != after[name]}
    assert changed == {bucket_file("newcomer")}


def test_a_damaged_shared_file_is_made_again_from_its_uploads(tmp_path):
    write_raw(tmp_path, {a: upload(5, i, False) for i, a in enumerate(AGENTS)})
    refresh(tmp_path)
    expected = state(tmp_path)
    damaged = tmp_path / "warehouse" / "accepted" / "quiz" / bucket_file(AGENTS[0])
    damaged.write_bytes(damaged.read_bytes()[:20])
    store, update = refresh(tmp_path)
    members = [a for a in AGENTS if bucket_file(a) == bucket_file(AGENTS[0])]
    assert update.validated == len(members)  # only its own uploads are read again
    assert state(tmp_path) == expected
    assert all(AcceptedCopies.read(store, "quiz").holds(r) for r in read_ledger(store, "quiz").accepted)
