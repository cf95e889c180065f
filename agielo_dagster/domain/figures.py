"""The paper's figures, rendered headless (matplotlib's Agg backend) to PNG bytes.

Pure functions of the engine's tables returning matplotlib Figures (:func:`to_png` renders
one); no Dagster, no I/O. Every figure stays the same size whatever the number of agents:
beyond a few dozen agents, the best ones are drawn one by one and the rest are summarized.

1. :func:`rating_distribution`: histogram of test-case ratings, their percentile curve, and each
   agent's rating with the share of test cases it beats (paper Figure 3); every agent up to
   :data:`MAX_LABELS` is labelled, labels spread sideways so that none overlaps another and joined to
   their agents by leaders (beyond, the best agents and a spread of the rest are labelled);
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
from .histogram import histogram_edges  # noqa: E402
from .trajectories import SHOWN, Trajectories, trajectories  # noqa: E402

FIGURES = ("rating_distribution", "reliability_curves", "agent_trajectories", "calibration", "competency_gap")
MAX_AGENTS_DRAWN = SHOWN  # agents drawn one by one; the rest are summarized
MAX_LABELS = 30  # agents labelled on the rating distribution (the rest are drawn, or binned, unlabelled)


def to_png(fig: Figure) -> bytes:
    """PNG bytes of a figure (no software or time stamp, so the same figure gives the same bytes)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _agent_colors(n: int):
    """``n`` colours (none for no agent: zipped strictly with the agents drawn)."""
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(x) for x in np.linspace(0.05, 0.9, n)]


def _short(name: str, limit: int) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def labelled_agents(ratings: np.ndarray, max_labels: int = MAX_LABELS) -> np.ndarray:
    """Which agents get a label: all of them up to ``max_labels``; beyond, the best two thirds of the
    labels go to the best agents and the rest to agents evenly spread over the others' ranks."""
    order = np.argsort(-np.asarray(ratings, dtype=np.float64), kind="stable")
    if len(order) <= max_labels:
        return order
    best = (2 * max_labels) // 3
    rest = order[best:]
    spread = rest[np.unique(np.linspace(0, len(rest) - 1, max_labels - best).round().astype(np.int64))]
    return np.concatenate([order[:best], spread])


def dodged(positions: np.ndarray, gap: float, lo: float = -np.inf, hi: float = np.inf) -> np.ndarray:
    """Label positions as close as possible to ``positions`` (least squares) with at least ``gap`` between
    neighbours, inside [lo, hi]: pool-adjacent-violators on x_i − i·gap, so labels keep the agents' order.

    ``positions`` must be sorted; with n labels the room needed, (n − 1)·gap, must fit in [lo, hi].
    """
    x = np.asarray(positions, dtype=np.float64)
    n = len(x)
    shifted = x - gap * np.arange(n)
    blocks: list[list[float]] = []  # [mean, size]
    for v in shifted:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, size = blocks.pop()
            blocks[-1] = [(blocks[-1][0] * blocks[-1][1] + mean * size) / (blocks[-1][1] + size), blocks[-1][1] + size]
    fitted = np.concatenate([np.full(int(size), mean) for mean, size in blocks]) if n else x
    out = fitted + gap * np.arange(n)
    out = np.maximum(out, lo + gap * np.arange(n))
    return np.minimum(out, hi - gap * np.arange(n)[::-1])


