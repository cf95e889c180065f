"""A self-contained static HTML report per benchmark: figures, tables, input versions, code version.

One file, no external resources (images are inline PNG data), for people who don't run Dagster.
"""

import base64
import html

import pandas as pd
import pyarrow as pa

from .layout import warehouse_path
from .meaning import HEADERS, RANK_LEGEND, ZOOM, gap_note, header_title, level_words, rho_sentence
from .standing import fragility_line, headline, unusual_agents

TITLES = {
    "rating_distribution": "Difficulty of the test cases and competency of the agents",
    "reliability_curves": "Reliability as the share of matches grows",
    "agent_trajectories": "Agent ratings as the share of matches grows",
    "calibration": "Predicted against empirical performance",
    "competency_gap": "Competency gap to an oracle",
}


# the report pages' styles (a benchmark's report, the pool's)
STYLE = """body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
img { max-width: 100%; } table.t { border-collapse: collapse; font-size: 13px; }
table.t td, table.t th { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }
table.t td:first-child, table.t th:first-child { text-align: left; } code { font-size: 12px; }
table.t th { vertical-align: bottom; }
table.t td.col-agent_id { text-align: left; overflow-wrap: anywhere; min-width: 8em; } table.t td.col-interval { white-space: nowrap; }
table.t td.col-status_reason, table.t td.col-flag_reason { text-align: left; } svg.interval { vertical-align: middle; } .muted { color: #667; font-size: 13px; }
table.t td.col-separates, table.t td.col-best_agent { text-align: left; }
#gaps, #hardest, #suspects, #moved, #excluded, #inputs, #pool-agents, #pool-scales, #pool-others { overflow-x: auto; }
"""


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


MAX_ROWS = 100  # rows per table: the report stays the size of its information, whatever the number of agents


SHORT = 19  # characters of a long value (a SHA-256, an ETag) shown; the whole value is in its title


def _short(value) -> str:
    """``sha256:0123456789ab…`` with the full value in the title (hover, copy): long digests widen the page."""
    text = "" if value is None or (isinstance(value, float) and value != value) else str(value)
    if len(text) <= SHORT + 4:
        return html.escape(text)
    return f'<code class="digest" title="{html.escape(text)}">{html.escape(text[:SHORT])}…</code>'


# digests are shortened visibly (the whole value in the cell's title): a SHA-256 per row widened the page to 2,049 px
DIGEST_CELLS = {c: (lambda r, c=c: _short(r[c])) for c in ("source_version", "inputs_digest", "version")}


def _number(value, fmt: str = "{:.1f}") -> str:
    if value is None or value != value:
        return "–"
    return fmt.format(value) if isinstance(value, float) else html.escape(str(value))


