"""The Process groups view of a run whose ranks ran on several hosts: each host's ranks in a box of
their own, and a line saying which groups stay inside one host. A real 8-rank three_d run (tp = pp =
dp = 2) is exported as its one-file recording, and the `host` events a Ray cluster of four two-CPU
nodes records for it (consecutive ranks on one node: app/cluster.py) are put into that recording's
log, just after the run starts, as the server records them. Chromium replays the file, in English and
in Chinese (the Hosts panel's words with it)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import web
from tests.browser.untranslated import english_words, lesson_strings, own_words, switch_to_chinese
from workers.protocol import Host
from tests.browser.conftest import counter

pytestmark = pytest.mark.browser

NODES = {0: ("10.0.0.1", [0, 1]), 1: ("10.0.0.2", [2, 3]), 2: ("10.0.0.3", [4, 5]), 3: ("10.0.0.4", [6, 7])}
RECORDING = re.compile(r'(<script type="application/json" id="paralab-recording">)(.*?)(</script>)', re.S)


def with_hosts(html: str) -> str:
    """The exported page with a `host` event per node after the run's first event, the log renumbered."""
    def insert(match: re.Match) -> str:
        recording = json.loads(match.group(2))
        events = recording["events"]
        hosts = [Host(t=events[0]["t"], node=node, host=name, ranks=ranks, offset_s=0.0, skew_s=0.0002).to_dict()
                 for node, (name, ranks) in NODES.items()]
        events = [events[0], *hosts, *events[1:]]
        for seq, e in enumerate(events, start=1):
            e["seq"] = seq
        recording["events"] = events
        text = json.dumps(recording, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")
        return match.group(1) + text + match.group(3)
    changed, count = RECORDING.subn(insert, html, count=1)
    assert count == 1, "the exported page holds no recording"
    return changed


def at_the_end(page: Page, total: int) -> None:
    expect(counter(page)).to_have_text(f"seq 1 / {total}")
    page.keyboard.press("End")
    expect(counter(page)).to_have_text(f"seq {total} / {total}")


def inside(inner: dict, outer: dict) -> bool:
    return (outer["x"] <= inner["x"] and inner["x"] + inner["width"] <= outer["x"] + outer["width"]
            and outer["y"] <= inner["y"] and inner["y"] + inner["height"] <= outer["y"] + outer["height"])


def test_the_process_groups_view_boxes_each_hosts_ranks_and_says_which_groups_cross_hosts(browser: Browser, server, tmp_path):
    run = server.run("three_d", 8, {"tp": 2, "pp": 2, "dp": 2})
    assert run["status"] == "done", run["error"]
    html = web.get(f"{server.url}/api/runs/{run['id']}/export.html").text
    plain, hosted = tmp_path / "plain.html", tmp_path / "hosted.html"
    plain.write_text(html, encoding="utf-8")
    hosted.write_text(with_hosts(html), encoding="utf-8")

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.route(re.compile(r"^(https?|wss?)://"), lambda route: route.abort())     # a recording: no server
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(plain.as_uri())                        # no host events: the grid as it always was
        at_the_end(page, run["events"])                  # (the grid comes with rank 0's topology event)
        grid = page.locator("#topology")
        expect(grid.locator(".topo-rank")).to_have_count(8)
        expect(grid.locator(".topo-host")).to_have_count(0)
        expect(grid.locator(".topo-hosts")).to_have_count(0)

        page.goto(hosted.as_uri())
        assert not errors, errors
        at_the_end(page, run["events"] + len(NODES))
        grid = page.locator("#topology")
        expect(grid.locator(".topo-rank")).to_have_count(8)
        expect(grid.locator(".topo-host")).to_have_count(4)
        expect(grid.locator(".topo-hosts")).to_have_text(
            "4 hosts: TP each inside one host · PP each across hosts · DP each across hosts")
        for name, ranks in NODES.values():
            box = grid.locator(f'.topo-host[data-host="{name}"]')
            expect(box.locator(".topo-host-name")).to_have_text(name)
            outline = box.locator(".topo-host-box").bounding_box()
            for rank in range(8):
                drawn = grid.locator(f'.topo-rank[data-rank="{rank}"] .topo-box').bounding_box()
                assert inside(drawn, outline) == (rank in ranks), (name, rank)
        expect(grid.locator(".dp-verdict.pass")).to_contain_text("as expected")   # the grid's other parts as before
        # the Hosts panel says what it is for a run on a cluster too, and all of it reads in Chinese
        expect(page.locator("#h-hosts .panel-note")).to_have_text(
            "the ranks host by host (a run on a Ray cluster, a torchrun job), each host's clock aligned with the server's")
        switch_to_chinese(page)
        expect(page.locator("#h-hosts")).to_have_text(
            "主机 按主机列出各 rank（Ray 集群上的运行、torchrun 作业），每台主机的时钟与服务器的对齐")
        expect(grid.locator(".topo-hosts")).to_have_text("4 台主机: TP 每个都在同一台主机内 · PP 每个都跨主机 · DP 每个都跨主机")
        own = own_words(lesson_strings(page, server.url))
        left = [line for line in page.locator("#hosts-panel").inner_text().splitlines() if english_words(line, own)]
        assert not left, f"English left in the Hosts panel: {left}"
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the recording: {errors}"
