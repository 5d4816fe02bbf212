"""A step-linked explanation: the section of the lesson's text about the phase the run is in is
highlighted as the cursor reaches it (the `explains` markers of workers/lessons/pp/explain.en.md)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.browser.conftest import counter

pytestmark = pytest.mark.browser


def first_seq(events: list[dict], **fields) -> int:
    return next(e["seq"] for e in events if all(e.get(k) == v for k, v in fields.items()))


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_the_section_about_the_current_phase_is_highlighted(sized_page, server, size):
    page: Page = sized_page(*size)
    run = server.run("pp", 2, {"microbatches": 4, "delay_ms": 0})
    assert run["status"] == "done", run["error"]
    events = [json.loads(line) for line in web.get(f"{server.url}/api/runs/{run['id']}/events").text.splitlines() if line]
    page.goto(f"{server.url}/lessons/pp?run={run['id']}")
    seq_counter = counter(page)
    expect(seq_counter).to_have_text(f"seq {run['events']} / {run['events']}")
    now = page.locator("#explanation [data-explains].explaining")                # the marked headings
    heading = lambda text: page.locator("#explanation [data-explains]", has_text=text)

    page.keyboard.press("Home")                                  # the run has not computed anything yet
    expect(now).to_have_count(0)
    for fields, text in [({"kind": "compute", "name": "F", "phase": "begin"}, "What this lesson shows"),
                         ({"kind": "p2p", "op": "recv", "phase": "begin"}, "The bubble"),
                         ({"kind": "compute", "name": "B", "phase": "begin"}, "GPipe against 1F1B")]:
        seq = first_seq(events, **fields)
        page.locator("#scrubber input[type=range]").fill(str(seq))
        expect(seq_counter).to_have_text(f"seq {seq} / {run['events']}")
        expect(now).to_have_count(1)
        expect(heading(text)).to_have_class(re.compile(r"\bexplaining\b"))
    expect(page.locator("#explanation .explaining").first).to_be_visible()


def test_in_chinese_the_ring_lesson_highlights_the_algorithm_running(sized_page, server):
    """Every lesson links its text to its run, in either language: ring_allreduce's two algorithms."""
    from tests.browser.untranslated import switch_to_chinese

    page: Page = sized_page(1600, 900)
    run = server.run("ring_allreduce", 4, {})
    assert run["status"] == "done", run["error"]
    events = [json.loads(line) for line in web.get(f"{server.url}/api/runs/{run['id']}/events").text.splitlines() if line]
    page.goto(f"{server.url}/lessons/ring_allreduce?run={run['id']}")
    switch_to_chinese(page)
    seq_counter = counter(page)
    expect(seq_counter).to_have_text(re.compile(rf"{run['events']} / {run['events']}"))
    for fields, text in [({"kind": "compute", "name": "all-gather step 2", "phase": "begin"}, "环形算法"),
                         ({"kind": "compute", "name": "doubling step 2", "phase": "begin"}, "递归倍增")]:
        seq = first_seq(events, **fields)
        page.locator("#scrubber input[type=range]").fill(str(seq))
        expect(seq_counter).to_have_text(re.compile(rf"\b{seq} / {run['events']}"))
        expect(page.locator("#explanation [data-explains].explaining")).to_have_text(text)
