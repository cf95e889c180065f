"""Nothing lost, nothing let in: the bad-upload corpus through the real pipeline."""

import hashlib
import re
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from agielo_dagster.resources.storage import ObjectStorage

from agielo_dagster.cli import print_summary

from .conftest import BENCHMARK_OUTPUTS, Daemon, accepted_copy, write_benchmark

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad"
UNSAFE = {"a..b.csv": "safe_name", "back\\slash.csv": "safe_name", "bell\x07.csv": "safe_name", "x" * 200 + ".csv": "safe_name"}


def corpus_table() -> list[tuple[str, str]]:
    rows = re.findall(r"^\| (uploads/\S+|benchmarks/\S+) \|.*\| (\S+) \|$", (CORPUS / "README.md").read_text(), flags=re.M)
    assert len(rows) >= 25
    return rows


def raw_path(entry: str) -> str:
    """Where a corpus entry lands in the storage root."""
    if entry.startswith("uploads/"):
        return f"raw/corpus/{entry.removeprefix('uploads/')}"
    return f"raw/{entry.removeprefix('benchmarks/').rstrip('/')}/model_a.csv"


def digest_tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def ledger_agents(root, benchmark: str) -> list[str]:
    table = pd.read_parquet(root / f"warehouse/upload_ledger/{benchmark}.parquet")
    return sorted(table.loc[table["status"] == "accepted", "agent"])


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("bad_corpus")
    root = base / "storage"
    storage = ObjectStorage(root=str(root), max_upload_bytes=64 * 1024)
    write_benchmark(root, "corpus", [1300, 1500, 1700])
    write_benchmark(root, "bystander", [1400, 1800], seed=5)
    with dg.instance_for_test() as instance:
        daemon = Daemon(storage, instance)
        daemon.settle()
        before = {
            "bystander": {a: (root / f"warehouse/{a}/bystander.parquet").read_bytes() for a in BENCHMARK_OUTPUTS},
            "accepted": {a: accepted_copy(root, "corpus", a) for a in ledger_agents(root, "corpus")},
        }
        shutil.copytree(CORPUS / "uploads", root / "raw/corpus", dirs_exist_ok=True)
        for folder in (CORPUS / "benchmarks").iterdir():
            shutil.copytree(folder, root / "raw" / folder.name)
        for name in UNSAFE:
            (root / "raw/corpus" / name).write_text("test_case_id,correct\ntc_00,1\n")
        (root / "raw/corpus/nested").mkdir()
        (root / "raw/corpus/nested/deep.csv").write_text("test_case_id,correct\ntc_00,1\n")
        (root / "raw/stray.csv").write_text("test_case_id,correct\ntc_00,1\n")
        raw_before = digest_tree(root / "raw")
        outside_before = sorted(p.name for p in base.iterdir())
        daemon.settle()
        report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
        yield {
            "root": root,
            "base": base,
            "daemon": daemon,
            "before": before,
            "raw_before": raw_before,
            "outside_before": outside_before,
            "report": report,
            "storage": storage,
        }


@pytest.mark.parametrize("entry, rule", corpus_table())
def test_each_bad_upload_has_its_documented_outcome(corpus_run, entry, rule):
    root, report = corpus_run["root"], corpus_run["report"]
    path = raw_path(entry)
    benchmark, agent = path.split("/")[1], path.split("/")[2].rsplit(".", 1)[0]
    if rule == "accepted":
        assert accepted_copy(root, benchmark, agent) is not None
        assert path not in set(report["file"])
        assert agent in set(pd.read_parquet(root / "warehouse/agent_ratings/corpus.parquet")["agent_id"])
        return
    rows = report[report["file"] == path]  # one row per file, accepted uploads in none
    assert len(rows) == 1, f"{entry}: expected one quarantine row, got {rows.to_dict('records')}"
    row = rows.iloc[0]
    assert row["rule"] == rule, row["message"]
    assert row["status"] == ("refused" if rule in ("log_format", "safe_name", "layout", "symlink") else "rejected")
    # a spec problem quarantines the upload and names benchmark.yaml as the file to fix
    culprit = f"raw/{benchmark}/benchmark.yaml" if entry.startswith("benchmarks/") else row["file"]
    assert row["message"].startswith(culprit) and f"(rule: {rule})" in row["message"]
    if rule == "one_file_per_agent":
        assert "twin.csv" in row["message"] and "twin.jsonl" in row["message"]
    assert accepted_copy(root, benchmark, agent) is None


