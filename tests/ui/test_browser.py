"""The figures as people see them: dagster dev in headless Chromium (Debian's package, driven by Playwright)."""

import os
import shutil
from pathlib import Path

import pytest

from agielo_dagster.domain.figures import FIGURES

from ..devserver import REPO, DagsterDev

pytestmark = [pytest.mark.component("daemon")]

CHROMIUM = os.environ.get("AGIELO_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("AGIELO_TEST_ARTIFACTS", REPO / "test-artifacts"))


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium (Debian's) for this module's tests: Playwright's sync API allows one driver per thread.

    Module-wide, not session-wide: the driver keeps an event loop running on the main thread, and a later module
    on the same worker that calls asyncio.run (dagster_graphql's test client) failed while it lived."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed ({CHROMIUM}); .ci/run installs Debian's chromium package")
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
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
        yield browser
        browser.close()


def new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)  # generous: the machine may be busy with other tests
    # the first visit may ask to join the community, at any moment: dismiss it whenever it shows
    page.add_locator_handler(
        page.get_by_text("Join the Dagster community"), lambda _: page.get_by_role("button", name="Skip").click()
    )
    return page


@pytest.fixture(scope="module")
def browser_page(demo_run, chromium):
    assert demo_run["out"].returncode == 0, demo_run["out"].stderr
    server = DagsterDev(demo_run["home"], demo_run["root"], demo_run["root"].parent / "dagster_dev_ui.log").start()
    page = new_page(chromium)
    try:
        yield server, page
    finally:
        page.close()
        server.stop()


@pytest.mark.slow  # agielo demo, then dagster dev: the quick pass keeps the ledger_page tests
def test_benchmark_reports_page_shows_every_figure(browser_page):
    server, page = browser_page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{server.url}/assets/benchmark_reports", wait_until="networkidle")
    page.get_by_text("figure_competency_gap").first.wait_for(timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "benchmark_reports.png"), full_page=True)
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


@pytest.mark.slow  # agielo demo, then dagster dev: the quick pass keeps the ledger_page tests
def test_hardest_test_cases_show_their_metadata(browser_page):
    server, page = browser_page
    page.goto(f"{server.url}/assets/benchmark_reports", wait_until="networkidle")
    page.get_by_text("hardest_test_cases").first.wait_for(timeout=120_000)
    table = page.locator("tr", has_text="hardest_test_cases").first
    text = table.inner_text()
    assert "true_label" in text and "predicted_label" in text  # the upload's extra columns, as metadata
    assert "digits_" in text  # the hardest test cases' ids
    table.screenshot(path=str(ARTIFACTS / "hardest_test_cases.png"))


EVIL_IDS = ["![x](http://127.0.0.1:9/evil.png)", "<img src=x onerror=alert(1)>", "a|b|c", "**bold**"]


@pytest.fixture(scope="module")
def ledger_page(tmp_path_factory, chromium):
    """A benchmark with one rejected upload, and test-case ids that hold markdown and HTML."""
    import subprocess
    import sys

    import pandas as pd

    from ..pipeline.conftest import write_benchmark

    base = tmp_path_factory.mktemp("ledger_ui")
    home, root = base / "home", base / "storage"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    write_benchmark(root, "quiz", [1300, 1600, 1900])
    for agent in ("agent_0", "agent_1", "agent_2"):
        frame = pd.read_csv(root / f"raw/quiz/{agent}.csv")
        frame.loc[: len(EVIL_IDS) - 1, "test_case_id"] = EVIL_IDS
        frame.loc[: len(EVIL_IDS) - 1, "correct"] = 0  # hard cases: they show among the hardest test cases
        frame.to_csv(root / f"raw/quiz/{agent}.csv", index=False)
    rejected = pd.read_csv(root / "raw/quiz/agent_1.csv")
    rejected.loc[5, "correct"] = 7
    rejected.to_csv(root / "raw/quiz/rejected_model.csv", index=False)
    cli = subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    server = DagsterDev(home, root, base / "dagster_dev.log").start()
    page = new_page(chromium)
    requests, dialogs = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        yield server, page, requests, dialogs
    finally:
        page.close()
        server.stop()


def _settle(page) -> None:
    """Let the page finish drawing, with the community dialog gone.

    new_page's handler dismisses the dialog before any action or assertion; clicking its Skip here
    as well raced the handler (the click then waited for a button the handler had already removed).
    """
    from playwright.sync_api import expect

    page.wait_for_timeout(1500)
    expect(page.get_by_text("Join the Dagster community")).to_be_hidden()


def test_a_rejected_upload_shows_as_rejected_with_its_rule(ledger_page):
    server, page, _, _ = ledger_page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{server.url}/assets/upload_ledger?view=checks", wait_until="networkidle")
    page.get_by_text("first_rule").first.wait_for(timeout=120_000)
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "upload_ledger_check.png"), full_page=True)
    body = page.inner_text("body")
    assert "uploads_accepted" in body and "Failed" in body  # the check names the problem, never a pass
    row = page.locator("tr:not(:has(tr))", has_text="raw/quiz/rejected_model.csv").first
    assert "rejected" in row.inner_text() and "metric_in_range" in row.inner_text()

    page.goto(f"{server.url}/assets/upload_ledger?view=events", wait_until="networkidle")
    page.get_by_text("rejected_and_refused").first.wait_for(timeout=120_000)
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "upload_ledger_events.png"), full_page=True)
    rows = page.locator("tr:not(:has(tr))", has_text="raw/quiz/rejected_model.csv")
    texts = [rows.nth(i).inner_text() for i in range(rows.count())]
    assert texts and all("rejected" in t and "accepted" not in t.replace("rejected", "") for t in texts), texts
    for agent in ("agent_0", "agent_1", "agent_2"):  # the good uploads, accepted, beside it
        assert "accepted" in page.locator("tr:not(:has(tr))", has_text=f"raw/quiz/{agent}.csv").first.inner_text()


