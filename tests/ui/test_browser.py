"""The figures as people see them: dagster dev in headless Chromium (Debian's package, driven by Playwright)."""

import os
import shutil
from pathlib import Path

import pytest

from agielo_dagster.domain.figures import FIGURES

from ..devserver import REPO, DagsterDev

CHROMIUM = os.environ.get("AGIELO_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("AGIELO_TEST_ARTIFACTS", REPO / "test-artifacts"))


@pytest.fixture(scope="module")
def browser_page(demo_run):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed ({CHROMIUM}); .ci/run installs Debian's chromium package")
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    assert demo_run["out"].returncode == 0, demo_run["out"].stderr
    server = DagsterDev(demo_run["home"], demo_run["root"], demo_run["root"].parent / "dagster_dev_ui.log").start()
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                ],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)  # generous: the machine may be busy with other tests
            # the first visit may ask to join the community, at any moment: dismiss it whenever it shows
            page.add_locator_handler(
                page.get_by_text("Join the Dagster community"), lambda _: page.get_by_role("button", name="Skip").click()
            )
            yield server, page
            browser.close()
    finally:
        server.stop()


def test_competency_gap_page_shows_every_figure(browser_page):
    server, page = browser_page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{server.url}/assets/competency_gap_tables", wait_until="networkidle")
    page.get_by_text("figure_competency_gap").first.wait_for(timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "competency_gap_tables.png"), full_page=True)
    for name in FIGURES:
        page.locator("tr", has_text=f"figure_{name}").get_by_text("[Show Markdown]").click()
        image = page.locator(f"img[alt='{name}']")
        image.wait_for(state="visible")
        complete, width, height = image.evaluate("i => [i.complete, i.naturalWidth, i.naturalHeight]")
        assert complete and width > 300 and height > 200, f"{name}: {width}×{height}"
        page.wait_for_timeout(400)  # let the dialog finish fading in before the screenshot
        page.screenshot(path=str(ARTIFACTS / f"figure_{name}.png"))
        page.get_by_role("button", name="Close").click()
        image.wait_for(state="detached")


def test_hardest_test_cases_show_their_metadata(browser_page):
    server, page = browser_page
    page.goto(f"{server.url}/assets/competency_gap_tables", wait_until="networkidle")
    page.get_by_text("hardest_test_cases").first.wait_for(timeout=120_000)
    page.locator("tr", has_text="hardest_test_cases").get_by_text("[Show Markdown]").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    text = dialog.inner_text()
    assert "true_label" in text and "predicted_label" in text  # the upload's extra columns, as metadata
    page.wait_for_timeout(400)
    page.screenshot(path=str(ARTIFACTS / "hardest_test_cases.png"))
