"""A lesson page on a laptop and on a phone (a lecture room's follower, mostly): each picture's heading
clear of its tools, the run's status whole, nothing wider than the screen, and on the phone a scrubber
that leaves most of the screen to the pictures."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import web
from tests.browser.conftest import drawn, step_run_in_a_room

pytestmark = pytest.mark.browser

# the headings whose words (not their box: its padding may run under the tools) meet their panel's tools
HEADINGS_UNDER_TOOLS = """() => [...document.querySelectorAll(".stage > .panel")].filter((p) => p.offsetParent).flatMap((panel) => {
  const tools = panel.querySelector(":scope > .panel-tools")?.getBoundingClientRect();
  const heading = panel.querySelector(":scope > h2");
  if (!tools || !heading) return [];
  const words = document.createRange();
  words.selectNodeContents(heading);
  const meets = [...words.getClientRects()].some((r) => r.width > 0 && r.left < tools.right && r.right > tools.left
                                                        && r.top < tools.bottom && r.bottom > tools.top);
  return meets ? [heading.textContent.trim()] : [];
})"""


# elements marked `hidden` that a stylesheet's `display` draws all the same (Export HTML before any run)
DRAWN_THOUGH_HIDDEN = """() => [...document.querySelectorAll("[hidden]")].filter((e) => e.getClientRects().length)
  .map((e) => e.outerHTML.slice(0, 80))"""


@pytest.mark.parametrize("width, height", [(1400, 900), (1280, 800), (390, 844)])
def test_headings_status_and_scrubber_fit_the_screen(sized_page, server, width, height):
    page = sized_page(width, height)
    page.goto(f"{server.url}/lessons/tp_mlp?world_size=2")
    page.locator(".run-button").click()
    status = page.locator("#run-status")
    expect(status).to_contain_text("Run done", timeout=45_000)
    drawn(page)
    assert page.evaluate(HEADINGS_UNDER_TOOLS) == []
    assert status.evaluate("pill => pill.scrollWidth <= pill.clientWidth"), status.inner_text()   # not cut off
    where = page.locator(".source-where")                           # at the run's end: no line of the code
    expect(where).to_have_text("No line of this code at this step.")
    assert where.evaluate("line => line.scrollWidth <= line.clientWidth")                          # whole
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if width < 600:
        assert page.locator("#scrubber").bounding_box()["height"] < 0.2 * height


def test_no_page_is_wider_than_a_phone(sized_page, server):
    """The index, the playground and every lesson's page with its parameters open, at 390 px: what is
    wider (a source line, a table) scrolls inside its own box, never the page sideways; nothing hidden
    is drawn."""
    page = sized_page(390, 844)
    lessons = [lesson["id"] for lesson in web.get(server.url + "/api/lessons").json()]
    for path in ["/", "/playground", *(f"/lessons/{lesson}" for lesson in lessons)]:
        page.goto(server.url + path)
        if path != "/":
            expect(page.locator(".run-button")).to_be_enabled()     # the form is built
            if page.locator("#form-fields").is_hidden():
                page.locator(".params-toggle").click()
            expect(page.locator("#form-fields")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
        assert page.evaluate(DRAWN_THOUGH_HIDDEN) == [], path


def test_arrows_scroll_a_wide_box_with_the_focus(sized_page, server):
    """On a phone the source is wider than its box: with the focus on it, ← and → scroll it sideways
    (the browser's keys) and do not step; Space still steps, and off the box → steps again."""
    page = sized_page(390, 844)
    page.goto(f"{server.url}/lessons/tp_mlp?world_size=2")
    page.locator(".run-button").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    cursor = "window.paralab.store.state.cursor"
    page.keyboard.press("Home")
    code = page.locator(".source-code")
    assert code.evaluate("box => box.scrollWidth > box.clientWidth"), "the source fits: nothing to scroll"
    code.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.querySelector('.source-code').scrollLeft > 0")
    assert page.evaluate(cursor) == 0
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("document.querySelector('.source-code').scrollLeft === 0")
    page.keyboard.press(" ")
    assert page.evaluate(cursor) == 1
    page.locator("h1").first.click()                                 # the focus off the box
    page.keyboard.press("ArrowRight")
    assert page.evaluate(cursor) == 2


# a step-mode row's parts drawn over each other, or the stepper's buttons past its panel's edge
STEPPER_CROWDED = """() => {
  const meets = (a, b) => a.left < b.right && a.right > b.left && a.top < b.bottom && a.bottom > b.top;
  const panel = document.querySelector("#stepper").getBoundingClientRect();
  const rows = [...document.querySelectorAll(".stepper-rank")].filter((row) => {
    const release = row.querySelector(".release")?.getBoundingClientRect();
    const words = document.createRange();                 // the words themselves: they may run out of their box
    words.selectNodeContents(row.querySelector(".stepper-what"));
    return release && [...words.getClientRects()].some((r) => r.width > 0 && meets(release, r));
  }).map((row) => row.textContent.trim().slice(0, 40));
  const out = [...document.querySelectorAll("#stepper button")].filter((b) => b.getBoundingClientRect().right > panel.right + 1)
    .map((b) => b.textContent.trim());
  return [...rows, ...out];
}"""


def test_step_mode_on_a_phone_keeps_each_ranks_row_readable(sized_page, server):
    """A lesson page's step-mode run, and a lecture room's followed on a phone: each rank's release
    button under what the rank does, not over it; the stepper's buttons inside its panel; the
    presenter's status whole beside the room's code."""
    page = sized_page(390, 844)
    page.goto(f"{server.url}/lessons/tp_mlp?world_size=2")
    page.locator("#step-mode").check()
    page.locator(".run-button").click()
    expect(page.locator("#run-status")).to_contain_text("at a gate", timeout=45_000)
    expect(page.locator(".stepper-rank .release")).to_have_count(2)
    assert page.evaluate(STEPPER_CROWDED) == []
    page.keyboard.press("c")                                           # continue: the run ends
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)

    presenter, phone = sized_page(1280, 800), sized_page(390, 844)
    step_run_in_a_room(server, presenter, phone)
    expect(phone.locator(".stepper-rank .release")).to_have_count(2)
    assert phone.evaluate(STEPPER_CROWDED) == []
    status = presenter.locator("#run-status")                          # beside the room's code at 1280: whole
    expect(status).to_contain_text("at a gate")
    assert status.evaluate("pill => pill.scrollWidth <= pill.clientWidth && pill.scrollHeight <= pill.clientHeight"), \
        status.inner_text()
    presenter.keyboard.press("c")
    expect(presenter.locator("#run-status")).to_contain_text("Run done", timeout=45_000)


def test_a_phone_that_left_the_presenter_keeps_the_way_back_on_screen(sized_page, server):
    """A tap on the scrubber is enough to leave the presenter; far down the page, Rejoin live is still
    on screen (the room bar had scrolled away, and a phone has no L key)."""
    presenter, phone = sized_page(1280, 800), sized_page(390, 844)
    step_run_in_a_room(server, presenter, phone)
    phone.wait_for_function("window.paralab.store.state.log.length >= 3")
    phone.locator("#scrubber [data-action='first']").click()
    expect(phone.locator("#room-role")).to_have_text("Exploring on your own")
    phone.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    rejoin = phone.get_by_role("button", name="Rejoin live")
    expect(rejoin).to_be_in_viewport()
    rejoin.click()
    expect(phone.locator("#room-role")).to_have_text("Following live")
    presenter.keyboard.press("c")
    expect(presenter.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
