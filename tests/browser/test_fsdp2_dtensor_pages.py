"""FSDP2 and DTensor as a learner walks them: run fully_shard from its page, jump with ] to the
gathers torch made, read the memory beside ZeRO-3's formula; move a DTensor through its placements and
see each redistribution drawn rank by rank, on the 1-D and the 2-D mesh; a plan with both linears
colwise fails the output and the collectives."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.browser.conftest import drawn

pytestmark = pytest.mark.browser


def run_from_the_page(page: Page, server, path: str) -> str:
    """Press Run on the page at `path`; the run's id, once it is done."""
    page.goto(f"{server.url}{path}")
    with page.expect_response(lambda r: r.url.endswith("/api/runs") and r.request.method == "POST") as posted:
        page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=60_000)
    return posted.value.json()["id"]


def first_redistribution(server, run_id: str, before: list[str], after: list[str]) -> int:
    """The seq of the first `begin` of a DTensor collective from placements `before` to `after`."""
    lines = web.get(f"{server.url}/api/runs/{run_id}/events").text.splitlines()
    return min(e["seq"] for e in map(json.loads, lines) if e.get("placements") and e["phase"] == "begin"
               and (e["placements"]["before"], e["placements"]["after"]) == (before, after))


def jump_to(page: Page, panel: str, text: str, key: str = "]", tries: int = 80) -> None:
    """Press `key` until `panel` says `text`, reading it only once every panel has drawn the step."""
    for _ in range(tries):
        drawn(page)
        if text in page.locator(panel).inner_text():
            break
        page.keyboard.press(key)
    expect(page.locator(panel)).to_contain_text(text)


def test_fsdp2_gathers_each_layer_and_holds_zero_3s_memory(page: Page, server):
    run_from_the_page(page, server, "/lessons/fsdp2?world_size=4")
    expect(page.locator(".lesson-title")).to_have_text("FSDP2: torch's fully_shard")
    expect(page.locator(".checks-summary")).to_have_text("✓ All 64 checks passed (16 checks × 4 ranks)")
    page.keyboard.press("Home")
    page.keyboard.press("]")                                     # the first collective torch made: layer 0's gather
    collective = page.locator("#collective")
    expect(collective.locator(".op-badge")).to_have_text("all-gather")
    expect(collective.locator(".collective-meta")).to_contain_text("dp")
    page.keyboard.press("End")
    memory = page.locator("#memory")                             # the zero lesson's picture, the same numbers
    expect(memory.locator(".memory-head")).to_contain_text("ZeRO stage 3")
    expect(memory.locator(".memory-bar")).to_have_count(12)      # 4 ranks × parameters, gradients, optimizer state
    expect(memory.locator(".memory-formula")).to_have_text(["PΨ/N", "GΨ/N", "KΨ/N"])
    expect(memory.locator(".memory-cell.fail")).to_have_count(0)
    peak = page.locator('#numbers .number-card.pass[data-metric="peak_parameters_forward"]')
    expect(peak).to_contain_text("✓ as predicted")
    expect(peak).to_contain_text("PΨ/N + g·PΨ_l")
    expect(page.locator("#tensors")).to_contain_text("memory over the first step")
    expect(page.locator("#explanation")).to_contain_text("reshard_after_forward")


def test_dtensor_redistributions_drawn_on_both_meshes(page: Page, server):
    run_id = run_from_the_page(page, server, "/lessons/dtensor?world_size=4")
    expect(page.locator(".lesson-title")).to_have_text("DTensor: placements and parallelize_module")
    expect(page.locator(".checks-summary")).to_have_text("✓ All 88 checks passed (22 checks × 4 ranks)")
    page.keyboard.press("Home")
    jump_to(page, "#shards", "goes from Shard(0) to Replicate().")   # ] from the start: the first one
    expect(page.locator("#shards")).to_contain_text("all-gather on mesh (4), dimension tp")
    # the later ones opened at their step (] gets there too, a rank's call at a time: tens of presses)
    page.goto(f"{server.url}/lessons/dtensor?world_size=4&run={run_id}"
              f"&seq={first_redistribution(server, run_id, ['Partial()'], ['Shard(0)'])}")
    expect(page.locator("#shards")).to_contain_text("reduce-scatter on mesh (4), dimension tp: a [8, 8] tensor "
                                                    "goes from Partial() to Shard(0).")
    page.goto(f"{server.url}/lessons/dtensor?world_size=4&run={run_id}&seq="
              f"{first_redistribution(server, run_id, ['Shard(0)', 'Shard(1)'], ['Replicate()', 'Shard(1)'])}")
    expect(page.locator("#shards")).to_contain_text("all-gather on mesh (2×2), dimension dp: a [8, 8] tensor goes "
                                                    "from Shard(0) Shard(1) to Replicate() Shard(1).")
    after = page.locator('#shards .shards-side[data-side="after"] .shard').evaluate_all(
        "els => els.map((el) => `${el.dataset.rank} ${el.dataset.held}`)")
    assert after == ["0 [:, 0:4]", "1 [:, 4:8]", "2 [:, 0:4]", "3 [:, 4:8]"]   # whole rows over dp, columns by tp
    page.keyboard.press("End")
    expect(page.locator('.check-group[data-check="collectives as Megatron\'s"] .check-row.pass')).to_have_count(4)


def test_both_linears_colwise_fails_the_output_and_the_collectives(page: Page, server):
    page.goto(f"{server.url}/lessons/dtensor?world_size=2")
    page.get_by_label("mistake").select_option("both_colwise")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=60_000)
    expect(page.locator(".checks-summary")).to_have_text("✗ 4 of 32 checks FAILED")
    expect(page.locator('.check-group[data-check="output Y"] .check-row.fail')).to_have_count(2)
    expect(page.locator('.check-group[data-check="collectives as Megatron\'s"] .check-row.fail')).to_have_count(2)
    expect(page.locator('.check-group[data-check="W1 shard gradient"] .check-row.pass')).to_have_count(2)
