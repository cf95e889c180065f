"""The explorer's index page: every benchmark on the pool's one scale, the leaderboard across them, each agent on each.

:func:`render_index` returns one self-contained HTML file built like a benchmark's page
(:mod:`agielo_dagster.domain.explorer`: the data as escaped JSON, the script building the page with
``textContent`` only, a Content-Security-Policy that allows nothing but its own script). It lies beside the
benchmarks' pages (:func:`~agielo_dagster.domain.layout.explorer_index_path`) and links to them.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from .explorer import _columns, _frame, page_script, self_contained_page
from .meaning import OTHER_COMPONENT, POOL_LEGEND, RANK_LEGEND, SATURATED, ZOOM, level_words, saturation_words

__all__ = ["index_data", "render_index"]

AGENT_COLUMNS = ("agent_id", "mu", "sigma", "mu_lo", "mu_hi", "rank", "rank_lo", "rank_hi", "benchmarks", "test_cases")
AGENT_COLUMNS += ("component", "status", "status_reason")
SCALE_COLUMNS = ("benchmark", "test_cases", "agents", "component", "centre", "spread", "difficulty_p10", "difficulty_p50")
SCALE_COLUMNS += ("difficulty_p90", "best_agent", "saturation", "higher_is_better")

_STYLE = "\n" + files(__package__).joinpath("explorer.css").read_text(encoding="utf-8")
_STYLE += files(__package__).joinpath("explorer_index.css").read_text(encoding="utf-8")
_BODY = files(__package__).joinpath("explorer_index.html").read_text(encoding="utf-8").removesuffix("\n")
_SCRIPT = page_script("explorer_index.js")


def _required(name: str, frame: pd.DataFrame, columns: tuple) -> pd.DataFrame:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {', '.join(missing)}; it has {', '.join(map(str, frame.columns))}")
    return frame


def _link(benchmark: str, link: str) -> str:
    # the page is opened from file:// or an object store: a link elsewhere (a scheme, a host, a root) would not be there
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith("/"):
        raise ValueError(f"page of benchmark {benchmark!r} must be a link relative to the index, not {link!r}")
    return link


def index_data(leaderboard: Any, scales: Any, by_benchmark: Any, pages: dict[str, str]) -> dict:
    """The data :func:`render_index` embeds, as plain JSON-ready Python (same parameters)."""
    agents = _required("leaderboard", _frame(leaderboard), ("agent_id", "mu", "component", "status"))
    scales = _required("scales", _frame(scales), ("benchmark", "saturation"))
    played = _required("by_benchmark", _frame(by_benchmark), ("agent_id", "benchmark", "mu_on_pool"))
    order = [c for c in ("component", "rank", "mu") if c in agents.columns]
    agents = agents.astype({"agent_id": str}).sort_values(order, ascending=[c != "mu" for c in order], kind="stable")
    scales = scales.astype({"benchmark": str}).sort_values("benchmark", kind="stable")
    names = scales["benchmark"].tolist()
    # one row per agent, one column per benchmark (b0, b1, … in the benchmarks' order: names are never keys)
    played = played.astype({"agent_id": str, "benchmark": str})
    where = {name: i for i, name in enumerate(names)}
    cells: dict[str, dict[str, list]] = {}
    for key, values in (("pool", "mu_on_pool"), ("own", "mu"), ("test_cases", "test_cases"), ("status", "status")):
        if values in played.columns:
            wide = played.pivot(index="agent_id", columns="benchmark", values=values)  # a pair twice: an error
            wide = wide.reindex(index=agents["agent_id"], columns=names).astype(object)
            cells[key] = {f"b{where[b]}": _columns(wide, [b])[b] for b in names}
    return {
        "benchmarks": {
            **_columns(scales, SCALE_COLUMNS),
            "page": [_link(b, pages[b]) if b in pages else None for b in names],
            "separates": [saturation_words(float(s)) for s in scales["saturation"].tolist()],
        },
        "agents": _columns(agents, AGENT_COLUMNS),
        "cells": cells,
        "words": {
            "level": level_words(),
            "zoom": ZOOM,
            "ranks": RANK_LEGEND,
            "pool": POOL_LEGEND,
            "otherComponent": OTHER_COMPONENT,
            "saturated": SATURATED,
        },
    }


def render_index(leaderboard: Any, scales: Any, by_benchmark: Any, pages: dict[str, str]) -> bytes:
    """The index page's HTML, UTF-8 (module docstring).

    Parameters
    ----------
    leaderboard : DataFrame or pyarrow.Table
        The pool's ``agent_leaderboard``: ``agent_id, mu, component, status`` and any of ``sigma, mu_lo, mu_hi,
        rank, rank_lo, rank_hi, benchmarks, test_cases, status_reason``. Component 0 is the leaderboard; every
        other component is listed apart, as not comparable with it.
    scales : DataFrame or pyarrow.Table
        ``benchmark_scales``: ``benchmark, saturation`` and any of ``test_cases, agents, component, centre,
        spread, difficulty_p10, difficulty_p50, difficulty_p90, best_agent, higher_is_better``.
    by_benchmark : DataFrame or pyarrow.Table
        ``agent_benchmark_ratings``: ``agent_id, benchmark, mu_on_pool`` and any of ``mu, test_cases, status``.
    pages : dict
        Benchmark → its explorer page as a link relative to the index (``"digits.html"``); a benchmark without one
        is listed unlinked.
    """
    data = index_data(leaderboard, scales, by_benchmark, pages)
    return self_contained_page("AGI-Elo explorer: every benchmark", _STYLE, _BODY, _SCRIPT, data).encode("utf-8")
