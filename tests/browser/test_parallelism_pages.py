"""The parallelism lessons' pictures: the pipeline's Gantt chart against its ideal grid, torch's corrected
grid, the 3D process-group grid lighting up, ZeRO's memory bars, GQA's replicated KV heads, and the
data-parallel buckets overlapping the backward."""

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


def open_run(page: Page, server, lesson: str, run: dict, seq: int | None = None) -> None:
    page.goto(f"{server.url}/lessons/{lesson}?run={run['id']}" + (f"&seq={seq}" if seq else ""))
    expect(counter(page)).to_have_text(re.compile(rf"seq \d+ / {run['events']}$"))


def f_blocks(page: Page, rank: int):
    return page.locator(f'#pipeline .pipeline-gantt .gantt-row[data-rank="{rank}"] .gantt-block.F')


def test_pipeline_gantt_fills_in_beside_the_ideal_grid(page: Page, server):
    page.goto(f"{server.url}/lessons/pp?world_size=4&schedule=1f1b&microbatches=8")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#pipeline-panel")).to_be_visible()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)

    # a row per rank, each with all 8 forwards and 8 backwards, microbatch numbers on the blocks
    expect(page.locator("#pipeline .pipeline-gantt .gantt-row")).to_have_count(4)
    for rank in range(4):
        expect(f_blocks(page, rank)).to_have_count(8)
        expect(page.locator(f'#pipeline .pipeline-gantt .gantt-row[data-rank="{rank}"] .gantt-block.B')).to_have_count(8)
    blocks = f_blocks(page, 3).evaluate_all(
        "bs => bs.map((b) => [b.dataset.mb, b.querySelector('text')?.textContent ?? null, b.querySelector('rect').getBBox().width])")
    assert sorted(int(mb) for mb, _, _ in blocks) == list(range(8))
    # the number is on the block wherever it fits (a digit needs well under 20 px; a loaded machine's
    # stalls stretch the time axis and narrow the blocks, so which ones are wide enough varies)
    assert all(text in (None, mb) for mb, text, _ in blocks)
    assert all(text == mb for mb, text, width in blocks if width >= 20)
    assert all(text is None for mb, text, width in blocks if width < 4)
    # sends point at the recvs that took them: 3 links × 8 microbatches × (activation + gradient)
    expect(page.locator("#pipeline .pipeline-gantt .gantt-arrow")).to_have_count(48)

    # the ideal grid: the same rows, 1F1B's slots, its bubble 3/11
    expect(page.locator("#pipeline .ideal-grid .ideal-row")).to_have_count(4)
    expect(page.locator('#pipeline .ideal-grid .ideal-row[data-rank="3"] .ideal-cell')).to_have_count(16)
    expect(page.locator("#pipeline .grid-notes")).to_have_count(0)
    expect(page.locator(".bubble-row.ideal .value")).to_have_text("0.273")
    expect(page.locator(".bubble-formula")).to_contain_text("(p − 1) / (m + p − 1) = 3/11 = 0.273")
    measured = web.get(f"{server.url}/api/runs/{re.search(r'run=([0-9a-f]+)', page.url).group(1)}").json()["metrics"]
    bubble = next(m["value"] for m in measured if m["name"] == "bubble_fraction")
    expect(page.locator(".bubble-row.measured .value")).to_have_text(f"{bubble:.3f}")
    # activations against 1F1B's bound p − rank, each rank's peak
    expect(page.locator("#pipeline .activations-chart .activation-row")).to_have_count(4)
    expect(page.locator('.peak-table tr[data-rank="0"]')).to_contain_text("4")
    expect(page.locator(".act-bound-label").first).to_contain_text("bound p − rank = 4")

    # scrubbing back: the chart is the run so far — fewer blocks, the measured bubble not in yet
    page.keyboard.press("Home")
    expect(f_blocks(page, 0)).to_have_count(0)
    expect(page.locator("#pipeline .ideal-grid")).to_have_count(0)
    events = events_of(server, re.search(r"run=([0-9a-f]+)", page.url).group(1))
    third = [e["seq"] for e in events if e["kind"] == "compute" and e["phase"] == "end" and e["rank"] == 3][2]
    page.locator("#scrubber input[type=range]").fill(str(third))
    expect(f_blocks(page, 3)).to_have_count(2)               # F0 B0 F1: two forwards so far
    expect(page.locator(".bubble-row.measured")).to_have_class(re.compile("pending"))


def test_torchs_wrong_grid_is_corrected_and_said_so(page: Page, server):
    run = server.run("pp", 4, {"schedule": "1F1B", "microbatches": 8})
    assert run["status"] == "done", run["error"]
    open_run(page, server, "pp", run)
    notes = page.locator("#pipeline .grid-notes")
    expect(notes).to_contain_text("torch's grid is wrong here")
    expect(notes).to_contain_text("renumbered")
    expect(page.locator(".pipeline-head")).to_contain_text("Schedule1F1B")
    for rank in range(4):
        expect(f_blocks(page, rank)).to_have_count(8)


