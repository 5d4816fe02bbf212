"""The newer panels' tables: beside each picture, the state at the cursor as a table (always in the page
for screen readers, shown by the panel's "Table" button), with the same numbers the ranks measured.
Runs pp (1F1B, 4 ranks), zero (stage 2) and three_d (2×2×2) once, and checks each panel's table."""

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


def fmt_bytes(n: float) -> str:
    return f"{int(n):,} B"


@pytest.fixture(scope="module")
def runs(server):
    """The three runs, started together and awaited."""
    started = {
        "pp": server.start_run("pp", 4, {"schedule": "1f1b", "microbatches": 8, "delay_ms": 0}),
        "zero": server.start_run("zero", 4, {"stage": 2}),
        "three_d": server.start_run("three_d", 8, {"tp": 2, "pp": 2, "dp": 2}),
    }
    done = {name: server.wait_run(run["id"], timeout=90) for name, run in started.items()}
    for name, run in done.items():
        assert run["status"] == "done", (name, run)
    return done


def open_run(page: Page, server, lesson: str, run: dict, seq: int | None = None) -> None:
    page.goto(f"{server.url}/lessons/{lesson}?run={run['id']}" + (f"&seq={seq}" if seq else ""))
    expect(counter(page)).to_have_text(re.compile(rf"seq \d+ / {run['events']}$"))


def show_table(page: Page, panel: str):
    """Press the panel's Table button from the keyboard; returns the table box, now visible."""
    toggle = page.locator(f"#{panel}-panel .panel-tools button.table-toggle")
    expect(toggle).to_have_accessible_name("Table")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    box = page.locator(f"#table-{panel}")
    expect(box).to_be_visible()
    return box


def cells(row) -> list[str]:
    return [c.strip() for c in row.locator("th, td").all_inner_texts()]


def assert_controls_are_labelled_buttons(page: Page, panels: list[str]) -> None:
    """Every control in the panels is a <button>/<input>/<summary> with a name, reachable by Tab."""
    bad = page.evaluate("""(ids) => ids.flatMap((id) => [...document.querySelectorAll(`#${id}-panel button, #${id}-panel input,
        #${id}-panel select, #${id}-panel [onclick], #${id}-panel [role=button]`)].filter((el) =>
          el.tagName !== 'BUTTON' && el.tagName !== 'INPUT' && el.tagName !== 'SELECT'
          || el.tabIndex < 0 || !(el.getAttribute('aria-label') || el.textContent).trim()).map((el) => `${id}: ${el.outerHTML.slice(0, 80)}`))""",
                        panels)
    assert not bad, bad


def test_pipeline_tables(page: Page, server, runs):
    run = runs["pp"]
    events = events_of(server, run["id"])
    open_run(page, server, "pp", run)
    assert_controls_are_labelled_buttons(page, ["pipeline", "numbers"])
    box = show_table(page, "pipeline")

    measured = box.locator("table.pipeline-measured-table tbody tr")
    expect(measured).to_have_count(4)
    busy_labels = page.locator("#pipeline .pipeline-gantt .gantt-right").evaluate_all("ts => ts.map((t) => t.textContent)")
    for rank in range(4):
        row = cells(measured.nth(rank))
        assert row[0] == f"rank {rank}"
        actions = row[2].split()
        assert sorted(a for a in actions if a.startswith("F")) == sorted(f"F{m}" for m in range(8))
        assert len([a for a in actions if a.startswith("B")]) == 8
        assert row[3] == "16"
        assert busy_labels[rank].startswith(f"busy {row[5]}")          # the same share the chart prints

    ideal = box.locator("table.pipeline-ideal-table tbody tr")
    expect(ideal).to_have_count(4)
    last = cells(ideal.nth(3))
    assert len([c for c in last[1:-2] if c != "–"]) == 16
    assert last[-1] == "16 of 16"
    bubble = {cells(r)[0]: cells(r)[1] for r in box.locator("table.pipeline-bubble-table tbody tr").all()}
    metric = next(e["value"] for e in events if e["kind"] == "metric" and e["name"] == "bubble_fraction" and e["rank"] == 0)
    assert bubble == {"measured": f"{metric:.3f}", "ideal grid": "0.273", "formula": "0.273"}
    peaks = {e["rank"]: e["value"] for e in events if e["kind"] == "metric" and e["name"] == "peak_activations_in_flight"}
    act = box.locator("table.pipeline-activations-table tbody tr")
    for rank in range(4):
        assert cells(act.nth(rank))[2] == str(int(peaks[rank]))

    # back to the first compute event's end: the table is the run so far
    first_end = next(e["seq"] for e in events if e["kind"] == "compute" and e["phase"] == "end")
    page.locator("#scrubber input[type=range]").fill(str(first_end))
    expect(box.locator("table.pipeline-measured-table tbody tr").first.locator("td").nth(2)).to_have_text("1")
    expect(box.locator("table.pipeline-bubble-table tbody tr").first.locator("td").first).to_have_text("not yet")


