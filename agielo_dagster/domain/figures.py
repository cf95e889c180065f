"""The paper's figures, rendered headless (matplotlib's Agg backend) to PNG bytes.

Pure functions of the engine's tables returning matplotlib Figures (:func:`to_png` renders
one); no Dagster, no I/O. Every figure stays the same size whatever the number of agents:
beyond a few dozen agents, the best ones are drawn one by one and the rest are summarized.

1. :func:`rating_distribution`: histogram of test-case ratings, their percentile curve, and each
   agent's rating with the share of test cases it beats (paper Figure 3); labels are placed so
   they never overlap (agents close together share a tick, the label names the best of them);
2. :func:`reliability_curves`: ρ of test cases and agents, MAE and MSE against the share of
   matches (Figure 4); :func:`agent_trajectories`: the top agents' ratings against it, the rest
   as a band (Figure 6);
3. :func:`calibration`: predicted against empirical score per bin of rating difference, per
   agent, or pooled over all agents when there are many (Figure 5);
4. :func:`competency_gap`: the top agents' ratings against the hardest test case and the
   oracles at 50/90/99% (the oracle at 50% *is* the hardest test case's rating: drawn once,
   labelled as both).
"""

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..rating.predict import share_beaten  # noqa: E402

FIGURES = ("rating_distribution", "reliability_curves", "agent_trajectories", "calibration", "competency_gap")
MAX_AGENTS_DRAWN = 25  # agents drawn one by one; the rest are summarized
MAX_LABELS = 12


def to_png(fig: Figure) -> bytes:
    """PNG bytes of a figure (no software or time stamp, so the same figure gives the same bytes)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _agent_colors(n: int):
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(x) for x in np.linspace(0.05, 0.9, max(n, 1))]


def spaced_labels(positions: np.ndarray, min_gap: float, max_labels: int = MAX_LABELS) -> list[int]:
    """Indices of positions to label, best (largest) first, none closer than ``min_gap`` to another."""
    chosen: list[int] = []
    for i in np.argsort(-positions, kind="stable"):
        if len(chosen) >= max_labels:
            break
        if all(abs(positions[i] - positions[j]) >= min_gap for j in chosen):
            chosen.append(int(i))
    return chosen


def rating_distribution(test_cases: pd.DataFrame, agents: pd.DataFrame, *, title: str = "") -> Figure:
    """Test-case rating histogram and percentile curve, with each agent's share of test cases beaten."""
    fig = Figure(figsize=(10, 5.2), layout="constrained")
    ax = fig.add_subplot()
    ratings = np.sort(test_cases["mu"].to_numpy())
    agent_mu = agents["mu"].to_numpy()
    ax.hist(ratings, bins=60, color="#9ab", edgecolor="white", label=f"{len(ratings):,} test cases")
    ax.set_xlabel("rating (Elo scale)")
    ax.set_ylabel("test cases")
    curve = ax.twinx()
    points = np.unique(np.linspace(0, len(ratings) - 1, 500).astype(int))  # the curve needs no more points than pixels
    curve.plot(ratings[points], 100 * (points + 1) / len(ratings), color="#234", linewidth=1.5)
    curve.set_ylabel("percentile of test cases (%)")
    curve.set_ylim(0, 100)
    lo = min(ratings.min(), agent_mu.min())
    hi = max(ratings.max(), agent_mu.max())
    ax.set_xlim(lo - 0.03 * (hi - lo + 1), hi + 0.03 * (hi - lo + 1))
    top = ax.get_ylim()[1]
    if len(agent_mu) <= 200:
        ax.vlines(agent_mu, 0, top * 0.78, color="#c60", linewidth=0.8, alpha=0.7, label=f"{len(agent_mu)} agents")
    else:
        counts, edges = np.histogram(agent_mu, bins=60)
        ax.stairs(
            counts * (0.78 * top / counts.max()), edges, color="#c60", label=f"{len(agent_mu):,} agents (histogram, rescaled)"
        )
    names = agents["agent_id"].astype(str).to_numpy()
    span = ax.get_xlim()[1] - ax.get_xlim()[0]
    for i in spaced_labels(agent_mu, min_gap=span / 40):
        pct = share_beaten(agent_mu[i], ratings)
        ax.annotate(
            f"{names[i][:28]} {pct:.1f}%",
            xy=(agent_mu[i], top * 0.78),
            rotation=90,
            va="bottom",
            ha="center",
            fontsize=7,
            color="#a40",
        )
    ax.set_ylim(0, top * 1.45)  # room above the histogram for the labels
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title or "Test-case difficulty and agent competency")
    return fig


