"""Headless Chromium for the browser tests: one browser for the tests of this package, a fresh context
and page per test (so localStorage starts empty). Debian's Chromium is used; never `playwright install`."""

from __future__ import annotations

import os
import re

import pytest

sync_api = pytest.importorskip("playwright.sync_api")

# Assertions wait as long as actions do: two cores running a server, ranks and a browser are slow
# at times, and a page that needs a moment more is not a failure.
sync_api.expect.set_options(timeout=15_000)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


# Package scope, not session: while Playwright's sync API is running, the main thread's event loop is
# marked running, and every later `asyncio.run` (the hub's and rooms' tests) would fail. The browser
# goes when the last browser test is done, whatever runs after it.
@pytest.fixture(scope="package")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium; never `playwright install`)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(browser, width: int, height: int, who: str = "the page"):
    """A page in a browser context of its own (its own localStorage); JavaScript errors fail the test.
    A generator: use it from a fixture with `yield from`."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors on {who}: {errors}"


@pytest.fixture
def page(browser):
    """A page 1400×900 (a projector-ish laptop screen). JavaScript errors fail the test."""
    yield from open_page(browser, 1400, 900)


def counter(page):
    """The scrubber's "seq N / total" counter: where the page's cursor is."""
    return page.locator("#scrubber .seq-counter")


def seq_of(page) -> int:
    """The step the page's cursor is at, as its counter says."""
    return int(re.match(r"seq (\d+)", counter(page).inner_text()).group(1))


def drawn(page) -> None:
    """Wait until the page has drawn the step its counter names: the counter moves at once, the panels
    in the next animation frame (`#now` names the step drawn), those off screen when the browser is
    idle (`data-stale` until then)."""
    sync_api.expect(page.locator("#now .now-seq")).to_have_text(f"#{seq_of(page)}")
    sync_api.expect(page.locator(".panel[data-stale]")).to_have_count(0)


def loaded(bound: float) -> float:
    """A time bound (a wait, a measured median) on this machine now: scaled by the runnable processes per
    core (the last minute's load average) when there are more than the cores, as a page's wall time
    stretches by as much; never below `bound`."""
    return bound * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
