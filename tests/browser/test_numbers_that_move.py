"""Numbers that move (lecture-ready): a small collective is drawn by its numbers, each element going
from its source slot to its destination slot with no hub, and a small tensor's heatmap carries its
numbers without hovering."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.browser.conftest import counter

pytestmark = pytest.mark.browser


def events_of(server, run_id: str) -> list[dict]:
    text = web.get(f"{server.url}/api/runs/{run_id}/events").text
    return [json.loads(line) for line in text.splitlines() if line]


def values(event: dict) -> list[float]:
    return [v for t in event["tensors"] for row in t["preview"] for v in row]


def shown(row) -> list[float]:
    return [float(x) for x in row.locator(".value-number").all_text_contents()]


def test_all_to_all_moves_chunk_j_of_rank_i_into_slot_i_of_rank_j(moving_page: Page, server):
    page = moving_page
    world = 4
    run = server.run("collectives", world, {"op": "all_to_all"})
    assert run["status"] == "done", run["error"]
    events = [e for e in events_of(server, run["id"]) if e["kind"] == "collective"]
    inputs = {e["rank"]: values(e) for e in events if e["phase"] == "begin"}
    outputs = {e["rank"]: values(e) for e in events if e["phase"] == "end"}
    m = len(inputs[0]) // world
    for j in range(world):      # what a learner must see: rank j's output is chunk j of every rank, in rank order
        assert outputs[j] == [v for i in range(world) for v in inputs[i][j * m:(j + 1) * m]]

    # while the data moves: every rank has begun, none has ended
    begun = max(e["seq"] for e in events if e["phase"] == "begin")
    assert begun < min(e["seq"] for e in events if e["phase"] == "end")
    page.goto(f"{server.url}/lessons/collectives?run={run['id']}&seq={begun}")
    drawing = page.locator("#collective-panel svg.collective-values")
    expect(drawing).to_be_visible()
    expect(page.locator("#collective-panel .hub")).to_have_count(0)          # no central hub
    tokens = drawing.locator(".value-token")
    expect(tokens).to_have_count(world * world * m)
    token = drawing.locator('.value-token[data-src="2"][data-dest="1"]')
    expect(token).to_have_count(m)
    assert [float(x) for x in token.all_text_contents()] == inputs[2][1 * m:2 * m]

    page.keyboard.press("End")
    expect(drawing.locator(".value-token")).to_have_count(0)
    for r in range(world):
        expect(drawing.locator(f'.value-row.in[data-rank="{r}"] .value-number')).to_have_count(len(inputs[r]))
        assert shown(drawing.locator(f'.value-row.in[data-rank="{r}"]')) == inputs[r]
        assert shown(drawing.locator(f'.value-row.out[data-rank="{r}"]')) == outputs[r]


def test_reduce_scatter_sums_into_each_ranks_chunk(page: Page, server):
    run = server.run("collectives", 2, {"op": "reduce_scatter"})
    assert run["status"] == "done", run["error"]
    events = [e for e in events_of(server, run["id"]) if e["kind"] == "collective"]
    inputs = {e["rank"]: values(e) for e in events if e["phase"] == "begin"}
    m = len(inputs[0]) // 2
    page.goto(f"{server.url}/lessons/collectives?run={run['id']}")
    drawing = page.locator("#collective-panel svg.collective-values")
    for r in range(2):
        expected = [inputs[0][r * m + k] + inputs[1][r * m + k] for k in range(m)]
        expect(drawing.locator(f'.value-row.out[data-rank="{r}"] .value-number')).to_have_count(m)
        assert shown(drawing.locator(f'.value-row.out[data-rank="{r}"]')) == expected


def test_a_small_tensor_shows_its_numbers_a_large_one_does_not(page: Page, server):
    small = server.run("tp_mlp", 2, {"seq_len": 2, "hidden": 4, "ffn": 8})
    assert small["status"] == "done", small["error"]
    page.goto(f"{server.url}/lessons/tp_mlp?run={small['id']}")
    expect(page.locator("#tensors-panel canvas.heatmap").first).to_be_visible()
    expect(page.locator('#tensors-panel canvas.heatmap:not([data-numbers="shown"])')).to_have_count(0)
    large = server.run("tp_mlp", 2, {})
    page.goto(f"{server.url}/lessons/tp_mlp?run={large['id']}")
    expect(page.locator("#tensors-panel canvas.heatmap").first).to_be_visible()
    expect(page.locator('#tensors-panel canvas.heatmap[data-numbers="shown"]')).to_have_count(0)
    expect(counter(page)).to_have_text(re.compile(r"seq \d+ / \d+"))
