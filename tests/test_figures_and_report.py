"""The figures and the static report, without the UI."""

import html
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from agielo_dagster.domain import figures
from agielo_dagster.domain.report import render_report
from agielo_dagster.rating import binned_calibration, competency_gaps, rate, simulate_matches


@pytest.fixture(scope="module")
def rated():
    rng = np.random.default_rng(0)
    matches = simulate_matches(rng.normal(1500, 300, 400), [1250, 1500, 1750, 2000], seed=1)
    result = rate(matches)
    gaps = competency_gaps(result.test_cases, result.agents)
    return matches, result, gaps


def labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]


def test_every_figure_is_drawn_with_labelled_axes(rated):
    matches, result, gaps = rated
    drawn = {
        "rating_distribution": figures.rating_distribution(result.test_cases, result.agents),
        "reliability_curves": figures.reliability_curves(result.reliability),
        "agent_trajectories": figures.agent_trajectories(result.snapshots),
        "calibration": figures.calibration(binned_calibration(matches, result.test_cases, result.agents)),
        "competency_gap": figures.competency_gap(gaps),
    }
    assert set(drawn) == set(figures.FIGURES)
    for name, fig in drawn.items():
        assert labels(fig)[0][0], f"{name} has no x label"
        for _, y in labels(fig):
            assert y, f"{name} has an axis without a y label"
        png = figures.to_png(fig)
        assert png.startswith(b"\x89PNG") and len(png) > 5_000
    # the percentile curve shares the histogram's x axis
    assert labels(drawn["rating_distribution"]) == [("rating (Elo scale)", "test cases"), ("", "percentile of test cases (%)")]
    assert labels(drawn["reliability_curves"]) == [
        ("share of matches (%)", "Spearman ρ"),
        ("share of matches (%)", "predicted vs empirical error"),
    ]
    # one vertical line per agent, labelled with its share of test cases beaten
    texts = [t.get_text() for t in drawn["rating_distribution"].axes[0].texts]
    for row in gaps.itertuples():
        assert any(t.strip().startswith(f"{row.agent_id} {row.pct_beaten_50:.1f}%") for t in texts)
    # the gap figure draws the oracles at their ratings
    lines = {line.get_label(): line.get_xdata()[0] for line in drawn["competency_gap"].axes[0].get_lines()}
    assert any(
        label.startswith("oracle @99%") and x == pytest.approx(gaps["oracle_rating_99"].iloc[0]) for label, x in lines.items()
    )


def test_calibration_with_every_match_outside_the_bins_is_drawn_and_says_so():
    """An agent that wins all 1,500 matches rates ~1,200 above every test case: no match falls in a bin."""
    ids = [f"t{i}" for i in range(1500)]
    matches = pd.DataFrame({"test_case_id": ids, "agent_id": "full", "metric": 1.0, "score": 1.0})
    result = rate(matches, orders=2)
    binned = binned_calibration(matches, result.test_cases, result.agents)
    assert len(binned) == 0
    fig = figures.calibration(binned)
    assert figures.to_png(fig).startswith(b"\x89PNG")
    assert "no match within the binned rating differences" in [t.get_text() for t in fig.axes[0].texts]


def test_the_same_figure_gives_the_same_bytes(rated):
    _, result, gaps = rated
    assert figures.to_png(figures.competency_gap(gaps)) == figures.to_png(figures.competency_gap(gaps))


class Tables(HTMLParser):
    """Cells of every <table>, and the text of elements with an id."""

    def __init__(self):
        super().__init__()
        self.tables, self.ids, self._cell, self._id, self._column = [], {}, None, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""
            self._column = attrs.get("data-column")  # a header's raw column name (its text is in words)
        if "id" in attrs:
            self._id = attrs["id"]
            self.ids[self._id] = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.tables:
            self.tables[-1][-1].append(self._column or self._cell.strip())
            self._column = None
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._id is not None:
            self.ids[self._id] += data
            self._id = None