def test_ids_holding_markdown_and_html_are_shown_never_interpreted(ledger_page):
    server, page, requests, dialogs = ledger_page
    page.goto(f"{server.url}/assets/benchmark_reports", wait_until="networkidle")
    page.get_by_text("hardest_test_cases").first.wait_for(timeout=120_000)
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "benchmark_reports_ids.png"), full_page=True)
    body = page.inner_text("body")
    for evil in EVIL_IDS:
        assert evil in body, evil  # the id, character for character
    assert page.locator("img[src='x'], img[src*='evil']").count() == 0
    assert page.locator("strong", has_text="bold").count() == 0
    assert dialogs == [] and not [u for u in requests if "evil" in u or u.endswith("/x")]


@pytest.mark.slow  # the quick pass keeps the headline's rule without a browser (test_uploads_check) and a rejection in the browser
def test_the_check_headline_keeps_a_failure_after_a_clean_run_of_another_benchmark(ledger_page):
    """Issue 24 item 5: a later, clean run of another benchmark must not turn uploads_accepted's headline to
    Passed (or Skipped): the check summarizes every benchmark, with a benchmark column. Runs last in this module."""
    import subprocess
    import sys

    from ..pipeline.conftest import write_benchmark

    server, page, _, _ = ledger_page
    root = Path(server.env["AGIELO_STORAGE"])
    write_benchmark(root, "vision", [1400, 1700])
    cli = subprocess.run(
        [sys.executable, "-m", "agielo_dagster.cli", "run", "--storage", str(root)],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": server.env["DAGSTER_HOME"]},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0 and "vision" in cli.stdout, cli.stdout + cli.stderr
    page.goto(f"{server.url}/assets/upload_ledger?view=checks", wait_until="networkidle")
    page.get_by_text("benchmarks_failing").first.wait_for(timeout=120_000)
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "upload_ledger_check_two_benchmarks.png"), full_page=True)
    body = page.inner_text("body")
    assert "uploads_accepted" in body and "Failed" in body
    assert "Passed" not in body and "Skipped" not in body  # vision's clean run did not hide quiz's rejection
    assert "1 of 2 benchmark(s) with rejected or refused files: quiz" in body  # the headline names the benchmark
    rows = page.locator("tr:not(:has(tr))")
    assert rows.filter(has_text="vision").filter(has_text="passed").count() == 1  # every benchmark's outcome
    assert rows.filter(has_text="quiz").filter(has_text="failed").filter(has_text="metric_in_range").count() == 1
    problem = page.locator("tr:not(:has(tr))", has_text="raw/quiz/rejected_model.csv").first.inner_text()
    assert "quiz" in problem.replace("raw/quiz/", "") and "rejected" in problem  # the benchmark column
