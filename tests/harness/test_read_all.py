"""A storage listing with drops of all four harnesses, read as the pipeline will: drops_of, read_drop, read_all."""

from __future__ import annotations

from pathlib import Path

from agielo_dagster.domain.contract import check_name
from agielo_dagster.domain.harness import drops_of, read_all
from agielo_dagster.domain.harness.registry import PRECEDENCE

from .conftest import drop_of, store

DATA = Path(__file__).resolve().parents[1] / "data" / "harness"


def _root(lm_eval_logs, inspect_logs):
    return store(
        drop_of(lm_eval_logs / "run1", "incoming/lm-eval/run1"),
        drop_of(lm_eval_logs / "run2", "incoming/lm-eval/run2"),
        drop_of(inspect_logs / "logs", "incoming/inspect"),
        drop_of(DATA / "helm", "incoming/helm"),
        drop_of(DATA / "eee", "incoming/eee"),
        {"raw/quiz/agent.csv": b"test_case_id,correct\n1,1\n", "incoming/README.txt": b"notes"},
    )


def test_a_listing_groups_into_drops(lm_eval_logs, inspect_logs):
    root = _root(lm_eval_logs, inspect_logs)
    drops = drops_of(root.paths)
    assert sorted({d.harness for d in drops}) == ["eee", "helm", "inspect", "lm-eval"]
    assert [d.drop for d in drops if d.harness in ("lm-eval", "helm")] == [
        "incoming/helm/agielo",
        "incoming/lm-eval/run1",
        "incoming/lm-eval/run2",
    ]
    assert sum(d.harness == "inspect" for d in drops) == 4 and sum(d.harness == "eee" for d in drops) == 3
    grouped = [p for paths in drops.values() for p in paths]
    assert sorted(grouped) == sorted(p for p in root.paths if p.startswith("incoming/") and p != "incoming/README.txt")


def test_every_drop_read_at_once(lm_eval_logs, inspect_logs):
    root = _root(lm_eval_logs, inspect_logs)
    without_eee = store({p: b for p, b in root.items() if not p.startswith("incoming/eee/")})
    result = read_all(without_eee.paths, without_eee.read)
    assert result.errors == []
    assert len(result.uploads) == 6 + 4 + 3  # lm-eval 2 models × 3, Inspect 2 × 2, HELM 3
    assert len({(u.benchmark, u.agent) for u in result.uploads}) == len(result.uploads)
    for up in result.uploads:
        check_name(up.benchmark, "benchmark", up.sources[0])
        check_name(up.agent, "agent", up.sources[0])
        assert set(up.sources) <= set(root.paths)


def test_one_model_and_task_as_lm_eval_output_and_as_eee_keeps_the_lm_eval_log_and_names_the_other(lm_eval_logs, inspect_logs):
    """The EEE fixture converts lm-eval runs of quiz_mc by the same two models: the harness precedence keeps the
    lm-eval logs (the run itself, not its conversion), and each EEE log not used is named with the one kept; the
    models are never dropped from the benchmark."""
    root = _root(lm_eval_logs, inspect_logs)
    result = read_all(root.paths, root.read)
    assert PRECEDENCE.index("lm-eval") < PRECEDENCE.index("eee")
    assert {e.rule for e in result.errors} == {"harness_duplicate"} and len(result.errors) == 2
    assert {e.file.split("/")[1] for e in result.errors} == {"eee"}
    assert all(
        "the harness precedence lm-eval > inspect > helm > eee takes it from incoming/lm-eval/" in str(e) for e in result.errors
    ), [str(e) for e in result.errors]
    kept = {(u.benchmark, u.original_agent): u.harness for u in result.uploads}
    assert kept[("quiz_mc", "EleutherAI/pythia-160m")] == kept[("quiz_mc", "acme/parrot-7b")] == "lm-eval"
    assert len(result.uploads) == 6 + 4 + 3 + (4 - 2)


def test_the_same_log_in_two_drops_is_refused_in_both(lm_eval_logs, inspect_logs):
    root = store({p: b for p, b in _root(lm_eval_logs, inspect_logs).items() if not p.startswith("incoming/eee/")})
    copy = {
        p.replace("incoming/lm-eval/run2/", "incoming/lm-eval/run2-again/"): b
        for p, b in root.items()
        if p.startswith("incoming/lm-eval/run2/")
    }
    result = read_all([*root.paths, *copy], store(root, copy).read)
    assert {e.rule for e in result.errors} == {"harness_duplicate"} and len(result.errors) == 6
    assert {u.original_agent for u in result.uploads if u.harness == "lm-eval"} == {"EleutherAI/pythia-160m"}


def test_the_incoming_ledger_keeps_the_lm_eval_log_of_a_model_that_eee_also_converted(lm_eval_logs, tmp_path):
    """The pipeline's path (incoming/ → warehouse/derived/): the same clash across drops writes the lm-eval upload of
    each model, and the incoming ledger names each EEE log not used."""
    import json

    from agielo_dagster.domain.incoming import read_incoming, refresh_incoming
    from agielo_dagster.domain.store import Store as Storage

    files = {**drop_of(lm_eval_logs / "run1", "incoming/lm-eval/run1"), **drop_of(DATA / "eee", "incoming/eee")}
    for path, data in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    store = Storage(root=str(tmp_path))
    refresh_incoming(store)
    derived = sorted(p.name for p in (tmp_path / "warehouse/derived/quiz_mc").glob("*.parquet"))
    assert "EleutherAI__pythia-160m-96564b34.parquet" in derived  # kept, from lm-eval
    errors = [e for r in read_incoming(store) for e in json.loads(r["errors"])]
    clash = [e for e in errors if e["rule"] == "harness_duplicate"]
    assert clash and all(
        e["file"].startswith("incoming/eee/") and "takes it from incoming/lm-eval/run1" in e["message"] for e in clash
    ), errors


def test_the_run_summary_names_the_benchmarks_a_task_became(tmp_path):
    """Every Eval Ever's quiz_gen has two evaluations (lm-eval filters strict and upper): it becomes two benchmarks,
    with names made safe, and the summary says which task each one is and why."""
    import io

    from agielo_dagster.cli import RunSummary, print_summary
    from agielo_dagster.domain.incoming import refresh_incoming
    from agielo_dagster.domain.store import Store as Storage

    for path, data in drop_of(DATA / "eee", "incoming/eee").items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    store = Storage(root=str(tmp_path))
    refresh_incoming(store)
    out = io.StringIO()
    print_summary(store, RunSummary(), out=out)
    line = next((s for s in out.getvalue().splitlines() if "named apart from their harness task" in s), "")
    assert "quiz_gen__strict-73b27020 ('quiz_gen/strict'), quiz_gen__upper-8b43e46c ('quiz_gen/upper')" in line, out.getvalue()
    assert "is a benchmark of its own" in line and "quiz_mc" not in line
