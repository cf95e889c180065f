"""One wording for who is first and who stands apart (domain.standing): the CLI, the report and the explorer share it."""

import json

import pandas as pd

from agielo_dagster.domain.standing import MAX_NAMES, headline, status_counts, unusual_agents


def table(rows):
    return pd.DataFrame(rows, columns=["agent_id", "rating", "rank_lo", "status", "status_reason"])


def test_best_only_when_alone_first_else_the_top_tier():
    clear = table([("a", 1900, 1, "rated", ""), ("b", 1700, 2, "rated", ""), ("x", 2300, None, "disconnected", "why")])
    assert headline(clear) == "best a"
    tied = table([("a", 1900, 1, "rated", ""), ("b", 1899.7, 1, "rated", ""), ("c", 1600, 3, "rated", "")])
    assert headline(tied) == "top tier (2 tied: their intervals overlap): a, b"
    many = table([(f"m{i:02d}", 1900 - i, 1, "rated", "") for i in range(MAX_NAMES + 3)])
    assert headline(many).endswith("m03, m04 and 3 more") and headline(many).startswith(f"top tier ({MAX_NAMES + 3} tied")
    assert headline(table([("x", 2300, None, "disconnected", "why")])) == "no agent rated in the main component"


def test_unusual_agents_are_counted_and_named_with_their_reasons_bounded():
    rows = [("a", 1900, 1, "rated", "")]
    rows += [(f"d{i}", 1500, None, "disconnected", "shares no test case with the main component (1 agent)") for i in range(7)]
    rows += [("g", None, None, "unplaced", "none of its 10 test cases is rated in this benchmark")]
    rows += [("p", 1400, 1, "provisional", "")]
    frame = table(rows)
    assert status_counts(frame) == {"rated": 1, "provisional": 1, "disconnected": 7, "unplaced": 1}
    lines = unusual_agents(frame)
    assert lines[0] == "provisional: p"
    assert lines[1] == "disconnected: d0 — shares no test case with the main component (1 agent)"
    assert lines[MAX_NAMES + 1] == "… and 2 more disconnected"
    assert lines[-1] == "unplaced: g — none of its 10 test cases is rated in this benchmark"
    assert len(lines) == 1 + MAX_NAMES + 1 + 1
    assert unusual_agents(frame.drop(columns="status")) == [] and status_counts(frame.drop(columns="status")) == {}


def test_the_fragility_of_first_in_one_sentence_as_recorded():
    from agielo_dagster.domain.standing import FRAGILITY_KEY, fragility_line, fragility_of
    from agielo_dagster.rating.fragility import Fragility

    found = Fragility("mlp", 1, "hgb", ("t7",), "approx", ("mlp", "hgb"), 569, 3).as_metadata()
    recorded = fragility_of({FRAGILITY_KEY.encode(): json.dumps(found).encode()})
    assert recorded == found == fragility_of({FRAGILITY_KEY: json.dumps(found)})  # Arrow's bytes, or a footer read as text
    assert (
        fragility_line(recorded)
        == "Fragility of #1: removing at most 1 of 569 test cases makes hgb first instead of mlp (approx)."
    )
    exact = found | {"fragility_method": "exact", "fragility_of_first": 1200, "fragility_test_cases": 5000}
    assert fragility_line(exact) == "Fragility of #1: removing 1,200 of 5,000 test cases makes hgb first instead of mlp (exact)."
    none = found | {"fragility_of_first": None}
    assert (
        fragility_line(none)
        == "Fragility of #1: no removal of test cases that the search tried (approx) puts another agent before mlp."
    )
    skipped = {"fragility_method": "not computed: 1,000,000 matches (limit 200,000)"}
    assert fragility_line(skipped) == "Fragility of #1 not computed: 1,000,000 matches (limit 200,000)."
    assert fragility_line({}) == fragility_line(None) == "" and fragility_of(None) == {}
