"""The browser tests leave nothing behind for the tests after them. Playwright's sync API marks the main
thread's event loop as running while it lives, which is the whole session (one browser per pytest
process); tests/conftest.py hides the mark from the tests outside tests/browser, so a test that calls
asyncio.run (the hub's) still runs after a browser test in the same pytest process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from playwright.sync_api import expect

REPO = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(REPO)


def test_a_page_shows_its_text(page):
    page.set_content("<p id=hello>hello</p>")
    expect(page.locator("#hello")).to_have_text("hello")


def test_a_test_after_a_browser_test_can_run_an_event_loop():
    after = "tests/app/test_hub.py::test_each_subscriber_gets_every_message_in_its_own_queue"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             f"{THIS}::test_a_page_shows_its_text", after],
                            cwd=REPO, capture_output=True, text=True, timeout=110)
    assert result.returncode == 0 and "2 passed" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]
