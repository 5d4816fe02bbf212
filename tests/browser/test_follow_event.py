"""Follow-the-event scrolling and a layout that keeps the current picture on screen: at 1280×720, and
with the text at 200 %, stepping to a collective brings its drawing into view; Play and the slider leave
the page where the viewer put it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def collectives_run(server):
    run = server.run("collectives", 4)
    assert run["status"] == "done", run["error"]
    return run


def open_at_start(browser, server, run, text_size=None) -> Page:
    context = browser.new_context(viewport={"width": 1280, "height": 720}, reduced_motion="reduce")
    if text_size:
        context.add_init_script(f"localStorage.setItem('paralab:text-size', '{text_size}')")
    page = context.new_page()
    page.goto(f"{server.url}/lessons/collectives?run={run['id']}&seq=1")
    expect(page.locator("#scrubber .seq-counter")).to_have_text(f"seq 1 / {run['events']}")
    return page


def test_stepping_to_a_collective_below_the_fold_scrolls_its_drawing_into_view(browser, server, collectives_run):
    page = open_at_start(browser, server, collectives_run)
    drawing = page.locator("#collective")
    page.keyboard.press("]")                                 # the next collective
    expect(page.locator("#now .now-text")).to_contain_text("all_reduce")
    expect(drawing).to_be_in_viewport(ratio=0.9)

    # The slider (like Play) moves without scrolling: the viewer stays where they scrolled to.
    stage = page.locator(".stage")
    stage.evaluate("s => s.scrollTo(0, 0)")
    page.locator("#scrubber input[type=range]").fill("10")
    expect(page.locator("#scrubber .seq-counter")).to_have_text(f"seq 10 / {collectives_run['events']}")
    page.wait_for_timeout(300)
    top = stage.evaluate("s => s.scrollTop")
    assert top == 0, top
    page.context.close()
