"""Headless Chromium for the browser tests: one browser for the whole session (each pytest-xdist worker's), a
blank page of a context of its own per test (its cookies and storage empty), kept between tests (`PagePool`). Debian's
Chromium is used; never `playwright install`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re

import pytest

from tests import web

sync_api = pytest.importorskip("playwright.sync_api")

# Assertions wait as long as actions do: two cores running a server, ranks and a browser are slow
# at times, and a page that needs a moment more is not a failure.
sync_api.expect.set_options(timeout=15_000)

# Chromium's headless shell (Debian's chromium-headless-shell: Chromium's engine without the browser's
# own UI, what Playwright runs for headless Chromium): the same tests cost it a seventh less CPU than the
# full browser in headless mode (docs/benchmarks.md, "Session 18"). The full browser where only it is
# installed.
_CHROMIUMS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
CHROMIUM = next((path for path in _CHROMIUMS if os.access(path, os.X_OK)), _CHROMIUMS[0])
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


# One browser for the whole session (each pytest-xdist worker's): a browser launched again costs ~9 CPU-s
# (Chromium's browser, GPU and zygote processes, Playwright's driver) and its pages. While Playwright's
# sync API lives, the main thread's event loop is marked running: tests/conftest.py hides that mark while
# a test outside this package runs, so its `asyncio.run` (the hub's, the rooms') still works.
@pytest.fixture(scope="session")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium-headless-shell; never `playwright install`)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        playwright_loop = asyncio.events._get_running_loop()
        yield browser
        # The session may end on another package's test, which hid the loop's mark and, running its own
        # loop, left the thread without a current one: Playwright's ending needs both.
        asyncio.events._set_running_loop(playwright_loop)
        asyncio.set_event_loop(playwright_loop)
        browser.close()


class PagePool:
    """Pages kept for the next test, each in a browser context of its own: a page opened again costs
    less than half of a new context's (its renderer process and context are kept: ~1.0 CPU-s against
    ~2.3 for a lesson page, docs/benchmarks.md, "The test suite on two cores"). A page comes back
    blank: its cookies and the storage (local and the tab's session storage) of every origin it visited
    cleared, its routes and other tabs gone.
    A listener a test adds stays on the page: remove it, or open a context of your own."""

    def __init__(self, browser):
        self._browser = browser
        self._idle: list = []
        self._visited: dict = {}   # page → the origins it has been on

    def take(self, width: int, height: int, motion: bool = False):
        """A page of that size that asks for reduced motion unless `motion`: the page's endless
        animations (a running run's spinner, a collective's moving packets, a blocked rank's pulse)
        repaint it 60 times a second while a test waits: about a tenth of the browser tests' CPU."""
        page = self._idle.pop() if self._idle else self._new_page()
        page.set_viewport_size({"width": width, "height": height})
        page.emulate_media(reduced_motion="no-preference" if motion else "reduce")
        return page

    def _new_page(self):
        context = self._browser.new_context()
        context.set_default_timeout(15_000)
        page = context.new_page()
        origins = self._visited[page] = set()
        page.on("framenavigated", lambda frame: origins.add(_origin(frame.url)) if frame.parent_frame is None else None)
        return page

    def give_back(self, page) -> None:
        """Blank the page and keep it; close it if it cannot be blanked (closed, crashed, hung)."""
        try:
            self._blank(page)
        except sync_api.Error:
            page.context.close()
            self._visited.pop(page, None)
            return
        self._idle.append(page)

    def _blank(self, page) -> None:
        context = page.context
        for other in context.pages:
            if other is not page:
                other.close()
        page.unroute_all(behavior="ignoreErrors")
        context.unroute_all(behavior="ignoreErrors")
        page.goto("about:blank")
        context.clear_cookies()
        cdp = context.new_cdp_session(page)
        for origin in self._visited[page] - {None}:
            cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        cdp.detach()
        self._visited[page].clear()


def _origin(url: str) -> str | None:
    match = re.match(r"(https?://[^/]+)", url)
    return match.group(1) if match else None


@pytest.fixture(scope="session")
def pages(browser):
    """The session's pool (its contexts close with the browser)."""
    return PagePool(browser)


def open_page(pages: PagePool, width: int, height: int, who: str = "the page", motion: bool = False):
    """A page of its own context (its own cookies and localStorage, empty), from `pages`; JavaScript
    errors fail the test. A generator: use it from a fixture with `yield from`."""
    page = pages.take(width, height, motion)
    errors: list[str] = []
    on_error = lambda exc: errors.append(str(exc))   # noqa: E731
    page.on("pageerror", on_error)
    try:
        yield page
    finally:
        page.remove_listener("pageerror", on_error)
        pages.give_back(page)
    assert not errors, f"JavaScript errors on {who}: {errors}"


@pytest.fixture
def page(pages):
    """A page 1400×900 (a projector-ish laptop screen). JavaScript errors fail the test."""
    yield from open_page(pages, 1400, 900)


@pytest.fixture
def moving_page(pages):
    """A `page` whose animations run, for the tests of what moves: the other pages ask for reduced
    motion (`PagePool.take`), which the page honours by drawing no packets and no flying values."""
    yield from open_page(pages, 1400, 900, motion=True)


@pytest.fixture
def sized_page(pages):
    """`sized_page(width, height)`: a page of that size for the test (more than one if it asks), each
    given back at the end even when another's JavaScript errors fail the test."""
    with contextlib.ExitStack() as opened:
        yield lambda width, height: opened.enter_context(
            contextlib.contextmanager(open_page)(pages, width, height, f"the {width}×{height} page"))


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


def step_run_in_a_room(server, presenter, follower, lesson: str = "tp_mlp") -> dict:
    """A lecture room opened by `presenter`, `follower` following it live, and a step-mode run of `lesson`
    on 2 ranks begun through the room's socket, its ranks at their first gates: the room ({code, secret})."""
    expect = sync_api.expect
    room = web.post(f"{server.url}/api/rooms").json()
    presenter.goto(f"{server.url}/rooms/{room['code']}#secret={room['secret']}&lesson={lesson}")
    expect(presenter.locator("#room-role")).to_have_text("Presenter")
    follower.goto(f"{server.url}/rooms/{room['code']}")
    expect(follower.locator("#room-role")).to_have_text("Following live")
    presenter.evaluate(f"window.paralab.room.socket.send({{op: 'run', lesson: '{lesson}', world_size: 2, step: true}})")
    expect(follower.locator("#run-status")).to_contain_text("at a gate", timeout=45_000)
    return room