def test_zero_memory_and_timeline_tables(page: Page, server, runs):
    run = runs["zero"]
    events = events_of(server, run["id"])
    open_run(page, server, "zero", run)
    assert_controls_are_labelled_buttons(page, ["memory", "timeline"])
    box = show_table(page, "memory")
    rows = box.locator("table.memory-state-table tbody tr")
    expect(rows).to_have_count(4)
    latest = {(e["name"], e["rank"]): e for e in events if e["kind"] == "metric"}
    for rank in range(4):
        row = cells(rows.nth(rank))
        total = 0
        for i, name in enumerate(["memory_parameters", "memory_gradients", "memory_optimizer_state"]):
            e = latest[(name, rank)]
            assert row[1 + 2 * i] == fmt_bytes(e["value"])              # measured: the run's metric
            assert row[2 + 2 * i] == f"{fmt_bytes(e['expected'])} ✓"      # the formula, and it matches
            total += e["value"]
        assert row[7] == fmt_bytes(total)
    head = box.locator("table.memory-state-table thead th").all_inner_texts()
    assert "gradients formula (GΨ/N)" in head
    comm = cells(box.locator("table.memory-comm-table tbody tr").first)
    assert comm[2].endswith("✓")

    timeline = show_table(page, "timeline")
    spans = [e for e in events if e["kind"] in ("compute", "collective", "p2p") and e["phase"] == "begin"]
    expect(timeline.locator("table.timeline-table tbody tr")).to_have_count(len(spans))
    first = cells(timeline.locator("table.timeline-table tbody tr").first)
    assert first[3] == "0.00 ms"
    assert all(c for c in first)
    kinds = set(timeline.locator("table.timeline-table tbody tr").evaluate_all("rs => rs.map((r) => r.dataset.kind)"))
    assert {"compute", "collective"} <= kinds


def test_three_d_group_tables(page: Page, server, runs):
    run = runs["three_d"]
    events = events_of(server, run["id"])
    begin = next(e for e in events if e["kind"] == "collective" and e["group"] == "tp" and e["phase"] == "begin")
    open_run(page, server, "three_d", run, seq=begin["seq"])
    assert_controls_are_labelled_buttons(page, ["topology", "timeline", "pipeline"])
    box = show_table(page, "topology")
    groups = box.locator("table.topology-groups-table tbody tr")
    expect(groups).to_have_count(12)                                # 4 TP + 4 PP + 4 DP groups of 8 ranks
    members = ",".join(map(str, begin["ranks"]))
    expect(box.locator(f'tr[data-kind="tp"][data-members="{members}"]')).to_have_attribute("data-active", "yes")
    expect(box.locator(f'tr[data-kind="tp"][data-members="{members}"] td').last).to_contain_text(begin["op"])
    expect(box.locator('table.topology-ranks-table tbody tr')).to_have_count(8)
    expect(box.locator('table.topology-ranks-table tbody tr').nth(5)).to_have_text(re.compile(r"rank 5\s*1\s*0\s*1"))

    # at the end: no group communicates; every call counted; the DP sync as the ranks measured it
    page.keyboard.press("End")
    expect(box.locator('tr[data-active="yes"]')).to_have_count(0)
    calls = {}
    for e in events:
        if e["kind"] == "collective" and e["phase"] == "begin" and e["rank"] == min(e["ranks"]):
            key = (re.sub(r"\d+$", "", e["group"]), ",".join(map(str, e["ranks"])))
            calls[key] = calls.get(key, 0) + 1
        if e["kind"] == "p2p" and e["phase"] == "begin" and e["op"] == "send":
            pair = sorted([e["rank"], e["peer"]])
            key = ("pp", ",".join(map(str, pair)))
            calls[key] = calls.get(key, 0) + 1
    for (kind, ranks), n in calls.items():
        expect(box.locator(f'tr[data-kind="{kind}"][data-members="{ranks}"] td').nth(1)).to_have_text(str(n))
    sync = {e["rank"]: e for e in events if e["kind"] == "metric" and e["name"] == "dp_sync_bytes"}
    rows = box.locator("table.topology-sync-table tbody tr")
    expect(rows).to_have_count(8)
    for rank in range(8):
        assert cells(rows.nth(rank))[1:] == [fmt_bytes(sync[rank]["value"]), fmt_bytes(sync[rank]["expected"])]

    timeline = show_table(page, "timeline")
    spans = [e for e in events if e["kind"] in ("compute", "collective", "p2p") and e["phase"] == "begin"]
    expect(timeline.locator("table.timeline-table tbody tr")).to_have_count(len(spans))
    page.locator("#topology-panel").screenshot(path="/tmp/paralab-tables-topology.png")
