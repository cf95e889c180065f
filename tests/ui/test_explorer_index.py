"""The explorer's index: every benchmark on the pool's scale, linked to its page; the leaderboard across them with
the other components apart; each agent on each benchmark. Safe with hostile ids, and alive in headless Chromium."""

import json
import re

import pytest

from agielo_dagster.domain.contract import IngestError, check_name
from agielo_dagster.domain.explorer_index import index_data, render_index
from agielo_dagster.domain.layout import explorer_index_path, explorer_path
from agielo_dagster.domain.meaning import OTHER_COMPONENT
from tests.pool_tables import BOLD, MAIN, SCRIPT, pool_tables
from tests.ui.conftest import ARTIFACTS, opened

PAGES = {"digits": "digits.html", "quiz": "quiz.html", "island": "island.html"}


def embedded(page: str) -> dict:
    (block,) = re.findall(r'<script type="application/json" id="explorer-data">(.*?)</script>', page, flags=re.S)
    return json.loads(block)


def test_hostile_ids_cannot_leave_the_data_block():
    page = render_index(*pool_tables(), PAGES).decode("utf-8")
    assert page.count("</script") == 2 and page.count("<script") == 2  # the data block's end and the code's
    assert BOLD not in page and "innerHTML" not in page
    data = embedded(page)
    assert set(data["agents"]["agent_id"]) == {*MAIN, "lonely"}  # every id back character for character
    assert "<title>AGI-Elo explorer: every benchmark</title>" in page


def test_the_data_orders_agents_by_component_then_rank_and_says_which_benchmarks_are_saturated():
    data = index_data(*pool_tables(), PAGES)
    assert data["agents"]["agent_id"] == [*MAIN, "lonely"]
    benchmarks = data["benchmarks"]
    assert benchmarks["benchmark"] == ["digits", "island", "quiz"]
    assert benchmarks["page"] == ["digits.html", "island.html", "quiz.html"]
    assert [s.split(":")[0] for s in benchmarks["separates"]] == ["separates models", "separates models", "saturated"]
    assert "100 %" in benchmarks["separates"][2]


def test_each_agent_on_each_benchmark_is_its_rating_there_on_the_pool_scale_or_none():
    data = index_data(*pool_tables(), PAGES)
    digits, island, quiz = (data["cells"]["pool"][f"b{i}"] for i in range(3))
    assert digits == [1790.0, 1640.0, 1620.0, None, None]  # the hostile id played digits only, partial quiz only
    assert quiz == [1810.0, 1660.0, None, 1500.0, None] and island == [None] * 4 + [1500.0]
    assert data["cells"]["status"]["b2"][3] == "provisional" and data["cells"]["own"]["b0"][0] == 1620.0


def test_bad_tables_and_links_are_refused_with_what_is_wrong():
    leaderboard, scales, by_benchmark = pool_tables()
    with pytest.raises(ValueError, match="leaderboard lacks column.*component"):
        index_data(leaderboard.drop(columns="component"), scales, by_benchmark, PAGES)
    with pytest.raises(ValueError, match="relative to the index"):
        index_data(leaderboard, scales, by_benchmark, {**PAGES, "quiz": "https://example.org/quiz.html"})
    with pytest.raises(ValueError, match="duplicate"):  # an agent twice on one benchmark is no table of the pool
        index_data(leaderboard, scales, by_benchmark.iloc[[0, 0, 1]], PAGES)
    assert index_data(leaderboard, scales, by_benchmark, {"digits": "digits.html"})["benchmarks"]["page"][1] is None


def test_no_benchmark_name_can_take_the_index_file_name():
    index = explorer_index_path()
    name = index.rsplit("/", 1)[1].removesuffix(".html")
    with pytest.raises(IngestError, match="refused"):
        check_name(name, "benchmark", "raw/x/y.csv")
    assert index.rsplit("/", 1)[0] == explorer_path("digits").rsplit("/", 1)[0]  # beside the pages it links to


def test_the_page_shows_the_leaderboard_in_rank_order_links_every_benchmark_and_sets_the_other_component_apart(browser, tmp_path):
    run, chromium = browser
    for name, link in PAGES.items():  # the benchmarks' pages, so that following a link lands on one
        (tmp_path / link).write_text(f"<!doctype html><title>{name}</title>", encoding="utf-8")
    path = tmp_path / "_index.html"
    path.write_bytes(render_index(*pool_tables(), PAGES))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors = []

    def check():
        context, page = opened(chromium, path, errors, viewport={"width": 1280, "height": 900})
        page.locator("#leaderboard-grid tbody tr").first.wait_for()
        page.screenshot(path=str(ARTIFACTS / "explorer_index.png"), full_page=True)
        board = page.locator("#leaderboard-grid tbody tr")
        names = board.locator(".agent-name").all_inner_texts()
        ranks = [board.nth(i).locator("td").nth(0).inner_text() for i in range(board.count())]
        links = page.locator("#benchmarks-grid a.benchmark-link")
        hrefs = {links.nth(i).inner_text(): links.nth(i).get_attribute("href") for i in range(links.count())}
        saturated = page.locator("#benchmarks-grid tr.saturated .col-benchmark").all_inner_texts()
        apart_scales = page.locator("#benchmarks-grid .col-component").all_inner_texts()
        apart = page.locator("#component-1")
        other = (apart.locator(".agent-name").all_inner_texts(), apart.locator("p.muted").inner_text())
        matrix = page.locator("#by-benchmark-grid tbody tr").filter(has_text=SCRIPT).locator("td").all_inner_texts()
        headers = page.locator("#by-benchmark-grid th").all_inner_texts()
        scroll = page.evaluate("document.documentElement.scrollWidth")
        links.filter(has_text="quiz").click()
        page.wait_for_url("**/quiz.html")
        landed = page.title()
        context.close()
        return names, ranks, hrefs, (saturated, apart_scales), other, matrix, headers, scroll, landed

    names, ranks, hrefs, (saturated, apart_scales), other, matrix, headers, scroll, landed = run(check)
    assert errors == []
    assert names == MAIN and ranks == ["1", "=2", "=2", "–"]  # the provisional agent takes no rank of its own
    assert hrefs == PAGES and landed == "quiz" and saturated == ["quiz"]
    assert apart_scales == ["main", "1: not comparable", "main"]  # island's difficulties lie on lonely's scale
    assert other == (["lonely"], OTHER_COMPONENT)
    assert [h.strip(" ▲▼") for h in headers] == ["agent", "pooled rating", "digits", "island", "quiz"]
    assert matrix == [SCRIPT, "1620", "1620", "·", "·"]  # on digits only
    assert scroll <= 1280
