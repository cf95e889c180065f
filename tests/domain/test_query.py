"""The query language: its grammar selects test cases, and it refuses anything else, saying where."""

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.domain.query import MAX_QUERY_CHARS, MAX_QUERY_DEPTH, Query, QueryError, parse_query, select


@pytest.fixture(scope="module")
def test_cases():
    return pd.DataFrame(
        {
            "test_case_id": ["a", "b", "c", "d", "e"],
            "benchmark": ["mmlu", "mmlu", "gsm8k", "gsm8k", "gsm8k"],
            "rating": [1900.0, 1700.0, np.nan, 2000.0, 1500.5],
            "subject": ["math", "code", None, "math", "history"],
            "abilities": [["algebra", "logic"], None, ["geometry"], [], ["reading"]],
            "year": ["2020", "2021", "n/a", "2019", "2020.0"],
            "meta.k": ["1", "2", "3", "4", "5"],
            "and": ["x", "y", "x", "y", "x"],
        }
    )


SELECTS = [
    ("subject == 'math' and rating > 1800", [1, 0, 0, 1, 0]),
    ("subject == 'math' AND rating > 1950", [0, 0, 0, 1, 0]),
    ("abilities contains 'algebra'", [1, 0, 0, 0, 0]),
    ("abilities == 'geometry' or subject in ['code']", [0, 1, 1, 0, 0]),
    ("abilities in ['logic', 'reading']", [1, 0, 0, 0, 1]),
    ("not subject == 'math'", [0, 1, 1, 0, 1]),  # `not` negates: the missing subject is selected
    ("subject != 'math'", [0, 1, 0, 0, 1]),  # a missing value fails every condition
    ("subject not in ['math', 'code',]", [0, 0, 0, 0, 1]),
    ("year >= 2020", [1, 1, 0, 0, 1]),  # text read as numbers where it is one ('2020.0' is 2020)
    ("year == '2020'", [1, 0, 0, 0, 0]),  # text compared as text
    ("year < '2020'", [0, 0, 0, 1, 0]),  # text ordered by code point ('n/a' and '2020.0' come after '2020')
    ("rating <= 1700 or rating > 1999.5", [0, 1, 0, 1, 1]),
    ('NOT (rating <= 1800) and benchmark == "gsm8k"', [0, 0, 1, 1, 0]),
    ("`meta.k` == 2 or meta.k == '5'", [0, 1, 0, 0, 1]),
    ("`and` == 'y'", [0, 1, 0, 1, 0]),
    ("test_case_id contains 'a'", [1, 0, 0, 0, 0]),
    ("subject contains 'is'", [0, 0, 0, 0, 1]),
    ("abilities != 'geometry'", [1, 0, 0, 0, 1]),  # on lists: no item equals it; an empty list is missing
    ("((subject == 'math') or (subject == 'code')) and not (rating < 1800)", [1, 0, 0, 1, 0]),
    ("rating > -1e9", [1, 1, 0, 1, 1]),
    ('subject == \'it\\\'s\' or subject == "say \\"hi\\""', [0, 0, 0, 0, 0]),
]


@pytest.mark.parametrize("text, expected", SELECTS)
def test_the_grammar_selects(test_cases, text, expected):
    mask = select(text, test_cases)
    assert mask.dtype == bool and mask.tolist() == [bool(v) for v in expected]
    # the canonical text of a parsed query parses to the same selection
    query = parse_query(text)
    assert select(str(query), test_cases).tolist() == mask.tolist()


def test_a_parsed_query_names_its_fields(test_cases):
    query = parse_query("subject == 'math' and (rating > 1 or `meta.k` in [1, 2]) and not subject == 'x'")
    assert isinstance(query, Query) and query.fields == ("subject", "rating", "meta.k")
    assert select(query, test_cases).tolist() == [True, False, False, True, False]
    assert select(query, pa_table(test_cases)).tolist() == [True, False, False, True, False]


def pa_table(frame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)


