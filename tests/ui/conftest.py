"""The explorer pages' browser: headless Chromium (Debian's, driven by Playwright), pages opened offline from file://."""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("AGIELO_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("AGIELO_TEST_ARTIFACTS", REPO / "test-artifacts"))


def opened(chromium, path, errors: list, **options):
    """A new offline context (``options``: its viewport) and a page of it loaded from ``path``, its errors kept."""
    context = chromium.new_context(offline=True, **options)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri(), wait_until="load")
    return context, page


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium on a thread of its own.

    Playwright's sync API allows one driver per thread, and tests/ui/test_browser.py holds a module-wide one
    on the main thread; a worker thread keeps the two apart. Every call goes through ``run(fn)``.
    """
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed ({CHROMIUM}); .ci/run installs Debian's chromium package")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    pool = ThreadPoolExecutor(1, thread_name_prefix="explorer-chromium")

    def launch():
        driver = sync_api.sync_playwright().start()
        args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
        return driver, driver.chromium.launch(
            executable_path=CHROMIUM, args=[*args, "--disable-component-update", "--disable-sync"]
        )

    driver, chromium = pool.submit(launch).result()

    def run(fn, *args):
        return pool.submit(fn, *args).result()

    try:
        yield run, chromium
    finally:
        run(lambda: (chromium.close(), driver.stop()))
        pool.shutdown()
