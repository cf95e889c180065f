"""The input contract of pairwise difficulty judgments (judgments/<set>.csv): what uploads have."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agielo_dagster.domain.contract import MAX_NAME_LENGTH, IngestError
from agielo_dagster.domain.judgments import read_judgments
from agielo_dagster.rating import hodge_rank
from agielo_dagster.rating.frames import MatchTableError

FILE = "judgments/pairs.csv"
GOOD = "item_a,item_b,winner,weight\nq1,q2,a,1\nq2,q3,b,2.5\nq1,q3,tie,1\n"


def rejected(text: str) -> IngestError:
    with pytest.raises(IngestError) as err:
        read_judgments(text.encode(), FILE)
    message = str(err.value)
    assert message.startswith(f"{FILE}:") and message.endswith(")"), message
    return err.value


def test_a_good_file_is_read_and_ranked():
    frame = read_judgments(GOOD.encode(), FILE)
    assert list(frame["item_a"]) == ["q1", "q2", "q1"] and list(frame["weight"]) == [1.0, 2.5, 1.0]
    scores = hodge_rank(frame).scores
    assert np.isfinite(scores["score"]).all()


@pytest.mark.parametrize("weight", ["inf", "-inf", "nan", "NaN", "0", "-1", "", "heavy", "1e400"])
def test_weights_must_be_finite_and_positive(weight):
    err = rejected(f"item_a,item_b,winner,weight\nq1,q2,a,1\nq2,q3,b,{weight}\n")
    assert err.rule == "weight_positive" and err.row == 2 and err.line == 3, str(err)


@pytest.mark.parametrize("weight", [float("inf"), -1.0, 0.0, float("nan")])
def test_the_engine_refuses_bad_weights_too(weight):
    import pandas as pd

    frame = pd.DataFrame({"item_a": ["q1", "q2"], "item_b": ["q2", "q3"], "winner": ["a", "b"], "weight": [1.0, weight]})
    with pytest.raises(MatchTableError, match="weight_positive"):
        hodge_rank(frame)


def test_items_must_be_present_short_and_as_written():
    assert rejected("item_a,item_b,winner\nq1,q2,a\n,q3,b\n").rule == "item_present"
    long = rejected(f"item_a,item_b,winner\nq1,q2,a\nq2,{'x' * 5_000_000},b\n")
    assert long.rule == "item_length" and long.row == 2 and f"at most {MAX_NAME_LENGTH}" in str(long)
    assert len(str(long)) < 400  # the 5,000,000 characters are not quoted
    assert read_judgments(f"item_a,item_b,winner\nq1,{'x' * MAX_NAME_LENGTH},a\n".encode(), FILE).shape == (1, 3)
    assert rejected("item_a,item_b,winner\nq1,q2 ,a\n").rule == "item_trimmed"


def test_rows_are_one_based_like_uploads():
    err = rejected("item_a,item_b,winner\nq1,q2,a\nq2,q3,b\nq3,q3,a\n")
    assert err.rule == "distinct_items" and err.row == 3 and err.line == 4
    assert "data row 3 (line 4): item 'q3' is compared with itself" in str(err)
    err = rejected("item_a,item_b,winner\nq1,q2,a\nq2,q3,maybe\n")
    assert err.rule == "winner_known" and err.row == 2 and "data row 2 (line 3)" in str(err)
    err = rejected("item_a,item_b,margin\nq1,q2,0.5\nq2,q3,inf\n")
    assert err.rule == "margin_finite" and err.row == 2


def test_every_problem_of_a_file_is_named():
    text = "item_a,item_b,winner,weight\n" + "".join(
        [
            "q1,q2,a,1\n",  # 1
            "q2,q3,b,-1\n",  # 2: weight
            "q3,q4,a,1\n",  # 3
            ",q4,a,1\n",  # 4: empty item
            "q5,q5,a,1\n",  # 5: itself
            "q5,q6,a,inf\n",  # 6: weight
            "q6,q7,what,1\n",  # 7: winner
            "q7,q8,a,0\n",  # 8: weight
            "q8,q9,a,nan\n",  # 9: weight
            "q9,q1,a,-2\n",  # 10: weight
        ]
    )
    err = rejected(text)
    message = str(err)
    assert err.rule == "weight_positive" and err.row == 2  # the first problem in the file
    for fragment in (
        "data row 2 (line 3): weight '-1'",
        "(also data rows 6, 8, 9 and 1 more) (rule: weight_positive)",
        "data row 4 (line 5): item_a is empty",
        "(rule: item_present)",
        "data row 5 (line 6): item 'q5' is compared with itself",
        "data row 7 (line 8): winner 'what' is not a, b or tie",
    ):
        assert fragment in message, message
    assert [p.rule for p in err.problems] == ["weight_positive", "item_present", "distinct_items", "winner_known"]


def test_missing_columns_and_empty_files():
    assert rejected("a,b,winner\nq1,q2,a\n").rule == "judgment_columns"
    assert rejected("item_a,item_b\nq1,q2\n").rule == "judgment_columns"
    assert rejected("item_a,item_b,winner\n").rule == "has_rows"
    assert rejected("").rule == "log_not_empty"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.lists(st.tuples(*[st.text(st.characters(exclude_categories=("Cs",)), max_size=8) for _ in range(4)]), max_size=8).map(
            lambda rows: ("item_a,item_b,winner,weight\n" + "".join(",".join(r) + "\n" for r in rows)).encode()
        ),
    )
)
def test_any_bytes_give_judgments_or_an_ingest_error(data):
    try:
        frame = read_judgments(data, FILE)
    except IngestError as err:
        assert str(err).startswith(f"{FILE}:") and err.rule
        return
    assert (frame["weight"] > 0).all() and np.isfinite(frame["weight"]).all()
    assert (frame["item_a"] != frame["item_b"]).all() and (frame["item_a"].str.len() > 0).all()
    assert np.isfinite(hodge_rank(frame).scores["score"]).all()
