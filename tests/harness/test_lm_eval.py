"""lm-evaluation-harness ``--log_samples`` output, produced at test time by ``lm_eval --model dummy`` (conftest)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from agielo_dagster.domain.contract import check_name, parse_benchmark_spec
from agielo_dagster.domain.harness import harness_of, read_lm_eval, safe_name
from agielo_dagster.rating import rate

from .conftest import as_ordinary_upload, assert_ordinary_uploads, drop_of, edit_record, only_error, store

PYTHIA, PARROT = "EleutherAI/pythia-160m", "acme/parrot-7b"


def _read(drop):
    return read_lm_eval(drop.paths, drop.read)


@pytest.fixture(scope="module")
def run1(lm_eval_logs):
    return store(drop_of(lm_eval_logs / "run1", "incoming/lm-eval/run1"))


@pytest.fixture(scope="module")
def run2(lm_eval_logs):
    return store(drop_of(lm_eval_logs / "run2", "incoming/lm-eval/run2"))


def _latest(drop, pattern: str) -> str:
    return max(p for p in drop.paths if re.search(pattern, p))


def _samples(drop, task: str) -> list[dict]:
    return [json.loads(line) for line in drop.read(_latest(drop, f"/samples_{task}_")).decode().splitlines()]


def _upload(result, benchmark):
    (up,) = [u for u in result.uploads if u.benchmark == benchmark]
    return up


def test_every_path_of_a_run_folder_belongs_to_its_drop(run1):
    assert {harness_of(p) for p in run1.paths} == {("lm-eval", "incoming/lm-eval/run1")}


def test_a_multi_task_run_fans_out_into_one_benchmark_per_task_and_per_filter(run1):
    result = _read(run1)
    assert result.errors == []
    assert sorted(u.benchmark for u in result.uploads) == ["quiz_gen.strict", "quiz_gen.upper", "quiz_mc"]
    for up in result.uploads:
        assert up.original_agent == PYTHIA and up.agent == safe_name(PYTHIA)
        assert check_name(up.agent, "agent", "x") and check_name(up.benchmark, "benchmark", "x")
        assert up.harness == "lm-eval" and up.rows.num_rows == 12
        assert up.rows.column("test_case_id").to_pylist() == [str(i) for i in range(12)]
    assert _upload(result, "quiz_gen.strict").original_benchmark == "quiz_gen.strict"
    assert _upload(result, "quiz_mc").original_benchmark == "quiz_mc"


def test_metric_values_are_the_samples_and_average_to_the_results_file(run1):
    up = _upload(_read(run1), "quiz_mc")
    samples = {str(s["doc_id"]): s for s in _samples(run1, "quiz_mc")}
    rows = up.rows.to_pandas().set_index("test_case_id")
    assert up.metric == "acc"
    assert rows["acc"].to_dict() == {k: float(s["acc"]) for k, s in samples.items()}
    assert rows["acc_norm"].to_dict() == {k: float(s["acc_norm"]) for k, s in samples.items()}
    assert rows["doc_hash"].to_dict() == {k: s["doc_hash"] for k, s in samples.items()}
    assert set(rows["filter"]) == {"none"}
    results = json.loads(run1.read(_latest(run1, "/results_")))
    assert rows["acc"].mean() == pytest.approx(results["results"]["quiz_mc"]["acc,none"])
    assert rows["acc_norm"].mean() == pytest.approx(results["results"]["quiz_mc"]["acc_norm,none"])
    gen = _read(run1)
    for flt in ("strict", "upper"):
        values = _upload(gen, f"quiz_gen.{flt}").rows.column("exact_match").to_numpy()
        assert values.mean() == pytest.approx(results["results"]["quiz_gen"][f"exact_match,{flt}"])
    # the dummy model answers "lol"; a quarter of the targets are "lol"; the uppercase filter turns it into "LOL"
    assert _upload(gen, "quiz_gen.strict").rows.column("exact_match").to_pylist() == [
        1.0 if i % 4 == 0 else 0.0 for i in range(12)
    ]
    assert set(_upload(gen, "quiz_gen.upper").rows.column("exact_match").to_pylist()) == {0.0}


def test_the_inferred_spec_parses_and_follows_the_results_file(run1):
    for up in _read(run1).uploads:
        spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, "benchmark.yaml")
        assert spec.metric in up.rows.column_names
        assert spec.scoring.name == "identity"  # 0/1 values, higher_is_better: true in results_*.json
        assert (
            "lm-evaluation-harness task" in spec.description and "A benchmark.yaml you write overrides this" in spec.description
        )


def test_of_two_runs_of_one_model_in_one_folder_the_latest_timestamp_wins(run1):
    stamps = sorted({re.search(r"results_(.+)\.json$", p)[1] for p in run1.paths if "/results_" in p})
    assert len(stamps) == 2, "run1 holds two lm_eval runs of pythia-160m"
    result = _read(run1)
    up = _upload(result, "quiz_mc")
    assert all(stamps[1] in s for s in up.sources)
    assert sorted(result.ignored) == sorted(p for p in run1.paths if stamps[0] in p)
    later = {str(s["doc_id"]): s["acc"] for s in _samples(run1, "quiz_mc")}
    assert up.rows.to_pandas().set_index("test_case_id")["acc"].to_dict() == later


def test_a_new_models_run_folder_adds_an_agent_to_the_same_benchmarks(run1, run2):
    first, second = _read(run1), _read(run2)
    assert second.errors == [] and second.ignored == []
    assert {u.benchmark for u in second.uploads} == {u.benchmark for u in first.uploads}
    assert {u.original_agent for u in second.uploads} == {PARROT}
    a, b = _upload(first, "quiz_mc"), _upload(second, "quiz_mc")
    assert a.rows.column("test_case_id").equals(b.rows.column("test_case_id"))
    assert a.rows.column("doc_hash").equals(b.rows.column("doc_hash"))
    assert not a.rows.column("acc").equals(b.rows.column("acc")), "other seeds, other answers of the dummy model"
    both = _read(store(run1, run2))
    assert both.errors == [] and len(both.uploads) == 6


def test_the_same_results_as_our_csv_give_the_same_matches_and_ratings(run1, run2):
    """Derived rows, written as an ordinary CSV (and parquet) upload and read by the input contract: same matches, same ratings."""
    derived, from_csv = [], []
    for drop in (run1, run2):
        up = _upload(_read(drop), "quiz_mc")
        metric = up.rows.column(up.metric).to_numpy()
        derived.append(
            pd.DataFrame(
                {
                    "test_case_id": up.rows.column("test_case_id").to_pylist(),
                    "agent_id": up.agent,
                    "metric": metric,
                    "score": metric,
                }
            )
        )
        table = as_ordinary_upload(up, ".csv")
        as_ordinary_upload(up, ".parquet")
        assert [c for c in table.column_names if c.startswith("meta.")] == [
            "meta.acc_norm", "meta.doc_hash", "meta.prompt_hash", "meta.target_hash", "meta.filter"
        ]  # fmt: skip
        from_csv.append(table.select(["test_case_id", "metric", "score"]).to_pandas().assign(agent_id=up.agent))
    derived_matches = pd.concat(derived, ignore_index=True)
    csv_matches = pd.concat(from_csv, ignore_index=True)[["test_case_id", "agent_id", "metric", "score"]]
    pd.testing.assert_frame_equal(derived_matches, csv_matches)
    a, b = rate(derived_matches, seed=7), rate(csv_matches, seed=7)
    pd.testing.assert_frame_equal(a.agents, b.agents)
    pd.testing.assert_frame_equal(a.test_cases, b.test_cases)
    assert len(a.agents) == 2


# -- bad logs: each one clear error naming the file, the line or sample and the rule; nothing else changes -----------


def _without_old_run(drop):
    """run1 with only its latest run, so the error cases below are about one file each."""
    stamps = sorted({re.search(r"results_(.+)\.json$", p)[1] for p in drop.paths if "/results_" in p})
    return store({p: b for p, b in drop.items() if stamps[0] not in p})


def _edit_lines(drop, task: str, edit) -> tuple[object, str]:
    path = _latest(drop, f"/samples_{task}_")
    lines = drop.read(path).decode().splitlines(keepends=True)
    return store(drop, {path: edit(lines).encode()}), path


def test_a_truncated_samples_file(run1):
    drop = _without_old_run(run1)
    path = _latest(drop, "/samples_quiz_mc_")
    data = drop.read(path)
    cut = data[: data.rindex(b"\n", 0, len(data) - 1) + 200]  # the last line cut 200 characters in
    result = _read(store(drop, {path: cut}))
    err = only_error(result)
    assert (err.file, err.rule, err.row, err.line) == (path, "lm_eval_truncated", 12, 12)
    assert "truncated" in str(err)
    assert sorted(u.benchmark for u in result.uploads) == ["quiz_gen.strict", "quiz_gen.upper"], "the other task is untouched"


def test_a_line_that_is_not_json_in_the_middle(run1):
    drop, path = _edit_lines(_without_old_run(run1), "quiz_mc", lambda ls: "".join(ls[:3] + ["{not json\n"] + ls[4:]))
    err = only_error(_read(drop))
    assert (err.file, err.rule, err.line) == (path, "lm_eval_json", 4)


def test_a_missing_metric_key(run1):
    drop = _without_old_run(run1)
    path = _latest(drop, "/samples_quiz_mc_")
    result = _read(edit_record(drop, path, 5, lambda sample: sample.pop("acc")))
    err = only_error(result)
    assert (err.file, err.rule, err.row, err.line) == (path, "lm_eval_metric_missing", 6, 6)
    assert "doc_id 5 lists metric 'acc' but has no 'acc' key" in str(err)
    assert "quiz_mc" not in {u.benchmark for u in result.uploads}


def test_a_metric_that_is_not_a_number(run1):
    drop = _without_old_run(run1)
    path = _latest(drop, "/samples_quiz_mc_")
    err = only_error(_read(edit_record(drop, path, 2, lambda sample: sample.update(acc="high"))))
    assert (err.rule, err.line) == ("lm_eval_metric_numeric", 3) and "'high'" in str(err)


def test_a_sample_without_doc_id(run1):
    drop = _without_old_run(run1)
    path = _latest(drop, "/samples_quiz_gen_")
    result = _read(edit_record(drop, path, 7, lambda sample: sample.pop("doc_id")))
    err = only_error(result)
    assert (err.file, err.rule, err.row, err.line) == (path, "sample_id_missing", 8, 8)
    assert [u.benchmark for u in result.uploads] == ["quiz_mc"]


def test_the_same_doc_twice(run1):
    drop, path = _edit_lines(_without_old_run(run1), "quiz_mc", lambda ls: "".join(ls + [ls[0]]))
    err = only_error(_read(drop))
    assert (err.rule, err.line) == ("sample_id_duplicate", 13) and "already on line 1" in str(err)


def test_two_folders_claiming_the_same_model_and_task(run1, run2):
    drop = _without_old_run(run1)
    copy = {
        p.replace("incoming/lm-eval/run1/", "incoming/lm-eval/run1/again/"): b
        for p, b in drop.items()
        if "quiz_mc" in p or "results_" in p
    }
    result = _read(store(drop, copy, run2))
    assert {e.rule for e in result.errors} == {"harness_duplicate"}
    assert sorted(e.file for e in result.errors) == sorted(p for p in {**drop, **copy} if "samples_quiz_mc" in p)
    assert all(PYTHIA in str(e) and "quiz_mc" in str(e) for e in result.errors)
    kept = {(u.benchmark, u.original_agent) for u in result.uploads}
    assert ("quiz_mc", PYTHIA) not in kept and ("quiz_mc", PARROT) in kept and ("quiz_gen.strict", PYTHIA) in kept


def test_samples_without_their_results_file(run1):
    drop = _without_old_run(run1)
    result = _read(store({p: b for p, b in drop.items() if "/results_" not in p}))
    assert {e.rule for e in result.errors} == {"lm_eval_results_missing"} and len(result.errors) == 2
    assert result.uploads == []


def test_a_results_file_without_samples(run1):
    drop = _without_old_run(run1)
    result = _read(store({p: b for p, b in drop.items() if "/samples_" not in p}))
    err = only_error(result)
    assert err.rule == "lm_eval_no_samples" and "--log_samples" in str(err)


def test_a_broken_results_file_is_one_error_for_all_its_tasks(run1):
    drop = _without_old_run(run1)
    path = _latest(drop, "/results_")
    result = _read(store(drop, {path: drop.read(path)[:300]}))
    err = only_error(result)
    assert (err.file, err.rule) == (path, "lm_eval_results_json") and "truncated" in str(err)


def test_bytes_that_are_not_utf8(run1):
    drop = _without_old_run(run1)
    path = _latest(drop, "/samples_quiz_mc_")
    err = only_error(_read(store(drop, {path: b'{"doc_id": 0, "x": "\xff"}\n'})))
    assert (err.file, err.rule) == (path, "utf8")


def test_a_reader_that_raises_is_an_error_not_an_exception(run1):
    drop = _without_old_run(run1)

    def read(path):
        if "samples_quiz_gen" in path:
            raise OSError("connection reset")
        return drop.read(path)

    result = read_lm_eval(drop.paths, read)
    err = only_error(result)
    assert err.rule == "lm_eval_unreadable" and "OSError: connection reset" in str(err)
    assert [u.benchmark for u in result.uploads] == ["quiz_mc"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_derived_upload_is_accepted_by_the_ordinary_upload_contract(run1, run2, suffix):
    assert_ordinary_uploads(_read(store(run1, run2)).uploads, suffix)