def test_row_level_rejections_name_the_row(corpus_run):
    messages = dict(zip(corpus_run["report"]["file"], corpus_run["report"]["message"], strict=True))
    assert "data row 5 (line 6): correct 'yes' is not a number" in messages["raw/corpus/non_numeric.csv"]
    assert (
        "data row 11 (line 12): test case 'tc_03' appears again (first at data row 4)" in messages["raw/corpus/duplicate_ids.csv"]
    )
    assert "wrong delimiter?" in messages["raw/corpus/semicolons.csv"]
    assert "limit is 65,536" in messages["raw/corpus/far_too_large.csv"]
    assert "benchmark.yaml is not valid YAML at line 3, column 1" in messages["raw/malformed_yaml/model_a.csv"]


def test_unsafe_names_are_refused_before_any_path_is_built(corpus_run):
    report, daemon = corpus_run["report"], corpus_run["daemon"]
    for name, rule in UNSAFE.items():
        (row,) = report[report["file"] == f"raw/corpus/{name}"].itertuples()
        assert row.rule == rule
    layout = set(report.loc[report["rule"] == "layout", "file"])
    assert layout == {"raw/corpus/nested/deep.csv", "raw/stray.csv"}
    agents = set(daemon.instance.get_dynamic_partitions("agents"))
    assert not {n.removesuffix(".csv") for n in UNSAFE} & agents and "deep" not in agents
    # nothing was written next to the storage root
    assert sorted(p.name for p in corpus_run["base"].iterdir()) == corpus_run["outside_before"]


def test_other_benchmarks_and_agents_stay_byte_identical(corpus_run):
    root, before = corpus_run["root"], corpus_run["before"]
    assert {a: (root / f"warehouse/{a}/bystander.parquet").read_bytes() for a in BENCHMARK_OUTPUTS} == before["bystander"]
    for agent, copy in before["accepted"].items():
        pd.testing.assert_frame_equal(accepted_copy(root, "corpus", agent), copy)


def test_raw_files_are_never_modified_or_deleted(corpus_run):
    assert digest_tree(corpus_run["root"] / "raw") == corpus_run["raw_before"]


def test_good_uploads_of_broken_benchmarks_elsewhere_still_rate(corpus_run):
    # the corpus benchmark is rated on its good uploads despite every rejection beside them
    agents = set(pd.read_parquet(corpus_run["root"] / "warehouse/agent_ratings/corpus.parquet")["agent_id"])
    accepted = {raw_path(e).split("/")[2].rsplit(".", 1)[0] for e, rule in corpus_table() if rule == "accepted"}
    assert agents == {"agent_0", "agent_1", "agent_2"} | accepted


def test_agielo_run_shows_every_rejection(corpus_run):
    import io

    from agielo_dagster.cli import RunSummary

    out = io.StringIO()
    print_summary(corpus_run["storage"].store, RunSummary(), out=out)
    text = out.getvalue()
    for entry, rule in corpus_table():
        if rule != "accepted":
            assert f"(rule: {rule})" in text
            if entry.startswith("uploads/") and rule != "one_file_per_agent":
                assert raw_path(entry) in text
    problem_lines = [line for line in text.splitlines() if line.startswith(("  rejected: ", "  refused: "))]
    assert len(problem_lines) == len(corpus_run["report"])  # one line per problem


def test_a_fixed_upload_is_picked_up_again(corpus_run):
    root, daemon = corpus_run["root"], corpus_run["daemon"]
    fixed = pd.read_csv(CORPUS / "uploads/non_numeric.csv", dtype=str).assign(correct="1")
    (root / "raw/corpus/non_numeric.csv").write_text(fixed.to_csv(index=False))
    daemon.settle()
    report = pd.read_parquet(root / "warehouse/quarantine_report/_all.parquet")
    assert "raw/corpus/non_numeric.csv" not in set(report["file"])
    assert "non_numeric" in set(pd.read_parquet(root / "warehouse/agent_ratings/corpus.parquet")["agent_id"])
