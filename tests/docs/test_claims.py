"""What the docs and the pages claim about a setting is what the code does (docs/testing.md, "docs that run").

A setting has one owner (:mod:`agielo_dagster.rating.settings`, :mod:`agielo_dagster.domain.meaning`); README.md,
docs/*.md and the text the command line, the report and the explorer print derive it. These tests read every such
claim (an interval's level, the interval bars' zoom, the default model) and compare it with the owner: a page that
states a figure of its own fails here, not in a user's hands.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from agielo_dagster.domain.explorer import explorer_data
from agielo_dagster.domain.meaning import ZOOM, level_words
from agielo_dagster.domain.report import render_report
from agielo_dagster.rating import competency_gaps, rate, simulate_matches
from agielo_dagster.rating.settings import DEFAULT_LEVEL, DEFAULT_MODEL, MODELS

from .blocks import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# the text users read that the code prints: the command line, the asset descriptions, the report and the explorer
SOURCES = [
    *sorted((ROOT / "agielo_dagster").rglob("*.py")),
    *sorted((ROOT / "agielo_dagster" / "domain").glob("explorer.*")),
    *sorted((ROOT / "assets").glob("*.py")),
]
LEVEL = re.compile(r"(\d+(?:\.\d+)?) ?% (?:confidence |credible )?intervals?\b(?! coverage)")
# a measurement made at another level, kept as measured: the page, the claim, and the source that still says so
MEASURED_AT = {("docs/placement.md", "90"): ("benchmarks/placement.py", "level: float = 0.9")}
ZOOM_FACTOR = re.compile(r"±\s?(\d+(?:\.\d+)?)\s?× the widest half-interval")
FIXED_ZOOM = re.compile(r"zoom\w*[^.]{0,60}±\s?\d+ Elo", re.IGNORECASE)
DEFAULT = re.compile(rf"\b({'|'.join(MODELS)})`?,? \(?the default\b", re.IGNORECASE)
SIGNATURE = re.compile(r"`rate\(matches, model=\"(\w+)\"[^`]*?\blevel=(0\.\d+)")  # rate()'s defaults, as docs list them


def claims(pattern: re.Pattern, paths: list[Path]) -> list[tuple[str, int, re.Match]]:
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [(str(path.relative_to(ROOT)), number, m) for m in pattern.finditer(line)]
    return found


def test_every_interval_level_claimed_is_the_codes():
    level = f"{100 * DEFAULT_LEVEL:g}"
    wrong = []
    for page, line, match in claims(LEVEL, PAGES + SOURCES):
        if match.group(1) == level:
            continue
        source = MEASURED_AT.get((page, match.group(1)))
        if source is None or source[1] not in (ROOT / source[0]).read_text():
            wrong.append(f"{page}:{line}: {match.group(0)!r}, the code's level is {level_words()}")
    assert not wrong, "\n".join(wrong)


def test_the_zoom_is_the_codes_rule_not_a_figure():
    wrong = [f"{p}:{n}: {m.group(0)!r}: the window depends on the data" for p, n, m in claims(FIXED_ZOOM, PAGES)]
    wrong += [
        f"{p}:{n}: {m.group(0)!r}, the code's zoom is {ZOOM:g}×"
        for p, n, m in claims(ZOOM_FACTOR, PAGES)
        if float(m.group(1)) != ZOOM
    ]
    assert not wrong, "\n".join(wrong)


def test_the_default_model_claimed_is_the_codes():
    said = claims(DEFAULT, PAGES + SOURCES)
    assert said, "no page names the default model"
    wrong = [
        f"{p}:{n}: {m.group(0)!r}, the default is {DEFAULT_MODEL}" for p, n, m in said if m.group(1).lower() != DEFAULT_MODEL
    ]
    assert not wrong, "\n".join(wrong)


def test_rates_defaults_as_listed_are_the_codes():
    listed = claims(SIGNATURE, PAGES)
    assert listed, "no page lists rate()'s defaults"
    for page, line, match in listed:
        assert (match.group(1), float(match.group(2))) == (DEFAULT_MODEL, DEFAULT_LEVEL), f"{page}:{line}: {match.group(0)}"


def test_the_report_and_the_explorer_say_the_codes_level_and_zoom():
    matches = simulate_matches(np.random.default_rng(0).normal(1500, 300, 40), [1200, 1400, 1600, 1800], seed=0)
    result = rate(matches)
    gaps = competency_gaps(result.test_cases, result.agents)
    inputs = result.agents[["agent_id"]]
    page = render_report("quiz", {}, gaps, result.test_cases.head(3), result.reliability, inputs, "0", "d", agents=result.agents)
    assert f"the rating's {level_words()} interval" in page
    assert f"({ZOOM:g}× the widest half-interval)" in page
    assert not [m.group(0) for m in LEVEL.finditer(page) if m.group(1) != f"{100 * DEFAULT_LEVEL:g}"]
    data = explorer_data("quiz", result.agents, result.test_cases)
    assert data["words"]["level"] == level_words() and data["words"]["zoom"] == ZOOM


def test_the_column_schema_names_a_model_only_where_the_column_is_that_models():
    """The UI's column descriptions (rating/schema.py) hold for the default model; a column only one model writes
    says so (``model glicko: …``), and no description calls the rating a model's that is not the default."""
    from agielo_dagster.rating.schema import BY_TABLE, COLUMNS

    texts = [c.description for c in COLUMNS.values()] + [d for table in BY_TABLE.values() for d in table.values()]
    named = [t for t in texts for m in MODELS if m != DEFAULT_MODEL and re.search(rf"\b{m}\b", t, re.IGNORECASE)]
    assert named and not [t for t in named if not re.search(r"\bmodel (?:glicko|2pl)\b", t, re.IGNORECASE)]


# the project's commands, installed in its virtual environment: called by their bare name only where it is active
VENV_COMMANDS = {"agielo", "dg", "dagster", "dagster-daemon", "python", "pip", "pytest", "lm_eval", "inspect", "weed"}


def test_a_bare_command_says_the_environment_must_be_active():
    from .blocks import SHELL, all_blocks

    wrong = []
    for block in all_blocks():
        if block.lang not in SHELL or "with the environment active" in block.text.splitlines()[0]:
            continue
        for line in block.text.splitlines():
            words = [w for w in line.strip().lstrip("$ ").split() if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
            if words and words[0] in VENV_COMMANDS:
                wrong.append(f"{block.id}: {line.strip()!r} needs ', with the environment active' on its first line")
    assert not wrong, "\n".join(wrong)
