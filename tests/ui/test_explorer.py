"""The explorer page: one self-contained HTML file, safe with hostile ids, bounded in size, and interactive in
headless Chromium (Debian's, driven by Playwright) opened from file:// with the network blocked."""

import base64
import hashlib
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from agielo_dagster.domain.explorer import MAX_POINTS, explorer_data, render_explorer
from agielo_dagster.domain.layout import explorer_index_path, explorer_path
from agielo_dagster.domain.tags import abilities_of
from agielo_dagster.rating import ability_masses, binned_calibration, competency_gaps, rate, slice_ratings
from tests.ui.conftest import ARTIFACTS, opened

REPO = Path(__file__).resolve().parents[2]

EVIL_IDS = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(2)>", "q\"uote's & <!-- x", "\u2028line"]
AGENT_NAMES = [f"agent_{j:02d}" for j in range(12)] + ["</script><b>evil</b>", 'model "quoted"']
PROVISIONAL = 'model "quoted"'


@pytest.fixture(scope="module")
def benchmark():
    """300 test cases (the hardest one with a hostile id), 14 agents (two with hostile names, one provisional), tags."""
    rng = np.random.default_rng(0)
    n = 300
    difficulty = rng.normal(1500, 250, n)
    ids = [f"tc{i:03d}" for i in range(n)]
    order = np.argsort(-difficulty)
    for rank, evil in enumerate(EVIL_IDS):
        ids[order[rank]] = evil  # the hardest test cases carry the hostile ids
    strengths = np.linspace(1200, 1900, len(AGENT_NAMES))
    frames = []
    for name, strength in zip(AGENT_NAMES, strengths, strict=True):
        score = (rng.random(n) < 1 / (1 + 10 ** ((difficulty - strength) / 400))).astype(float)
        frames.append(pd.DataFrame({"test_case_id": ids, "agent_id": name, "metric": score, "score": score}))
    matches = pd.concat(frames, ignore_index=True)
    result = rate(matches, orders=2)
    subjects = np.array(["math", "code", "text"])[np.arange(n) % 3]
    abilities = [
        ["algebra", "geometry"] if i % 3 == 0 else ["algebra"] if i % 3 == 1 else ["<logic & reasoning>"] for i in range(n)
    ]
    tags = pd.DataFrame({"test_case_id": ids, "subject": subjects, "abilities": abilities})
    agents = result.agents.assign(provisional=result.agents["agent_id"] == PROVISIONAL)
    difficulties = result.test_cases.rename(columns={"test_case_id": "item_id", "mu": "difficulty"})[["item_id", "difficulty"]]
    return dict(
        matches=matches,
        result=result,
        agents=agents,
        tags=tags,
        slices=slice_ratings(matches, result.test_cases, tags, orders=2),
        masses=ability_masses(difficulties, abilities_of(tags)),
        calibration=binned_calibration(matches, result.test_cases, result.agents),
        gaps=competency_gaps(result.test_cases, result.agents),
    )


def render(b, **extra):
    r = b["result"]
    options = dict(
        tags=b["tags"],
        slices=b["slices"],
        masses=b["masses"],
        reliability=r.reliability,
        calibration=b["calibration"],
        gaps=b["gaps"],
    )
    test_cases = r.test_cases.assign(**{"meta.source": "src-" + r.test_cases["test_case_id"]})  # upload metadata
    return render_explorer('quiz <&> "bench"', b["agents"], test_cases, **{**options, **extra})


def embedded(page: str) -> dict:
    (block,) = re.findall(r'<script type="application/json" id="explorer-data">(.*?)</script>', page, flags=re.S)
    return json.loads(block)


# -- the file ----------------------------------------------------------------------------------


def test_hostile_ids_cannot_leave_the_data_block(benchmark):
    page = render(benchmark)
    assert page.count("</script") == 2  # the data block's end and the code's end: no id ends a script
    assert page.count("<script") == 2 and "<!--" not in page and "\u2028" not in page
    data = embedded(page)
    assert set(data["agents"]["agent_id"]) == set(AGENT_NAMES)  # every id comes back character for character
    assert set(EVIL_IDS) <= set(data["testCases"]["drawn"]["test_case_id"])
    assert "<title>AGI-Elo explorer: quiz &lt;&amp;&gt; &quot;bench&quot;</title>" in page
    assert "innerHTML" not in page and "eval(" not in page
    assert set(re.findall(r"https?://[^\"' ]*", page)) == {"http://www.w3.org/2000/svg"}  # a namespace, never fetched


