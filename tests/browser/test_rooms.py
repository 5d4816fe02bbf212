"""Lecture rooms as a lecturer and a student use them: a presenter page and a follower page in step,
detaching and rejoining live, the follower's own text size and language, a wrong code refused, and a
run exported as one HTML file that replays from disk with no network. A follower's page follows within a second;
on a machine with more runnable processes than cores that second is stretched by as much (`loaded`): a suite
beside a second one (a load of 18) once saw the blank screen mirrored later than 1 s."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from app.rooms import Room
from tests import web
from tests.browser.conftest import counter, loaded, open_page, step_run_in_a_room
from tests.conftest import LiveServer

pytestmark = pytest.mark.browser


@pytest.fixture
def follower(pages):
    """A second person: their own browser context (own localStorage), JavaScript errors fail the test."""
    yield from open_page(pages, 1200, 800, "the follower's page")


def test_presenter_and_follower_in_step(page: Page, follower: Page, server):
    # The lecturer presents from a lesson page: a room opens, the secret only in this tab.
    page.goto(f"{server.url}/lessons/tp_mlp?world_size=2")
    page.get_by_role("button", name="Present").click()
    page.wait_for_url(re.compile(r"/rooms/[A-Z2-9]{8}$"))
    assert "secret" not in page.url and "?" not in page.url
    code = page.url.rsplit("/", 1)[1]
    expect(page.locator("#room-role")).to_have_text("Presenter")
    expect(page.locator("#room-card")).to_be_visible()               # the code, large, with its QR
    expect(page.locator(".room-card-code")).to_have_text(f"{code[:4]}-{code[4:]}")
    assert web.get(f"{server.url}/api/rooms/{code}/qr.svg").headers["content-type"].startswith("image/svg")
    expect(page.locator(".room-card-local")).to_contain_text("--host 0.0.0.0")      # 127.0.0.1: phones cannot follow
    by_name = web.get(f"{server.url}/rooms/{code}", headers={"host": "lab.example"}).text
    assert 'class="room-card-code"' in by_name and "room-card-local" not in by_name     # an address others can reach
    page.get_by_role("button", name="Hide").click()

    # A student types the code as they read it: lower case, with its dash.
    follower.goto(f"{server.url}/rooms/{code[:4].lower()}-{code[4:].lower()}")
    expect(follower).to_have_url(re.compile(f"/rooms/{code}$"))
    expect(follower.locator("#room-role")).to_have_text("Following live")
    expect(follower.locator("#run-form")).to_be_hidden()               # followers do not run anything
    expect(follower.locator("#lanes")).to_contain_text("Waiting for the presenter to start a run")
    expect(page.locator("#follower-count")).to_have_text("1 follower", timeout=loaded(5_000))

    # The presenter runs the lesson; the follower sees the same run.
    page.get_by_role("button", name="▶ Run").click()
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    total = int(re.search(r"/ (\d+)", counter(page).inner_text()).group(1))
    expect(counter(follower)).to_have_text(re.compile(rf"/ {total}$"))

    # The presenter steps with the keyboard; the follower's page follows within a second.
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(counter(page)).to_have_text(f"seq 4 / {total}")
    expect(counter(follower)).to_have_text(f"seq 4 / {total}", timeout=loaded(1_000))
    expect(follower.locator("#now .now-text")).to_have_text(page.locator("#now .now-text").text_content())

    # The follower wanders off: their own keys detach them; the presenter moves on without them.
    follower.keyboard.press("ArrowLeft")
    expect(follower.locator("#room-role")).to_have_text("Exploring on your own")
    expect(counter(follower)).to_have_text(f"seq 3 / {total}")
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    expect(counter(page)).to_have_text(f"seq 10 / {total}")
    expect(follower.locator("#room-where")).to_have_text("presenter at seq 10")
    expect(counter(follower)).to_have_text(f"seq 3 / {total}")
    follower.get_by_role("button", name="Rejoin live").click()
    expect(counter(follower)).to_have_text(f"seq 10 / {total}", timeout=loaded(1_000))
    expect(follower.locator("#room-role")).to_have_text("Following live")

    # The presenter blanks the screen (B): so do the screens following live; B again lifts both.
    page.keyboard.press("b")
    expect(page.locator(".blank-screen")).to_be_visible()
    expect(follower.locator(".blank-screen")).to_be_visible(timeout=loaded(1_000))
    expect(follower.locator(".blank-note")).to_be_visible()
    expect(follower.locator(".blank-note")).to_have_text("The presenter has blanked the screen.")   # not a crash
    expect(page.locator(".blank-note")).to_be_hidden()                                           # the projector: black
    page.keyboard.press("b")
    expect(follower.locator(".blank-screen")).to_be_hidden(timeout=loaded(1_000))
    expect(page.locator(".blank-screen")).to_be_hidden()

    # A dropped connection comes back by itself, and nothing arrives twice.
    follower.evaluate("window.paralab.room.socket.drop()")
    page.keyboard.press("ArrowRight")
    expect(counter(follower)).to_have_text(f"seq 11 / {total}", timeout=3_000)
    assert follower.evaluate("window.paralab.room.state.events") == total

    # The follower's text size and language are their own, applied at once and kept after a reload.
    html = follower.locator("html")
    size = float(html.evaluate("el => parseFloat(getComputedStyle(el).fontSize)"))
    follower.get_by_role("button", name="Larger text").click()
    follower.get_by_role("button", name="Larger text").click()
    follower.get_by_role("button", name=re.compile("中文")).click()
    expect(html).to_have_attribute("lang", "zh-CN")
    expect(follower.locator("#room-role")).to_have_text("正在跟随直播")
    expect(follower.locator("#h-lanes")).to_have_text("各 rank")
    expect(follower.get_by_role("button", name="▶ 播放")).to_be_visible()
    bigger = float(html.evaluate("el => parseFloat(getComputedStyle(el).fontSize)"))
    assert bigger > size * 1.2
    follower.reload()
    expect(html).to_have_attribute("lang", "zh-CN")
    expect(follower.locator("#room-role")).to_have_text("正在跟随直播")
    expect(counter(follower)).to_have_text(f"seq 11 / {total}")
    assert float(html.evaluate("el => parseFloat(getComputedStyle(el).fontSize)")) == pytest.approx(bigger)
    expect(follower.locator(".text-scale")).to_have_text("130%")

    # The presenter saves the picture for a slide.
    with page.expect_download() as download:
        page.locator(".panel:has(#lanes)").get_by_role("button", name="SVG").click()
    assert Path(download.value.path()).read_text().startswith("<svg")
    assert download.value.suggested_filename == "paralab-tp_mlp-lanes-seq11.svg"


def serving(live: LiveServer) -> LiveServer:
    """Start `live` and return once it answers (its launcher need not be ready: nothing is run)."""
    live.proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--port", str(live.port), "--data-dir", str(live.data_dir), "--log-level", "warning"],
        cwd=Path(__file__).resolve().parents[2], env=live.env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            web.get(f"{live.url}/healthz", timeout=1)
            return live
        except httpx.HTTPError:
            time.sleep(0.05)
    raise TimeoutError("the server did not answer")


def test_a_room_survives_a_server_restart(page: Page, follower: Page, server, tmp_path):
    """The server goes down mid-lecture and comes back on the same address: both pages reconnect to the
    same room, at the same run and step, and go on."""
    run = server.run("tp_mlp", 2)
    total = run["events"]
    shutil.copytree(server.data_dir / "runs" / run["id"], tmp_path / "runs" / run["id"])   # a room saved
    code, secret = "RESTART2", "the-presenter-secret"                                 # mid-lecture
    (tmp_path / "rooms").mkdir()
    room = Room(code=code, secret_digest=hashlib.sha256(secret.encode()).hexdigest(), run=run["id"], cursor=2,
                view={"lesson": "tp_mlp"})
    (tmp_path / "rooms" / f"{code}.json").write_text(json.dumps(asdict(room)))

    first = serving(LiveServer(tmp_path))
    try:
        page.goto(f"{first.url}/rooms/{code}#secret={secret}")
        follower.goto(f"{first.url}/rooms/{code}")
        expect(page.locator("#room-role")).to_have_text("Presenter")
        expect(counter(follower)).to_have_text(f"seq 2 / {total}")
        page.keyboard.press("ArrowRight")
        expect(counter(follower)).to_have_text(f"seq 3 / {total}", timeout=loaded(1_000))
    finally:
        first.stop()
    expect(follower.locator("#room-role")).to_have_text("Reconnecting…")

    second = LiveServer(tmp_path)
    second.port, second.url, second.ws_url = first.port, first.url, first.ws_url
    serving(second)
    try:
        expect(follower.locator("#room-role")).to_have_text("Following live", timeout=10_000)
        expect(page.locator("#room-role")).to_have_text("Presenter", timeout=10_000)
        expect(counter(follower)).to_have_text(f"seq 3 / {total}")
        page.keyboard.press("ArrowRight")
        expect(counter(follower)).to_have_text(f"seq 4 / {total}", timeout=loaded(1_000))
        assert follower.evaluate("window.paralab.room.state.events") == total
    finally:
        second.stop()


def test_a_wrong_code_or_secret_is_refused(page: Page, server):
    page.goto(f"{server.url}/")
    page.get_by_label("Join a room").fill("zzzz-zzz2")
    page.get_by_role("button", name="Join", exact=True).click()
    expect(page.locator(".join-error")).to_have_text("No room ZZZZ-ZZZ2: unknown or expired code")
    expect(page).to_have_url(f"{server.url}/")

    response = page.goto(f"{server.url}/rooms/ZZZZZZZ2")
    assert response.status == 404
    expect(page.get_by_role("heading", name="No such room")).to_be_visible()
    page.get_by_label("Join a room").fill("zzzz-zzz3")                  # its own join form: another try
    page.get_by_role("button", name="Join", exact=True).click()
    expect(page.locator(".join-error")).to_have_text("No room ZZZZ-ZZZ3: unknown or expired code")

    code = web.post(f"{server.url}/api/rooms").json()["code"]
    page.goto(f"{server.url}/rooms/{code}#secret=not-the-secret")
    expect(page.locator(".room-notice")).to_contain_text("The presenter secret is wrong")
    expect(page.locator("#room-role")).to_have_text("Following live")
    expect(page.locator("#run-form")).to_be_hidden()


def test_an_exported_run_replays_offline(browser: Browser, server, tmp_path):
    run = server.run("tp_mlp", 2)
    response = web.get(f"{server.url}/api/runs/{run['id']}/export.html")
    assert response.status_code == 200
    assert "attachment" in response.headers["content-disposition"]
    file = tmp_path / "recording.html"
    file.write_bytes(response.content)
    total = run["events"]

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    asked: list[str] = []

    def no_network(route):
        asked.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(https?|wss?)://"), no_network)     # no server, no network
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed", lambda request: errors.append(f"not found: {request.url}"))   # a file:// path to nothing
    try:
        page.goto(file.as_uri())
        expect(counter(page)).to_have_text(f"seq 1 / {total}")
        assert page.evaluate("""async () => (await document.fonts.load('700 16px "Paralab zh button"', '中文'))
                                .map((face) => face.status)""") == ["loaded"]   # the language button's glyphs came along
        expect(page.locator(".offline-badge")).to_have_text("Recording")
        expect(page.locator(".lesson-title")).to_have_text("Tensor-parallel MLP")
        page.keyboard.press("End")
        expect(counter(page)).to_have_text(f"seq {total} / {total}")
        expect(page.locator(".checks-summary")).to_have_text("✓ All 8 checks passed (4 checks × 2 ranks)")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        expect(counter(page)).to_have_text(f"seq {total - 2} / {total}")
        page.get_by_role("button", name="First event (Home)").click()
        expect(counter(page)).to_have_text(f"seq 1 / {total}")
        page.locator("#scrubber input[type=range]").fill("20")
        expect(counter(page)).to_have_text(f"seq 20 / {total}")
        page.keyboard.press(" ")
        expect(counter(page)).to_have_text(f"seq 21 / {total}")
        expect(page.locator(".source-code .line").first).to_be_visible()   # the lesson's source came along
        page.keyboard.press("?")
        expect(page.get_by_role("dialog", name="Keyboard")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page).to_have_url(re.compile(r"#seq=21$"))               # the address keeps the step
        page.reload()
        expect(counter(page)).to_have_text(f"seq 21 / {total}")
    finally:
        context.close()
    assert not errors, f"JavaScript errors in the exported file: {errors}"
    assert asked == [], f"the exported file reached for the network: {asked}"


# the panel at the top of the presenter's stage, as room-page.js's visiblePanel finds it
TOP_PANEL = """() => {
  const stage = document.querySelector(".stage"), top = Math.max(stage.getBoundingClientRect().top, 0);
  const panel = [...stage.querySelectorAll(":scope > .panel")].find((p) => !p.hidden && p.getBoundingClientRect().bottom > top + 48);
  return panel ? panel.id || panel.querySelector(":scope > div[id]")?.id || null : null;
}"""


def room_panel(server, room: dict) -> str | None:
    return web.get(f"{server.url}/api/rooms/{room['code']}").json()["view"].get("panel")


def test_the_presenter_shows_an_earlier_run_and_the_follower_sees_it(page: Page, follower: Page, server):
    """The lecturer's safety net: a run recorded before the lecture, shown to the room from the presenter's
    "Earlier runs" list instead of starting one; the follower's page switches to it like a new run."""
    earlier = server.run("tp_mlp", 2, {"seed": 7})
    total = earlier["events"]
    room = web.post(f"{server.url}/api/rooms").json()
    page.goto(f"{server.url}/rooms/{room['code']}#secret={room['secret']}&lesson=tp_mlp")
    expect(page.locator("#room-role")).to_have_text("Presenter")
    follower.goto(f"{server.url}/rooms/{room['code']}")
    expect(follower.locator("#room-role")).to_have_text("Following live")
    expect(follower.get_by_role("button", name="Earlier runs")).to_be_hidden()       # the presenter's alone

    page.get_by_role("button", name="Earlier runs").click()
    expect(page.locator("#room-card")).to_be_hidden()
    show = page.locator(f'#room-earlier button[data-run="{earlier["id"]}"]')
    expect(show).to_have_text("Show to the room")
    show.click()
    expect(page.locator("#room-earlier")).to_be_hidden()

    expect(counter(follower)).to_have_text(f"seq 1 / {total}", timeout=loaded(5_000))
    assert follower.evaluate("window.paralab.room.state.run") == earlier["id"]
    assert follower.evaluate("window.paralab.room.state.events") == total
    expect(counter(page)).to_have_text(re.compile(rf"/ {total}$"))
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    expect(counter(follower)).to_have_text(f"seq 2 / {total}", timeout=loaded(1_000))
    expect(follower.locator("#now .now-text")).to_have_text(page.locator("#now .now-text").text_content())

    # An unknown run (gone from the disk, say) is refused in words; the room keeps its run.
    page.evaluate("window.paralab.room.socket.send({op: 'show', run: '0123456789ab'})")
    expect(page.locator(".room-notice")).to_contain_text("no run with id '0123456789ab'")
    assert web.get(f"{server.url}/api/rooms/{room['code']}").json()["run"] == earlier["id"]

    # The presenter's focus view is the room's: the follower's page focuses the same panel, and leaves it with them.
    picture = page.locator(".stage > .panel:not([hidden])", has=page.locator(".focus-toggle")).last
    name = picture.evaluate("p => p.id || p.querySelector(':scope > div[id]').id")
    picture.get_by_role("button", name="Focus").click()
    focused = follower.locator(".stage > .panel.focused")
    expect(focused).to_have_count(1, timeout=loaded(2_000))
    assert focused.evaluate("p => p.id || p.querySelector(':scope > div[id]').id") == name
    expect(follower.locator("body")).to_have_class(re.compile(r"\bfocus-view\b"))
    page.keyboard.press("ArrowRight")                                  # stepping keeps it focused
    expect(counter(follower)).to_have_text(f"seq 3 / {total}", timeout=loaded(1_000))
    expect(focused).to_have_count(1)
    page.keyboard.press("Escape")
    expect(focused).to_have_count(0, timeout=loaded(2_000))

    # The same run shown again (marked as the one on screen): both pages start it over, together.
    page.get_by_role("button", name="Earlier runs").click()
    row = page.locator('#room-earlier li[aria-current="true"]')
    expect(row).to_have_count(1)
    expect(row.locator(".recent-current")).to_have_text("on screen")
    expect(row.locator(".recent-when")).to_have_text(re.compile(r"· \d\d:\d\d:\d\d$"))   # runs a minute apart told apart
    show.click()
    expect(counter(page)).to_have_text(f"seq 1 / {total}", timeout=loaded(2_000))
    expect(counter(follower)).to_have_text(f"seq 1 / {total}", timeout=loaded(2_000))

    # Another lesson: the panel the presenter had scrolled to is the last lesson's, not the followers' to seek.
    page.locator("#lanes-panel").evaluate("p => p.scrollIntoView({block: 'start'})")
    deadline = time.monotonic() + loaded(5)
    while room_panel(server, room) != "lanes-panel":
        assert time.monotonic() < deadline, "the presenter's panel never reached the room"
        time.sleep(0.1)
    page.locator("#room-lesson").select_option("pp")
    expect(follower.locator(".lesson-title")).to_have_text(web.get(f"{server.url}/api/lessons/pp").json()["title"],
                                                           timeout=loaded(3_000))
    page.evaluate("window.paralab.room.socket.send({op: 'run', lesson: 'pp', world_size: 2})")
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    deadline = time.monotonic() + loaded(3)                            # the presenter's panel is sent 250 ms after it moves
    while room_panel(server, room) not in (None, page.evaluate(TOP_PANEL)):
        assert time.monotonic() < deadline, (room_panel(server, room), page.evaluate(TOP_PANEL))
        time.sleep(0.1)


