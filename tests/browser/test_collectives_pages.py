"""The collectives, deadlock and ring pages as a student uses them: step ranks into a collective with
the keyboard, read where each number ended up, read a hang report, see the cost sweep and the ring."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests import web

pytestmark = pytest.mark.browser


def events_of(server, run_id: str) -> list[dict]:
    text = web.get(f"{server.url}/api/runs/{run_id}/events").text
    return [json.loads(line) for line in text.splitlines() if line]


def stepper_rank(page: Page, rank: int):
    return page.locator(f'#stepper .stepper-rank[data-rank="{rank}"]')


def test_step_ranks_into_reduce_scatter_with_the_keyboard(page: Page, server):
    page.goto(f"{server.url}/lessons/collectives")
    page.get_by_role("radio", name="4", exact=True).check()
    page.get_by_label("op", exact=True).select_option("reduce_scatter")
    page.get_by_label("step mode").check()
    page.get_by_role("button", name="▶ Run").click()

    stepper = page.locator("#stepper")
    expect(stepper).to_be_visible()
    for rank in range(4):                                   # every rank stops before its call
        expect(stepper_rank(page, rank)).to_have_class(re.compile("is-gate"), timeout=20_000)
        expect(stepper_rank(page, rank)).to_contain_text("waits at reduce_scatter (world #1)")
        expect(stepper_rank(page, rank)).to_contain_text("program.py:")
    expect(stepper).to_contain_text("ranks 0, 1, 2 and 3 wait at a gate")
    expect(page.locator(".source-code .rank-dot.at-gate")).to_have_count(4)   # each rank's line, ringed

    page.keyboard.press("0")                                # release rank 0 alone: it enters and waits inside
    rank0 = stepper_rank(page, 0)
    expect(rank0).to_have_class(re.compile("is-blocked"))
    expect(rank0).to_contain_text("blocked inside reduce_scatter (world #1)")
    expect(rank0).to_contain_text("waiting for ranks 1, 2 and 3 to enter it")
    expect(stepper.locator(".stepper-summary")).to_contain_text("a collective is a rendezvous")
    for rank in (1, 2, 3):
        expect(stepper_rank(page, rank)).to_have_class(re.compile("is-gate"))
    expect(page.locator("#collective .phase-line")).to_contain_text("Waiting: rank 0 arrived; ranks 1, 2 and 3 not yet")

    page.keyboard.press("0")                                # rank 0 is not at a gate any more: said so, nothing sent
    expect(stepper.locator(".stepper-notice")).to_contain_text("Rank 0 is not waiting at a gate")

    page.keyboard.press("a")                                # release everyone: the collective completes
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=20_000)
    expect(page.locator(".checks-summary")).to_have_text("✓ All 4 checks passed (1 check × 4 ranks)")

    # where each number ended up: rank r holds the sum of chunk r of every rank, coloured by all four
    origins = page.locator("#origins")
    expect(page.locator("#origins-panel")).to_be_visible()
    expect(origins.locator(".origin-row:not(.after)")).to_have_count(4)
    expect(origins.locator(".source-cell")).to_have_count(32)
    after = origins.locator(".origin-cell")
    expect(after).to_have_count(8)
    for k in range(8):
        expect(after.nth(k)).to_have_attribute("data-origin", "0 1 2 3")
    first = origins.locator('.origin-cell[data-rank="1"][data-index="0"]')
    expect(first).to_have_text("68")                        # 2 + 12 + 22 + 32
    first.hover()
    expect(origins.locator(".origin-trace")).to_contain_text("rank 1, element 0 = 68  ←  2 + 12 + 22 + 32")
    expect(origins.locator(".source-cell.traced")).to_have_count(4)
    # the comm table timed the call, with nccl-tests' factor (n−1)/n as the tracer's bandwidths give it
    row = page.locator("#comm tbody tr").first
    expect(row).to_contain_text("reduce-scatter")
    expect(row.locator(".time")).to_have_text(re.compile(r"\d.*s$"))
    expect(row.locator(".factor")).to_have_text("0.75")
    # the run has ended: the stepper folds to one line and its buttons are gone
    expect(stepper.locator("button")).to_have_count(0)
    # scrubbing back is replay: at the gate event the stepper shows the gates as they were
    run_id = re.search(r"run=([0-9a-f]+)", page.url).group(1)
    gate = next(e for e in events_of(server, run_id) if e["kind"] == "gate" and e["rank"] == 0 and e["phase"] == "released")
    page.locator("#scrubber input[type=range]").fill(str(gate["seq"] - 1))
    expect(stepper_rank(page, 0)).to_have_class(re.compile("is-gate"))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")                      # released, then its begin: blocked inside
    expect(stepper_rank(page, 0)).to_have_class(re.compile("is-blocked"))


def test_a_rank_that_finished_its_program_is_shown_finished_while_the_others_step(page: Page, server):
    page.goto(f"{server.url}/lessons/deadlock?world_size=3&bug=skip_collective")
    page.get_by_label("step mode").check()
    page.get_by_role("button", name="▶ Run").click()
    for rank in range(3):
        expect(stepper_rank(page, rank)).to_contain_text("waits at all_reduce (world #1)", timeout=20_000)
    page.keyboard.press("a")                                # all through #1: the last rank skips #2 and ends
    last = stepper_rank(page, 2)
    expect(last).to_have_class(re.compile("is-finished"))
    expect(last).to_contain_text("its program is done: it waits for the others")
    for rank in (0, 1):
        expect(stepper_rank(page, rank)).to_contain_text("waits at all_reduce (world #2)")
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#run-status")).to_contain_text("cancelled", timeout=10_000)


def test_deadlock_shows_the_hang_report_naming_the_missing_rank(page: Page, server):
    page.goto(f"{server.url}/lessons/deadlock")
    page.get_by_role("radio", name="4", exact=True).check()
    page.get_by_label("bug").select_option("skip_collective")
    page.get_by_label("timeout_s").fill("2")
    page.get_by_role("button", name="▶ Run").click()

    failure = page.locator("#failure")
    expect(failure).to_be_visible(timeout=30_000)
    expect(page.locator("#run-status")).to_contain_text("Run failed")
    expect(failure.locator("h2")).to_contain_text("The run hung")
    expect(failure.locator(".hang-sentence")).to_contain_text("never entered it")
    expect(failure.locator(".mismatch-badge")).to_have_text("missing ranks")
    expect(failure.locator(".hang-missing .rank-chip")).to_have_text(["rank 3"])
    table = failure.locator(".fr-table")
    expect(table.locator(".fr-row")).to_have_count(4)
    expect(table.locator(".fr-row.missing")).to_have_count(1)
    expect(table.locator('.fr-row.missing[data-rank="3"]')).to_contain_text("#1 all_reduce")
    stuck = table.locator('.fr-row[data-rank="0"] .fr-cell.stuck')
    expect(stuck).to_contain_text("#2 all_reduce [4]")
    expect(stuck).to_contain_text("waiting")
    # the source shows the line the ranks are stuck at
    expect(page.locator(".source-code .line.current")).to_have_attribute("data-line", "23")


def test_sweep_draws_measured_against_predicted(page: Page, server):
    run = server.run("collectives", 4, {"op": "all_gather", "sweep": True})
    assert run["status"] == "done", run["error"]
    points = [e for e in events_of(server, run["id"]) if e["kind"] == "metric" and e["name"] == "cost_sweep"]
    page.goto(f"{server.url}/lessons/collectives?run={run['id']}")
    panel = page.locator("#cost-panel")
    expect(panel).to_be_visible()
    chart = panel.locator("svg.sweep-chart")
    expect(chart.locator("circle.point.measured")).to_have_count(len(points))
    expect(chart.locator("rect.point.predicted")).to_have_count(len(points))
    expect(chart.locator("path.series")).to_have_count(2)
    expect(panel.locator(".sweep-table tbody tr")).to_have_count(len(points))
    expect(panel.locator(".cost-formula")).to_contain_text("(p−1)·α + (p−1)/p · m·β")
    expect(panel.locator(".cost-fit")).to_contain_text("α = ")
    # the fit with its uncertainty, and a warning for each reason to doubt it, as the ranks sent them
    alpha = next(e for e in events_of(server, run["id"]) if e["kind"] == "metric" and e["name"] == "alpha")
    expect(panel.locator(".cost-fit")).to_contain_text(f"r² = {alpha['r2']:.2f}")
    expect(panel.locator(".cost-warnings li")).to_have_count(len(alpha["warnings"]))
    expect(page.locator("#numbers-panel")).not_to_contain_text("cost_sample")   # the raw samples: no stray cards
    page.keyboard.press("Home")                             # before the sweep, no chart (the panel stays: the log has one)
    expect(panel.locator("svg.sweep-chart")).to_have_count(0)
    expect(panel).to_contain_text("No sweep points yet at this step.")


def test_a_barrier_sweep_shows_one_latency_and_no_bandwidth(page: Page, server):
    run = server.run("collectives", 2, {"op": "barrier", "sweep": True})
    assert run["status"] == "done", run["error"]
    [latency] = [e for e in events_of(server, run["id"]) if e["kind"] == "metric" and e["name"] == "barrier_latency"]
    page.goto(f"{server.url}/lessons/collectives?run={run['id']}")
    panel = page.locator("#cost-panel")
    expect(panel.locator(".cost-barrier")).to_contain_text("a latency only")
    expect(panel.locator(".cost-barrier")).to_contain_text(latency["formula"])
    expect(panel.locator("svg.sweep-chart")).to_have_count(0)             # a barrier moves no data: no sizes


def test_ring_steps_show_chunks_moving_between_neighbours(page: Page, server):
    run = server.run("ring_allreduce", 4, {"algorithm": "ring"})
    assert run["status"] == "done", run["error"]
    events = events_of(server, run["id"])
    # the last send of reduce-scatter step 1: every chunk of the step is on its way or delivered
    seq = max(e["seq"] for e in events if e["kind"] == "p2p" and e["phase"] == "begin"
              and e["label"].startswith("reduce-scatter step 1"))
    page.goto(f"{server.url}/lessons/ring_allreduce?run={run['id']}&seq={seq}")
    panel = page.locator("#ring-panel")
    expect(panel).to_be_visible()
    expect(panel.locator(".ring-head")).to_contain_text("reduce-scatter step 1 — ring step 1 of 2(p−1) = 6")
    expect(panel.locator("path.ring-arrow")).to_have_count(4)
    for r in range(4):                                      # each rank sends to its right neighbour
        expect(panel.locator(f'path.ring-arrow[data-from="{r}"]')).to_have_attribute("data-to", str((r + 1) % 4))
    page.keyboard.press("End")
    expect(panel.locator(".steps-table")).to_contain_text("2(p−1)")
    expect(panel.locator(".step-chip")).to_have_count(6)


def test_a_delivered_chunk_shows_the_values_its_recv_got(page: Page, server):
    run = server.run("ring_allreduce", 4, {"algorithm": "ring"})
    assert run["status"] == "done", run["error"]
    events = events_of(server, run["id"])
    recv = next(e for e in events if e["kind"] == "p2p" and e["op"] == "recv" and e["phase"] == "end"
                and e["label"].startswith("reduce-scatter step 1"))
    got = " · ".join(f"{v:g}" for v in recv["tensors"][0]["preview"][0][:4])
    page.goto(f"{server.url}/lessons/ring_allreduce?run={run['id']}&seq={recv['seq']}")
    label = page.locator("#ring-panel .arrow-label").filter(has_text=f"c{recv['chunk']}: {got}")
    expect(label).to_have_count(1)