def test_the_page_allows_only_its_own_script(benchmark):
    page = render(benchmark)
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert "default-src 'none'" in policy and "connect-src" not in policy
    code = re.findall(r"<script>(.*?)</script>", page, flags=re.S)[-1]
    digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy


def test_size_is_bounded_whatever_the_benchmark():
    rng = np.random.default_rng(1)
    n_test_cases, n_agents = 60_000, 5_000
    test_cases = pd.DataFrame({"test_case_id": [f"t{i}" for i in range(n_test_cases)], "mu": rng.normal(1500, 300, n_test_cases)})
    agents = pd.DataFrame({"agent_id": [f"a{j}" for j in range(n_agents)], "mu": rng.normal(1500, 200, n_agents)})
    tags = pd.DataFrame({"test_case_id": test_cases["test_case_id"], "subject": rng.choice(["x", "y"], n_test_cases)})
    page = render_explorer("big", agents, test_cases, tags=tags)
    assert len(page.encode()) < 1_500_000, len(page.encode())
    data = embedded(page)
    drawn = data["testCases"]["drawn"]
    assert len(drawn["test_case_id"]) == MAX_POINTS == len(data["tags"]["values"]["subject"])
    assert sum(data["testCases"]["histogram"]["counts"]) == n_test_cases == data["testCases"]["total"]
    hardest = test_cases.nlargest(MAX_POINTS // 2, "mu")["test_case_id"]
    assert set(hardest) <= set(drawn["test_case_id"])  # the hardest are always drawn one by one
    assert len(data["agents"]["agent_id"]) == n_agents  # every agent, for search and paging
    assert data["tags"]["summary"]["subject"]["test_cases"] == n_test_cases


def test_the_data_carries_provisional_marks_gaps_slices_and_masses(benchmark):
    data = explorer_data(
        "quiz", benchmark["agents"], benchmark["result"].test_cases, gaps=benchmark["gaps"], masses=benchmark["masses"]
    )
    flagged = [a for a, p in zip(data["agents"]["agent_id"], data["agents"]["provisional"], strict=True) if p]
    assert flagged == [PROVISIONAL]
    assert "gap_50" in data["agents"] and "pct_beaten_50" in data["agents"]
    assert data["masses"]["info"]["alignment"] == pytest.approx(benchmark["masses"].alignment, abs=1e-4)
    assert data["slices"] is None and data["reliability"] is None
    with pytest.raises(TypeError, match="unexpected option"):
        explorer_data("quiz", benchmark["agents"], benchmark["result"].test_cases, colour="red")
    with pytest.raises(ValueError, match="lacks column"):
        render_explorer("quiz", benchmark["agents"].drop(columns="mu"), benchmark["result"].test_cases)


# -- in the browser ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def explorer(benchmark, browser, tmp_path_factory):
    """The page written to a file and opened from file:// in a context that is offline and aborts every other request."""
    run, chromium = browser
    path = tmp_path_factory.mktemp("explorer") / "quiz.html"
    path.write_text(render(benchmark), encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen = {"requests": [], "blocked": [], "errors": [], "dialogs": []}

    def open_page():
        context = chromium.new_context(offline=True, viewport={"width": 1400, "height": 1000})

        def route(r):
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                seen["blocked"].append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("request", lambda r: seen["requests"].append(r.url))
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))
        page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
        page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
        page.goto(path.as_uri(), wait_until="load")
        page.locator("#leaderboard-grid tbody tr").first.wait_for()
        return context, page

    context, page = run(open_page)
    yield run, page, seen
    run(context.close)


