"""The lesson page as a user sees it: run a lesson, step through it, read the checks, share the URL."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.app.test_failures import line_of
from tests.browser.conftest import counter, drawn, seq_of
from tests.conftest import REPO

pytestmark = pytest.mark.browser


def events_of(server, run_id: str) -> list[dict]:
    text = web.get(f"{server.url}/api/runs/{run_id}/events").text
    return [json.loads(line) for line in text.splitlines() if line]


def open_run(page: Page, server, lesson: str, run: dict, seq: int | None = None) -> int:
    """Open a recorded run's page; returns its event count once the page holds every event."""
    total = run["events"]
    page.goto(f"{server.url}/lessons/{lesson}?run={run['id']}" + (f"&seq={seq}" if seq else ""))
    expect(counter(page)).to_have_text(re.compile(rf"seq \d+ / {total}$"))
    return total


def snapshot(page: Page) -> dict:
    """What the views show at the cursor, as text (once they have drawn the step the counter names)."""
    drawn(page)
    current = page.locator(".source-code .line.current")
    return {
        "counter": counter(page).inner_text(),
        "now": page.locator("#now").inner_text(),
        "lanes": page.locator("#lanes").inner_text(),
        "collective": page.locator("#collective").inner_text(),
        "tensors": page.locator("#tensors").inner_text(),
        "checks": page.locator("#checks").inner_text(),
        "comm": page.locator("#comm").inner_text(),
        "line": current.get_attribute("data-line") if current.count() else None,
    }


def test_run_from_the_index_until_every_check_passes(page: Page, server):
    page.goto(server.url + "/")
    page.get_by_role("link", name=re.compile("^Tensor-parallel MLP")).click()
    expect(page).to_have_url(re.compile(r"/lessons/tp_mlp"))
    expect(page.locator(".lesson-title")).to_have_text("Tensor-parallel MLP")

    page.get_by_role("radio", name="4", exact=True).check()
    page.get_by_role("button", name="▶ Run").click()

    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    expect(page.locator(".checks-summary")).to_have_text("✓ All 16 checks passed (4 checks × 4 ranks)")
    expect(page.locator("#lanes .lane")).to_have_count(4)
    expect(page.locator("#lanes")).to_contain_text("finished")
    expect(page.locator(".check-row.fail")).to_have_count(0)
    expect(page.locator(".check-row.pass")).to_have_count(16)
    # the measured volume against the lesson's formula
    expect(page.locator(".comm-total")).to_have_text("1,024 B")
    expect(page.locator(".comm-expected")).to_contain_text("1,024 B — ✓ measured = expected")
    expect(page.locator(".formula")).to_contain_text("2 all-reduces")
    # the full W1 is assembled from the four shards, in place
    expect(page.locator('.tensor-card[data-tensor="W1"] figcaption')).to_contain_text("[64×16] — 4 of 4 shards in place")
    # the URL now names the run, its parameters and the step
    expect(page).to_have_url(re.compile(r"world_size=4.*ffn=64.*run=[0-9a-f]+&seq=\d+"))
    # the explanation's self-check answers are hidden until revealed
    first = page.locator("#explanation details").first
    answer = first.locator("p").first
    expect(answer).to_be_hidden()
    first.locator("summary").click()
    expect(answer).to_be_visible()


