"""What the harness readers share: safe names, which reader a path belongs to, the inferred benchmark.yaml."""

from __future__ import annotations

import pyarrow as pa
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agielo_dagster.domain.contract import IngestError, check_name, parse_benchmark_spec
from agielo_dagster.domain.harness import (
    DerivedUpload,
    check_duplicates,
    harness_of,
    infer_spec,
    merge_specs,
    read_drop,
    safe_name,
)
from agielo_dagster.domain.harness.common import build_upload, jsonl_records

# -- safe names ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mmlu_abstract_algebra", "pythia-1.4b", "gpt-4o", "quiz_gen.strict", "A1", "x" * 128])
def test_safe_names_are_kept_as_they_are(name):
    assert safe_name(name) == name


@pytest.mark.parametrize(
    "original, start",
    [
        ("EleutherAI/pythia-160m", "EleutherAI__pythia-160m-"),
        ("arith quiz", "arith_quiz-"),
        ("modèle été", "modele_ete-"),
        ("..", "unnamed-"),
        ("../../etc/passwd", "etc__passwd-"),
        ("a..b", "a.b-"),
        ("-flag", "flag-"),
        (".hidden", "hidden-"),
        ("mmlu:subject=anatomy,method=multiple_choice_joint", "mmlu_subject_anatomy_method_multiple_choice_joint-"),
        ("模型", "unnamed-"),
        ("", "unnamed-"),
        ("x" * 200, "x" * 119 + "-"),
    ],
)
def test_other_names_are_mapped_with_a_hash_of_the_original(original, start):
    name = safe_name(original)
    assert name.startswith(start) and len(name) == len(start) + 8 and len(name) <= 128
    assert check_name(name, "agent", "x") == name
    assert safe_name(original) == name, "deterministic"


def test_names_that_map_alike_stay_apart():
    names = [
        "EleutherAI/pythia-160m",
        "EleutherAI__pythia-160m",
        "EleutherAI:pythia-160m",
        "EleutherAI pythia-160m",
        "eleutherai/pythia-160m",
    ]
    assert len({safe_name(n) for n in names}) == len(names)


@given(st.text(max_size=300))
def test_any_text_becomes_a_name_the_contract_accepts(text):
    name = safe_name(text)
    assert check_name(name, "benchmark", "x") == name
    assert safe_name(text) == name


@given(st.text(max_size=40), st.text(max_size=40))
def test_different_originals_get_different_names(a, b):
    if a != b:
        assert safe_name(a) != safe_name(b)


# -- which reader a path belongs to ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("incoming/lm-eval/run1/EleutherAI__pythia-160m/results_2026-01-01T00-00-00.json", ("lm-eval", "incoming/lm-eval/run1")),
        (
            "incoming/lm-eval/run1/EleutherAI__pythia-160m/samples_mmlu_2026-01-01T00-00-00.jsonl",
            ("lm-eval", "incoming/lm-eval/run1"),
        ),
        ("incoming/lm-eval/run1/notes.txt", ("lm-eval", "incoming/lm-eval/run1")),
        ("incoming/inspect/2026-01-01_quiz_abc.eval", ("inspect", "incoming/inspect/2026-01-01_quiz_abc.eval")),
        ("incoming/inspect/team/log.json", ("inspect", "incoming/inspect/team/log.json")),
        (
            "incoming/helm/mmlu:subject=anatomy,model=openai_gpt2/per_instance_stats.json",
            ("helm", "incoming/helm/mmlu:subject=anatomy,model=openai_gpt2"),
        ),
        ("incoming/helm/v1/mmlu:model=a/run_spec.json", ("helm", "incoming/helm/v1")),
        ("incoming/eee/abc_samples.jsonl", ("eee", "incoming/eee/abc_samples.jsonl")),
        ("incoming/eee/mmlu/org/model/abc.json", ("eee", "incoming/eee/mmlu/org/model/abc_samples.jsonl")),
    ],
)
def test_harness_of(path, expected):
    assert harness_of(path) == expected


@pytest.mark.parametrize(
    "path",
    [
        "incoming/lm-eval/results.json",  # not in a folder: no drop
        "incoming/helm/per_instance_stats.json",
        "incoming/inspect/notes.txt",
        "incoming/eee/results.jsonl",
        "incoming/eee/_samples.jsonl",
        "incoming/other/x.json",
        "raw/quiz/agent.csv",
        "incoming/lm-eval/run1/.partial/samples_x_2026-01-01T00-00-00.jsonl",  # still being copied
        "incoming/inspect/.log.eval",
        "incoming/lm-eval/../raw/x.csv",
        "incoming/lm-eval//x/y.json",
        "incoming\\lm-eval\\x\\y.json",
        "incoming/inspect/x.eval\x00",
    ],
)
def test_paths_that_belong_to_no_reader(path):
    assert harness_of(path) is None


def test_read_drop_names_the_reader():
    result = read_drop("eee", [], lambda p: b"")
    assert result.uploads == [] and result.errors == []
    with pytest.raises(ValueError, match="unknown harness"):
        read_drop("openai-evals", [], lambda p: b"")


# -- the inferred benchmark.yaml ---------------------------------------------------------------------------------------


def _spec(text):
    return parse_benchmark_spec(text, "b", "benchmark.yaml")