def test_it_opens_from_file_with_the_network_blocked_and_shows_every_agent(explorer, benchmark):
    run, page, seen = explorer

    def check():
        page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
        rows = page.locator("#leaderboard-grid tbody tr")
        names = [rows.nth(i).locator(".agent-name").inner_text() for i in range(rows.count())]
        provisional = page.locator("#leaderboard-grid tbody tr.provisional")
        cells = provisional.first.locator("td")
        provisional_rank = (cells.nth(0).inner_text(), cells.nth(1).inner_text())
        return (
            names,
            provisional.count(),
            provisional.first.inner_text(),
            page.locator("#leaderboard-info").inner_text(),
            provisional_rank,
        )

    names, n_provisional, provisional_text, info, (rank, rank_range) = run(check)
    # a provisional agent takes no rank of its own; its range is where its interval puts it among the rated
    assert rank == "–" and re.fullmatch(r"\d+(–\d+)?", rank_range)
    assert sorted(names) == sorted(AGENT_NAMES)  # hostile names shown as text, never as markup
    ranked = benchmark["agents"].sort_values("mu", ascending=False)["agent_id"].tolist()
    assert names == ranked  # best first
    assert n_provisional == 1 and PROVISIONAL in provisional_text and "provisional" in provisional_text
    assert info == f"{len(AGENT_NAMES)} of {len(AGENT_NAMES)} agents"
    assert all(u.startswith("file:") for u in seen["requests"]), seen["requests"]
    assert seen["blocked"] == [] and seen["errors"] == [] and seen["dialogs"] == []
    assert run(lambda: page.locator("b", has_text="evil").count() + page.locator("img[src='x']").count()) == 0


def test_the_browser_parses_every_style_rule(explorer):
    run, page, _ = explorer
    rules = run(lambda: page.evaluate("() => document.styleSheets[0].cssRules.length"))
    assert rules == (REPO / "agielo_dagster" / "domain" / "explorer.css").read_text(encoding="utf-8").count("}")


def test_search_filters_the_table(explorer):
    run, page, _ = explorer

    def search(text):
        page.fill("#leaderboard-search", text)
        rows = page.locator("#leaderboard-grid tbody tr .agent-name")
        return sorted(rows.nth(i).inner_text() for i in range(rows.count())), page.locator("#leaderboard-info").inner_text()

    names, info = run(search, "agent_1")
    assert names == ["agent_10", "agent_11"] and info == f"2 of {len(AGENT_NAMES)} agents"
    assert run(search, "</SCRIPT>")[0] == ["</script><b>evil</b>"]  # case-insensitive, literal
    run(lambda: page.locator("#difficulty").screenshot(path=str(ARTIFACTS / "explorer_search_highlight.png")))
    dimmed = run(lambda: page.locator("#agent-lines line.agent.dim").count())
    assert dimmed == len(AGENT_NAMES) - 1  # the plot dims every agent the search leaves out
    run(lambda: page.locator("#leaderboard").screenshot(path=str(ARTIFACTS / "explorer_search.png")))
    assert run(search, "no such agent") == ([], f"0 of {len(AGENT_NAMES)} agents")
    assert len(run(search, "")[0]) == len(AGENT_NAMES)


def test_sorting_by_a_column_reverses_on_a_second_click(explorer):
    run, page, _ = explorer

    def ratings_after_click():
        page.locator("#leaderboard-grid th", has_text="rating").first.click()
        cells = page.locator("#leaderboard-grid tbody tr td.col-mu")
        return [float(cells.nth(i).inner_text()) for i in range(cells.count())]

    first = run(ratings_after_click)
    second = run(ratings_after_click)
    assert first == sorted(first) or first == sorted(first, reverse=True)
    assert second == first[::-1]


def test_hovering_a_test_case_shows_its_tags(explorer, benchmark):
    run, page, seen = explorer
    test_cases = benchmark["result"].test_cases
    hardest = int(test_cases["mu"].to_numpy().argmax())  # every test case is drawn, in table order
    tc_id = test_cases["test_case_id"].iloc[hardest]
    tags = benchmark["tags"].set_index("test_case_id").loc[tc_id]

    def hover():
        page.locator("#difficulty").scroll_into_view_if_needed()
        page.locator(f"circle.tc[data-index='{hardest}']").hover()
        tip = page.locator("#tooltip")
        tip.wait_for(state="visible")
        page.locator("#difficulty").screenshot(path=str(ARTIFACTS / "explorer_hover.png"))
        return tip.locator(".title").inner_text(), tip.inner_text()

    title, text = run(hover)
    assert tc_id in EVIL_IDS and title == tc_id  # the hostile id, as text
    assert f"subject\n{tags['subject']}" in text and "; ".join(tags["abilities"]) in text
    assert f"meta.source\nsrc-{tc_id}" in text
    assert f"{test_cases['mu'].iloc[hardest]:.1f}" in text
    run(lambda: page.mouse.move(5, 5))
    assert run(lambda: page.locator("#tooltip").is_hidden())
    assert seen["dialogs"] == [] and seen["errors"] == []