def reliability_curves(reliability: pd.DataFrame, *, title: str = "") -> Figure:
    """Spearman ρ (test cases, agents) and MAE / MSE against the share of matches."""
    fig = Figure(figsize=(10, 4.2), layout="constrained")
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
    """The top agents' ratings against the share of matches; all agents' range as a band."""
    fig = Figure(figsize=(10, 4.6), layout="constrained")
    ax = fig.add_subplot()
    agents = snapshots[snapshots["kind"] == "agent"].astype({"id": str})
    wide = agents.pivot_table(index="fraction", columns="id", values="mu")
    final = wide.iloc[-1].sort_values(ascending=False)
    shown = list(final.index[:MAX_AGENTS_DRAWN])
    if len(final) > len(shown):
        ax.fill_between(100 * wide.index, wide.min(axis=1), wide.max(axis=1), color="#ddd", label=f"all {len(final)} agents")
    for color, agent in zip(_agent_colors(len(shown))[::-1], shown, strict=True):
        ax.plot(100 * wide.index, wide[agent], color=color, linewidth=1.2, label=agent[:28])
    ax.set_xlabel("share of matches (%)")
    ax.set_ylabel("agent rating")
    ax.legend(fontsize=6, ncol=2, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(
        title or "Agent ratings as the share of matches grows" + (f" (top {len(shown)})" if len(final) > len(shown) else "")
    )
    return fig


def calibration(binned: pd.DataFrame, *, title: str = "") -> Figure:
    """Empirical against predicted score per 100-point bin of rating difference (per agent, or pooled)."""
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.add_subplot()
    diffs = np.linspace(-1250, 1150, 200)
    ax.plot(diffs, 1 / (1 + 10 ** (-diffs / 400)), color="black", linewidth=1.5, label="predicted E[S]")
    agents = sorted(binned["agent_id"].astype(str).unique())
    if len(agents) <= MAX_AGENTS_DRAWN:
        for color, agent in zip(_agent_colors(len(agents)), agents, strict=True):
            rows = binned[binned["agent_id"].astype(str) == agent]
            ax.scatter(
                rows["mean_rating_diff"],
                rows["empirical_score"],
                s=8 + 40 * rows["matches"] / binned["matches"].max(),
                color=color,
                alpha=0.7,
            )
    else:
        weight = binned["matches"]
        pooled = (
            binned.assign(d=binned["mean_rating_diff"] * weight, s=binned["empirical_score"] * weight)
            .groupby("bin_lo")[["d", "s", "matches"]]
            .sum()
        )
        ax.scatter(
            pooled["d"] / pooled["matches"],
            pooled["s"] / pooled["matches"],
            s=10 + 60 * pooled["matches"] / pooled["matches"].max(),
            color="#c60",
            label=f"all {len(agents)} agents, pooled",
        )
    ax.set_xlabel("agent rating − test-case rating")
    ax.set_ylabel("score (empirical dots, predicted line)")
    ax.set_xlim(-1250, 1150)
    ax.set_ylim(-0.03, 1.03)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title or "Predicted against empirical performance (dot size: matches)")
    return fig


def competency_gap(gaps: pd.DataFrame, *, title: str = "") -> Figure:
    """The top agents' ratings against the hardest test case and the oracles at 50/90/99% confidence."""
    ordered = gaps.sort_values("rating", ascending=False)
    shown = ordered.head(MAX_AGENTS_DRAWN).iloc[::-1]
    rest = len(ordered) - len(shown)
    fig = Figure(figsize=(10, 1.4 + 0.24 * (len(shown) + (1 if rest else 0))), layout="constrained")
    ax = fig.add_subplot()
    labels = [str(a)[:32] for a in shown["agent_id"]]
    values = list(shown["rating"])
    colors = _agent_colors(len(shown))
    if rest:
        others = ordered.iloc[len(shown) :]
        labels.insert(0, f"{rest} more (median)")
        values.insert(0, float(others["rating"].median()))
        colors.insert(0, "#bbb")
    y = np.arange(len(values))
    ax.barh(y, values, color=colors, height=0.6)
    ax.set_yticks(y, labels, fontsize=7)
    first = ordered.iloc[0]
    hardest = first["hardest_test_case_rating"]
    ax.axvline(hardest, color="#c33", linestyle="--", linewidth=1.6, label=f"hardest test case = oracle @50% ({hardest:.0f})")
    for column, label, style in (("oracle_rating_90", "oracle @90%", "-."), ("oracle_rating_99", "oracle @99%", "-")):
        if column in ordered:
            ax.axvline(first[column], color="#c33", linestyle=style, linewidth=1.2, label=f"{label} ({first[column]:.0f})")
    low = min(min(values), hardest) - 100
    ax.set_xlim(low, first.get("oracle_rating_99", max(values)) + 60)
    ax.set_xlabel("rating (Elo scale)")
    ax.set_ylabel("agent")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or "Competency gap to an oracle that solves every test case")
    return fig
