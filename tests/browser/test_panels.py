"""The lesson page picks its panels by what the run's log holds, not by the lesson: a lesson the front
end has never heard of (tests/lessons_extra/every_kind) gets the panel of each kind of event it makes."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import counter

pytestmark = pytest.mark.browser

PICTURES = ["pipeline", "timeline", "topology", "memory", "lanes", "ring", "collective", "origins",
            "tensors", "numbers", "checks", "comm", "cost"]


def open_run(page: Page, server, run: dict) -> None:
    page.goto(f"{server.url}/lessons/every_kind?run={run['id']}")
    expect(counter(page)).to_have_text(re.compile(rf"seq \d+ / {run['events']}$"))


def shown_panels(page: Page) -> list[str]:
    """The picture panels on screen, top to bottom."""
    ids = page.locator(".stage > section.panel:visible").evaluate_all("els => els.map((el) => el.id)")
    return [i.removesuffix("-panel") for i in ids if i.endswith("-panel")]


def test_a_lesson_unknown_to_the_page_gets_a_panel_for_each_kind_of_event(page: Page, server):
    run = server.run("every_kind", 2, {"makes": "everything"})
    open_run(page, server, run)
    expect(page.locator("#pipeline-panel")).to_be_visible()
    assert shown_panels(page) == ["pipeline", "lanes", "ring", "collective", "tensors", "numbers", "comm"]
    # each panel draws this run's events: the stage actions, the sends, the all-reduce, the snapshots
    for rank in (0, 1):
        expect(page.locator(f'#pipeline .pipeline-gantt .gantt-row[data-rank="{rank}"] .gantt-block.F')).to_have_count(2)
    expect(page.locator("#ring path.ring-arrow")).to_have_count(1)
    expect(page.locator("#ring-panel")).to_contain_text("microbatch 1")
    expect(page.locator("#collective")).to_contain_text("all-reduce")
    expect(page.locator("#collective")).to_contain_text("sum over the ranks")
    expect(page.locator('.tensor-card[data-tensor="y"]')).to_have_count(1)
    card = page.locator('#numbers .number-card[data-metric="first_sum"]')       # formula and expected, as sent
    expect(card.locator(".number-formula")).to_have_text("formula: x₀ of rank 0 + x₀ of rank 1 = 0 + 4")
    expect(card.locator(".number-expected")).to_have_text("expected 4 — ✓ as predicted")
    # the first step: panels stay put while the viewer scrubs back (what the whole log holds decides)
    page.keyboard.press("Home")
    expect(counter(page)).to_have_text(re.compile(r"^seq 1 / "))
    assert shown_panels(page) == ["pipeline", "lanes", "ring", "collective", "tensors", "numbers", "comm"]


def test_a_run_of_collectives_alone_has_no_pipeline_panel(page: Page, server):
    run = server.run("every_kind", 2, {"makes": "collectives"})
    open_run(page, server, run)
    expect(page.locator("#collective-panel")).to_be_visible()
    assert shown_panels(page) == ["lanes", "collective", "comm"]
    for picture in set(PICTURES) - {"lanes", "collective", "comm"}:
        expect(page.locator(f"#{picture}-panel")).to_be_hidden()