def test_slices_masses_reliability_and_calibration_are_shown(explorer, benchmark):
    run, page, _ = explorer

    def look():
        page.select_option("#slice-tag", "subject")
        page.fill("#slice-search", "math")
        page.locator("#slices").screenshot(path=str(ARTIFACTS / "explorer_slices.png"))
        slices = page.locator("#slice-grid tbody tr").count(), page.locator("#slice-info").inner_text()
        page.locator("#masses").screenshot(path=str(ARTIFACTS / "explorer_masses.png"))
        masses = page.locator("#mass-grid tbody tr td:first-child").all_inner_texts()
        page.select_option("#calibration-agent", "agent_05")
        dots = page.locator("#calibration-svg circle").count()
        page.locator("#reliability").screenshot(path=str(ARTIFACTS / "explorer_reliability.png"))
        page.locator("#calibration").screenshot(path=str(ARTIFACTS / "explorer_calibration.png"))
        return slices, masses, dots, page.locator("#reliability-rho polyline").count()

    (n_slices, info), masses, dots, lines = run(look)
    assert n_slices == len(AGENT_NAMES) and info.startswith(f"{len(AGENT_NAMES)} of ")
    assert sorted(masses) == sorted(benchmark["masses"].masses["ability"])
    assert "<logic & reasoning>" in masses
    assert dots == (benchmark["calibration"]["agent_id"] == "agent_05").sum()
    assert lines == 2


# -- the static figures beside it ---------------------------------------------------------------


@pytest.mark.parametrize("n_agents", [17, 300])
def test_rating_distribution_labels_never_overlap_and_stay_in_the_figure(n_agents):
    """Agents that cluster get a fan of labels: every label drawn, none overlapping another, all inside the figure."""
    from agielo_dagster.domain import figures

    rng = np.random.default_rng(n_agents)
    test_cases = pd.DataFrame({"test_case_id": [f"t{i}" for i in range(2000)], "mu": rng.normal(1500, 300, 2000)})
    mu = np.r_[rng.normal(1500, 10, n_agents - 5), [1200, 1900, 1905, 1910, 1700]]  # a tight cluster, a close trio
    agents = pd.DataFrame({"agent_id": [f"a_rather_long_agent_name_{j}" for j in range(n_agents)], "mu": mu})
    fig = figures.rating_distribution(test_cases, agents)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # lays the figure out, as to_png does
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text().endswith("%")]
    assert len(labels) == min(n_agents, figures.MAX_LABELS)
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i, j in itertools.combinations(range(len(boxes)), 2):
        assert not boxes[i].overlaps(boxes[j]), (labels[i].get_text(), labels[j].get_text())
    figure_box = fig.bbox
    for box in boxes:
        assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1 and figure_box.y0 <= box.y0 and box.y1 <= figure_box.y1
    legend = ax.get_legend().get_window_extent(renderer)
    assert not any(legend.overlaps(b) for b in boxes)
    assert fig.get_size_inches().tolist() == [10, 5.6]  # the same size whatever the number of agents
    if n_agents > figures.MAX_LABELS:  # the best agents are labelled first
        best = agents.nlargest(20, "mu")["agent_id"].str.slice(0, 21)
        assert all(any(t.get_text().startswith(name) for t in labels) for name in best)


def test_dodged_labels_keep_order_gap_and_bounds():
    from agielo_dagster.domain.figures import dodged

    x = np.array([0.0, 0.1, 0.2, 5.0, 9.9, 10.0])
    out = dodged(x, 1.0, 0.0, 10.0)
    assert np.all(np.diff(out) >= 1.0 - 1e-12) and out[0] >= 0.0 and out[-1] <= 10.0
    assert out[3] == pytest.approx(5.0)  # a label with room stays on its agent
    assert dodged(np.array([3.0]), 1.0).tolist() == [3.0]