def test_scrubber_and_keyboard_step_through_the_log(page: Page, server):
    run = server.run("tp_mlp", 4)
    events = events_of(server, run["id"])
    total = open_run(page, server, "tp_mlp", run)
    g_end = next(e["seq"] for e in events if e["kind"] == "collective" and e["phase"] == "end"
                 and e["label"].startswith("g forward"))
    f_begin = next(e for e in events if e["kind"] == "collective" and e["phase"] == "begin"
                   and e["label"].startswith("f backward"))

    page.keyboard.press("End")
    expect(counter(page)).to_have_text(f"seq {total} / {total}")
    page.keyboard.press("ArrowRight")                       # nothing after the last event
    expect(counter(page)).to_have_text(f"seq {total} / {total}")
    page.keyboard.press("Home")
    expect(counter(page)).to_have_text(f"seq 1 / {total}")
    expect(page.locator("#collective")).to_contain_text("No collective yet")
    expect(page.locator(".source-code .line.current")).to_have_count(0)

    page.locator("#scrubber input[type=range]").fill(str(g_end))
    expect(counter(page)).to_have_text(f"seq {g_end} / {total}")
    expect(page.locator(".collective-label")).to_have_text("g forward: sum the partial outputs")
    expect(page.locator(".source-code .line.current")).to_have_attribute("data-line", "44")
    at_g_end = snapshot(page)

    page.keyboard.press("ArrowLeft")
    expect(counter(page)).to_have_text(f"seq {g_end - 1} / {total}")
    before = snapshot(page)
    assert before != at_g_end
    page.keyboard.press("ArrowRight")
    expect(counter(page)).to_have_text(f"seq {g_end} / {total}")
    # the checks drawn at the end, kept behind the note, take no room and show nothing (one shown on screen did)
    assert page.locator("#checks").evaluate(
        "el => [...el.querySelectorAll(':scope > .kept-hidden')].every((kept) => kept.getBoundingClientRect().height === 0)")
    assert snapshot(page) == at_g_end                      # forward again: the very same picture
    page.keyboard.press("ArrowLeft")
    assert snapshot(page) == before                         # and back again

    page.locator("#scrubber input[type=range]").fill(str(f_begin["seq"] - 1))
    page.keyboard.press(" ")                                # Space is "next" too
    expect(counter(page)).to_have_text(f"seq {f_begin['seq']} / {total}")
    expect(page.locator(".collective-label")).to_have_text("f backward: sum the input gradients")
    expect(page.locator(".source-code .line.current")).to_have_attribute("data-line", "34")
    expect(page.locator(f'#lanes .lane.current[data-rank="{f_begin["rank"]}"]')).to_have_count(1)

    # typing in a form field does not move the cursor
    page.get_by_role("button", name="Parameters").click()
    page.get_by_label("seed").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Home")
    expect(counter(page)).to_have_text(f"seq {f_begin['seq']} / {total}")

    # Space on a focused button still means "next", never pressing the button again
    page.get_by_role("button", name="Previous event (←)").click()
    expect(counter(page)).to_have_text(f"seq {f_begin['seq'] - 1} / {total}")
    page.keyboard.press(" ")
    expect(counter(page)).to_have_text(f"seq {f_begin['seq']} / {total}")

    # play, then pause
    page.locator("#scrubber select[name=speed]").select_option("4")
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function(f"document.querySelector('.seq-counter').textContent.match(/seq (\\d+)/)[1] >= {f_begin['seq'] + 2}")
    page.get_by_role("button", name="❚❚ Pause").click()
    paused_at = counter(page).inner_text()
    page.wait_for_timeout(400)
    assert counter(page).inner_text() == paused_at


def test_collectives_are_drawn_differently(moving_page: Page, server):
    page = moving_page
    run = server.run("sp_mlp", 4)
    events = events_of(server, run["id"])
    open_run(page, server, "sp_mlp", run)
    last_begin = {}
    for e in events:
        if e["kind"] == "collective" and e["phase"] == "begin":
            last_begin[(e["op"], e["cseq"])] = e["seq"]
    first_of = {op: min(seq for (o, _), seq in last_begin.items() if o == op)
                for op in ("all_gather", "reduce_scatter", "all_reduce")}
    shapes = {}
    for op, seq in first_of.items():
        page.locator("#scrubber input[type=range]").fill(str(seq))   # the last rank arrives: data moves
        svg = page.locator("#collective svg.collective-svg")
        expect(svg).to_have_class(re.compile(f"op-{op}.*phase-moving"))
        expect(page.locator("#collective .phase-line")).to_contain_text("Every rank arrived")
        shapes[op] = (svg.locator(".hub").count(), svg.locator("path.flow").count(), svg.locator(".packet").count())
    assert shapes["all_reduce"][0] == 1                     # one sum for everyone
    assert shapes["reduce_scatter"][0] == 4                 # a sum per destination rank
    assert shapes["all_gather"][0] == 0                     # no sum: copies
    assert shapes["all_gather"][1] == 16                    # each chunk to every rank
    assert all(packets > 0 for _, _, packets in shapes.values())