REFUSED = [
    ("", 0, "empty"),
    ("   ", 0, "empty"),
    ("subject = 'math'", 8, "single '='"),
    ("subject == math", 11, "quotes"),
    ("__import__('os').system('ls')", 16, "unexpected character '.'"),
    ("eval('1')", 4, "calls no functions"),
    ("subject == 'a'; import os", 14, "unexpected character ';'"),
    ("lambda: 1", 6, "unexpected character ':'"),
    ("1 == subject", 0, "a field name"),
    ("subject == 'a' and", 18, "the end of the query"),
    ("(subject == 'a'", 15, "')'"),
    ("subject == 'a')", 14, "the end of the query"),
    ("subject == 'a' subject == 'b'", 15, "'and', 'or'"),
    ("rating > 18OO", 9, "not a number"),
    ("rating >> 1", 8, "a number or a quoted text"),
    ("rating ==", 9, "the end of the query"),
    ("not", 3, "a field name"),
    ("subject in []", 12, "a number or a quoted text"),
    ("subject in ['a' 'b']", 16, "',' or ']'"),
    ("subject in 'a'", 11, "'['"),
    ("subject not 'a'", 12, "'in' after 'not'"),
    ("subject == 'unterminated", 11, "never closed"),
    ("subject == 'a\\n'", 13, "backslash"),
    ("`subject == 'a'", 0, "never closed"),
    ("subject == 1e999", 11, "too large"),
    ("subject == 'a' && rating > 1", 15, "unexpected character '&'"),
    ("subject == 'a' || rating > 1", 15, "unexpected character '|'"),
    ("subject is 'a'", 8, "an operator after the field"),
    ("subject ≠ 'a'", 8, "unexpected character '≠'"),
    ("subject == {'a': 1}", 11, "unexpected character '{'"),
    ("rating > 1 # comment", 11, "unexpected character '#'"),
    ("subject == 'a' and or rating > 1", 19, "a field name"),
    ("()", 1, "a field name"),
]


@pytest.mark.parametrize("text, position, words", REFUSED)
def test_anything_outside_the_grammar_is_refused_with_its_position(text, position, words):
    with pytest.raises(QueryError) as err:
        parse_query(text)
    assert err.value.position == position, str(err.value)
    first = str(err.value).splitlines()[0]
    assert first.startswith(f"query position {position}: ") and words in first
    # the caret points at the position in the excerpt under it
    if text.strip():
        excerpt, caret = str(err.value).splitlines()[1:3]
        assert caret.index("^") - 2 == position and excerpt[2:].startswith(text[:position])


def test_depth_and_length_are_bounded():
    deep = "(" * (MAX_QUERY_DEPTH + 5) + "rating > 1" + ")" * (MAX_QUERY_DEPTH + 5)
    with pytest.raises(QueryError, match="nests deeper"):
        parse_query(deep)
    with pytest.raises(QueryError, match="nests deeper"):
        parse_query("not " * (MAX_QUERY_DEPTH + 5) + "rating > 1")
    ok = "(" * (MAX_QUERY_DEPTH - 1) + "rating > 1" + ")" * (MAX_QUERY_DEPTH - 1)
    assert parse_query(ok).fields == ("rating",)
    with pytest.raises(QueryError, match="at most"):
        parse_query("rating > 1 or " * (MAX_QUERY_CHARS // 10))
    long_or = " or ".join(f"rating > {i}" for i in range(200))  # long but flat: fine
    assert len(parse_query(long_or).root.parts) == 200
    with pytest.raises(TypeError):
        parse_query(b"rating > 1")


def test_what_does_not_fit_the_frame_is_refused(test_cases):
    with pytest.raises(QueryError) as err:
        select("subject == 'math' and nope == 1", test_cases)
    assert err.value.position == 22 and "no field 'nope'" in str(err.value) and "subject" in str(err.value)
    with pytest.raises(QueryError, match="holds numbers; compare it with a number"):
        select("rating == 'high'", test_cases)
    with pytest.raises(QueryError, match="'contains' applies to text and lists"):
        select("rating contains '1'", test_cases)
    with pytest.raises(QueryError, match="'contains' takes a quoted text"):
        select("subject contains 1", test_cases)
    with pytest.raises(QueryError, match="no field 'subject.__class__'"):
        select("subject.__class__ == 'x'", test_cases)


def test_evaluation_runs_no_python_from_the_query(test_cases, monkeypatch):
    import builtins

    def refuse(*args, **kwargs):
        raise AssertionError("eval or exec was called")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    assert select("subject == 'math' and rating > 1800", test_cases).sum() == 2
