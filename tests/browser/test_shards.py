"""DTensor placements on the page: a run whose collectives come from DTensor's own `redistribute`
(recorded at torch's dispatch level, tests/lessons_extra/dtensor_moves) gets the placements panel,
which draws, for the redistribution at the cursor, what each rank holds of the global tensor before
and after — Shard(0) a slice of rows, Replicate() all of it, Partial() all of it as a partial sum."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.app.helpers import events
from tests.browser.conftest import counter, drawn, seq_of

pytestmark = pytest.mark.browser


def held(page: Page, side: str) -> list[str]:
    drawn(page)
    return page.locator(f'#shards .shards-side[data-side="{side}"] .shard').evaluate_all(
        "els => els.map((el) => `${el.dataset.rank} ${el.dataset.held}`)")


def test_each_ranks_shard_is_drawn_before_and_after_each_redistribution(page: Page, server):
    run = server.run("dtensor_moves", 2)
    assert run["status"] == "done", run.get("error")
    page.goto(f"{server.url}/lessons/dtensor_moves?run={run['id']}")
    expect(counter(page)).to_have_text(re.compile(rf"seq \d+ / {run['events']}$"))
    page.keyboard.press("End")
    expect(page.locator("#shards-panel")).to_be_visible()
    expect(page.locator("#shards")).to_contain_text("reduce-scatter on mesh (2), dimension tp: a [8, 4] tensor "
                                                    "goes from Partial() to Shard(0).")
    assert held(page, "before") == ["0 partial sum", "1 partial sum"]
    assert held(page, "after") == ["0 [0:4, :]", "1 [4:8, :]"]
    expect(page.locator('#shards .shards-side[data-side="before"] .shard[data-partial="true"]')).to_have_count(2)

    page.keyboard.press("Home")                              # the first step: nothing redistributed yet
    expect(page.locator("#shards")).to_contain_text("No DTensor redistribution yet at this step.")
    # collective by collective, to the all-gather (the counter moves at once, the panels in the next frame)
    gathers = {e["seq"] for e in events(server, run["id"])
               if e["kind"] == "collective" and e["op"].startswith("all_gather") and e["phase"] == "begin"}
    for _ in range(40):
        before = counter(page).inner_text()
        page.keyboard.press("]")
        expect(counter(page)).not_to_have_text(before)
        if seq_of(page) in gathers:
            break
    expect(page.locator("#shards")).to_contain_text("all-gather on mesh (2), dimension tp: a [8, 4] tensor "
                                                    "goes from Shard(0) to Replicate().")
    assert held(page, "before") == ["0 [0:4, :]", "1 [4:8, :]"]
    assert held(page, "after") == ["0 all of it", "1 all of it"]