def test_mistake_shows_failing_checks_with_the_wrong_numbers(page: Page, server):
    page.goto(f"{server.url}/lessons/tp_mlp")
    page.get_by_role("radio", name="2", exact=True).check()
    page.get_by_label("mistake").select_option("swap_f_g")
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    expect(page.locator(".checks-summary")).to_have_text("✗ 8 of 8 checks FAILED")
    # at once, at the top: the header turns red, and the failing checks are listed with ranks and worst error
    expect(page.locator("#run-status")).to_have_attribute("data-status", "checks-failed")
    expect(page.locator("#run-status")).to_contain_text("8 checks FAILED")
    listed = page.locator("#failure .failed-checks li")
    expect(listed).to_have_count(4)
    expect(listed.filter(has_text="output Y")).to_contain_text("on ranks 0, 1; worst |error|")
    expect(page.locator("#failure")).to_be_in_viewport()
    group = page.locator('.check-group[data-check="output Y"]')
    expect(group.locator(".check-detail")).to_have_text("Compares this rank's Y against the single-process Y.")
    expect(group.locator(".check-row.fail .verdict")).to_have_text(["✗ FAILED", "✗ FAILED"])

    run_id = re.search(r"run=([0-9a-f]+)", page.url).group(1)
    check = next(e for e in events_of(server, run_id) if e["kind"] == "check" and e["name"] == "output Y" and e["rank"] == 0)
    errors = group.locator(".check-row.fail .num").first
    expect(errors).to_have_text(re.compile(f"^{check['max_abs_err']:.4g}"[:5]))

    # the wrong numbers and the reference, side by side, with values on hover
    compare = group.locator(".check-compare").first
    expect(compare.locator("figcaption")).to_have_text(["rank 0 (wrong)", "reference", "difference"])
    values = []
    for index in (0, 1):
        canvas = compare.locator("canvas").nth(index)
        canvas.hover(position={"x": 2, "y": 2})           # element [0, 0]
        tooltip = page.locator("#tooltip")
        expect(tooltip).to_contain_text("[0, 0] = ")
        values.append(float(tooltip.inner_text().split("= ")[1].split(" ")[0]))
    mine, ref = check["tensors"][0]["preview"][0][0], check["tensors"][1]["preview"][0][0]
    assert values == pytest.approx([mine, ref], rel=1e-3, abs=1e-4)
    assert values[0] != pytest.approx(values[1], abs=1e-3)


def test_invalid_parameters_show_the_message_next_to_the_field(page: Page, server):
    before = len(web.get(f"{server.url}/api/runs").json())
    page.goto(f"{server.url}/lessons/tp_mlp")
    page.get_by_role("radio", name="4", exact=True).check()
    page.get_by_label("ffn").fill("63")
    page.get_by_role("button", name="▶ Run").click()
    error = page.locator('[data-field="ffn"] .field-error')
    expect(error).to_be_visible()
    expect(error).to_contain_text("ffn=63 must be divisible by the number of ranks (4)")
    expect(page.get_by_label("ffn")).to_have_attribute("aria-invalid", "true")
    expect(page.locator('[data-field="hidden"] .field-error')).to_be_hidden()
    expect(page.locator("#run-status")).to_have_text("No run yet")
    assert len(web.get(f"{server.url}/api/runs").json()) == before
    # fixed, it runs
    page.get_by_label("ffn").fill("64")
    page.get_by_role("button", name="▶ Run").click()
    expect(error).to_be_hidden()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)


def test_url_reproduces_lesson_parameters_and_step_after_reload(page: Page, server):
    run = server.run("sp_mlp", 2, {"hidden": 32, "seed": 3})
    total = open_run(page, server, "sp_mlp", run)
    page.keyboard.press("Home")
    for _ in range(13):
        page.keyboard.press("ArrowRight")
    expect(counter(page)).to_have_text(f"seq 14 / {total}")
    expect(page).to_have_url(re.compile(rf"world_size=2&seq_len=8&hidden=32&ffn=64&seed=3&mistake=none&run={run['id']}&seq=14$"))
    shown = snapshot(page)

    page.reload()
    expect(counter(page)).to_have_text(f"seq 14 / {total}")
    assert snapshot(page) == shown
    summary = page.locator(".params-summary")               # the form is folded while a run is shown
    expect(summary).to_have_text("2 ranks · seq_len 8 · hidden 32 · ffn 64 · seed 3 · mistake none")
    page.get_by_role("button", name="Parameters").click()
    expect(page.get_by_label("hidden")).to_have_value("32")
    expect(page.get_by_label("seed")).to_have_value("3")
    expect(page.get_by_role("radio", name="2", exact=True)).to_be_checked()

    # a new page with the same URL shows the same
    other = page.context.new_page()
    other.goto(page.url)
    expect(counter(other)).to_have_text(f"seq 14 / {total}")
    assert snapshot(other) == shown