def test_unranked_agents_come_last_badged_and_the_headline_names_the_top(benchmark, browser, tmp_path):
    """A disconnected agent rated far above the others and an unplaced one: listed after the ranked, never first;
    under the headline, how many test cases decide who is first."""
    from agielo_dagster.domain.standing import fragility_line, headline
    from agielo_dagster.rating.standing import agent_standings

    run, chromium = browser
    agents = benchmark["agents"]
    typo = agents.nlargest(1, "mu").assign(agent_id="typo", mu=agents["mu"].max() + 500, component=1)
    ghost = pd.DataFrame({"agent_id": ["ghost"], "test_cases": [10], "unknown": [10], "outside": [0]})
    table = agent_standings(pd.concat([agents, typo], ignore_index=True), ghost)
    path = tmp_path / "statuses.html"
    fragility = {"fragility_of_first": 3, "fragility_leader": "a", "fragility_flips_to": "b", "fragility_method": "approx"}
    fragility |= {"fragility_test_cases": 400}
    page_text = render_explorer("quiz", table, benchmark["result"].test_cases, gaps=benchmark["gaps"], fragility=fragility)
    path.write_text(page_text, encoding="utf-8")
    errors = []

    def check():
        context, page = opened(chromium, path, errors)
        page.locator("#leaderboard-size").select_option("100")
        rows = page.locator("#leaderboard-grid tbody tr")
        names = [rows.nth(i).locator(".agent-name").inner_text() for i in range(rows.count())]
        ranks = [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())]
        off = [rows.nth(i).inner_text() for i in range(rows.count()) if "off" in (rows.nth(i).get_attribute("class") or "")]
        result = names, ranks, off, page.locator("#headline").inner_text(), page.locator("#unusual li").all_inner_texts()
        lines = page.locator("#agent-lines line.agent").count()
        shown_fragility = page.locator("#fragility").inner_text()
        context.close()
        return (*result, lines, shown_fragility)

    names, ranks, off, shown_headline, unusual, lines, shown_fragility = run(check)
    assert errors == []
    assert (
        shown_fragility
        == fragility_line(fragility)
        == ("Fragility of #1: removing at most 3 of 400 test cases makes b first instead of a (approx).")
    )
    assert set(names[-2:]) == {"typo", "ghost"} and ranks[-2:] == ["–", "–"]
    on_scale = table[table["status"].isin(["rated", "provisional"])].sort_values("mu", ascending=False)
    assert names[:-2] == on_scale["agent_id"].tolist()  # the ranked by rating, the provisional among them
    assert len(off) == 2 and any("disconnected" in t for t in off) and any("unplaced" in t for t in off)
    assert shown_headline == headline(table) and "typo" not in shown_headline
    assert any(u.startswith("disconnected: typo — shares no test case") for u in unusual)
    assert any(u.startswith("unplaced: ghost — none of its 10 test cases") for u in unusual)
    assert lines == len(on_scale)  # only the main component is drawn on the difficulty axis


def test_each_benchmarks_page_links_back_to_the_index_beside_it(benchmark):
    page = render_explorer("quiz", benchmark["agents"], benchmark["result"].test_cases)
    index = explorer_index_path().rsplit("/", 1)[1]
    assert (
        f'<a id="index-link" href="{index}">Every benchmark</a>' in page
        and explorer_path("quiz").rsplit("/", 1)[0] == (explorer_index_path().rsplit("/", 1)[0])
    )