def test_the_schedule_choice_separates_paralabs_engine_from_torchs(page: Page, server):
    page.goto(f"{server.url}/lessons/pp")
    select = page.get_by_label("schedule", exact=True)
    own = select.locator('optgroup[label="paralab\'s own engine (engine.py)"] option')
    torchs = select.locator('optgroup[label="torch.distributed.pipelining"] option')
    expect(own).to_have_text(["gpipe", "1f1b"])
    expect(torchs.filter(has_text=re.compile("^GPipe$"))).to_have_count(1)
    expect(torchs.filter(has_text=re.compile("^gpipe$"))).to_have_count(0)
    select.select_option("GPipe")
    expect(page).to_have_url(re.compile(r"schedule=GPipe"))


def test_three_d_grid_lights_the_tp_group_of_a_collective(page: Page, server):
    run = server.run("three_d", 8, {"tp": 2, "pp": 2, "dp": 2})
    assert run["status"] == "done", run["error"]
    events = events_of(server, run["id"])
    begin = next(e for e in events if e["kind"] == "collective" and e["group"] == "tp" and e["phase"] == "begin")
    open_run(page, server, "three_d", run, seq=begin["seq"])
    grid = page.locator("#topology")
    expect(grid.locator(".topo-rank")).to_have_count(8)
    expect(grid.locator(".topo-plane")).to_have_count(2)
    members = ",".join(map(str, begin["ranks"]))
    expect(grid.locator(f'.topo-group.tp.current[data-ranks="{members}"]')).to_have_count(1)
    for r in begin["ranks"]:
        expect(grid.locator(f'.topo-rank.active[data-rank="{r}"]')).to_have_attribute("data-active", re.compile("tp"))
    expect(grid.locator(".topo-now")).to_contain_text(f"among ranks {', '.join(map(str, begin['ranks']))}")
    # at the end: the DP traffic against its formula
    page.keyboard.press("End")
    expect(grid.locator(".dp-verdict.pass")).to_contain_text("as expected")
    # its pipeline: 2 stages (not 8 ranks), and no number 3D's ranks do not report (no zeros, nothing pending)
    pipeline = page.locator("#pipeline")
    expect(pipeline.locator(".pipeline-head")).to_contain_text("p = 2 ranks")
    expect(pipeline.locator(".bubble-row.measured .bubble-label")).to_have_text("from the blocks")
    expect(pipeline.locator(".bubble-row.pending")).to_have_count(0)
    expect(pipeline.locator(".bubble-row.ideal")).to_have_count(0)
    expect(pipeline.locator(".peak-table")).to_have_count(0)


def test_three_d_sync_every_microbatch_is_m_times_the_dp_traffic(page: Page, server):
    run = server.run("three_d", 8, {"tp": 2, "pp": 2, "dp": 2, "microbatches": 4, "mistake": "sync_every_microbatch"})
    open_run(page, server, "three_d", run)
    expect(page.locator("#topology .dp-verdict.fail")).to_contain_text("4× the expected DP traffic")
    expect(page.locator("#topology .dp-verdict.fail")).to_contain_text("m = 4")


def test_zero_stage_2_memory_bars_against_the_formula(page: Page, server):
    run = server.run("zero", 4, {"stage": 2})
    assert run["status"] == "done", run["error"]
    open_run(page, server, "zero", run)
    memory = page.locator("#memory")
    expect(memory.locator(".memory-bar")).to_have_count(12)          # 4 ranks × parameters, gradients, optimizer state
    expect(memory.locator(".memory-formula")).to_have_text(["PΨ", "GΨ/N", "KΨ/N"])
    expect(memory.locator(".memory-cell.fail")).to_have_count(0)
    expect(memory.locator('tr[data-rank="0"] .memory-cell').nth(1)).to_contain_text("✓")
    expect(memory.locator(".memory-comm.pass")).to_contain_text("= 2Ψ")
    expect(page.locator("#numbers-panel")).to_be_hidden()


def test_gqa_replicated_kv_heads_are_drawn_as_copies(page: Page, server):
    run = server.run("tp_attention", 4, {"heads": 8, "kv_heads": 2})
    open_run(page, server, "tp_attention", run)
    wk = page.locator('.tensor-card[data-tensor="Wk"]')
    expect(wk.locator(".copies-badge")).to_have_count(2)
    expect(wk.locator(".copies-badge").first).to_have_text("×2 copies")
    expect(wk.locator("figcaption")).to_contain_text("2 blocks replicated ×2")
    expect(page.locator('.tensor-card[data-tensor="Wq"] .copies-badge')).to_have_count(0)
    card = page.locator('#numbers .number-card[data-metric="kv_cache_copies"]')
    expect(card).to_contain_text("2 copies")
    expect(card).to_contain_text("4 / 2 = 2")


def test_dp_buckets_overlap_the_backward(page: Page, server):
    run = server.run("dp", 4, {"bucketed": True})
    open_run(page, server, "dp", run)
    timeline = page.locator("#timeline")
    expect(timeline.locator('.gantt-row[data-rank="0"] .gantt-block.bucket')).to_have_count(2)
    expect(timeline.locator('.gantt-row[data-rank="0"] .gantt-block.bucket').first).to_contain_text("bucket 0")
    assert timeline.locator(".gantt-block.overlap").count() >= 4   # every rank computes while a bucket travels
    expect(timeline.locator(".gantt-summary")).to_contain_text("launched from a gradient hook")
