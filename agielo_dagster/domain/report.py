"""A self-contained static HTML report per benchmark: figures, tables, input versions, code version.

One file, no external resources (images are inline PNG data), for people who don't run Dagster.
"""

import base64
import html

import pandas as pd

from .standing import headline, unusual_agents

TITLES = {
    "rating_distribution": "Difficulty of the test cases and competency of the agents",
    "reliability_curves": "Reliability as the share of matches grows",
    "agent_trajectories": "Agent ratings as the share of matches grows",
    "calibration": "Predicted against empirical performance",
    "competency_gap": "Competency gap to an oracle",
}


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


MAX_ROWS = 100  # rows per table: the report stays the size of its information, whatever the number of agents


def _table(frame: pd.DataFrame, floatfmt: str = "{:.1f}", where: str = "") -> str:
    shown = frame.head(MAX_ROWS).to_html(index=False, float_format=floatfmt.format, border=0, classes="t", escape=True)
    if len(frame) > MAX_ROWS:
        shown += f'<p class="more">{len(frame) - MAX_ROWS:,} more rows{html.escape(" in " + where) if where else ""}.</p>'
    return shown


def render_report(
    benchmark: str,
    figures: dict[str, bytes],
    gaps: pd.DataFrame,
    hardest: pd.DataFrame,
    reliability: pd.DataFrame,
    inputs: pd.DataFrame,
    code_version: str,
    inputs_digest: str,
    description: str = "",
) -> str:
    """The report's HTML text.

    ``gaps`` is the competency gap table; with its ``rank_lo`` and ``status`` columns (the pipeline's
    ``competency_gap_tables``) the report names the best agent, or the top tier when intervals tie
    it, and lists the provisional, disconnected and unplaced agents with their reasons.
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
    leaders = html.escape(headline(gaps)) if "rank_lo" in gaps else ""
    unusual = "".join(f"<li>{html.escape(line)}</li>" for line in unusual_agents(gaps))
    sections = "\n".join(
        f'<section><h2>{html.escape(TITLES.get(name, name))}</h2><img alt="{html.escape(name)}" src="{png_data_uri(png)}"></section>'
        for name, png in figures.items()
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>AGI-Elo report: {html.escape(benchmark)}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1000px; margin: 2em auto; color: #222; }}
img {{ max-width: 100%; }} table.t {{ border-collapse: collapse; font-size: 13px; }}
table.t td, table.t th {{ padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }}
table.t td:first-child, table.t th:first-child {{ text-align: left; }} code {{ font-size: 12px; }}
</style></head><body>
<h1>AGI-Elo report: {html.escape(benchmark)}</h1>
<p>{html.escape(description)}</p>
<p id="summary">{len(gaps)} agents; hardest test case rated {gaps["hardest_test_case_rating"].iloc[0]:.1f};
reliability at 100% of the matches: ρ(test cases) <span id="rho-test-cases">{final["rho_test_cases"]:.3f}</span>,
ρ(agents) <span id="rho-agents">{final["rho_agents"]:.3f}</span>, MAE <span id="mae">{final["mae"]:.4f}</span>.</p>
<h2>Agents and their competency gaps</h2>
<p id="headline">{leaders}</p>
<ul id="unusual">{unusual}</ul>
<div id="gaps">{_table(gaps[gap_columns], where=f"warehouse/competency_gap_tables/{benchmark}.parquet")}</div>
<h2>Hardest test cases</h2>
<div id="hardest">{_table(hardest)}</div>
{sections}
<h2>Inputs and code</h2>
<p>Inputs digest <code id="inputs-digest">{html.escape(inputs_digest)}</code>;
code version <code id="code-version">{html.escape(code_version)}</code>.</p>
<div id="inputs">{_table(inputs, where=f"warehouse/input_manifests/{benchmark}.parquet")}</div>
</body></html>
"""