def test_the_suspects_section_shows_results_by_agent_filters_by_flag_and_tag_and_searches_tags(benchmark, browser, tmp_path):
    """Each suspect with its results by agent, strongest first (one cell per agent played, titled with its score),
    filtered by flag and searched by tag; a hostile id stays text; the page fits 1,280 px."""
    from agielo_dagster.domain.suspects import suspect_table

    run, chromium = browser
    result, matches = benchmark["result"], benchmark["matches"]
    hostile, plain = EVIL_IDS[0], result.test_cases["test_case_id"].iloc[1]
    flagged = result.test_cases.assign(flag="", discrimination=1.0, discrimination_lo=0.5, discrimination_hi=1.5, flag_reason="")
    flagged.loc[flagged["test_case_id"] == hostile, ["flag", "discrimination", "flag_reason"]] = [
        "likely_mislabeled",
        -1.2,
        "strong agents fail it",
    ]
    flagged.loc[flagged["test_case_id"] == plain, ["flag", "discrimination", "flag_reason"]] = ["uninformative", 0.1, "noise"]
    played = matches[~((matches["test_case_id"] == plain) & (matches["agent_id"] == "agent_00"))]  # one not played
    suspects = suspect_table(pa.Table.from_pandas(flagged), pa.Table.from_pandas(played), benchmark["agents"])
    path = tmp_path / "suspects.html"
    path.write_text(render_explorer("quiz", benchmark["agents"], result.test_cases, tags=benchmark["tags"], suspects=suspects))
    errors = []

    def check():
        context, page = opened(chromium, path, errors, viewport={"width": 1280, "height": 900})
        rows = page.locator("#suspect-grid tbody tr")
        ids = [rows.nth(i).locator("td.col-test_case_id").inner_text() for i in range(rows.count())]
        cells = [rows.nth(i).locator("svg.results rect").count() for i in range(rows.count())]
        first_title = rows.first.locator("svg.results rect title").first.text_content()
        page.locator("#suspects").screenshot(path=str(ARTIFACTS / "explorer_suspects.png"))
        page.select_option("#suspect-flag", "uninformative")
        by_flag = page.locator("#suspect-grid tbody tr td.col-test_case_id").all_inner_texts()
        page.select_option("#suspect-flag", "")
        tag = benchmark["tags"].set_index("test_case_id").loc[plain, "subject"]
        page.fill("#suspect-search", f"subject: {tag}")
        by_tag = page.locator("#suspect-grid tbody tr td.col-test_case_id").all_inner_texts()
        page.fill("#suspect-search", "")
        options = page.locator("#suspect-tag option").all_inner_texts()
        page.select_option("#suspect-tag", f"subject: {tag}")
        by_tag_filter = page.locator("#suspect-grid tbody tr td.col-test_case_id").all_inner_texts()
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        context.close()
        return ids, cells, first_title, by_flag, by_tag, options, by_tag_filter, wide

    ids, cells, first_title, by_flag, by_tag, options, by_tag_filter, wide = run(check)
    assert errors == [] and ids == [hostile, plain]  # most reversed first; the hostile id as text
    strongest = benchmark["agents"].sort_values(["mu", "agent_id"], ascending=[False, True])["agent_id"].iloc[0]
    score = matches.set_index(["test_case_id", "agent_id"]).loc[(hostile, strongest), "score"]
    assert cells == [len(AGENT_NAMES), len(AGENT_NAMES) - 1] and first_title == f"{strongest}: {score:.2f}"
    assert by_flag == [plain] and plain in by_tag and wide <= 1280
    # the tag filter: one option per tag value the suspects carry, each element of a list tag its own
    carried = benchmark["tags"].set_index("test_case_id").loc[[hostile, plain]]
    values = {f"subject: {v}" for v in carried["subject"]} | {f"abilities: {v}" for a in carried["abilities"] for v in a}
    assert options == ["every tag", *sorted(values)]
    assert by_tag_filter == [i for i in (hostile, plain) if carried.loc[i, "subject"] == carried.loc[plain, "subject"]]


