"""The pages against axe-core's rules (WCAG 2 A and AA, and axe's best practices), in each theme: text
legible against what is behind it (4.5:1), a name that holds the words a button shows, one main
landmark, sideways-scrolling boxes reachable from the keyboard, headings in order. A lecture is read
from the back of a room, and some of the room reads with a screen reader or by voice."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.resources import files

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.browser.conftest import counter, drawn
from tests.browser.sign_in import sign_in
from tests.conftest import REPO, LiveServer, free_port

pytestmark = pytest.mark.browser

AXE = files("axe_playwright_python").joinpath("axe.min.js").read_text()
VIOLATIONS = """async (rules) => (await axe.run(document, { resultTypes: ["violations"], ...rules })).violations.map((v) => ({
  rule: v.id, impact: v.impact, where: v.nodes.slice(0, 3).map((n) => n.target.join(" ") + ": " + n.failureSummary),
}))"""

# a run of each kind of page: collectives, tensor and pipeline parallelism, ZeRO's memory, DTensor's
# shards, FSDP2, a hang's report (the playground's deadlock: the flight recorder, the mismatch), and a
# torchrun job's (its hosts); and a run waiting in step mode (the stepper)
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
    job = subprocess.run([sys.executable, "-m", "app", "trace", "--server", server.url, "--", "torchrun", "--nnodes=1",
                          "--nproc-per-node=2", f"--master-port={free_port()}", str(REPO / "tests/app/jobs/ring_job.py")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert job.returncode == 0, job.stderr
    page = re.search(r"traced live at \S+(/jobs/\w+)", job.stderr).group(1)
    return ["/", "/playground", *(f"/lessons/{run['lesson']}?run={run['id']}" for run in runs), page]


# axe's rules, and one of its experimental ones: a control's name holds the words it shows (voice control)
EVERY_RULE = {"rules": {"label-content-name-mismatch": {"enabled": True}}}


def violations(page: Page, theme: str) -> list[dict]:
    """axe's findings on the page open now; a theme changes colours alone, so the other rules are
    asked once, in the light theme."""
    page.add_script_tag(content=AXE)
    return page.evaluate(VIOLATIONS, EVERY_RULE if theme == "light" else {"runOnly": ["color-contrast"]})


@pytest.fixture(scope="module")
def stepping(server):
    """A run in step mode, its ranks waiting at their first gate: the stepper and its release buttons."""
    run = server.start_run("tp_mlp", 2, step=True)
    yield f"/lessons/tp_mlp?run={run['id']}"
    web.delete(f"{server.url}/api/runs/{run['id']}")


@pytest.mark.parametrize("theme", ["light", "dark", "contrast"])
def test_every_page_passes_axe_in_every_theme(page: Page, server, pages_to_check, stepping, theme):
    page.goto(server.url + "/")
    page.evaluate(f"localStorage.setItem('paralab:theme', '{theme}')")
    found = {}
    for path in [*pages_to_check, stepping]:
        page.goto(server.url + path)
        expect(page.locator("html")).to_have_attribute("data-theme", theme)
        if path == stepping:
            expect(page.locator(".stepper-rank .release").first).to_be_enabled(timeout=30_000)
        elif "run=" in path or "/jobs/" in path:
            expect(counter(page)).to_have_text(re.compile(r"seq ([1-9]\d*) / \1$"), timeout=30_000)   # at the run's end
            drawn(page)
        if "/jobs/" in path:
            expect(page.locator(".hosts-summary")).to_contain_text("2 ranks on 1 node;")
        if seen := violations(page, theme):
            found[path] = seen
    assert not found, found


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("paralab-a11y-lab"), env={
        "PARALAB_AUTH": "on", "PARALAB_ADMIN_PASSWORD": "admin-secret-1", "PARALAB_SECRET_KEY": "test-key"}).start()
    yield live
    live.stop()


@pytest.mark.parametrize("theme", ["light", "dark", "contrast"])
def test_the_hosted_labs_pages_pass_axe_in_every_theme(page: Page, lab, theme):
    page.goto(lab.url + "/login")
    page.evaluate(f"localStorage.setItem('paralab:theme', '{theme}')")
    page.reload()
    found = {"/login": violations(page, theme)}
    sign_in(page, lab.url + "/admin", "admin", "admin-secret-1")
    expect(page.locator("#users tr[data-user='admin']")).to_be_visible()     # its tables filled
    found["/admin"] = violations(page, theme)
    for path in ("/problems", "/problems/fg_operators"):
        page.goto(lab.url + path)
        expect(page.locator(".problem-card, .statement > *").first).to_be_visible()
        found[path] = violations(page, theme)
    assert not {path: seen for path, seen in found.items() if seen}, found


def test_the_hosted_labs_pages_fit_a_phone(sized_page, lab):
    """The lab's pages at 390 px, signed in as the admin: what is wider (the admin's tables) scrolls in
    its own box, never the page sideways (tests/browser/test_small_screens.py does the lessons')."""
    page = sized_page(390, 844)
    sign_in(page, lab.url + "/admin", "admin", "admin-secret-1")
    expect(page.locator("#users tr[data-user='admin']")).to_be_attached()
    for path in ("/admin", "/problems", "/problems/fg_operators", "/"):
        if path != "/admin":
            page.goto(lab.url + path)
        expect(page.locator("main").first).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