def test_failed_run_shows_rank_message_site_and_traceback(page: Page, server):
    run = server.run("crash", 2, {"how": "raise", "rank": 1})
    assert run["status"] == "failed"
    open_run(page, server, "crash", run)
    failure = page.locator("#failure")
    expect(failure).to_be_visible()
    expect(failure.locator("h2")).to_have_text("The run failed")
    expect(failure).to_contain_text("rank 1")
    expect(failure).to_contain_text("ZeroDivisionError: rank went dividing by zero on purpose")
    line = line_of("raise ZeroDivisionError")
    expect(failure).to_contain_text(f"tests/lessons_extra/crash/program.py:{line}")
    expect(failure.locator(".traceback pre")).to_contain_text("Traceback (most recent call last)")
    expect(page.locator(".source-code .line.current")).to_have_attribute("data-line", str(line))
    expect(page.locator("#run-status")).to_contain_text("Run failed")
    page.keyboard.press("Home")                            # at the start, nothing had failed yet
    expect(failure).to_be_hidden()


def test_live_run_resumes_after_a_dropped_socket_without_duplicates(page: Page, server):
    run = server.start_run("crash", 2, {"how": "hang", "rank": 1})   # stays running until cancelled
    page.goto(f"{server.url}/lessons/crash?run={run['id']}")
    expect(page.locator("#run-status")).to_contain_text("Run running")
    expect(page.locator(".lane.doing-collective")).to_have_count(1, timeout=20_000)   # rank 0 waits for rank 1
    page.evaluate("window.paralab.connection.drop()")
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#run-status")).to_contain_text("Run cancelled", timeout=20_000)
    total = web.get(f"{server.url}/api/runs/{run['id']}").json()["events"]
    expect(counter(page)).to_have_text(f"seq {total} / {total}")
    seqs = page.evaluate("window.paralab.store.state.log.map((e) => e.seq)")
    assert seqs == list(range(1, total + 1))


def test_text_size_scales_the_page_and_is_remembered(page: Page, server):
    page.goto(f"{server.url}/lessons/tp_mlp")
    size = lambda: page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    base = size()
    page.get_by_role("button", name="Larger text").click()
    page.get_by_role("button", name="Larger text").click()
    assert size() > base * 1.2
    page.reload()
    assert size() > base * 1.2
    page.goto(f"{server.url}/")
    assert size() > base * 1.2
    page.get_by_role("button", name="Smaller text").click()
    page.get_by_role("button", name="Smaller text").click()
    assert size() == pytest.approx(base)


def test_brackets_jump_from_call_to_call_and_braces_from_microbatch_to_microbatch(page: Page, server):
    run = server.run("pp", 2, {"microbatches": 4, "delay_ms": 0})
    assert run["status"] == "done", run["error"]
    log = events_of(server, run["id"])
    calls = [e["seq"] for e in log if e["kind"] in ("collective", "p2p") and e["phase"] == "begin"]
    open_run(page, server, "pp", run)
    page.keyboard.press("Home")
    for expected in calls[:3]:                              # ] : the next call, wherever it is
        page.keyboard.press("]")
        expect(counter(page)).to_have_text(re.compile(rf"^seq {expected} / "))
    page.keyboard.press("[")
    expect(counter(page)).to_have_text(re.compile(rf"^seq {calls[1]} / "))

    page.keyboard.press("Home")
    page.keyboard.press("}")                                # } : a computation on another microbatch
    first = seq_of(page)
    event = log[first - 1]
    assert event["kind"] == "compute" and event["phase"] == "begin" and isinstance(event["microbatch"], int)
    page.keyboard.press("}")
    second = log[seq_of(page) - 1]
    assert second["kind"] == "compute" and second["microbatch"] != event["microbatch"]
    assert all(not (e["kind"] == "compute" and e["phase"] == "begin" and e.get("microbatch") not in (None, event["microbatch"]))
               for e in log[first:second["seq"] - 1])      # nothing of another microbatch was skipped