def test_report_numbers_equal_the_tables(rated):
    matches, result, gaps = rated
    hardest = result.test_cases.nlargest(5, "mu")[["test_case_id", "mu"]].rename(columns={"mu": "rating"})
    inputs = pd.DataFrame({"agent_id": ["agent_0"], "source_path": ["raw/q/agent_0.csv"], "source_version": ["sha256:abc"]})
    png = figures.to_png(figures.competency_gap(gaps))
    html = render_report(
        "quiz", {"competency_gap": png}, gaps, hardest, result.reliability, inputs, "0.1.0+test", "sha256:digest"
    )
    parsed = Tables()
    parsed.feed(html)
    header, *rows = parsed.tables[0]
    assert header[:2] == ["agent_id", "rating"] and len(rows) == len(gaps)
    for row, expected in zip(rows, gaps.itertuples(), strict=True):
        assert row[0] == expected.agent_id
        assert float(row[1]) == pytest.approx(expected.rating, abs=0.05)
        assert float(row[header.index("gap_99")]) == pytest.approx(expected.gap_99, abs=0.05)
        assert float(row[header.index("pct_beaten_50")]) == pytest.approx(expected.pct_beaten_50, abs=0.05)
    assert [r[0] for r in parsed.tables[1][1:]] == list(hardest["test_case_id"])
    final = result.reliability.iloc[-1]
    assert float(parsed.ids["mae"]) == pytest.approx(final["mae"], abs=5e-5)
    assert float(parsed.ids["rho-test-cases"]) == pytest.approx(final["rho_test_cases"], abs=5e-4)
    assert parsed.ids["code-version"] == "0.1.0+test" and parsed.ids["inputs-digest"] == "sha256:digest"
    # self-contained: the image is inline, nothing is fetched
    assert re.search(r'src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}"', html)
    assert "http://" not in html and "https://" not in html


def test_the_report_lists_the_suspect_test_cases_with_their_reasons(rated):
    matches, result, gaps = rated
    hardest = result.test_cases.nlargest(5, "mu")[["test_case_id", "mu"]].rename(columns={"mu": "rating"})
    inputs = pd.DataFrame({"agent_id": ["agent_0"], "source_path": ["raw/q/agent_0.csv"], "source_version": ["sha256:abc"]})
    args = ("quiz", {}, gaps, hardest, result.reliability, inputs, "0+x", "sha256:1")
    suspects = pd.DataFrame(
        {
            "test_case_id": ["<q7>", "q9"],
            "flag": ["likely_mislabeled", "uninformative"],
            "flag_reason": ["the 2 strongest agents pass 0 of 2 and the 2 weakest pass 2 of 2", "looks like noise"],
            "discrimination": [-1.234, 0.1],
            "discrimination_lo": [-2.0, -0.5],
            "discrimination_hi": [-0.4, 0.7],
            "rating": [1700.0, 1500.0],
        }
    )
    html = render_report(*args, suspects=suspects)
    parsed = Tables()
    parsed.feed(html)
    header, *rows = parsed.tables[2]
    assert header == ["test_case_id", "flag", "discrimination", "rating", "flag_reason"]
    assert rows[0] == ["<q7>", "likely_mislabeled", "-1.23", "1700.0", suspects["flag_reason"][0]]
    assert "&lt;q7&gt;" in html and "warehouse/exports/suspects/quiz.csv" in html
    assert "Suspect test cases" not in render_report(*args) and "Suspect test cases" not in render_report(
        *args, suspects=suspects.head(0)
    )


def test_figures_and_report_stay_bounded_with_ten_thousand_agents():
    """Size grows with information, not with the number of agents: top agents drawn, the rest summarized."""
    import struct

    rng = np.random.default_rng(3)
    n = 10_000
    test_cases = pd.DataFrame({"test_case_id": [f"t{i}" for i in range(500)], "mu": rng.normal(1500, 300, 500)})
    agents = pd.DataFrame({"agent_id": [f"agent_{i}" for i in range(n)], "mu": rng.normal(1600, 200, n)})
    gaps = competency_gaps(test_cases, agents)
    snapshots = pd.DataFrame(
        {
            "fraction": np.repeat([0.5, 1.0], n),
            "kind": "agent",
            "id": np.tile(agents["agent_id"], 2),
            "mu": rng.normal(1500, 100, 2 * n),
        }
    )
    binned = pd.DataFrame(
        {
            "agent_id": agents["agent_id"],
            "bin_lo": 0.0,
            "bin_hi": 100.0,
            "matches": 5,
            "mean_rating_diff": 50.0,
            "empirical_score": rng.random(n),
            "expected_score": 0.57,
        }
    )
    drawn = {
        "rating_distribution": figures.rating_distribution(test_cases, agents),
        "agent_trajectories": figures.agent_trajectories(snapshots),
        "calibration": figures.calibration(binned),
        "competency_gap": figures.competency_gap(gaps),
    }
    pngs = {name: figures.to_png(fig) for name, fig in drawn.items()}
    for name, png in pngs.items():
        width, height = struct.unpack(">II", png[16:24])
        assert width <= 1200 and height <= 1000 and len(png) < 400_000, (name, width, height, len(png))
    reliability = pd.DataFrame({"fraction": [1.0], "rho_test_cases": [-0.9], "rho_agents": [0.9], "mae": [0.01], "mse": [0.001]})
    inputs = pd.DataFrame({"agent_id": agents["agent_id"], "source_path": "raw/b/x.csv", "source_version": "sha256:0"})
    report = render_report("b", pngs, gaps, test_cases.head(10), reliability, inputs, "0+x", "sha256:1")
    assert len(report) < 2_000_000
    assert "9,900 more rows" in report and report.count("<tr>") < 300


