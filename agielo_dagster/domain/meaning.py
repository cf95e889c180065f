"""What a figure means, in the words the command line, the report and the explorer share.

ρ(test cases) and ρ(agents) are Spearman's ρ of the ratings against the mean raw metric
(:mod:`agielo_dagster.rating.reliability`); their expected sign follows the direction ``benchmark.yaml``
declares: where higher is better, harder test cases have a lower metric and stronger agents a higher one;
where lower is better (an error, a distance) both signs flip. A sign against the declared direction is the
evidence that the direction is wrong, and the wording names it.

The interval's level is the rating settings' (:data:`~agielo_dagster.rating.settings.DEFAULT_LEVEL`, which the
pipeline rates at), and the interval bars' zoom is :data:`ZOOM`: pages say them from here, never as a figure of their own.
"""

from __future__ import annotations

from typing import Any

from ..rating.settings import DEFAULT_LEVEL

__all__ = [
    "HEADERS",
    "OTHER_COMPONENT",
    "POOL_LEGEND",
    "RANK_LEGEND",
    "SATURATED",
    "ZOOM",
    "gap_note",
    "header_title",
    "level_words",
    "negative_gap_line",
    "rho_meaning",
    "rho_sentence",
    "saturation_words",
]

ZOOM = 1.1
"""Interval bars are drawn in a window of ±ZOOM × the widest half-interval around each rating (the report, the explorer)."""

RANK_LEGEND = (
    "Rank: 1 + the number of agents whose interval lies wholly above this one's (rating/intervals.py); agents no "
    "interval separates share a rank, marked = (=4: tied for 4th). An agent rated higher can rank below one rated "
    "lower whose wider interval fewer agents clear, so agents are listed by rank, then by rating within a rank. "
    "Rank range: the best and worst ranks the intervals allow."
)

POOL_LEGEND = (
    "One scale for every benchmark: every agent and test case of every benchmark fitted in one model, so ratings "
    "compare across benchmarks wherever agents share test cases."
)

OTHER_COMPONENT = (
    "Not comparable with the leaderboard above: these agents share no test case with its agents, directly or through "
    "others, so their ratings lie on a scale of their own and take no rank against them."
)

SATURATED = 0.95
"""A benchmark whose best agent is expected to pass at least this share of its test cases no longer separates models."""


def saturation_words(saturation: float) -> str:
    """Whether a benchmark still separates models, from the share of its test cases its best agent is expected to pass."""
    if saturation != saturation:
        return "not measured"
    share = f"its best agent is expected to pass {100 * saturation:.0f} % of its test cases"
    if saturation >= SATURATED:
        return f"saturated: {share}; it no longer separates the strongest models"
    return f"separates models: {share}"


HEADERS = {
    "agent_id": "agent",
    "best_agent": "best agent",
    "separates": "separates models?",
    "test_cases": "test cases",
    "expected_metric_on_hardest": "expected metric on the hardest test case",
    "gap_50": "gap to oracle @50%",
    "gap_90": "gap @90%",
    "gap_99": "gap @99%",
    "pct_beaten_50": "% of test cases beaten @50%",
    "pct_beaten_91": "% beaten @91%",
    "status_reason": "why",
    "test_case_id": "test case",
    "mean_metric": "mean metric",
    "source_path": "upload",
    "source_version": "upload version",
    "spec_version": "benchmark.yaml version",
}
"""Column headers in words (the raw column name and its schema description go in the header's tooltip)."""


def header_title(column: str) -> str:
    """A header's tooltip: the raw column name and what it holds (rating/schema.py, the UI's column schema)."""
    from ..rating.schema import describe

    what = describe(column)
    return f"{column}: {what}" if what else column


def gap_note(gaps: Any) -> str:
    """What the gaps and the shares beaten assume, beside them: the declared metric range (graded scorings) and what
    a negative gap means; the range warning where the declared range is far wider than the metric's span."""
    note = (
        "Gap: the rating an oracle needs to score on the hardest test case with 50/90/99 % confidence, minus the "
        "agent's (Elo); a negative gap: the agent already does. % beaten: the share of test cases the agent beats "
        "with that confidence."
    )
    if declared := _declared_range(gaps):
        note += (
            f" Both assume the metric range {declared} that benchmark.yaml declares: a score is the metric's "
            "place in it, so a wider declared range moves every gap."
        )
    warnings = gaps["range_warning"].dropna() if "range_warning" in gaps.columns else ()
    warning = next((str(w) for w in warnings if str(w)), "")
    return note + (f" {warning}" if warning else "")


def _declared_range(gaps: Any) -> str:
    if not ({"assumed_metric_lo", "assumed_metric_hi"} <= set(gaps.columns) and len(gaps)):
        return ""
    lo, hi = float(gaps["assumed_metric_lo"].iloc[0]), float(gaps["assumed_metric_hi"].iloc[0])
    return f"[{lo:g}, {hi:g}]" if lo == lo and hi == hi else ""


def negative_gap_line(gaps: Any) -> str:
    """For the run summary: how many agents have a negative gap at 50 %, what that means and the range it rests on
    ('' when none has)."""
    if "gap_50" not in gaps.columns or not (gaps["gap_50"] < 0).any():
        return ""
    n = int((gaps["gap_50"] < 0).sum())
    declared = _declared_range(gaps)
    rests = f", under the metric range {declared} benchmark.yaml declares" if declared else ""
    return f"gap < 0 for {n} agent{'s' if n > 1 else ''}: already scoring on the hardest test case with 50 % confidence{rests}"


def level_words(level: float = DEFAULT_LEVEL) -> str:
    """``95 %``: the interval level as pages say it."""
    return f"{100 * level:g} %"


def rho_meaning(rho: float, higher_is_better: bool = True, *, of: str = "test cases") -> str:
    """The sign of ρ(``of``) in one phrase, under the declared direction (``of``: ``"test cases"`` or ``"agents"``)."""
    if rho != rho:
        return "not measured: too few matches"
    who = "harder test cases" if of == "test cases" else "stronger agents"
    declared = f"{'higher' if higher_is_better else 'lower'} is better"
    if rho == 0:
        return f"{who}, no higher or lower metric: ratings and metric unrelated"
    higher = rho > 0
    # test cases: the harder, the worse their metric; agents: the stronger, the better
    expected_higher = higher_is_better if of == "agents" else not higher_is_better
    seen = f"{who}, {'higher' if higher else 'lower'} metric"
    if higher == expected_higher:
        return f"{seen}: as expected where {declared}"
    return f"{seen} (ρ {rho:+.2f}), though benchmark.yaml declares {declared}: check the metric's direction"


def rho_sentence(rho_test_cases: float, rho_agents: float, higher_is_better: bool = True) -> str:
    """Both ρ explained in one sentence, for the report and the explorer."""
    return (
        f"ρ(test cases): {rho_meaning(rho_test_cases, higher_is_better)}; "
        f"ρ(agents): {rho_meaning(rho_agents, higher_is_better, of='agents')}."
    )