def test_a_follower_exploring_on_their_own_still_sees_the_run_grow(page: Page, follower: Page, server):
    """A step-mode run: the follower steps on their own while the presenter lets the ranks run to the
    end. Their cursor stays theirs, but the run they explore keeps its new events and its end."""
    step_run_in_a_room(server, page, follower)
    follower.wait_for_function("window.paralab.store.state.log.length >= 3")
    at_first = follower.evaluate("window.paralab.store.state.cursor") == 0
    follower.keyboard.press("ArrowRight" if at_first else "ArrowLeft")   # a step of their own
    expect(follower.locator("#room-role")).to_have_text("Exploring on your own")
    seq = follower.evaluate("window.paralab.store.state.cursor")
    page.keyboard.press("c")                                             # continue: the ranks run to the end
    expect(page.locator("#run-status")).to_contain_text("Run done", timeout=45_000)
    total = page.evaluate("window.paralab.store.state.log.length")
    expect(follower.locator("#run-status")).to_contain_text("Run done", timeout=loaded(3_000))
    assert follower.evaluate("window.paralab.store.state.log.length") == total
    assert follower.evaluate("window.paralab.store.state.cursor") == seq       # still where they went
    expect(follower.locator("#room-where")).to_have_text(re.compile(r"^presenter at seq \d+$"))
