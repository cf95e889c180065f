"""The paper's figures, rendered headless (matplotlib's Agg backend) to PNG bytes.

Pure functions of the engine's tables returning matplotlib Figures (:func:`to_png` renders
one); no Dagster, no I/O:

1. :func:`rating_distribution`: histogram of test-case ratings, their percentile curve, and a
   line per agent labelled with the share of test cases it beats (paper Figure 3);
2. :func:`reliability_curves`: ρ of test cases and agents, MAE and MSE against the share of
   matches (Figure 4); :func:`agent_trajectories`: each agent's rating against it (Figure 6);
3. :func:`calibration`: predicted against empirical score per bin of rating difference, per
   agent (Figure 5);
4. :func:`competency_gap`: each agent's rating against the oracle@50/90/99 ratings and the
   hardest test case.
"""

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..rating.predict import share_beaten  # noqa: E402

FIGURES = ("rating_distribution", "reliability_curves", "agent_trajectories", "calibration", "competency_gap")


def to_png(fig: Figure) -> bytes:
    """PNG bytes of a figure (no software or time stamp, so the same figure gives the same bytes)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def _agent_colors(n: int):
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(x) for x in np.linspace(0.05, 0.9, max(n, 1))]


def rating_distribution(test_cases: pd.DataFrame, agents: pd.DataFrame, *, title: str = "") -> Figure:
    """Test-case rating histogram and percentile curve, with each agent's share of test cases beaten."""
    fig = Figure(figsize=(9, 4.8))
    ax = fig.add_subplot()
    ratings = np.sort(test_cases["mu"].to_numpy())
    ax.hist(ratings, bins=60, color="#9ab", edgecolor="white")
    ax.set_xlabel("rating (Elo scale)")
    ax.set_ylabel("test cases")
    curve = ax.twinx()
    points = np.unique(np.linspace(0, len(ratings) - 1, 500).astype(int))  # the curve needs no more points than pixels
    curve.plot(ratings[points], 100 * (points + 1) / len(ratings), color="#234", linewidth=1.5)
    curve.set_ylabel("percentile of test cases (%)")
    curve.set_ylim(0, 100)
    ordered = agents.sort_values("mu")
    for color, (_, row) in zip(_agent_colors(len(ordered)), ordered.iterrows(), strict=True):
        pct = share_beaten(row["mu"], ratings)
        ax.axvline(row["mu"], color=color, linewidth=1)
        ax.text(
            row["mu"],
            ax.get_ylim()[1] * 0.98,
            f" {row['agent_id']} {pct:.1f}%",
            rotation=90,
            va="top",
            ha="right",
            fontsize=7,
            color=color,
        )
    ax.set_title(title or "Test-case difficulty and agent competency")
    return fig


def reliability_curves(reliability: pd.DataFrame, *, title: str = "") -> Figure:
    """Spearman ρ (test cases, agents) and MAE / MSE against the share of matches."""
    fig = Figure(figsize=(9, 4.2))
    left, right = fig.subplots(1, 2)
    pct = 100 * reliability["fraction"]
    left.plot(pct, reliability["rho_test_cases"], label="ρ test cases (rating vs mean metric)")
    left.plot(pct, reliability["rho_agents"], label="ρ agents")
    left.set_xlabel("share of matches (%)")
    left.set_ylabel("Spearman ρ")
    left.set_ylim(-1.05, 1.05)
    left.legend(fontsize=8)
    right.plot(pct, reliability["mae"], label="MAE")
    right.plot(pct, reliability["mse"], label="MSE")
    right.set_xlabel("share of matches (%)")
    right.set_ylabel("predicted vs empirical error")
    right.legend(fontsize=8)
    fig.suptitle(title or "Reliability as the share of matches grows")
    return fig


def agent_trajectories(snapshots: pd.DataFrame, *, title: str = "") -> Figure:
    """Each agent's rating against the share of matches."""
    fig = Figure(figsize=(9, 4.2))
    ax = fig.add_subplot()
    agents = snapshots[snapshots["kind"] == "agent"]
    final = agents[agents["fraction"] == agents["fraction"].max()].sort_values("mu", ascending=False)["id"]
    for color, agent in zip(_agent_colors(len(final))[::-1], final, strict=True):
        rows = agents[agents["id"] == agent]
        ax.plot(100 * rows["fraction"], rows["mu"], color=color, linewidth=1.2, label=str(agent))
    ax.set_xlabel("share of matches (%)")
    ax.set_ylabel("agent rating")
    if len(final) <= 25:
        ax.legend(fontsize=6, ncol=2, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(title or "Agent ratings as the share of matches grows")
    return fig


def calibration(binned: pd.DataFrame, *, title: str = "") -> Figure:
    """Empirical against predicted score per 100-point bin of rating difference, per agent."""
    fig = Figure(figsize=(9, 4.8))
    ax = fig.add_subplot()
    diffs = np.linspace(-1250, 1150, 200)
    ax.plot(diffs, 1 / (1 + 10 ** (-diffs / 400)), color="black", linewidth=1.5, label="predicted E[S]")
    agents = sorted(binned["agent_id"].unique())
    for color, agent in zip(_agent_colors(len(agents)), agents, strict=True):
        rows = binned[binned["agent_id"] == agent]
        ax.scatter(
            rows["mean_rating_diff"],
            rows["empirical_score"],
            s=8 + 40 * rows["matches"] / binned["matches"].max(),
            color=color,
            alpha=0.7,
        )
    ax.set_xlabel("agent rating − test-case rating")
    ax.set_ylabel("score (empirical dots, predicted line)")
    ax.set_xlim(-1250, 1150)
    ax.set_ylim(-0.03, 1.03)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title or "Predicted against empirical performance (dot size: matches)")
    return fig


def competency_gap(gaps: pd.DataFrame, *, title: str = "") -> Figure:
    """Each agent's rating against the hardest test case and the oracles at 50/90/99% confidence."""
    ordered = gaps.sort_values("rating")
    fig = Figure(figsize=(9, 0.9 + 0.28 * len(ordered)))
    ax = fig.add_subplot()
    y = np.arange(len(ordered))
    ax.barh(y, ordered["rating"], color=_agent_colors(len(ordered)), height=0.6)
    ax.set_yticks(y, ordered["agent_id"], fontsize=7)
    first = ordered.iloc[0]
    lines = [
        ("hardest_test_case_rating", "hardest test case", ":"),
        ("oracle_rating_50", "oracle @50%", "--"),
        ("oracle_rating_90", "oracle @90%", "-."),
        ("oracle_rating_99", "oracle @99%", "-"),
    ]
    for column, label, style in lines:
        if column in ordered:
            ax.axvline(first[column], color="#c33", linestyle=style, linewidth=1.2, label=f"{label} ({first[column]:.0f})")
    low = min(ordered["rating"].min(), first["hardest_test_case_rating"]) - 100
    ax.set_xlim(low, first.get("oracle_rating_99", ordered["rating"].max()) + 60)
    ax.set_xlabel("rating (Elo scale)")
    ax.set_ylabel("agent")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or "Competency gap to an oracle that solves every test case")
    return fig