def test_the_leaderboard_leads_with_rank_range_and_a_visible_interval_at_1280_px(benchmark, browser, tmp_path):
    """At a 1,280 px window: rank, rank range and interval come first, each interval is drawn wide enough to
    see (zoomed around its rating), no agent label leaves the figure and the page does not scroll sideways."""
    run, chromium = browser
    path = tmp_path / "narrow.html"
    path.write_text(render(benchmark), encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors = []

    def check():
        context, page = opened(chromium, path, errors, viewport={"width": 1280, "height": 900})
        page.locator("#leaderboard-grid tbody tr").first.wait_for()
        page.screenshot(path=str(ARTIFACTS / "explorer_1280.png"), full_page=True)
        page.locator("#leaderboard").screenshot(path=str(ARTIFACTS / "explorer_leaderboard_1280.png"))
        headers = page.locator("#leaderboard-grid th").all_inner_texts()
        first = page.locator("#leaderboard-grid tbody tr").first
        cells = [first.locator("td").nth(i) for i in range(3)]
        visible = all(c.is_visible() for c in cells)
        texts = [c.inner_text() for c in cells]
        bars = page.locator("#leaderboard-grid svg.interval line[stroke='#789']")
        zoomed = [bars.nth(i).bounding_box()["width"] for i in range(bars.count())]
        page.locator("#interval-scale").select_option("board")
        board = [bars.nth(i).bounding_box()["width"] for i in range(bars.count())]
        scroll = page.evaluate("document.documentElement.scrollWidth")
        svg = page.locator("#difficulty-svg").bounding_box()
        labels = [
            b
            for b in (
                page.locator("#agent-lines text.agent-label").nth(i).bounding_box()
                for i in range(page.locator("#agent-lines text.agent-label").count())
            )
            if b
        ]
        context.close()
        return headers, visible, texts, zoomed, board, scroll, svg, labels

    headers, visible, texts, zoomed, board, scroll, svg, labels = run(check)
    assert errors == []
    assert [h.strip(" ▲▼") for h in headers[:3]] == ["rank", "rank range", "interval"]
    assert visible and re.fullmatch(r"=?\d+", texts[0]) and re.fullmatch(r"\d+(–\d+)?", texts[1])
    agents = benchmark["agents"].sort_values("mu", ascending=False)
    assert texts[2].strip() == f"{agents['mu_lo'].iloc[0]:.0f} – {agents['mu_hi'].iloc[0]:.0f}"
    assert len(zoomed) == len(AGENT_NAMES) and min(zoomed) >= 20  # the narrowest interval is still a visible bar
    assert max(board) < max(zoomed)  # the whole board's scale shrinks them: the zoom is what makes them readable
    assert scroll <= 1280
    assert labels and all(svg["x"] - 1 <= b["x"] and b["x"] + b["width"] <= svg["x"] + svg["width"] + 1 for b in labels)


def test_the_report_leads_with_rank_range_and_interval_and_fits_1280_px(benchmark, browser, tmp_path):
    """The static HTML report at a 1,280 px window: rank, rank range and interval first and visible, the
    inputs' SHA-256s shortened (whole in the title), no sideways scroll."""
    from agielo_dagster.domain import figures
    from agielo_dagster.domain.report import render_report
    from agielo_dagster.rating.standing import agent_standings
    from assets.ratings import gap_table

    run, chromium = browser
    result = benchmark["result"]
    agents = agent_standings(benchmark["agents"])
    gaps = gap_table(result.test_cases, agents, None)
    digest = "sha256:" + hashlib.sha256(b"x").hexdigest()
    inputs = pd.DataFrame(
        {"agent_id": agents["agent_id"], "source_path": "raw/quiz/" + agents["agent_id"] + ".csv", "source_version": digest}
    )
    hardest = result.test_cases.nlargest(5, "mu")[["test_case_id", "mu"]].rename(columns={"mu": "rating"})
    pngs = {"competency_gap": figures.to_png(figures.competency_gap(gaps))}
    page_html = render_report("quiz", pngs, gaps, hardest, result.reliability, inputs, "0.1.0", digest, agents=agents)
    path = tmp_path / "report.html"
    path.write_text(page_html, encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def check():
        context = chromium.new_context(offline=True, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(path.as_uri(), wait_until="load")
        page.screenshot(path=str(ARTIFACTS / "report_1280.png"), full_page=True)
        page.locator("#gaps").screenshot(path=str(ARTIFACTS / "report_leaderboard_1280.png"))
        headers = page.locator("#leaderboard th").all_inner_texts()
        first = page.locator("#leaderboard tbody tr").first
        cells = [first.locator("td").nth(i) for i in range(3)]
        shown = [(c.is_visible(), c.inner_text()) for c in cells]
        bars = page.locator("#leaderboard svg.interval line.bar")
        widths = [bars.nth(i).bounding_box()["width"] for i in range(bars.count())]
        digests = page.locator("#inputs code.digest")
        digest_shown = (digests.first.inner_text(), digests.first.get_attribute("title"), digests.count())
        scroll = page.evaluate("document.documentElement.scrollWidth")
        provisional = page.locator("#leaderboard tbody tr", has_text=PROVISIONAL).locator("td")
        provisional_rank = (provisional.nth(0).inner_text(), provisional.nth(1).inner_text())
        context.close()
        return headers, shown, widths, digest_shown, scroll, provisional_rank

    headers, shown, widths, (short, title, n_digests), scroll, (rank, rank_range) = run(check)
    assert rank == "–" and re.fullmatch(r"\d+(–\d+)?", rank_range)  # no rank of its own, a range among the rated
    assert headers[:4] == ["rank", "rank range", "interval", "agent"]  # in words (agent_id in the tooltip)
    assert all(visible for visible, _ in shown)
    best = agents.sort_values("mu", ascending=False).iloc[0]
    assert re.fullmatch(r"=?1", shown[0][1]) and re.fullmatch(rf"1(–{best['rank_hi']})?", shown[1][1])
    assert shown[2][1].strip() == f"{best['mu_lo']:.0f} – {best['mu_hi']:.0f}"
    assert len(widths) == len(agents) and min(widths) >= 20  # every interval a visible bar
    assert short.endswith("…") and len(short) < 25 and title == digest and n_digests == len(agents)
    assert scroll <= 1280


def test_test_cases_equal_up_to_rounding_are_one_histogram_bar():
    """One agent's benchmark: the joint fit leaves its test cases 1e-13 apart (numpy refused to bin them)."""
    test_cases = pd.DataFrame(
        {"test_case_id": [f"t{i}" for i in range(30)], "mu": 1583.2 + np.array([0.0, 2.3e-13, 4.5e-13] * 10)}
    )
    data = explorer_data("quiz", pd.DataFrame({"agent_id": ["a"], "mu": [1700.0]}), test_cases)
    assert sum(data["testCases"]["histogram"]["counts"]) == 30


@pytest.mark.parametrize(
    "values",
    [
        pd.Series([1.234567891, -0.000049, np.nan, np.inf, -np.inf, 1e300, 0.5]),
        pd.Series(np.array([3, -7, 0], dtype=np.int64)),
        pd.Series(np.array([3, 7], dtype=np.uint16)),
        pd.Series([True, False]),
        pd.Series(["a", None, 2.5, [1, None, "b"]], dtype=object),
        pd.Series([1, None, 3], dtype="Int64"),
        pd.Series([0.5, None], dtype="Float64"),
        # rounded a column at a time: ties at the fifth decimal, values too large to scale, float32
        pd.Series([0.00015, 1234.56785, 2.5e-5, -0.00005, -106.19255, 1e15 + 0.5, 4503599627370497.0, 1e11, -1e11]),
        pd.Series(np.round(np.random.default_rng(0).normal(0, 100, 50_000), 5)),
        pd.Series(np.random.default_rng(1).normal(1500, 300, 50_000)),
        pd.Series(np.array([0.1, 1.00005, np.nan], dtype=np.float32)),
    ],
)
def test_a_column_converts_as_its_values_do_one_by_one(values):
    from agielo_dagster.domain.explorer import _clean, _column

    expected = [_clean(v) for v in values.tolist()]
    assert _column(values) == expected
    assert json.dumps(_column(values), allow_nan=False) == json.dumps(expected, allow_nan=False)


def test_ranks_read_in_order_under_their_legend(browser, tmp_path):
    """Sorted by rank (the default), agents of the same rank are listed by rating, and the legend says why a higher
    rating can rank lower: ``=4 mlp, =4 linear_discriminant, 5 knn_5``, not by rating's ``=4, 5, =4``."""
    from agielo_dagster.domain.meaning import RANK_LEGEND

    from ..test_figures_and_report import tied_board

    run, chromium = browser
    agents = tied_board().rename(columns={"rating": "mu"})
    path = tmp_path / "ranks.html"
    path.write_text(render_explorer("ranks", agents, pd.DataFrame({"test_case_id": ["t1"], "mu": [1500.0]})), encoding="utf-8")

    def read():
        context = chromium.new_context(offline=True)
        page = context.new_page()
        page.goto(path.as_uri(), wait_until="load")
        rows = page.locator("#leaderboard-grid tbody tr")
        rows.first.wait_for()
        shown = [
            (rows.nth(i).locator("td").first.inner_text(), rows.nth(i).locator(".agent-name").inner_text()) for i in range(6)
        ]
        legend = page.locator("#rank-legend").inner_text()
        context.close()
        return shown, legend

    shown, legend = run(read)
    assert shown[3:] == [("=4", "mlp"), ("=4", "linear_discriminant"), ("5", "knn_5")]
    assert legend == RANK_LEGEND


def test_the_leaderboards_numbers_explain_themselves(benchmark):
    """Beside the gaps and shares beaten, what they assume and what a negative gap means; each number's header has
    its raw column name and description in its tooltip."""
    from agielo_dagster.domain.meaning import header_title

    data = explorer_data("quiz", benchmark["agents"], benchmark["result"].test_cases, gaps=benchmark["gaps"])
    assert "a negative gap: the agent already does" in data["words"]["gaps"]
    assert data["words"]["titles"]["pct_beaten_50"] == header_title("pct_beaten_50")
    assert data["words"]["titles"]["gap_50"].startswith("gap_50: The competency gap")
