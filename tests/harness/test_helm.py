"""HELM run folders.

The fixture ``tests/data/harness/helm/agielo/`` is HELM's own output, not hand-written: ``helm-run`` of crfm-helm
0.5.16 on HELM's offline ``simple_mcqa`` and ``simple_classification`` scenarios with its ``SimpleClient`` model
(as ``simple/model1`` and, registered in ``prod_env/``, as ``acme/parrot-7b``), ``--max-eval-instances 4``. crfm-helm
does not install into this environment (it pulls torch and CUDA wheels and pins datasets~=3.1), so it ran once in a
scratch venv: ``tests/data/harness/make_fixtures.sh`` is the exact recipe. Only ``run_spec.json`` and
``per_instance_stats.json`` of each run folder are kept, unmodified. Bad logs are edits of these files in the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agielo_dagster.domain.contract import parse_benchmark_spec
from agielo_dagster.domain.harness import harness_of, read_helm, safe_name
from agielo_dagster.domain.harness.helm import benchmark_of_run

from .conftest import assert_ordinary_uploads, drop_of, only_error, store

SUITE = Path(__file__).resolve().parents[1] / "data" / "harness" / "helm" / "agielo"
MCQA_1 = "incoming/helm/agielo/simple_mcqa:model=simple_model1"
MCQA_2 = "incoming/helm/agielo/simple_mcqa:model=acme_parrot-7b"


@pytest.fixture(scope="module")
def suite():
    return store(drop_of(SUITE, "incoming/helm/agielo"))


def _read(drop):
    return read_helm(drop.paths, drop.read)


def _edit(drop, path, edit):
    return store(drop, {path: json.dumps(edit(json.loads(drop.read(path))), indent=2).encode()})


@pytest.mark.parametrize(
    "name, benchmark",
    [
        ("simple_mcqa:model=simple_model1", "simple_mcqa"),
        (
            "mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2",
            "mmlu:subject=anatomy,method=multiple_choice_joint",
        ),
        ("natural_qa:mode=closedbook,model=openai_gpt2,model_deployment=huggingface_gpt2", "natural_qa:mode=closedbook"),
        ("boolq", "boolq"),
    ],
)
def test_the_benchmark_is_the_run_name_without_the_model(name, benchmark):
    assert benchmark_of_run(name) == benchmark


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_derived_upload_is_accepted_by_the_ordinary_upload_contract(suite, suffix):
    assert_ordinary_uploads(_read(suite).uploads, suffix)


def test_a_suite_folder_is_one_drop_of_three_runs(suite):
    assert {harness_of(p) for p in suite.paths} == {("helm", "incoming/helm/agielo")}
    result = _read(suite)
    assert result.errors == [] and result.ignored == []
    assert sorted((u.original_benchmark, u.original_agent) for u in result.uploads) == [
        ("simple_classification", "simple/model1"),
        ("simple_mcqa", "acme/parrot-7b"),
        ("simple_mcqa", "simple/model1"),
    ]
    for up in result.uploads:
        assert up.benchmark == up.original_benchmark and up.agent == safe_name(up.original_agent)
        assert (
            up.harness == "helm"
            and up.sources[0].endswith("/per_instance_stats.json")
            and up.sources[1].endswith("/run_spec.json")
        )


def test_values_are_the_per_instance_stats(suite):
    result = _read(suite)
    (up,) = [u for u in result.uploads if u.original_benchmark == "simple_mcqa" and u.original_agent == "simple/model1"]
    stats = json.loads(suite.read(f"{MCQA_1}/per_instance_stats.json"))
    expected = {e["instance_id"]: {s["name"]["name"]: s["mean"] for s in e["stats"] if s["count"]} for e in stats}
    rows = up.rows.to_pandas().set_index("test_case_id")
    assert up.metric == "exact_match" and rows.index.tolist() == list(expected)
    for column in ("exact_match", "quasi_exact_match", "num_prompt_tokens", "inference_runtime"):
        assert rows[column].to_dict() == {k: v[column] for k, v in expected.items()}
    assert set(rows["trials"]) == {1} and set(rows["split"]) == {"test"}
    spec = parse_benchmark_spec(up.spec_yaml, up.benchmark, "benchmark.yaml")
    assert spec.scoring.name == "identity" and "assumed" in spec.description


def test_two_models_of_one_scenario_share_the_benchmark_and_its_test_cases(suite):
    mcqa = [u for u in _read(suite).uploads if u.original_benchmark == "simple_mcqa"]
    assert len({u.benchmark for u in mcqa}) == 1 and len({u.agent for u in mcqa}) == 2
    assert mcqa[0].rows.column("test_case_id").equals(mcqa[1].rows.column("test_case_id"))


def test_train_trials_are_averaged_and_perturbed_instances_left_out(suite):
    path = f"{MCQA_1}/per_instance_stats.json"

    def second_trial_and_a_perturbation(stats):
        extra = json.loads(json.dumps(stats))
        for entry in extra:
            entry["train_trial_index"] = 1
            for s in entry["stats"]:
                if s["name"]["name"] == "exact_match":
                    s["mean"] = s["sum"] = s["min"] = s["max"] = 1.0
        perturbed = json.loads(json.dumps(stats[0]))
        perturbed["perturbation"] = {"name": "typos", "robustness": True, "prob": 0.1}
        return stats + extra + [perturbed]

    result = _read(_edit(suite, path, second_trial_and_a_perturbation))
    assert result.errors == []
    (up,) = [u for u in result.uploads if u.sources[0] == path]
    rows = up.rows.to_pandas()
    assert len(rows) == 4 and set(rows["trials"]) == {2}
    assert set(rows["exact_match"]) == {0.5}  # mean of trial 0 (0.0) and trial 1 (1.0)


def test_a_run_folder_without_run_spec(suite):
    result = _read(store({p: b for p, b in suite.items() if p != f"{MCQA_2}/run_spec.json"}))
    err = only_error(result)
    assert (err.file, err.rule) == (f"{MCQA_2}/per_instance_stats.json", "helm_run_spec_missing")
    assert len(result.uploads) == 2


def test_a_run_folder_without_per_instance_stats(suite):
    err = only_error(_read(store({p: b for p, b in suite.items() if p != f"{MCQA_2}/per_instance_stats.json"})))
    assert (err.file, err.rule) == (f"{MCQA_2}/run_spec.json", "helm_stats_missing")


def test_truncated_per_instance_stats(suite):
    path = f"{MCQA_1}/per_instance_stats.json"
    result = _read(store(suite, {path: suite.read(path)[:4000]}))
    err = only_error(result)
    assert (err.file, err.rule) == (path, "helm_json") and "truncated" in str(err) and err.line is not None
    assert len(result.uploads) == 2


def test_an_instance_without_id(suite):
    path = f"{MCQA_1}/per_instance_stats.json"

    def drop_id(stats):
        del stats[2]["instance_id"]
        return stats

    err = only_error(_read(_edit(suite, path, drop_id)))
    assert (err.file, err.rule, err.row) == (path, "sample_id_missing", 3)


def test_an_instance_without_the_metric(suite):
    path = f"{MCQA_1}/per_instance_stats.json"

    def drop_metric(stats):
        stats[1]["stats"] = [s for s in stats[1]["stats"] if s["name"]["name"] != "exact_match"]
        return stats

    err = only_error(_read(_edit(suite, path, drop_metric)))
    assert err.rule == "helm_metric_missing" and "has no stat 'exact_match'" in str(err)


def test_the_same_run_twice_claims_the_same_model_and_scenario(suite):
    copy = {p.replace("/agielo/", "/agielo/again/"): b for p, b in suite.items() if p.startswith(MCQA_2)}
    result = _read(store(suite, copy))
    assert {e.rule for e in result.errors} == {"harness_duplicate"} and len(result.errors) == 2
    assert len(result.uploads) == 2
