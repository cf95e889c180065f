"""Inspect AI ``.eval`` logs, produced at test time by ``inspect eval`` with ``mockllm/<name>`` models (conftest)."""

from __future__ import annotations

import io
import json
import sys
import zipfile

import pytest

from agielo_dagster.domain.contract import parse_benchmark_spec
from agielo_dagster.domain.harness import harness_of, read_inspect, safe_name
from agielo_dagster.domain.harness.inspect_log import score_value

from .conftest import assert_ordinary_uploads, drop_of, only_error, store

pytest.importorskip("inspect_ai", reason="inspect-ai is an optional dependency: pip install -e '.[test]'")


@pytest.fixture(scope="module")
def logs(inspect_logs):
    return store(drop_of(inspect_logs / "logs", "incoming/inspect"))


@pytest.fixture(scope="module")
def later(inspect_logs):
    return store(drop_of(inspect_logs / "later", "incoming/inspect/later"))


def _read(drop, **kw):
    return read_inspect(drop.paths, drop.read, **kw)


def _log(drop, task: str, model: str):
    from inspect_ai.log import read_eval_log

    for path in drop.paths:
        log = read_eval_log(io.BytesIO(drop.read(path)), format="eval")
        if log.eval.task == task and log.eval.model == model:
            return path, log
    raise AssertionError(f"no log of {task} by {model}")


def _upload(result, task, model):
    (up,) = [u for u in result.uploads if u.original_benchmark == task and u.original_agent == model]
    return up


@pytest.mark.parametrize(
    "value, expected", [("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0), (True, 1.0), (False, 0.0), (7, 7.0), (0.25, 0.25)]
)
def test_score_values(value, expected):
    assert score_value(value) == expected


@pytest.mark.parametrize("value", ["correct", "c", None, [1], {"a": 1}])
def test_other_score_values_are_not_numbers(value):
    assert score_value(value) is None


def test_each_log_is_its_own_drop(logs):
    assert {harness_of(p) for p in logs.paths} == {("inspect", p) for p in logs.paths}


def test_two_models_two_tasks_give_four_uploads(logs):
    result = _read(logs)
    assert result.errors == [] and result.ignored == []
    assert sorted((u.original_benchmark, u.original_agent) for u in result.uploads) == [
        ("arith quiz", "mockllm/alpha"),
        ("arith quiz", "mockllm/beta"),
        ("graded", "mockllm/alpha"),
        ("graded", "mockllm/beta"),
    ]
    up = _upload(result, "arith quiz", "mockllm/alpha")
    assert (up.benchmark, up.agent) == (safe_name("arith quiz"), safe_name("mockllm/alpha"))
    assert up.benchmark.startswith("arith_quiz-") and up.agent.startswith("mockllm__alpha-")
    assert up.harness == "inspect" and len(up.sources) == 1


def test_epochs_are_averaged_like_inspects_own_mean_reducer(logs):
    result = _read(logs)
    for model in ("mockllm/alpha", "mockllm/beta"):
        path, log = _log(logs, "arith quiz", model)
        up = _upload(result, "arith quiz", model)
        rows = up.rows.to_pandas().set_index("test_case_id")
        assert up.metric == "match" and len(rows) == 12 and set(rows["epochs"]) == {2}
        by_sample: dict[str, list[float]] = {}
        for s in log.samples:
            by_sample.setdefault(str(s.id), []).append({"C": 1.0, "I": 0.0}[s.scores["match"].value])
        assert rows["match"].to_dict() == {k: sum(v) / len(v) for k, v in by_sample.items()}
        (reduction,) = log.reductions
        assert rows["match"].to_dict() == {str(s.sample_id): s.value for s in reduction.samples}
        assert rows["match"].mean() == pytest.approx(log.results.scores[0].metrics["accuracy"].value)
        spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, "benchmark.yaml")
        assert spec.scoring.name == "identity" and "assumed" in spec.description
    alpha = _upload(result, "arith quiz", "mockllm/alpha").rows.column("match").to_numpy().mean()
    beta = _upload(result, "arith quiz", "mockllm/beta").rows.column("match").to_numpy().mean()
    assert alpha < beta, "beta is the more skilled mock model"


def test_epochs_as_separate_test_cases(logs):
    up = _upload(_read(logs, epochs="separate"), "arith quiz", "mockllm/alpha")
    rows = up.rows.to_pandas()
    assert len(rows) == 24 and "q00#1" in set(rows["test_case_id"]) and "q00#2" in set(rows["test_case_id"])
    assert set(rows["epoch"]) == {1, 2} and rows.loc[rows["test_case_id"] == "q03#2", "sample_id"].item() == "q03"


def test_a_numeric_first_scorer_gets_a_minmax_spec_and_the_second_scorer_is_kept(logs):
    result = _read(logs)
    up = _upload(result, "graded", "mockllm/alpha")
    _, log = _log(logs, "graded", "mockllm/alpha")
    assert up.rows.column_names == ["test_case_id", "points", "match", "epochs"]
    rows = up.rows.to_pandas().set_index("test_case_id")
    assert rows["points"].to_dict() == {str(s.id): s.scores["points"].value for s in log.samples}
    assert rows["match"].to_dict() == {str(s.id): score_value(s.scores["match"].value) for s in log.samples}
    spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, "benchmark.yaml")
    assert spec.metric == "points"
    assert (spec.scoring.name, spec.scoring.lo, spec.scoring.hi) == ("minmax", 0.0, rows["points"].max())
    assert rows["points"].max() == 10.0 and rows["points"].min() < 10.0