def _html_table(
    frame: pd.DataFrame | pa.Table, cells: dict, where: str = "", table_id: str = "", columns: list | None = None
) -> str:
    """A table of ``columns`` (default: all) whose cells are HTML from ``cells[column](row)``; other text is
    escaped, numbers formatted. An Arrow table is converted only as far as it is shown (a tall benchmark's input
    manifest has a row per agent)."""
    if isinstance(frame, pa.Table):
        rows, shown_rows = frame.num_rows, frame.slice(0, MAX_ROWS).to_pandas()
    else:
        rows, shown_rows = len(frame), frame.head(MAX_ROWS)
    columns = list(shown_rows.columns) if columns is None else columns
    # headers in words; the raw column name and what it holds in the tooltip (and data-column, for programs)
    head = "".join(
        f'<th data-column="{html.escape(str(c))}" title="{html.escape(header_title(str(c)))}">'
        f"{html.escape(HEADERS.get(str(c), str(c))).replace('_', '_<wbr>')}</th>"
        for c in columns
    )
    body = []
    for row in shown_rows.to_dict("records"):
        tds = []
        for c in columns:
            value = row[c]
            cell = cells[c](row) if c in cells else html.escape(value) if isinstance(value, str) else _number(value)
            tds.append(f'<td class="col-{html.escape(str(c))}">{cell}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    attribute = f' id="{table_id}"' if table_id else ""
    shown = f'<table class="t"{attribute}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    if rows > MAX_ROWS:
        shown += f'<p class="more">{rows - MAX_ROWS:,} more rows{html.escape(" in " + where) if where else ""}.</p>'
    return shown


def _interval_bar(lo, mu, hi, half: float) -> str:
    """The interval as an inline SVG bar in a window of ±half Elo around the rating (the same zoom for every row)."""
    if any(v is None or v != v for v in (lo, mu, hi)) or half <= 0:
        return ""
    w = 110
    x = lambda v: 4 + (v - (mu - half)) / (2 * half) * (w - 8)  # noqa: E731
    return (
        f'<svg class="interval" width="{w}" height="12" aria-hidden="true">'
        f'<line x1="{w / 2:.1f}" x2="{w / 2:.1f}" y1="1" y2="11" stroke="#dde"/>'
        f'<line class="bar" x1="{x(lo):.1f}" x2="{x(hi):.1f}" y1="6" y2="6" stroke="#789" stroke-width="2"/>'
        f'<circle cx="{x(mu):.1f}" cy="6" r="3" fill="#c60"/></svg>'
    )


def leaderboard(gaps: pd.DataFrame, agents: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict, float]:
    """The report's leaderboard: rank (``=`` where shared), rank range and interval first, then the gap table's
    columns; the intervals come from ``agents`` (``agent_id, mu_lo, mu_hi``) when the gap table lacks them."""
    frame = gaps.copy()
    if agents is not None and {"mu_lo", "mu_hi"} <= set(agents.columns) and "mu_lo" not in frame:
        intervals = agents[["agent_id", "mu_lo", "mu_hi"]].astype({"agent_id": str})
        frame = frame.astype({"agent_id": str}).merge(intervals, on="agent_id", how="left", validate="one_to_one")
    ranked = frame["status"].isin(["rated", "provisional"]) if "status" in frame else pd.Series(True, index=frame.index)
    lead, cells = [], {}
    half = 0.0
    # a provisional agent takes no rank of its own: its rank range is where its interval puts it among the rated
    rated = frame["status"].eq("rated") if "status" in frame else pd.Series(True, index=frame.index)
    if "rank_lo" in frame:
        shared = frame[rated]["rank_lo"].value_counts()
        frame["rated_"] = rated
        frame["rank"] = ""
        cells["rank"] = lambda r: (
            (("=" if shared.get(r["rank_lo"], 0) > 1 else "") + str(int(r["rank_lo"])))
            if r["rated_"] and r["rank_lo"] == r["rank_lo"]
            else "–"
        )
        lead.append("rank")
        if "rank_hi" in frame:
            frame["rank range"] = ""
            cells["rank range"] = lambda r: (
                "–"
                if r["status_"] or r["rank_lo"] != r["rank_lo"]
                else (str(int(r["rank_lo"])) if r["rank_lo"] == r["rank_hi"] else f"{int(r['rank_lo'])}–{int(r['rank_hi'])}")
            )
            lead.append("rank range")
    if {"mu_lo", "mu_hi"} <= set(frame.columns):
        on = frame[ranked]
        half = ZOOM * float(max((on["rating"] - on["mu_lo"]).max(), (on["mu_hi"] - on["rating"]).max(), 0.0)) if len(on) else 0.0
        frame["interval"] = ""
        cells["interval"] = lambda r: (
            "–"
            if r["mu_lo"] != r["mu_lo"]
            else f"{_interval_bar(r['mu_lo'], r['rating'], r['mu_hi'], half)} {r['mu_lo']:.0f} – {r['mu_hi']:.0f}"
        )
        lead.append("interval")
    frame["status_"] = ~ranked
    if "rank_lo" in frame:  # by rank, then by rating within a rank (RANK_LEGEND); the unranked after the ranked
        frame = frame.sort_values(
            ["status_", "rank_lo", "rating"], ascending=[True, True, False], na_position="last", kind="stable"
        )
    return frame, cells, half


def render_report(
    benchmark: str,
    figures: dict[str, bytes],
    gaps: pd.DataFrame,
    hardest: pd.DataFrame,
    reliability: pd.DataFrame,
    inputs: pd.DataFrame | pa.Table,
    code_version: str,
    inputs_digest: str,
    description: str = "",
    agents: pd.DataFrame | None = None,
    fragility: dict | None = None,
    higher_is_better: bool = True,
    suspects: pd.DataFrame | None = None,
    exclusion: dict | None = None,
) -> str:
    """The report's HTML text.

    ``gaps`` is the competency gap table; with its ``rank_lo`` and ``status`` columns (the pipeline's
    ``competency_gap_tables``) the report names the best agent, or the top tier when intervals tie
    it, and lists the provisional, disconnected and unplaced agents with their reasons. The leaderboard
    leads with rank (``=`` where shared), rank range and interval (``mu_lo, mu_hi``, from the gap table
    or ``agents``). ``fragility`` (the ``fragility_*`` values of ``agent_ratings``) says under the headline how
    many test cases decide who is first. ``higher_is_better`` is the direction benchmark.yaml declares: the sign
    each ρ should have. ``suspects`` (:func:`~agielo_dagster.domain.suspects.suspect_table`) are listed with their
    flag and reason, most reversed first; their results by agent are in the export it names. ``exclusion``
    (:func:`~agielo_dagster.domain.suspects.exclusion_of`): the test cases benchmark.yaml's ``exclude`` left out,
    and how each agent's rank and rating moved.
    """
    final = reliability.iloc[-1]
    gap_columns = [
        c
        for c in [
            "agent_id",
            "rating",
            "expected_metric_on_hardest",
            "gap_50",
            "gap_90",
            "gap_99",
            "pct_beaten_50",
            "pct_beaten_91",
            "status" if "status" in gaps else "provisional",
            "status_reason",
        ]
        if c in gaps
    ]
    board, cells, half = leaderboard(gaps, agents)
    lead = [c for c in ("rank", "rank range", "interval") if c in board]
    cells = {**cells, "agent_id": lambda r: html.escape(str(r["agent_id"]))}  # ids whole, never shortened
    zoom = f" Interval bars: ±{half:.0f} Elo around each rating ({ZOOM:g}× the widest half-interval)." if half else ""
    leaders = html.escape(headline(gaps)) if "rank_lo" in gaps else ""
    unusual = "".join(f"<li>{html.escape(line)}</li>" for line in unusual_agents(gaps))
    suspect = _suspects_section(benchmark, suspects) + _exclusion_section(exclusion)
    sections = "\n".join(
        f'<section><h2>{html.escape(TITLES.get(name, name))}</h2><img alt="{html.escape(name)}" src="{png_data_uri(png)}"></section>'
        for name, png in figures.items()
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>AGI-Elo report: {html.escape(benchmark)}</title>
<style>
{STYLE}</style></head><body>
<h1>AGI-Elo report: {html.escape(benchmark)}</h1>
<p>{html.escape(description)}</p>
<p id="summary">{len(gaps)} agents; hardest test case rated {gaps["hardest_test_case_rating"].iloc[0]:.1f};
reliability at 100% of the matches: ρ(test cases) <span id="rho-test-cases">{final["rho_test_cases"]:.3f}</span>,
ρ(agents) <span id="rho-agents">{final["rho_agents"]:.3f}</span>, MAE <span id="mae">{final["mae"]:.4f}</span>.
<span id="rho-meaning">{html.escape(rho_sentence(final["rho_test_cases"], final["rho_agents"], higher_is_better))}</span></p>
<h2>Agents and their competency gaps</h2>
<p id="headline">{leaders}</p>
<p id="fragility">{html.escape(fragility_line(fragility))}</p>
<ul id="unusual">{unusual}</ul>
<p class="muted" id="rank-legend">{html.escape(RANK_LEGEND)} Interval: the rating's {level_words()} interval.{zoom}</p>
<div id="gaps">{_html_table(board, cells, warehouse_path("competency_gap_tables", benchmark), "leaderboard", lead + gap_columns)}</div>
<p class="muted" id="gap-note">{html.escape(gap_note(gaps))}</p>
<h2>Hardest test cases</h2>
<div id="hardest">{_html_table(hardest, {})}</div>
{suspect}
{sections}
<h2>Inputs and code</h2>
<p>Inputs digest <code id="inputs-digest" title="{html.escape(inputs_digest)}">{html.escape(inputs_digest)}</code>;
code version <code id="code-version">{html.escape(code_version)}</code>.</p>
<div id="inputs">{_html_table(inputs, DIGEST_CELLS, where=warehouse_path("input_manifests", benchmark))}</div>
</body></html>
"""


def _suspects_section(benchmark: str, suspects: pd.DataFrame | None) -> str:
    """The "Suspect test cases" section ('' when there are none): flag, reason, discrimination and rating."""
    if suspects is None or suspects.empty:
        return ""
    from .layout import suspects_path

    columns = ["test_case_id", "flag", "discrimination", "rating", "flag_reason"]
    cells = {
        "test_case_id": lambda r: html.escape(str(r["test_case_id"])),
        "discrimination": lambda r: _number(r["discrimination"], "{:.2f}"),
    }
    return (
        f'<h2>Suspect test cases</h2>\n<p class="muted">{len(suspects)} test case(s) whose results do not follow the '
        f"agents' ratings: check their reference answer and scoring. Each one's results by agent, strongest first: "
        f"<code>{html.escape(suspects_path(benchmark))}</code>.</p>\n"
        f'<div id="suspects">{_html_table(suspects, cells, suspects_path(benchmark), "suspects", columns)}</div>'
    )


def _exclusion_section(exclusion: dict | None) -> str:
    """The "Excluded test cases" section ('' when benchmark.yaml excludes none): which and why, how the agents moved."""
    if not exclusion or not exclusion.get("excluded_test_cases"):
        return ""
    excluded = pd.DataFrame(exclusion["excluded"], columns=["test_case_id", "why"])
    moved = pd.DataFrame(exclusion["moved"]).rename(columns={"mu": "rating", "mu_moved": "rating_moved"})
    n = exclusion["excluded_test_cases"]
    return (
        f'<h2>Excluded test cases</h2>\n<p class="muted">benchmark.yaml\'s <code>exclude</code> leaves out {n} test '
        "case(s): every rating on this page is without them. How each agent's rank, rating and gap to the oracle "
        "(at 90 %) moved; <em>_with_them</em>: with them, <em>_moved</em>: without them minus with them.</p>\n"
        f'<div id="moved">{_html_table(moved, {}, table_id="moved-by-exclusion")}</div>\n'
        f'<div id="excluded">{_html_table(excluded, {}, table_id="excluded-test-cases")}</div>'
    )
