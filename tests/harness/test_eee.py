"""Every Eval Ever instance-level files.

The fixture ``tests/data/harness/eee/`` is Every Eval Ever's own output, not hand-written: ``every_eval_ever convert
lm_eval --include_samples`` (every-eval-ever 0.3.0) on real ``lm_eval --model dummy --limit 6 --log_samples`` runs of
the quiz tasks in ``tests/data/harness/lm_eval_tasks`` (EleutherAI/pythia-160m seed 1, acme/parrot-7b seed 2).
every-eval-ever needs Python >= 3.12 and this environment has 3.11, so it ran once in a scratch venv:
``tests/data/harness/make_fixtures.sh`` is the exact recipe. Bad logs are edits of these files in the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agielo_dagster.domain.contract import parse_benchmark_spec
from agielo_dagster.domain.harness import harness_of, read_eee, safe_name

from .conftest import assert_ordinary_uploads, drop_of, edit_record, only_error, store

EEE = Path(__file__).resolve().parents[1] / "data" / "harness" / "eee"


@pytest.fixture(scope="module")
def eee():
    return store(drop_of(EEE, "incoming/eee"))


def _read(drop):
    return read_eee(drop.paths, drop.read)


def _samples_path(drop, task, model):
    (path,) = [p for p in drop.paths if p.startswith(f"incoming/eee/{task}/{model}/") and p.endswith("_samples.jsonl")]
    return path


def _lines(drop, path):
    return [json.loads(line) for line in drop.read(path).decode().splitlines()]


def test_each_samples_file_and_its_aggregate_are_one_drop(eee):
    for path in eee.paths:
        stem = path.removesuffix("_samples.jsonl").removesuffix(".json")
        assert harness_of(path) == ("eee", f"{stem}_samples.jsonl")


def test_evaluations_and_models(eee):
    result = _read(eee)
    assert result.errors == [] and result.ignored == []
    assert sorted((u.original_benchmark, u.original_agent) for u in result.uploads) == [
        ("quiz_gen/strict", "EleutherAI/pythia-160m"),
        ("quiz_gen/upper", "EleutherAI/pythia-160m"),
        ("quiz_mc", "EleutherAI/pythia-160m"),
        ("quiz_mc", "acme/parrot-7b"),
    ]
    for up in result.uploads:
        assert up.benchmark == safe_name(up.original_benchmark) and up.agent == safe_name(up.original_agent)
        assert up.rows.column("test_case_id").to_pylist() == [str(i) for i in range(6)]
        assert len(up.sources) == 2 and up.sources[1].endswith(".json")


def test_values_are_the_records_and_each_result_is_a_column(eee):
    path = _samples_path(eee, "quiz_mc", "EleutherAI/pythia-160m")
    (up,) = [u for u in _read(eee).uploads if u.sources[0] == path]
    assert up.rows.column_names == ["test_case_id", "acc", "acc_norm", "sample_hash", "is_correct"]
    rows = up.rows.to_pandas().set_index("test_case_id")
    records = _lines(eee, path)
    for result_id in ("acc", "acc_norm"):
        expected = {r["sample_id"]: r["evaluation"]["score"] for r in records if r["evaluation_result_id"] == result_id}
        assert rows[result_id].to_dict() == expected
    acc = [r for r in records if r["evaluation_result_id"] == "acc"]
    assert rows["is_correct"].tolist() == [r["evaluation"]["is_correct"] for r in acc]
    assert rows["sample_hash"].tolist() == [r["sample_hash"] for r in acc]
    spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, "benchmark.yaml")
    assert (spec.metric, spec.scoring.name) == ("acc", "identity") and "declared by the log" in spec.description


def test_the_aggregates_metric_config_sets_range_and_direction(eee):
    path = _samples_path(eee, "quiz_mc", "acme/parrot-7b")
    aggregate = path.removesuffix("_samples.jsonl") + ".json"

    def lower_is_better_0_to_5(doc):
        for item in doc["evaluation_results"]:
            item["metric_config"].update(lower_is_better=True, min_score=0, max_score=5)
        return doc

    edited = store(eee, {aggregate: json.dumps(lower_is_better_0_to_5(json.loads(eee.read(aggregate)))).encode()})
    (up,) = [u for u in _read(edited).uploads if u.sources[0] == path]
    spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, "benchmark.yaml")
    assert (spec.scoring.name, spec.scoring.lo, spec.scoring.hi, spec.scoring.higher_is_better) == ("minmax", 0.0, 5.0, False)


def test_without_its_aggregate_the_range_is_inferred(eee):
    path = _samples_path(eee, "quiz_mc", "acme/parrot-7b")
    result = _read(store({path: eee.read(path)}))
    (up,) = result.uploads
    assert up.sources == (path,)
    spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, "benchmark.yaml")
    assert spec.scoring.name == "identity" and "all observed values are in [0, 1]" in spec.description


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_derived_upload_is_accepted_by_the_ordinary_upload_contract(eee, suffix):
    assert_ordinary_uploads(_read(eee).uploads, suffix)


def test_a_truncated_samples_file(eee):
    path = _samples_path(eee, "quiz_mc", "acme/parrot-7b")
    data = eee.read(path)
    result = _read(store(eee, {path: data[: data.rindex(b"\n", 0, len(data) - 1) + 100]}))
    err = only_error(result)
    assert (err.file, err.rule, err.line) == (path, "eee_truncated", 12)
    assert len(result.uploads) == 3


def test_a_record_without_sample_id(eee):
    path = _samples_path(eee, "quiz_gen", "EleutherAI/pythia-160m")

    def drop_id(record):
        del record["sample_id"]
        return record

    err = only_error(_read(edit_record(eee, path, 4, drop_id)))
    assert (err.file, err.rule, err.line) == (path, "sample_id_missing", 5)


def test_a_record_without_score_or_is_correct(eee):
    path = _samples_path(eee, "quiz_mc", "EleutherAI/pythia-160m")

    def drop_metric(record):
        record["evaluation"] = {"num_turns": None}
        return record

    err = only_error(_read(edit_record(eee, path, 3, drop_metric)))
    assert (err.rule, err.line) == ("eee_metric_missing", 4)


def test_is_correct_stands_in_for_a_missing_score(eee):
    path = _samples_path(eee, "quiz_mc", "EleutherAI/pythia-160m")
    records = _lines(eee, path)

    def only_is_correct(record):
        del record["evaluation"]["score"]
        return record

    result = _read(edit_record(eee, path, 0, only_is_correct))
    assert result.errors == []
    (up,) = [u for u in result.uploads if u.sources[0] == path]
    assert up.rows.column(records[0]["evaluation_result_id"])[0].as_py() == float(records[0]["evaluation"]["is_correct"])


def test_a_score_outside_the_declared_range(eee):
    path = _samples_path(eee, "quiz_mc", "EleutherAI/pythia-160m")

    def too_high(record):
        record["evaluation"]["score"] = 3.0
        return record

    err = only_error(_read(edit_record(eee, path, 2, too_high)))
    assert (err.rule, err.line) == ("metric_in_range", 3) and "outside [0, 1]" in str(err)


def test_the_same_sample_twice(eee):
    path = _samples_path(eee, "quiz_mc", "acme/parrot-7b")
    data = eee.read(path)
    err = only_error(_read(store(eee, {path: data + data.splitlines(keepends=True)[0]})))
    assert (err.rule, err.line) == ("sample_id_duplicate", 13)


def test_two_files_claiming_the_same_model_and_evaluation(eee):
    path = _samples_path(eee, "quiz_mc", "acme/parrot-7b")
    result = _read(store(eee, {"incoming/eee/copy_samples.jsonl": eee.read(path)}))
    assert {e.rule for e in result.errors} == {"harness_duplicate"}
    assert sorted(e.file for e in result.errors) == sorted([path, "incoming/eee/copy_samples.jsonl"])
    assert len(result.uploads) == 3


def test_an_aggregate_without_its_samples_file(eee):
    path = _samples_path(eee, "quiz_mc", "acme/parrot-7b")
    aggregate = path.removesuffix("_samples.jsonl") + ".json"
    assert harness_of(aggregate).drop == path
    err = only_error(_read(store({aggregate: eee.read(aggregate)})))
    assert (err.file, err.rule) == (aggregate, "eee_no_samples") and "_samples.jsonl" in str(err)
