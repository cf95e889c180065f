"""A self-contained interactive HTML page per benchmark: leaderboard, difficulty, slices, ability masses, reliability.

:func:`render_explorer` returns one HTML file. Everything is inline: the data as JSON in a
``<script type="application/json">`` block, the JavaScript and the styles in the page, no CDN,
no font, no image fetched (the styles, markup and script are the package files ``explorer.css``,
``explorer.html``, ``explorer.kit.js`` (the widgets the index page shares) and ``explorer.js`` beside this module). A Content-Security-Policy allows exactly the page's own script (by its
SHA-256) and nothing from the network, so the page opens the same from ``file://``, an object
store or an air-gapped laptop.

Safety. Ids and tags come from users and may hold ``</script>``, quotes or HTML. The JSON has
every ``<``, ``>`` and ``&`` escaped (``\\u003c`` …), so nothing in it can end the data block;
the script builds the page with ``textContent`` and ``setAttribute`` only (never ``innerHTML``),
so no id is ever parsed as markup.

Size. The page stays the size of its information: at most ``max_points`` test cases (default
3,000) are drawn one by one (the hardest half of them, and an even sample of the rest by
rating); every test case is counted in the histogram; tags are embedded for the drawn test cases
only, with each tag's most frequent values over all of them. Agents are all embedded (the
leaderboard has search and paging), but at most :data:`MAX_AGENT_LINES` are drawn on the
difficulty axis; slices are embedded up to :data:`MAX_SLICE_ROWS` rows.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from importlib.resources import files
from typing import Any

import numpy as np
import pandas as pd

from ..rating.predict import share_beaten
from .histogram import histogram_edges
from .layout import explorer_index_path
from .meaning import RANK_LEGEND, ZOOM, gap_note, header_title, level_words, rho_sentence
from .standing import fragility_line, headline, unusual_agents

__all__ = ["MAX_AGENT_LINES", "MAX_POINTS", "MAX_SLICE_ROWS", "page_script", "render_explorer", "self_contained_page"]

MAX_POINTS = 3000
MAX_AGENT_LINES = 200
MAX_SLICE_ROWS = 20_000
MAX_CALIBRATION_AGENTS = 100
WEIGHTED = {"d": "mean_rating_diff", "e": "empirical_score", "x": "expected_score"}
HISTOGRAM_BINS = 60
TOP_TAG_VALUES = 12
MAX_TEXT = 300  # characters of an id or a tag value embedded
MAX_METADATA_COLUMNS = 20  # meta.* columns of the test-case table shown on hover
MAX_SUSPECTS = 1000  # suspect test cases embedded, most reversed first (the export has them all)

AGENT_COLUMNS = ("agent_id", "mu", "mu_lo", "mu_hi", "sigma", "rank", "rank_lo", "rank_hi", "matches", "mean_metric")
GAP_COLUMNS = ("gap_50", "gap_90", "gap_99", "pct_beaten_50", "pct_beaten_91", "expected_metric_on_hardest")
TEST_CASE_COLUMNS = ("test_case_id", "mu", "sigma", "matches", "mean_metric")
_SURROGATE = re.compile("[\ud800-\udfff]")
_OPTIONS = {*"tags slices masses reliability calibration gaps max_points description fragility higher_is_better suspects".split()}


def _page_part(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def page_script(name: str) -> str:
    """A page's script: the shared widgets (``explorer.kit.js``) and the page's own file, in one function of their
    own. The line break that opens it is part of the page (and of the script's hash in the Content-Security-Policy)."""
    return f'\n(function () {{\n"use strict";\n{_page_part("explorer.kit.js")}{_page_part(name)}}})();\n'


# The page's styles, markup and script: package files beside this module.
_STYLE = "\n" + _page_part("explorer.css")
# the index lies beside the benchmarks' pages (layout.py): linked by its file name
_BODY = _page_part("explorer.html").removesuffix("\n").replace("{index}", explorer_index_path().rsplit("/", 1)[1])
_SCRIPT = page_script("explorer.js")


def _frame(data: Any) -> pd.DataFrame | None:
    if data is None:
        return None
    if isinstance(data, pd.DataFrame):
        return data
    if hasattr(data, "to_pandas"):
        return data.to_pandas()
    return pd.DataFrame(data)


def _text(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _clean(value: Any) -> Any:
    """A JSON-ready value: finite floats rounded, NaN/inf as null, lists of text, anything else as text."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return round(v, 4) if math.isfinite(v) else None
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_text(v) for v in value if v is not None]
    return _text(value)


def _columns(frame: pd.DataFrame, names: Any) -> dict[str, list]:
    return {name: _column(frame[name]) for name in names if name in frame.columns}


def _column(values: pd.Series) -> list:
    """:func:`_clean` of each value; a numpy float, integer or boolean column without a test a value (a tall
    benchmark's 200,000 agents)."""
    if not isinstance(values.dtype, np.dtype) or values.dtype.kind not in "fiub":
        return [_clean(v) for v in values.tolist()]
    if values.dtype.kind == "f":
        return _rounded(values.to_numpy(dtype=np.float64))
    return values.tolist()


def _rounded(values: np.ndarray) -> list:
    """``round(v, 4)`` of each value, None for NaN and infinities, a column at a time (Python's round is 0.8 µs a
    value, and the explorer rounds 2 million of them at 200,000 agents).

    numpy rounds ``v × 10⁴`` to an integer and divides: the same float as Python's correctly rounded decimal,
    except where ``v × 10⁴`` lies within rounding error of a half (a tie either way) or is too large to scale
    exactly; those few are rounded by Python.
    """
    scaled = values * 1e4
    odd = np.abs(scaled - np.floor(scaled) - 0.5) <= np.abs(scaled) * 1e-12 + 1e-12
    odd |= ~(np.abs(values) < 1e11)  # NaN and infinities too
    out = np.round(values, 4).tolist()
    for i in np.flatnonzero(odd).tolist():
        v = float(values[i])
        out[i] = round(v, 4) if math.isfinite(v) else None
    return out


def _script_json(data: Any) -> str:
    """JSON that cannot end or comment out its ``<script>`` block, with no lone surrogate (the file is UTF-8)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _drawn(ratings: np.ndarray, max_points: int) -> np.ndarray:
    """Row indices of the test cases drawn one by one: all, or the hardest half and an even sample of the rest."""
    n = len(ratings)
    if n <= max_points:
        return np.arange(n)
    order = np.argsort(-ratings, kind="stable")
    hardest = order[: max_points // 2]
    rest = order[max_points // 2 :]
    sample = rest[np.unique(np.linspace(0, len(rest) - 1, max_points - len(hardest)).astype(np.int64))]
    return np.sort(np.concatenate([hardest, sample]))


def _agents_data(agents: pd.DataFrame, gaps: pd.DataFrame | None, ratings: np.ndarray) -> dict:
    frame = agents.copy()
    frame["agent_id"] = frame["agent_id"].astype(str)
    if gaps is not None and len(gaps):
        extra = [c for c in GAP_COLUMNS if c in gaps.columns and c not in frame.columns]
        frame = frame.merge(gaps[["agent_id", *extra]].astype({"agent_id": str}), on="agent_id", how="left")
    if "pct_beaten_50" not in frame.columns and len(ratings):
        frame["pct_beaten_50"] = share_beaten(frame["mu"].to_numpy(dtype=np.float64), ratings)
    names = [c for c in (*AGENT_COLUMNS, *GAP_COLUMNS) if c in frame.columns]
    out = _columns(frame, names)
    if "provisional" in frame.columns:
        out["provisional"] = [bool(v) if v is not None and v == v else False for v in frame["provisional"].tolist()]
    if "status" in frame.columns:  # rated, provisional, disconnected, unplaced (rating.standing) and why
        out["status"] = [_text(v) if isinstance(v, str) else "rated" for v in frame["status"].tolist()]
        reasons = frame["status_reason"].tolist() if "status_reason" in frame.columns else [""] * len(frame)
        out["status_reason"] = [_text(v) if isinstance(v, str) else "" for v in reasons]
    return out


def _tags_data(tags: pd.DataFrame | None, ids: pd.Series, drawn: np.ndarray) -> dict:
    if tags is None or "test_case_id" not in tags.columns:
        return {"names": [], "values": {}, "summary": {}}
    tags = tags.astype({"test_case_id": str}).drop_duplicates("test_case_id").set_index("test_case_id")
    ids = ids.astype(str)
    names = [str(c) for c in tags.columns]
    known = tags.reindex(ids)
    values, summary = {}, {}
    for name in names:
        column = known[name]
        values[name] = [_clean(v) if not _is_missing(v) else None for v in column.iloc[drawn].tolist()]
        items = [
            x for v in column.tolist() if not _is_missing(v) for x in (v if isinstance(v, (list, tuple, np.ndarray)) else [v])
        ]
        counts = pd.Series(items, dtype=object).astype(str).value_counts()
        summary[name] = {
            "test_cases": int(sum(not _is_missing(v) for v in column.tolist())),
            "distinct": int(len(counts)),
            "top": [[_text(k), int(c)] for k, c in counts.head(TOP_TAG_VALUES).items()],
        }
    return {"names": names, "values": values, "summary": summary}


def _suspects_data(suspects: pd.DataFrame | None, tags: pd.DataFrame | None) -> dict | None:
    """The suspects (:func:`~agielo_dagster.domain.suspects.suspect_table`): their flag, reason, discrimination and
    rating, the text of their tags (searched), and each one's scores by agent, the agents strongest first."""
    if suspects is None or suspects.empty:
        return None
    from .suspects import SUSPECT_COLUMNS

    shown = suspects.head(MAX_SUSPECTS).astype({"test_case_id": str})
    agents = [c for c in shown.columns if c not in (*SUSPECT_COLUMNS, "rating")][:MAX_AGENT_LINES]
    text, pairs = [""] * len(shown), [[] for _ in range(len(shown))]
    if tags is not None and "test_case_id" in tags.columns:
        known = tags.astype({"test_case_id": str}).drop_duplicates("test_case_id").set_index("test_case_id")
        known = known.reindex(shown["test_case_id"])
        text = [
            "; ".join(f"{name}: {_text(_joined(value))}" for name, value in row.items() if not _is_missing(value))
            for _, row in known.iterrows()
        ]
        # each "tag: value" pair on its own (a list tag gives one per element): what the tag filter selects
        pairs = [
            [f"{name}: {_text(v)}" for name, value in row.items() if not _is_missing(value) for v in _elements(value)]
            for _, row in known.iterrows()
        ]
    rows = _columns(shown, ("test_case_id", "flag", "flag_reason", "discrimination", "rating"))
    scores = [[_clean(v) for v in row] for row in shown[agents].itertuples(index=False)]
    return {
        "total": int(len(suspects)),
        "rows": {**rows, "tags": text, "tag_values": pairs},
        "agents": [_text(a) for a in agents],
        "scores": scores,
    }


def _elements(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]


def _joined(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple, np.ndarray)) else str(value)


def _is_missing(value: Any) -> bool:
    if isinstance(value, (list, tuple, np.ndarray)):
        return len(value) == 0
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _masses_data(masses: Any) -> dict | None:
    if masses is None:
        return None
    table = _frame(masses.masses if hasattr(masses, "masses") else masses)
    info = {}
    for key in ("loss", "rmse", "alignment", "aligned", "pairs", "max_order", "unit", "origin"):
        if hasattr(masses, key):
            info[key] = _clean(getattr(masses, key))
    return {"rows": _columns(table, ("ability", "mass", "items")), "info": info}


def _calibration_data(calibration: pd.DataFrame | None) -> dict | None:
    if calibration is None or not len(calibration):
        return None
    c = calibration
    w = c["matches"].to_numpy(dtype=np.float64)
    weighted = pd.DataFrame(  # numbers only: a tall benchmark's calibration has a row per agent and bin, ids and all
        {"bin_lo": c["bin_lo"], "matches": c["matches"]}
        | {k: c[name].to_numpy(dtype=np.float64) * w for k, name in WEIGHTED.items()}
    )
    pooled = weighted.groupby("bin_lo", sort=True)[["d", "e", "x", "matches"]].sum()
    del weighted
    data = {
        "pooled": {
            "diff": [_clean(v) for v in (pooled["d"] / pooled["matches"]).tolist()],
            "empirical": [_clean(v) for v in (pooled["e"] / pooled["matches"]).tolist()],
            "expected": [_clean(v) for v in (pooled["x"] / pooled["matches"]).tolist()],
            "matches": [int(v) for v in pooled["matches"].tolist()],
        }
    }
    if c["agent_id"].nunique() <= MAX_CALIBRATION_AGENTS:
        data["agents"] = _columns(
            c.astype({"agent_id": str}), ("agent_id", "mean_rating_diff", "empirical_score", "expected_score", "matches")
        )
    return data


def explorer_data(benchmark: str, agents: Any, test_cases: Any, **options: Any) -> dict:
    """The data :func:`render_explorer` embeds, as plain JSON-ready Python (same parameters)."""
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"unexpected option(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_OPTIONS))}")
    tags, slices, masses = options.get("tags"), options.get("slices"), options.get("masses")
    reliability, calibration, gaps = options.get("reliability"), options.get("calibration"), options.get("gaps")
    max_points, description = int(options.get("max_points", MAX_POINTS)), str(options.get("description", ""))
    agents, test_cases, gaps = _frame(agents), _frame(test_cases), _frame(gaps)
    for name, frame, required in (("agents", agents, ("agent_id", "mu")), ("test_cases", test_cases, ("test_case_id", "mu"))):
        missing = [c for c in required if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} lacks column(s) {', '.join(missing)}; it has {', '.join(map(str, frame.columns))}")
    ratings = test_cases["mu"].to_numpy(dtype=np.float64)
    finite = ratings[np.isfinite(ratings)]
    drawn = _drawn(np.where(np.isfinite(ratings), ratings, -np.inf), max_points)
    counts, edges = (
        np.histogram(finite, bins=histogram_edges(finite, HISTOGRAM_BINS)) if len(finite) else (np.zeros(0), np.zeros(1))
    )
    column = test_cases["test_case_id"]
    shown = test_cases.iloc[drawn]  # only the drawn ids become text (a wide benchmark has millions)
    metadata = [str(c) for c in test_cases.columns if str(c).startswith("meta.")][:MAX_METADATA_COLUMNS]
    data = {
        "benchmark": _text(benchmark),
        "description": _text(description),
        "headline": _text(headline(agents)) if "rank_lo" in agents.columns else "",
        "unusual": [_text(line) for line in unusual_agents(agents)],
        "fragility": _text(fragility_line(options.get("fragility"))),
        "agents": _agents_data(agents, gaps, np.sort(finite)),
        "testCases": {
            "total": int(len(test_cases)),
            "drawn": _columns(
                shown.assign(test_case_id=column.iloc[drawn].astype(str).to_numpy()), (*TEST_CASE_COLUMNS, *metadata)
            ),
            "metadata": list(metadata),
            "histogram": {"edges": [_clean(v) for v in edges.tolist()], "counts": [int(v) for v in counts.tolist()]},
        },
        "tags": _tags_data(_frame(tags), column, drawn),
        "slices": None,
        "masses": _masses_data(masses),
        "reliability": None,
        "calibration": _calibration_data(_frame(calibration)),
        "suspects": _suspects_data(_frame(options.get("suspects")), _frame(tags)),
        "limits": {"maxAgentLines": MAX_AGENT_LINES, "maxPoints": int(max_points)},
        # the settings' words and what the leaderboard's numbers mean, owned by domain/meaning.py
        "words": {
            "level": level_words(),
            "zoom": ZOOM,
            "ranks": RANK_LEGEND,
            "gaps": gap_note(gaps) if gaps is not None else "",  # the code's own words: not cut as an id is
            "titles": {c: header_title(c) for c in ("matches", "mean_metric", *GAP_COLUMNS)},
        },
    }
    slices = _frame(slices)
    if slices is not None and len(slices):
        names = [c for c in ("tag", "value", "agent_id", "mu", "mu_lo", "mu_hi", "delta", "test_cases", "slice_mean_difficulty")]
        data["slices"] = {"total": int(len(slices)), "rows": _columns(slices.head(MAX_SLICE_ROWS), names)}
    reliability = _frame(reliability)
    if reliability is not None and len(reliability):
        data["reliability"] = _columns(reliability, ("fraction", "rho_test_cases", "rho_agents", "mae", "mse"))
        final = reliability.iloc[-1]
        direction = bool(options.get("higher_is_better", True))
        data["reliability"]["meaning"] = _text(rho_sentence(final["rho_test_cases"], final["rho_agents"], direction))
    return data


def render_explorer(
    benchmark: str,
    agents: Any,
    test_cases: Any,
    *,
    tags: Any = None,
    slices: Any = None,
    masses: Any = None,
    reliability: Any = None,
    calibration: Any = None,
    gaps: Any = None,
    max_points: int = MAX_POINTS,
    description: str = "",
    fragility: dict | None = None,
    higher_is_better: bool = True,
    suspects: Any = None,
) -> str:
    """The explorer's HTML text: one self-contained file (module docstring).

    Parameters
    ----------
    benchmark : str
        Its name (the page title).
    agents : DataFrame or pyarrow.Table
        ``agent_id, mu`` and any of ``mu_lo, mu_hi, sigma, rank, rank_lo, rank_hi, matches,
        mean_metric``; a boolean ``provisional`` column marks provisional agents (shown apart), and
        ``status, status_reason`` (``agent_ratings``' standing: rated, provisional, disconnected,
        unplaced) badge the others and leave the unranked ones without a rank. The leaderboard's
        headline names the best agent, or the top tier when intervals tie it.
    test_cases : DataFrame or pyarrow.Table
        ``test_case_id, mu`` and any of ``sigma, matches, mean_metric``; ``meta.<name>`` columns (the
        uploads' metadata) are shown on hover with the tags.
    tags : table, optional
        ``test_case_id`` plus tag columns (text or lists of text): shown when a test case is hovered.
    slices : table, optional
        :func:`~agielo_dagster.rating.slice_ratings`'s output.
    masses : AbilityMasses or table, optional
        :func:`~agielo_dagster.rating.ability_masses`'s result, or a frame ``ability, mass[, items]``.
    reliability, calibration, gaps : tables, optional
        ``rate(...).reliability``, :func:`~agielo_dagster.rating.binned_calibration` and
        :func:`~agielo_dagster.rating.competency_gaps` (its gaps and shares beaten join the leaderboard).
    max_points : int
        Test cases drawn one by one at most.
    description : str
        A line of text under the title.
    fragility : dict, optional
        The ``fragility_*`` values of ``agent_ratings``: how many test cases decide who is first, under the headline.
    higher_is_better : bool
        The direction benchmark.yaml declares: the sign each ρ should have, said under the reliability plot.
    suspects : DataFrame, optional
        :func:`~agielo_dagster.domain.suspects.suspect_table`'s: the "Suspect test cases" section, each one's results
        by agent (strongest first), filterable by flag and searchable by id, tag and reason.
    """
    options = dict(
        tags=tags,
        slices=slices,
        masses=masses,
        reliability=reliability,
        calibration=calibration,
        gaps=gaps,
        fragility=fragility,
        suspects=suspects,
    )
    options["higher_is_better"] = higher_is_better
    data = explorer_data(benchmark, agents, test_cases, **options, max_points=max_points, description=description)
    return self_contained_page(f"AGI-Elo explorer: {_text(benchmark)}", _STYLE, _BODY, _SCRIPT, data)


def self_contained_page(title: str, style: str, body: str, script: str, data: Any) -> str:
    """A page whose styles, markup, data (``#explorer-data``) and script are all inline, and whose
    Content-Security-Policy allows exactly that script (by its SHA-256) and nothing from the network."""
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    policy = (
        f"default-src 'none'; script-src 'sha256-{script_hash}'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{style}</style></head>\n<body>\n"
        f"{body}\n"
        f'<script type="application/json" id="explorer-data">{_script_json(data)}</script>\n'
        f"<script>{script}</script>\n</body></html>\n"
    )