def test_agent_trajectories_table_is_pivot_table_without_its_memory():
    """fraction × agent as pandas' pivot_table gives it (mean of repeats, agents with no rating left out), filled with numpy."""
    from agielo_dagster.domain.trajectories import by_fraction

    rng = np.random.default_rng(3)
    agents = pd.DataFrame(
        {
            "fraction": np.repeat([0.01, 0.5, 1.0], 40),
            "kind": "agent",
            "id": np.tile([f"a{i:02d}" for i in range(40)], 3),
            "mu": rng.normal(1500, 200, 120),
        }
    )
    agents.loc[agents["id"] == "a07", "mu"] = np.nan  # never rated: no column
    agents = pd.concat([agents, agents.iloc[[5]].assign(mu=1234.5)])  # a repeat: averaged
    expected = agents.astype({"id": str}).pivot_table(index="fraction", columns="id", values="mu")
    got = by_fraction(agents)
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-13, check_column_type=False, check_index_type=False)
    assert "a07" not in got.columns and got.shape == (3, 39)


def test_ratings_equal_up_to_rounding_draw_one_bar():
    """A benchmark one agent plays: the joint fit leaves its test cases 1e-13 apart, which numpy cannot cut into 60
    finite bins (the report step failed on lm-eval's one-model logs); 301 agents also take the histogram path."""
    test_cases = pd.DataFrame({"mu": 1583.2 + np.array([0.0, 2.3e-13, 4.5e-13] * 10)})
    for agents in (
        pd.DataFrame({"agent_id": ["a"], "mu": [1700.0]}),
        pd.DataFrame({"agent_id": [f"a{i}" for i in range(301)], "mu": np.full(301, 1700.0)}),
    ):
        fig = figures.rating_distribution(test_cases, agents)
        heights = [patch.get_height() for patch in fig.axes[0].patches if hasattr(patch, "get_height")]  # not the stairs
        assert sum(heights) == len(test_cases) and max(heights) == len(test_cases)


def test_the_inputs_table_reads_an_arrow_manifest_only_as_far_as_it_shows_it(rated):
    """A tall benchmark's input manifest has a row per agent: the report shows the first 100 rows of the Arrow table,
    as it shows those of its pandas conversion."""
    import pyarrow as pa

    n = 250
    manifest = pa.table(
        {
            "agent_id": [f"a{i:03d}" for i in range(n)],
            "source_path": [f"raw/b/a{i:03d}.csv" for i in range(n)],
            "source_version": [f"sha256:{i:064x}" for i in range(n)],
            "spec_version": ["sha256:" + "0" * 64] * n,
            "matches": pa.array(np.full(n, 5), pa.int64()),
            "provisional": pa.array(np.zeros(n, dtype=bool)),
        }
    )
    _, result, gaps = rated
    args = ("b", {}, gaps, result.test_cases.head(10), result.reliability)
    from_arrow = render_report(*args, manifest, "0+x", "sha256:1")
    from_pandas = render_report(*args, manifest.to_pandas(), "0+x", "sha256:1")
    assert from_arrow == from_pandas and "150 more rows" in from_arrow


def tied_board() -> pd.DataFrame:
    """Six agents whose ranks and ratings disagree: knn_5 is rated above linear_discriminant, but four intervals lie
    wholly above knn_5's and three above linear_discriminant's wide one (``=4 mlp, 5 knn_5, =4 linear_discriminant``
    when sorted by rating)."""
    from agielo_dagster.rating.intervals import interval_ranks

    board = pd.DataFrame(
        {
            "agent_id": ["a1", "a2", "a3", "mlp", "knn_5", "linear_discriminant"],
            "rating": [1900.0, 1850.0, 1800.0, 1700.0, 1630.0, 1600.0],
            "mu_lo": [1880.0, 1830.0, 1790.0, 1650.0, 1620.0, 1415.0],
            "mu_hi": [1920.0, 1870.0, 1810.0, 1750.0, 1640.0, 1785.0],
        }
    )
    _, rank_lo, rank_hi = interval_ranks(board["mu_lo"].to_numpy(), board["mu_hi"].to_numpy(), np.zeros(6, dtype=np.int64))
    return board.assign(rank_lo=rank_lo.astype(float), rank_hi=rank_hi.astype(float), status="rated", status_reason="")


