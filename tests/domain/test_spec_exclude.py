"""benchmark.yaml's ``exclude`` (issue 40): flags and test-case ids the ratings leave out, validated like every key."""

import pytest

from agielo_dagster.domain.contract import IngestError, parse_benchmark_spec

SPEC = "metric: correct\nscoring: identity\n"


def test_exclude_lists_flags_and_ids_once_each_in_order():
    spec = parse_benchmark_spec(
        SPEC + "exclude: [likely_mislabeled, q17, likely_mislabeled]\n", "quiz", "raw/quiz/benchmark.yaml"
    )
    assert spec.exclude == ("likely_mislabeled", "q17")
    assert parse_benchmark_spec(SPEC, "quiz", "raw/quiz/benchmark.yaml").exclude == ()


@pytest.mark.parametrize("value", ["likely_mislabeled", "[q1, 3]", "['']", "{a: b}"])
def test_an_exclude_that_is_not_a_list_of_names_is_rejected_with_its_rule(value):
    with pytest.raises(IngestError) as err:
        parse_benchmark_spec(SPEC + f"exclude: {value}\n", "quiz", "raw/quiz/benchmark.yaml")
    assert err.value.rule == "spec_exclude" and "exclude must be a list of flags" in str(err.value)