def test_a_block_averaged_heatmap_shows_the_exact_value_from_the_full_tensor_on_hover(page: Page, server):
    """Y (64×48) is shown as 32×32 block means; hovering it fetches the full tensor (the blob its
    rank wrote from the channel's thread) and names the exact element."""
    run = server.run("tp_mlp", 2, {"seq_len": 64, "hidden": 48, "mistake": "swap_f_g"})
    check = next(e for e in events_of(server, run["id"])
                 if e["kind"] == "check" and e["name"] == "output Y" and e["rank"] == 0)
    mine = check["tensors"][0]
    assert mine["exact"] is False and mine["id"]
    exact = web.get(f"{server.url}/api/runs/{run['id']}/tensors/{mine['id']}").json()["values"][0]
    page.goto(f"{server.url}/lessons/tp_mlp?world_size=2&seq_len=64&hidden=48&mistake=swap_f_g&run={run['id']}")
    expect(page.locator(".checks-summary")).to_have_text("✗ 8 of 8 checks FAILED", timeout=30_000)
    canvas = page.locator('.check-group[data-check="output Y"] .check-compare').first.locator("canvas").first
    canvas.hover(position={"x": 1, "y": 1})                  # element [0, 0]
    tooltip = page.locator("#tooltip")
    expect(tooltip).to_contain_text("[0, 0] = ")              # not "≈ … (block mean)" once fetched
    shown = float(tooltip.inner_text().split("= ")[1].split(" ")[0])
    assert shown == pytest.approx(exact, rel=1e-3, abs=1e-4)


def test_a_lesson_page_lists_its_earlier_runs_each_told_apart(page: Page, server):
    """Before a run is chosen the page lists the lesson's earlier runs: their parameters as the form says
    them (a parameter left to its default reads "default", not "null"), when (to the second), and each
    opens its run."""
    run = server.run("collectives", 2, {"op": "broadcast"})
    page.goto(f"{server.url}/lessons/collectives")
    row = page.locator(f'#recent-runs li:has(a[href*="run={run["id"]}"])')
    expect(row.locator("a")).to_contain_text("2 ranks")
    expect(row.locator("a")).to_contain_text("size default")
    expect(row.locator("a")).not_to_contain_text("null")
    expect(row.locator(".recent-when")).to_have_text(re.compile(r"· \d\d:\d\d:\d\d$"))
    row.locator("a").click()
    expect(counter(page)).to_have_text(re.compile(rf"/ {run['events']}$"))


def test_the_playgrounds_earlier_runs_name_the_file_not_its_whole_text(sized_page, server):
    """A program's text is its run's page's to show, not a line of the list (it ran the list, and on a
    phone the page, past the screen's edge); a long name wraps."""
    source = (REPO / "workers/lessons/script/examples/ring.py").read_text()
    name = "a_rather_long_file_name_for_a_phone_to_wrap_somewhere.py"
    run = server.run("script", 2, {"source": source, "filename": name})
    page = sized_page(390, 844)
    page.goto(f"{server.url}/playground")
    row = page.locator(f'#recent-runs li:has(a[href*="run={run["id"]}"])')
    expect(row.locator("a")).to_contain_text(f"filename {name}")
    expect(row.locator("a")).not_to_contain_text("import torch")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_a_step_runs_summary_says_when_every_member_is_inside_the_collective(page: Page, server):
    """Scrubbing a step-mode run back to where both ranks are inside the same all-reduce: the stepper's
    sentence says the data moves (it said the ranks were running to their next call)."""
    page.goto(f"{server.url}/lessons/tp_mlp?world_size=2")
    page.locator("#step-mode").check()
    page.locator(".run-button").click()
    expect(page.locator("#run-status")).to_contain_text("at a gate", timeout=45_000)
    page.keyboard.press("c")
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    log = page.evaluate("window.paralab.store.state.log")
    calls = [(i, e) for i, e in enumerate(log) if e["kind"] == "collective"]
    first = (calls[0][1]["group"], calls[0][1]["cseq"])                   # the first all-reduce: both ranks' begins,
    of_first = [(i, e["phase"]) for i, e in calls if (e["group"], e["cseq"]) == first]   # then its ends
    both_in = max(i for i, phase in of_first if phase == "begin")
    assert both_in < min(i for i, phase in of_first if phase == "end")
    page.evaluate(f"window.paralab.store.seek({both_in})")
    expect(page.locator(".stepper-rank .stepper-text")).to_have_text([re.compile("^inside all_reduce")] * 2)
    expect(page.locator(".stepper-summary")).to_have_text("Every member has arrived: the data moves.")
