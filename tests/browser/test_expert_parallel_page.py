"""The expert-parallel lesson as a learner sees it: run it from its page, step into the dispatch and
the combine all-to-alls with the keys, read the uneven splits, the load and the bytes beside their
formulas, and see every check pass; the mistake fails the output but not the tokens at the experts."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.browser.conftest import counter, seq_of

pytestmark = pytest.mark.browser


def events_of(server, run_id: str) -> list[dict]:
    text = web.get(f"{server.url}/api/runs/{run_id}/events").text
    return [json.loads(line) for line in text.splitlines() if line]


def test_run_and_step_into_the_all_to_alls(page: Page, server):
    page.goto(f"{server.url}/lessons/expert_parallel?world_size=4")
    expect(page.locator(".lesson-title")).to_have_text("Expert parallelism: a mixture of experts")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    expect(page.locator(".checks-summary")).to_have_text("✓ All 24 checks passed (6 checks × 4 ranks)")
    expect(page.locator(".check-row.fail")).to_have_count(0)

    run_id = re.search(r"run=([0-9a-f]+)", page.url).group(1)
    events = events_of(server, run_id)
    total = len(events)
    dispatch = [e for e in events if e["kind"] == "collective" and e["phase"] == "begin"
                and e["label"].startswith("dispatch:")]
    combine = next(e for e in events if e["kind"] == "collective" and e["phase"] == "begin"
                   and e["label"].startswith("combine:"))

    # step with the keys from just before the first rank's dispatch into it
    page.keyboard.press("Home")
    expect(counter(page)).to_have_text(f"seq 1 / {total}")
    page.locator("#scrubber input[type=range]").fill(str(dispatch[0]["seq"] - 1))
    page.keyboard.press("ArrowRight")
    expect(counter(page)).to_have_text(f"seq {dispatch[0]['seq']} / {total}")
    collective = page.locator("#collective")
    expect(collective.locator(".op-badge")).to_have_text("all-to-all")
    expect(collective.locator(".collective-label")).to_have_text(re.compile(r"^dispatch: \d+(·\d+){3} tokens to ranks 0–3$"))
    expect(collective.locator("svg.collective-svg.op-all_to_all")).to_be_visible()
    expect(collective.locator(".col-rank")).to_have_count(4)
    # once every rank has called it, the tokens move between the ranks
    last = max(e["seq"] for e in dispatch)
    while seq_of(page) < last:
        page.keyboard.press("ArrowRight")
    expect(counter(page)).to_have_text(f"seq {last} / {total}")
    expect(collective.locator("svg.collective-svg")).to_have_class(re.compile("phase-moving"))
    expect(collective.locator(".phase-line")).to_contain_text("Every rank arrived")
    expect(collective.locator(".collective-meta")).to_contain_text("ep #")

    page.locator("#scrubber input[type=range]").fill(str(combine["seq"]))
    expect(collective.locator(".collective-label")).to_have_text(re.compile(r"^combine: \d+(·\d+){3} results back to ranks 0–3$"))

    # at the end: the uneven splits and the load drawn in place, the numbers beside their formulas
    page.keyboard.press("End")
    expect(page.locator('.tensor-card[data-tensor="dispatch splits (row: from, column: to)"] figcaption')).to_contain_text(
        "[4×4] — 4 of 4 shards in place")
    expect(page.locator('.tensor-card[data-tensor="tokens per expert"] figcaption')).to_contain_text("[8] — 4 of 4 shards in place")
    numbers = page.locator("#numbers")
    for name in ("dispatch_bytes", "combine_bytes", "tokens_received", "tokens_dropped", "tokens_dropped_total"):
        expect(numbers.locator(f'.number-card.pass[data-metric="{name}"]')).to_contain_text("✓ as predicted")
    expect(numbers.locator('.number-card[data-metric="capacity"]')).to_contain_text("C = ⌈cf·T·k / E⌉")
    expect(numbers.locator('.number-card[data-metric="capacity"] .number-value')).to_have_text("3 tokens")
    expect(numbers.locator('.number-card[data-metric="dispatch_bytes"]')).to_contain_text("(T·k − dropped_r)·H·4 B")


def test_combining_in_the_wrong_order_fails_the_output_not_the_dispatch(page: Page, server):
    page.goto(f"{server.url}/lessons/expert_parallel?world_size=2")
    page.get_by_label("mistake").select_option("combine_wrong_order")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    expect(page.locator(".checks-summary")).to_have_text("✗ 10 of 12 checks FAILED")
    expect(page.locator('.check-group[data-check="tokens at the experts"] .check-row.pass')).to_have_count(2)
    expect(page.locator('.check-group[data-check="output Y"] .check-row.fail')).to_have_count(2)