def test_a_later_models_log_adds_an_agent_to_the_benchmark(logs, later):
    result = _read(store(logs, later))
    quiz = [u for u in result.uploads if u.original_benchmark == "arith quiz"]
    assert sorted(u.original_agent for u in quiz) == ["mockllm/alpha", "mockllm/beta", "mockllm/gamma"]
    assert len({u.benchmark for u in quiz}) == 1
    assert len({tuple(u.rows.column("test_case_id").to_pylist()) for u in quiz}) == 1


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_derived_upload_is_accepted_by_the_ordinary_upload_contract(logs, later, suffix):
    assert_ordinary_uploads(_read(store(logs, later)).uploads, suffix)


def test_a_json_format_log_reads_like_the_eval_log(logs, tmp_path):
    """The same log written by inspect_ai in its JSON format (``--log-format json``) gives the same upload."""
    from inspect_ai.log import write_eval_log

    path, log = _log(logs, "arith quiz", "mockllm/beta")
    write_eval_log(log, str(tmp_path / "quiz.json"), format="json")
    json_log = store({"incoming/inspect/quiz.json": (tmp_path / "quiz.json").read_bytes()})
    (from_json,) = _read(json_log).uploads
    from_eval = _upload(_read(logs), "arith quiz", "mockllm/beta")
    assert from_json.rows.equals(from_eval.rows) and from_json.spec_yaml == from_eval.spec_yaml
    assert (from_json.benchmark, from_json.agent) == (from_eval.benchmark, from_eval.agent)

    doc = json.loads((tmp_path / "quiz.json").read_bytes())
    del doc["samples"][4]["id"]
    err = only_error(_read(store({"incoming/inspect/quiz.json": json.dumps(doc).encode()})))
    assert (err.rule, err.row) == ("sample_id_missing", 5) and "sample 5 has no id" in str(err)


# -- bad logs ---------------------------------------------------------------------------------------------------------


def test_a_sample_that_errored_and_a_run_that_failed(later):
    result = _read(later)
    errors = {e.rule: e for e in result.errors}
    assert set(errors) == {"inspect_score_missing", "inspect_log_status"}
    assert "_flaky_" in errors["inspect_score_missing"].file and "_broken_" in errors["inspect_log_status"].file
    assert "sample 'q02' epoch 1 has no score (it errored: RuntimeError('tool crashed on q02'))" in str(
        errors["inspect_score_missing"]
    )
    assert "log status is 'error'" in str(errors["inspect_log_status"])
    assert [u.original_benchmark for u in result.uploads] == ["arith quiz"]


def test_a_truncated_log(logs):
    path = logs.paths[0]
    result = _read(store(logs, {path: logs.read(path)[:5000]}))
    err = only_error(result)
    assert (err.file, err.rule) == (path, "inspect_truncated")
    assert len(result.uploads) == 3


def _rewrite_member(data: bytes, member: str, edit) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            content = src.read(info.filename)
            if info.filename == member:
                content = json.dumps(edit(json.loads(content))).encode()
            dst.writestr(info, content)
    return out.getvalue()


def test_a_sample_without_id(logs):
    path, _ = _log(logs, "arith quiz", "mockllm/alpha")

    def drop_id(sample):
        del sample["id"]
        return sample

    bad = _rewrite_member(logs.read(path), "samples/q03_epoch_2.json", drop_id)
    err = only_error(_read(store(logs, {path: bad})))
    assert (err.file, err.rule) == (path, "sample_id_missing")
    assert "sample samples/q03_epoch_2.json (epoch 2) has no id" in str(err)


def test_a_score_that_is_no_known_value(logs):
    path, _ = _log(logs, "arith quiz", "mockllm/beta")

    def odd_score(sample):
        sample["scores"]["match"]["value"] = "maybe"
        return sample

    err = only_error(_read(store(logs, {path: _rewrite_member(logs.read(path), "samples/q05_epoch_1.json", odd_score)})))
    assert err.rule == "inspect_score_value" and "sample 'q05' epoch 1: score 'match' is 'maybe'" in str(err)


def test_the_same_log_twice_claims_the_same_model_and_task(logs):
    path, _ = _log(logs, "graded", "mockllm/alpha")
    copy = "incoming/inspect/copy-of-graded.eval"
    result = _read(store(logs, {copy: logs.read(path)}))
    assert sorted(e.file for e in result.errors) == sorted([path, copy])
    assert {e.rule for e in result.errors} == {"harness_duplicate"}
    assert ("graded", "mockllm/alpha") not in {(u.original_benchmark, u.original_agent) for u in result.uploads}
    assert len(result.uploads) == 3


def test_a_json_file_that_is_no_inspect_log(logs):
    result = _read(store({"incoming/inspect/notes.json": b'{"hello": "world"}'}))
    err = only_error(result)
    assert err.rule in ("inspect_log_invalid", "inspect_unreadable") and err.file == "incoming/inspect/notes.json"


def test_without_inspect_ai_installed_every_log_is_one_clear_error(logs, monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if the optional dependency were absent
    result = _read(logs)
    assert {e.rule for e in result.errors} == {"inspect_not_installed"} and len(result.errors) == 4
    assert "pip install 'agielo-dagster[harness]'" in str(result.errors[0])