@pytest.mark.parametrize(
    "values, hib, declared, expected",
    [
        ([0, 1, 1, 0], True, None, ("identity", 0.0, 1.0, True)),
        ([0.0, 0.5, 0.25], True, None, ("identity", 0.0, 1.0, True)),
        ([0.0, 0.5], False, None, ("minmax", 0.0, 1.0, False)),
        ([3.0, 87.5], True, None, ("minmax", 0.0, 87.5, True)),
        ([-4.2, -0.3], True, None, ("minmax", -4.2, 0.0, True)),
        ([-1.0, 2.0], False, None, ("minmax", -1.0, 2.0, False)),
        ([2.0, 2.0], True, None, ("minmax", 0.0, 2.0, True)),
        ([0.5, 1.0], True, (0, 1), ("identity", 0.0, 1.0, True)),
        ([1.0, 3.0], False, (0, 5), ("minmax", 0.0, 5.0, False)),
        ([0.2], None, None, ("identity", 0.0, 1.0, True)),
    ],
)
def test_infer_spec(values, hib, declared, expected):
    text = infer_spec(values, "m", higher_is_better=hib, declared=declared, description="From a test.")
    spec = _spec(text)
    assert (spec.scoring.name, spec.scoring.lo, spec.scoring.hi, spec.scoring.higher_is_better) == expected
    assert spec.metric == "m" and spec.description.startswith("From a test.")
    assert ("assumed" in spec.description) == (hib is None)
    spec.scoring.score(values)  # every observed value is inside the inferred range
    assert set(yaml.safe_load(text)) == {"metric", "scoring", "params", "description"}


@pytest.mark.parametrize("values", [[], [float("nan")], [1.0, float("inf")]])
def test_infer_spec_needs_finite_values(values):
    with pytest.raises(ValueError):
        infer_spec(values, "m")


def test_a_metric_name_that_needs_quoting_still_parses():
    spec = _spec(infer_spec([1.0], "exact_match: strict # not a comment", description="it's: odd\nmulti-line"))
    assert spec.metric == "exact_match: strict # not a comment"


def test_a_huge_description_is_cut():
    spec = _spec(infer_spec([1.0], "m", description="task " + "x" * 100_000))
    assert len(spec.description) < 2100


def test_merge_specs_widens_to_every_agents_range():
    a = infer_spec([0.0, 1.0], "m")
    b = infer_spec([0.0, 40.0], "m")
    c = infer_spec([-3.0, 0.5], "m")
    assert _spec(merge_specs([a])).scoring.name == "identity"
    merged = _spec(merge_specs([a, b, c]))
    assert (merged.scoring.name, merged.scoring.lo, merged.scoring.hi) == ("minmax", -3.0, 40.0)


def test_merge_specs_refuses_disagreement():
    with pytest.raises(ValueError, match="different metric"):
        merge_specs([infer_spec([1.0], "acc"), infer_spec([1.0], "f1")])
    with pytest.raises(ValueError, match="disagree"):
        merge_specs([infer_spec([1.0], "m"), infer_spec([1.0], "m", higher_is_better=False)])
    with pytest.raises(ValueError):
        merge_specs([])


# -- uploads, duplicates and jsonl lines --------------------------------------------------------------------------------


def _upload(source: str, agent: str = "org/model", task: str = "task") -> DerivedUpload:
    return build_upload(
        harness="test",
        original_benchmark=task,
        original_agent=agent,
        test_case_ids=["1", "2"],
        metrics={"acc": [1.0, 0.0]},
        metadata={"doc_hash": ["a", "b"]},
        sources=(source,),
    )


def test_build_upload():
    up = _upload("incoming/x/1.jsonl")
    assert up.rows.schema == pa.schema([("test_case_id", pa.string()), ("acc", pa.float64()), ("doc_hash", pa.string())])
    assert (up.benchmark, up.agent, up.metric, up.original_agent) == ("task", safe_name("org/model"), "acc", "org/model")


def test_check_duplicates_refuses_every_claimant():
    a, b, c = _upload("incoming/a.jsonl"), _upload("incoming/b.jsonl"), _upload("incoming/c.jsonl", agent="other")
    kept, errors = check_duplicates([a, b, c])
    assert kept == [c]
    assert [(e.file, e.rule) for e in errors] == [
        ("incoming/a.jsonl", "harness_duplicate"),
        ("incoming/b.jsonl", "harness_duplicate"),
    ]
    assert "also claimed by incoming/b.jsonl" in str(errors[0]) and "also claimed by incoming/a.jsonl" in str(errors[1])


def test_jsonl_records_number_records_and_lines():
    data = b'{"a": 1}\n\n{"a": 2}\r\n{"a": 3}'
    assert [(r, line, o["a"]) for r, line, o in jsonl_records(data, "f.jsonl", "t", "p")] == [(1, 1, 1), (2, 3, 2), (3, 4, 3)]


@pytest.mark.parametrize(
    "data, rule, line",
    [
        (b'{"a": 1}\n{"a": 2', "t", 2),  # the last line is cut off: truncated
        (b'{"a": 1}\n{"a": 2\n{"a": 3}\n', "p", 2),  # a bad line in the middle
        (b'{"a": 1}\n[1, 2]\n', "p", 2),  # JSON, but not an object
        (b'{"a": 1}\n{"a": 2\n', "p", 2),  # a bad last line that ends with a newline was written whole
    ],
)
def test_jsonl_records_errors(data, rule, line):
    with pytest.raises(IngestError) as err:
        list(jsonl_records(data, "f.jsonl", "t", "p"))
    assert (err.value.rule, err.value.line, err.value.file) == (rule, line, "f.jsonl")
