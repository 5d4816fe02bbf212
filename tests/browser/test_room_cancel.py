"""The presenter's Cancel button in a lecture room: a room's run obeys the presenter's secret only, so
the page cancels it through the room's socket (a plain DELETE without the secret is refused, 403)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests import web

pytestmark = pytest.mark.browser


def test_the_presenters_cancel_button_cancels_the_rooms_run(page: Page, server):
    room = web.post(f"{server.url}/api/rooms").json()
    page.goto(f"{server.url}/rooms/{room['code']}#secret={room['secret']}&lesson=tp_mlp")
    expect(page.locator("#room-role")).to_have_text("Presenter")
    page.evaluate("window.paralab.room.socket.send({op: 'run', lesson: 'tp_mlp', world_size: 2, step: true})")
    cancel = page.locator("#cancel-run")
    expect(cancel).to_be_visible(timeout=30_000)
    run_id = page.evaluate("window.paralab.room.state.run")
    assert web.delete(f"{server.url}/api/runs/{run_id}").status_code == 403     # a student's try
    cancel.click()
    expect(cancel).to_be_hidden(timeout=10_000)
    assert web.get(f"{server.url}/api/runs/{run_id}").json()["status"] == "cancelled"
