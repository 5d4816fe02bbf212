"""The playground and a run of one's own program, in Chromium (issue #13, points 2, 3 and 5): pick a
starting program, run it, see its own file in the source panel with the current call's line, the
panels its events fit, each rank's output, and a hang's report at the user's line. Another web
page cannot start a run: a no-cors fetch, a form POST, a websocket, and a DNS-rebinding name."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect

from tests import web
from tests.app.helpers import events
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, counter

pytestmark = pytest.mark.browser


def run_from_playground(page: Page, server, example: str, ranks: int) -> dict:
    page.goto(f"{server.url}/playground")
    expect(page.locator(".run-button")).to_be_enabled()           # the form is built
    page.select_option("#example", example)
    expect(page.locator("#param-filename")).to_have_value(f"{example}.py")
    page.locator(f'.world-size input[value="{ranks}"]').check(force=True)
    with page.expect_response(lambda r: r.url.endswith("/api/runs") and r.request.method == "POST") as posted:
        page.locator(".run-button").click()
    assert posted.value.status == 201, posted.value.text()
    run = server.wait_run(posted.value.json()["id"], timeout=90)
    expect(counter(page)).to_have_text(re.compile(rf"/ {len(events(server, run['id']))}$"))
    return run


def test_a_starting_program_runs_and_shows_its_own_file_lines_panels_and_output(page: Page, server):
    run = run_from_playground(page, server, "ring", 3)
    assert run["status"] == "done", run["error"]
    assert "playground" in page.url and f"run={run['id']}" in page.url and "source=" not in page.url
    expect(page.locator(".source-tab")).to_have_text(["ring.py"])
    expect(page.locator("#help-source code")).to_have_text("python FILE.py ARGS")   # the help's code as code
    expect(page.locator("#help-source")).not_to_contain_text("`")
    # step back to rank 0's first recv: its line of ring.py is the current one
    log = events(server, run["id"])
    recv = next(e for e in log if e["kind"] == "p2p" and e["op"] == "recv" and e["phase"] == "begin")
    line = int(recv["site"].split(":")[1])
    assert recv["site"] == f"ring.py:{line}"
    page.keyboard.press("Home")
    for _ in range(recv["seq"] - log[0]["seq"]):
        page.keyboard.press("ArrowRight")
    expect(page.locator(".source-code .line.current")).to_have_attribute("data-line", str(line))
    expect(page.locator(".source-code .line.current")).to_contain_text("dist.recv(incoming, src=left)")
    expect(page.locator(".source-where")).to_contain_text(f"ring.py:{line}")
    page.keyboard.press("End")
    for panel in ("#ring-panel", "#collective-panel", "#comm-panel", "#output-panel"):
        expect(page.locator(panel)).to_be_visible()
    expect(page.locator('.rank-output[data-rank="0"] pre')).to_contain_text("matches all_reduce: True")
    expect(page.locator(".rank-output")).to_have_count(3)


def test_the_deadlock_example_gets_the_hang_report_at_the_users_line(page: Page, server):
    run = run_from_playground(page, server, "deadlock", 3)
    assert run["error"]["kind"] == "hang", run["error"]
    expect(page.locator("#failure .hang-report")).to_contain_text("never entered")
    expect(page.locator("#failure .fr-site").first).to_contain_text("deadlock.py:12")
    expect(page.locator(".source-code .line.current")).to_have_attribute("data-line", "12")


def test_an_error_in_ones_own_code_is_shown_at_its_line(page: Page, server):
    page.goto(f"{server.url}/playground")
    expect(page.locator(".run-button")).to_be_enabled()
    page.fill("#param-source", "import os\n\nif os.environ['RANK'] == '1':\n    raise RuntimeError('my bug')\n")
    page.fill("#param-filename", "mine.py")
    page.locator(".run-button").click()
    expect(page.locator("#failure")).to_contain_text("my bug")
    expect(page.locator(".source-tab")).to_have_text(["mine.py"])
    expect(page.locator(".source-code .line.current")).to_have_attribute("data-line", "4")


EVIL_PAGE = """<!doctype html><title>evil</title><iframe name="sink"></iframe><script>
window.attack = async (server, ws) => {
  const run = JSON.stringify({lesson: "script", world_size: 2, params: {source: "print('pwned')"}});
  await fetch(server + "/api/runs", {method: "POST", mode: "no-cors", headers: {"content-type": "text/plain"}, body: run});
  const form = document.createElement("form");
  form.method = "POST"; form.action = server + "/api/runs"; form.enctype = "text/plain"; form.target = "sink";
  const field = document.createElement("input");
  field.name = run.slice(0, -1) + ', "x": "'; field.value = '"}';
  form.append(field); document.body.append(form); form.submit();
  await new Promise((done) => setTimeout(done, 1500));
  return await new Promise((done) => {
    const socket = new WebSocket(ws);
    socket.onopen = () => done("opened");
    socket.onclose = (e) => done("closed " + e.code);
  });
};
</script>"""


@contextmanager
def chromium_with(shared, *args: str):
    """A browser of its own, with extra switches (the session's shared one has none), from the same Playwright."""
    browser = shared.browser_type.launch(executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, *args])
    try:
        yield browser.new_page()
    finally:
        browser.close()


