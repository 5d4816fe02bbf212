"""The pages against axe-core's rules (WCAG 2 A and AA, and axe's best practices), in each theme: text
legible against what is behind it (4.5:1), a name that holds the words a button shows, one main
landmark, sideways-scrolling boxes reachable from the keyboard, headings in order. A lecture is read
from the back of a room, and some of the room reads with a screen reader or by voice."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import counter, drawn

pytestmark = pytest.mark.browser

AXE = files("axe_playwright_python").joinpath("axe.min.js").read_text()
VIOLATIONS = """async () => (await axe.run(document, { resultTypes: ["violations"] })).violations.map((v) => ({
  rule: v.id, impact: v.impact, where: v.nodes.slice(0, 3).map((n) => n.target.join(" ") + ": " + n.failureSummary),
}))"""

# a run of each kind of page: collectives, tensor and pipeline parallelism, ZeRO's memory, DTensor's
# shards, FSDP2, and a hang's report (the playground's deadlock: the flight recorder, the mismatch)
RUNS = [("collectives", 2, {}), ("tp_mlp", 2, {}), ("pp", 2, {}), ("zero", 2, {}), ("dtensor", 2, {}),
        ("fsdp2", 2, {})]


@pytest.fixture(scope="module")
def pages_to_check(server) -> list[str]:
    from workers.lessons.script import examples
    deadlock = next(e for e in examples() if e["id"] == "deadlock")
    started = [server.start_run(lesson, size, params) for lesson, size, params in RUNS]
    started.append(server.start_run("script", 2, {"source": deadlock["source"], "filename": "deadlock.py"},
                                    hang_timeout_s=2))
    runs = [server.wait_run(run["id"], timeout=90) for run in started]
    assert runs[-1]["status"] == "failed"
    return ["/", "/playground", *(f"/lessons/{run['lesson']}?run={run['id']}" for run in runs)]


@pytest.mark.parametrize("theme", ["light", "dark", "contrast"])
def test_every_page_passes_axe_in_every_theme(page: Page, server, pages_to_check, theme):
    page.goto(server.url + "/")
    page.evaluate(f"localStorage.setItem('paralab:theme', '{theme}')")
    found = {}
    for path in pages_to_check:
        page.goto(server.url + path)
        expect(page.locator("html")).to_have_attribute("data-theme", theme)
        if "run=" in path:
            expect(counter(page)).to_have_text(re.compile(r"seq (\d+) / \1$"), timeout=30_000)   # at the run's end
            drawn(page)
        page.add_script_tag(content=AXE)
        violations = page.evaluate(VIOLATIONS)
        if violations:
            found[path] = violations
    assert not found, found
