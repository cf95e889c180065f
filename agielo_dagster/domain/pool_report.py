"""The pooled leaderboard in the static report's words and tables: every benchmark on one scale, the agents by rank.

:func:`pool_section` is a section for any report page; :func:`render_pool_report` is a page of its own. The
tables are :mod:`agielo_dagster.domain.report`'s (every id escaped, intervals drawn as bars, at most its
``MAX_ROWS`` rows, the rest counted with where to find them).
"""

import html

import pandas as pd

from .layout import warehouse_path
from .meaning import OTHER_COMPONENT, POOL_LEGEND, RANK_LEGEND, SATURATED, ZOOM, level_words, saturation_words
from .report import STYLE, _html_table, _number, leaderboard

__all__ = ["pool_section", "render_pool_report"]

SCALE_COLUMNS = ["benchmark", "component", "test_cases", "agents", "centre", "spread", "best_agent", "saturation", "separates"]
AGENT_COLUMNS = ["agent_id", "rating", "benchmarks", "test_cases", "status", "status_reason"]
OTHER_COLUMNS = ["component", "agent_id", "rating", "interval", "benchmarks", "test_cases", "status_reason"]


def _scales_table(scales: pd.DataFrame) -> str:
    frame = scales.sort_values("benchmark", kind="stable")
    frame = frame.assign(separates=[saturation_words(float(s)) for s in frame["saturation"]])
    cells = {
        "benchmark": lambda r: html.escape(str(r["benchmark"])),
        "best_agent": lambda r: html.escape(str(r["best_agent"])),
        "centre": lambda r: _number(r["centre"], "{:.0f}"),
        "spread": lambda r: _number(r["spread"], "{:.0f}"),
        "saturation": lambda r: _number(100 * r["saturation"], "{:.0f} %"),
    }
    columns = [c for c in SCALE_COLUMNS if c in frame]
    return _html_table(frame, cells, warehouse_path("benchmark_scales", None), "pool-benchmarks", columns)


def pool_section(leaderboard_table: pd.DataFrame, scales: pd.DataFrame) -> str:
    """The pooled leaderboard as an HTML section: the benchmarks on the pool's scale with whether each still separates
    models, the agents of the main component by rank (rank, rank range, interval bar), and the agents of every other
    component apart, as not comparable with them.

    ``leaderboard_table`` is the pool's ``agent_leaderboard`` (``agent_id, mu, mu_lo, mu_hi, rank_lo, rank_hi,
    component, status`` and any of ``benchmarks, test_cases, status_reason``), ``scales`` its ``benchmark_scales``.
    """
    agents = leaderboard_table.astype({"agent_id": str}).rename(columns={"mu": "rating"})
    main, others = agents[agents["component"] == 0], agents[agents["component"] != 0]
    board, cells, half = leaderboard(main)
    cells["agent_id"] = lambda r: html.escape(str(r["agent_id"]))  # ids whole, never shortened
    lead = [c for c in ("rank", "rank range", "interval") if c in board]
    where = warehouse_path("agent_leaderboard", None)
    table = _html_table(board, cells, where, "pool-leaderboard", lead + [c for c in AGENT_COLUMNS if c in board])
    worn = sorted(str(b) for b, s in zip(scales["benchmark"], scales["saturation"], strict=True) if s >= SATURATED)
    saturated = (
        f"Saturated (best agent expected to pass ≥ {100 * SATURATED:.0f} % of test cases): {', '.join(worn)}." if worn else ""
    )
    zoom = f" Interval bars: ±{half:.0f} Elo around each rating ({ZOOM:g}× the widest half-interval)." if half else ""
    apart = ""
    if len(others):
        shown, other_cells, _ = leaderboard(others.sort_values(["component", "rating"], ascending=[True, False]))
        other_cells["agent_id"] = cells["agent_id"]
        columns = [c for c in OTHER_COLUMNS if c in shown]
        apart = (
            f'<h3>Other components: not comparable</h3>\n<p class="muted" id="pool-other-legend">{html.escape(OTHER_COMPONENT)}</p>\n'
            f'<div id="pool-others">{_html_table(shown, other_cells, where, "pool-other-components", columns)}</div>'
        )
    return (
        f'<section id="pool"><h2>Leaderboard across benchmarks</h2>\n<p class="muted">{html.escape(POOL_LEGEND)}</p>\n'
        f'<h3>Benchmarks on one scale</h3>\n<p id="pool-saturated">{html.escape(saturated)}</p>\n'
        f'<div id="pool-scales">{_scales_table(scales)}</div>\n<h3>Agents</h3>\n'
        f'<p class="muted">{html.escape(RANK_LEGEND)} Interval: the rating\'s {level_words()} interval.{zoom}</p>\n'
        f'<div id="pool-agents">{table}</div>\n{apart}</section>'
    )


def render_pool_report(leaderboard_table: pd.DataFrame, scales: pd.DataFrame, code_version: str = "") -> bytes:
    """A report page of its own for the pool (:func:`pool_section`, with the code version that wrote it), UTF-8."""
    made = (
        f'<p class="muted">Code version <code id="code-version">{html.escape(code_version)}</code>.</p>\n' if code_version else ""
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>AGI-Elo report: every benchmark</title>\n'
        f"<style>\n{STYLE}</style></head><body>\n"
        f"<h1>AGI-Elo report: every benchmark</h1>\n{pool_section(leaderboard_table, scales)}\n{made}</body></html>\n"
    ).encode()