def rating_distribution(test_cases: pd.DataFrame, agents: pd.DataFrame, *, title: str = "") -> Figure:
    """Test-case rating histogram and percentile curve, with each agent's share of test cases beaten.

    Every labelled agent's label stands above the histogram, spread sideways so that no two overlap,
    and a thin leader joins it to the agent's line (agents that cluster get a fan of labels).
    """
    fig = Figure(figsize=(10, 5.6), layout="constrained")
    ax = fig.add_subplot()
    ratings = np.sort(test_cases["mu"].to_numpy())
    agent_mu = agents["mu"].to_numpy()
    ax.hist(ratings, bins=histogram_edges(ratings), color="#9ab", edgecolor="white", label=f"{len(ratings):,} test cases")
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
    chosen = labelled_agents(agent_mu)
    shown = f"{len(agent_mu)} agents" + (
        f" ({len(chosen)} labelled: the best and a spread of the rest)" if len(chosen) < len(agent_mu) else ""
    )
    if len(agent_mu) <= 200:
        ax.vlines(agent_mu, 0, top * 0.8, color="#c60", linewidth=0.8, alpha=0.7, label=shown)
    else:
        counts, edges = np.histogram(agent_mu, bins=histogram_edges(agent_mu))
        ax.stairs(counts * (0.8 * top / counts.max()), edges, color="#c60", label=shown + " (histogram, rescaled)")
    names = agents["agent_id"].astype(str).to_numpy()
    x_lo, x_hi = ax.get_xlim()
    gap = (x_hi - x_lo) * 0.0135  # about 11 pixels of the axes: one line of 7-point text
    chosen = chosen[np.argsort(agent_mu[chosen], kind="stable")]
    label_x = dodged(agent_mu[chosen], gap, x_lo + gap / 2, x_hi - gap / 2)
    for i, x in zip(chosen, label_x, strict=True):
        pct = share_beaten(agent_mu[i], ratings)
        ax.plot([agent_mu[i], agent_mu[i], x], [top * 0.8, top * 0.84, top * 0.92], color="#c60", linewidth=0.5, alpha=0.8)
        ax.annotate(
            f"{_short(names[i], 22)} {pct:.1f}%",
            xy=(x, top * 0.93),
            rotation=90,
            va="bottom",
            ha="center",
            fontsize=7,
            color="#a40",
            bbox=dict(boxstyle="square,pad=0.05", facecolor="white", edgecolor="none", alpha=0.75),
        )
    ax.set_ylim(0, top * 1.7)  # room above the histogram for the labels
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)  # above the axes, clear of labels
    ax.set_title(title or "Test-case difficulty and agent competency", pad=20)  # the legend sits between axes and title
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


def agent_trajectories(snapshots: pd.DataFrame | Trajectories, *, title: str = "") -> Figure:
    """The top agents' ratings against the share of matches; all agents' range as a band.

    ``snapshots``: the snapshot rows (a frame), or their :class:`~.trajectories.Trajectories` (streamed from a
    stored table by the report)."""
    drawn = snapshots if isinstance(snapshots, Trajectories) else trajectories(snapshots, MAX_AGENTS_DRAWN)
    fig = Figure(figsize=(10, 4.6), layout="constrained")
    ax = fig.add_subplot()
    wide, shown = drawn.shown, list(drawn.shown.columns)
    if drawn.agents > len(shown):
        ax.fill_between(100 * wide.index, drawn.low, drawn.high, color="#ddd", label=f"all {drawn.agents} agents")
    for color, agent in zip(_agent_colors(len(shown))[::-1], shown, strict=True):
        ax.plot(100 * wide.index, wide[agent], color=color, linewidth=1.2, label=agent[:28])
    ax.set_xlabel("share of matches (%)")
    ax.set_ylabel("agent rating")
    ax.legend(fontsize=6, ncol=2, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(
        title or "Agent ratings as the share of matches grows" + (f" (top {len(shown)})" if drawn.agents > len(shown) else "")
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
    elif len(agents):
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
    if not agents:  # e.g. an agent that wins every match by far: every rating difference beyond the bins
        ax.text(0, 0.5, "no match within the binned rating differences", ha="center", va="center", fontsize=9, color="#555")
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
    provisional = (
        shown["provisional"].fillna(False).astype(bool).to_numpy() if "provisional" in shown else np.zeros(len(shown), bool)
    )
    labels = [f"{str(a)[:32]}{' (provisional)' if p else ''}" for a, p in zip(shown["agent_id"], provisional, strict=True)]
    values = list(shown["rating"])
    colors = [(*c[:3], 0.35) if p else c for c, p in zip(_agent_colors(len(shown)), provisional, strict=True)]
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