# Chromium's own Private/Local Network Access would stop a public page's requests to 127.0.0.1 before
# they leave the browser; other browsers (and older Chromiums) send them. Off here, so it is the
# server that must refuse them.
NO_NETWORK_ACCESS_CHECKS = ("--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,"
                            "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks")


def test_another_web_page_cannot_start_or_steer_a_run(browser, server):
    """The page of http://evil.example (served by Playwright) attacks the real server: its no-cors
    fetch and its form POST reach the server and get 403, nothing starts, its websocket is refused;
    the same websocket from the server's own page opens."""
    before = len(web.get(f"{server.url}/api/runs", params={"limit": 10_000}).json())
    ws = f"{server.ws_url}/ws/runs/none"
    with chromium_with(browser, NO_NETWORK_ACCESS_CHECKS) as page:
        answers = []
        page.on("response", lambda r: answers.append((r.request.method, r.status)) if r.url.endswith("/api/runs") else None)
        page.route("http://evil.example/**", lambda route: route.fulfill(status=200, content_type="text/html", body=EVIL_PAGE))
        page.goto("http://evil.example/")
        assert page.evaluate("([s, w]) => window.attack(s, w)", [server.url, ws]) == "closed 1006"
        assert answers == [("POST", 403), ("POST", 403)]
        assert len(web.get(f"{server.url}/api/runs", params={"limit": 10_000}).json()) == before
        page.goto(f"{server.url}/playground")
        own = page.evaluate("""(w) => new Promise((done) => { const s = new WebSocket(w);
            s.onopen = () => done("opened"); s.onclose = (e) => done("closed " + e.code); })""", ws)
    assert own != "closed 1006"        # the server's own page is let through (an unknown run: its own close code)


def test_a_dns_rebinding_name_cannot_start_a_run(browser, server):
    """Chromium resolves rebound.example to 127.0.0.1, as a rebinding attacker's DNS would: the page is
    then same-origin with the server, and still its POST of a program is refused."""
    port = server.url.rsplit(":", 1)[1]
    with chromium_with(browser, "--host-resolver-rules=MAP rebound.example 127.0.0.1") as page:
        page.goto(f"http://rebound.example:{port}/playground")
        answer = page.evaluate("""async () => { const r = await fetch("/api/runs", {method: "POST",
            headers: {"content-type": "application/json"},
            body: JSON.stringify({lesson: "script", world_size: 2, params: {source: "print(1)"}})});
            return [r.status, (await r.json()).detail]; }""")
    assert answer[0] == 403 and "a name that is not an IP address or localhost" in answer[1]


def test_a_run_link_this_server_does_not_have_says_so_where_it_is_seen(sized_page, server):
    """`/playground?run=…` of a run that is not here (another user's, one deleted): the refusal is on
    screen, not under the editor below the fold (y = 830 of a laptop's 800)."""
    page = sized_page(1280, 800)
    page.goto(f"{server.url}/playground?run=0123456789ab")
    refusal = page.locator(".form-error")
    expect(refusal).to_have_text("There is no run 0123456789ab on this server.")
    expect(refusal).to_be_in_viewport()