def test_the_report_lists_agents_by_rank_then_rating_under_its_legend():
    from agielo_dagster.domain.meaning import RANK_LEGEND

    gaps = tied_board().assign(hardest_test_case_rating=2000.0, gap_50=100.0)
    assert gaps.set_index("agent_id")["rank_lo"].to_dict() == {
        "a1": 1, "a2": 2, "a3": 3, "mlp": 4, "knn_5": 5, "linear_discriminant": 4
    }  # fmt: skip
    reliability = pd.DataFrame({"fraction": [1.0], "rho_test_cases": [-0.9], "rho_agents": [0.9], "mae": [0.01]})
    page = render_report("quiz", {}, gaps, gaps[["agent_id"]].head(0), reliability, gaps[["agent_id"]], "0", "d")
    parsed = Tables()
    parsed.feed(page)
    header, *rows = parsed.tables[0]
    ranks = [(r[header.index("rank")], r[header.index("agent_id")]) for r in rows]
    assert ranks[3:] == [("=4", "mlp"), ("=4", "linear_discriminant"), ("5", "knn_5")]
    assert html.escape(RANK_LEGEND) in page


def test_the_reports_numbers_explain_themselves():
    """Column headers in words, the raw name and its description in the tooltip; beside the gaps, what they assume:
    the declared metric range, and what a negative gap means."""
    from agielo_dagster.domain.meaning import HEADERS
    from agielo_dagster.rating.schema import describe

    gaps = tied_board().assign(
        hardest_test_case_rating=1700.0, gap_50=-74.0, pct_beaten_91=100.0, assumed_metric_lo=0.0, assumed_metric_hi=242.0
    )
    reliability = pd.DataFrame({"fraction": [1.0], "rho_test_cases": [0.9], "rho_agents": [-0.9], "mae": [0.01]})
    page = render_report("errors", {}, gaps, gaps[["agent_id"]].head(0), reliability, gaps[["agent_id"]], "0", "d")
    header = re.search(r'<th data-column="pct_beaten_91" title="([^"]*)">([^<]*)</th>', page)
    assert header and header.group(2) == HEADERS["pct_beaten_91"] != "pct_beaten_91"
    assert header.group(1) == html.escape(f"pct_beaten_91: {describe('pct_beaten_91')}")
    assert "a negative gap: the agent already does" in page
    assert "assume the metric range [0, 242] that benchmark.yaml declares" in page


def test_the_pooled_leaderboard_lists_agents_by_rank_and_sets_the_other_components_apart():
    from agielo_dagster.domain.meaning import OTHER_COMPONENT
    from agielo_dagster.domain.pool_report import pool_section
    from tests.pool_tables import MAIN, SCRIPT, pool_tables

    leaderboard, scales, _ = pool_tables()
    section = pool_section(leaderboard, scales)
    parsed = Tables()
    parsed.feed(section)
    scale_table, main, others = parsed.tables
    header, *rows = main
    assert [r[header.index("agent_id")] for r in rows] == MAIN  # the hostile ids read back as text
    assert [r[header.index("rank")] for r in rows] == ["1", "=2", "=2", "–"]  # the provisional agent takes no rank
    assert [r[header.index("rank range")] for r in rows] == ["1", "2–4", "2–4", "2–4"]
    assert rows[1][header.index("interval")] == "1610 – 1690" and section.count("<svg") == len(MAIN)
    header, *rows = others
    assert [(r[header.index("component")], r[header.index("agent_id")]) for r in rows] == [("1", "lonely")]
    assert parsed.ids["pool-other-legend"] == OTHER_COMPONENT
    header, *rows = scale_table
    assert [(r[0], r[header.index("saturation")]) for r in rows] == [("digits", "82 %"), ("island", "50 %"), ("quiz", "100 %")]
    assert [r[header.index("component")] for r in rows] == ["0", "1", "0"]
    assert rows[2][header.index("separates")].startswith("saturated:") and "quiz" in parsed.ids["pool-saturated"]
    assert SCRIPT not in section and "<b>x" not in section


def test_the_pooled_report_is_a_page_of_its_own():
    from agielo_dagster.domain.pool_report import render_pool_report
    from tests.pool_tables import pool_tables

    page = render_pool_report(*pool_tables()[:2], code_version="0.1.0+<x>").decode("utf-8")
    parsed = Tables()
    parsed.feed(page)
    assert parsed.ids["code-version"] == "0.1.0+<x>" and len(parsed.tables) == 3
    assert page.startswith("<!doctype html>") and "http://" not in page and "https://" not in page
