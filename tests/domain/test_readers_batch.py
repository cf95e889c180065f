"""read_uploads (several uploads checked together) gives each file exactly the outcome read_upload gives it alone:
the same table, or the same error naming the same file, row, line and rule."""

from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agielo_dagster.domain.contract import IngestError, parse_benchmark_spec
from agielo_dagster.domain.readers import read_upload, read_uploads

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad" / "uploads"
LIMIT = 64 * 1024  # as the corpus's own tests
IDENTITY = parse_benchmark_spec(b"metric: correct\nscoring: identity\n", "batch", "raw/batch/benchmark.yaml")
LOWER_IS_BETTER = parse_benchmark_spec(
    b"metric: correct\nscoring: minmax\nparams: {lo: 0, hi: 10, higher_is_better: false}\n",
    "batch",
    "raw/batch/benchmark.yaml",
)


def alone(data: bytes, file: str, spec) -> pa.Table | IngestError:
    try:
        return read_upload(data, file, spec, max_bytes=LIMIT)
    except IngestError as err:
        return err


def assert_same_outcomes(items: list[tuple[bytes, str]], spec) -> list:
    together = read_uploads(items, spec, max_bytes=LIMIT)
    assert len(together) == len(items)
    for (data, file), got in zip(items, together, strict=True):
        want = alone(data, file, spec)
        if isinstance(want, IngestError):
            assert isinstance(got, IngestError), file
            assert (str(got), got.rule, got.row, got.line) == (str(want), want.rule, want.row, want.line)
        else:
            assert isinstance(got, pa.Table), f"{file}: {got}"
            assert got.schema == want.schema and got.equals(want), file
    return together


def valid(agent: int, rows: int = 5) -> tuple[bytes, str]:
    body = "".join(f"case-{i},{(agent + i) % 2}\n" for i in range(rows))
    return f"test_case_id,correct\n{body}".encode(), f"raw/batch/model_{agent}.csv"


def test_the_bad_corpus_among_good_uploads_keeps_each_files_outcome():
    corpus = sorted(CORPUS.iterdir())
    items = [valid(a) for a in range(3)]
    items += [(p.read_bytes(), f"raw/batch/{p.name}") for p in corpus]
    items += [valid(a) for a in range(3, 6)]
    together = assert_same_outcomes(items, IDENTITY)
    assert sum(isinstance(t, IngestError) for t in together) >= 50  # the corpus is mostly rejections
    assert all(isinstance(t, pa.Table) for t in together[:3] + together[-3:])


def test_uploads_sharing_test_cases_are_each_accepted_whole():
    """Ids repeat across files by design (every agent meets the same test cases); only within a file is one a duplicate."""
    items = [valid(a, rows=40) for a in range(50)]
    together = assert_same_outcomes(items, IDENTITY)
    assert [t.num_rows for t in together] == [40] * 50
    assert together[7].column("test_case_id").to_pylist() == [f"case-{i}" for i in range(40)]


def test_files_over_the_together_size_are_checked_alone_with_the_same_outcomes(monkeypatch):
    """In this process (the decoder process does not see the patched size)."""
    from agielo_dagster.domain.readers import upload

    items = [valid(a) for a in range(4)] + [(b"test_case_id,correct\na,1\n", "raw/batch/tiny_1.csv")]
    items += [
        (b"test_case_id,correct\nb,0\n", "raw/batch/tiny_2.csv"),
        (b"test_case_id,correct\nc,0\nc,1\n", "raw/batch/tiny_3.csv"),
    ]
    want = upload._read_uploads(items, IDENTITY, LIMIT)
    monkeypatch.setattr(upload, "TOGETHER_BYTES", 60)  # the 5-row files below are 80-odd bytes: each goes alone
    alone = upload._read_uploads(items, IDENTITY, LIMIT)
    for got, expected in zip(alone, want, strict=True):
        assert type(got) is type(expected) and (
            str(got) == str(expected) if isinstance(got, IngestError) else got.equals(expected)
        )
    assert [isinstance(t, pa.Table) for t in alone] == [True] * 6 + [False]


def test_one_duplicate_among_many_rejects_only_its_own_file():
    items = [valid(a) for a in range(20)]
    items[11] = (b"test_case_id,correct\ncase-0,1\ncase-1,0\ncase-0,1\n", "raw/batch/model_11.csv")
    together = assert_same_outcomes(items, IDENTITY)
    assert [i for i, t in enumerate(together) if isinstance(t, IngestError)] == [11]
    assert together[11].rule == "test_case_id_unique" and together[11].row == 3


# a small csv upload, clean or broken in one of the ways the contract names
broken = st.sampled_from(["", "dup", "empty_metric", "text_metric", "padded", "empty_id", "out_of_range", "blank"])


@st.composite
def uploads(draw):
    items = []
    for agent in range(draw(st.integers(min_value=1, max_value=8))):
        rows = draw(st.integers(min_value=1, max_value=6))
        values = [str(draw(st.sampled_from([0, 1, 0.5, 10, 2.25, 7]))) for _ in range(rows)]
        ids = [f"case-{i}" for i in range(rows)]
        flaw = draw(broken)
        r = draw(st.integers(min_value=0, max_value=rows - 1))
        if flaw == "dup" and rows > 1:
            ids[r] = ids[r - 1] if r else ids[1]
        elif flaw == "empty_metric":
            values[r] = ""
        elif flaw == "text_metric":
            values[r] = "yes"
        elif flaw == "padded":
            ids[r] = " " + ids[r]
        elif flaw == "empty_id":
            ids[r] = ""
        elif flaw == "out_of_range":
            values[r] = "11"
        note = draw(st.booleans())  # a metadata column: files of other columns are checked in their own group
        header = "test_case_id,correct" + (",note" if note else "")
        lines = [f"{i},{v}" + (f",n{k}" if note else "") for k, (i, v) in enumerate(zip(ids, values, strict=True))]
        if flaw == "blank":
            lines.insert(r, "," + ("," if note else ""))
        items.append((("\n".join([header, *lines]) + "\n").encode(), f"raw/batch/model_{agent}.csv"))
    return items


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=uploads(), lower=st.booleans())
def test_any_batch_of_small_csv_uploads_gives_each_its_own_outcome(items, lower):
    assert_same_outcomes(items, LOWER_IS_BETTER if lower else IDENTITY)
