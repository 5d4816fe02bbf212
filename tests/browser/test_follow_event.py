"""Follow-the-event scrolling and a layout that keeps the current picture on screen: at 1280×720, and
with the text at 200 %, stepping to a collective brings its drawing into view; Play and the slider leave
the page where the viewer put it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.browser.conftest import counter

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def collectives_run(server):
    run = server.run("collectives", 4)
    assert run["status"] == "done", run["error"]
    return run


def open_at_start(browser, server, run, text_size=None) -> Page:
    context = browser.new_context(viewport={"width": 1280, "height": 720}, reduced_motion="reduce")
    if text_size:
        context.add_init_script(f"localStorage.setItem('paralab:text-scale', '{text_size}')")
    page = context.new_page()
    page.goto(f"{server.url}/lessons/collectives?run={run['id']}&seq=1")
    expect(counter(page)).to_have_text(f"seq 1 / {run['events']}")
    return page


def test_stepping_to_a_collective_below_the_fold_scrolls_its_drawing_into_view(browser, server, collectives_run):
    page = open_at_start(browser, server, collectives_run)
    play, play_by = page.locator("#scrubber [data-action=play]").bounding_box(), page.locator("#scrubber .play-by").bounding_box()
    assert abs(play_by["y"] + play_by["height"] / 2 - (play["y"] + play["height"] / 2)) < 10, (play, play_by)   # one row
    drawing = page.locator("#collective")
    page.keyboard.press("]")                                 # the next collective
    expect(page.locator("#now .now-text")).to_contain_text("all_reduce")
    expect(drawing).to_be_in_viewport(ratio=0.9)

    # The slider (like Play) moves without scrolling: the viewer stays where they scrolled to.
    stage = page.locator(".stage")
    stage.evaluate("s => s.scrollTo(0, 0)")
    page.locator("#scrubber input[type=range]").fill("10")
    expect(counter(page)).to_have_text(f"seq 10 / {collectives_run['events']}")
    page.wait_for_timeout(300)
    top = stage.evaluate("s => s.scrollTop")
    assert top == 0, top
    page.context.close()


def test_at_200_percent_text_a_step_to_a_collective_shows_its_drawing_uncovered(browser, server, collectives_run):
    """A+ to 200 %: the page scrolls as one; the drawing comes into view clear of the scrubber and the top bar."""
    page = open_at_start(browser, server, collectives_run, text_size=2)
    expect(page.locator(".text-size")).to_contain_text("200%")
    page.keyboard.press("]")
    expect(page.locator("#now .now-text")).to_contain_text("all_reduce")
    drawing = page.locator("#collective svg").first
    expect(drawing).to_be_in_viewport(ratio=0.9)
    box, scrubber = drawing.bounding_box(), page.locator("#scrubber").bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= scrubber["y"] + 1, (box, scrubber)
    for y in (box["y"] + 4, box["y"] + box["height"] - 4):                # its top and bottom edges are not under anything
        on_top = page.evaluate(f"() => document.elementFromPoint({box['x'] + box['width'] / 2}, {y})?.closest('#collective')?.id")
        assert on_top == "collective", (y, box, scrubber)
    page.context.close()


def test_at_200_percent_text_a_release_in_step_mode_shows_every_rank(browser, server):
    """pp in step mode at 1280×720 and 200 %: the stepper's ranks start below the scrubber; releasing a
    rank (its key) brings them all into view, the last one's release button clear of the scrubber."""
    run = server.start_run("pp", 4, {}, step=True)
    context = browser.new_context(viewport={"width": 1280, "height": 720}, reduced_motion="reduce")
    context.add_init_script("localStorage.setItem('paralab:text-scale', '2')")
    page = context.new_page()
    try:
        page.goto(f"{server.url}/lessons/pp?run={run['id']}")
        last_rank = page.locator("#stepper .stepper-rank[data-rank='3']")
        expect(last_rank).to_contain_text("waits", timeout=20_000)
        below = page.evaluate("() => document.querySelector(\"#stepper .stepper-rank[data-rank='3']\").getBoundingClientRect().top"
                              " - document.getElementById('scrubber').getBoundingClientRect().top")
        assert below > 0, below                                          # cut off before: the case at hand
        page.keyboard.press("0")
        expect(page.locator("#scrubber .live-badge")).to_be_visible()
        page.wait_for_function("() => { const r = document.querySelector(\"#stepper .stepper-rank[data-rank='3'] button\").getBoundingClientRect();"
                               " return r.bottom <= document.getElementById('scrubber').getBoundingClientRect().top + 1; }")
        top = page.evaluate("() => document.querySelector(\"#stepper .stepper-rank[data-rank='0']\").getBoundingClientRect().top")
        assert top >= 0, top
    finally:
        web.delete(f"{server.url}/api/runs/{run['id']}")
        context.close()
