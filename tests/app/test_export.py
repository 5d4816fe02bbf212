"""A run exported as one HTML file holds everything it needs (no reference back to the server), and
the room page's addresses: a loosely typed code is redirected, an unknown one gets a page saying so."""

from __future__ import annotations

import json
import re


from app.routes.export import self_contained
from tests import web


def test_an_exported_run_needs_nothing_from_the_server(server):
    run = server.run("tp_mlp", 2)
    response = web.get(f"{server.url}/api/runs/{run['id']}/export.html")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-disposition"] == f'attachment; filename="paralab-tp_mlp-{run["id"]}.html"'
    html = response.text
    assert not re.search(r'(src|href)="/(static|api)/', html)          # every stylesheet and module inlined
    imports = json.loads(re.search(r'<script type="importmap">(.*?)</script>', html, re.S).group(1))["imports"]
    assert {"paralab/lesson-page.js", "paralab/offline-page.js", "paralab/replay.js"} <= imports.keys()
    assert all(url.startswith("data:text/javascript;base64,") for url in imports.values())
    recording = json.loads(re.search(r'<script type="application/json" id="paralab-recording">(.*?)</script>', html, re.S).group(1))
    assert recording["run"]["id"] == run["id"]
    assert len(recording["events"]) == run["events"]
    assert [e["seq"] for e in recording["events"]] == list(range(1, run["events"] + 1))
    assert recording["lesson"]["sources"] and recording["lesson"]["explanations"]["en"]
    assert 'data-host="offline"' in html

    inline = web.get(f"{server.url}/api/runs/{run['id']}/export.html?download=false")
    assert inline.headers["content-disposition"].startswith("inline")
    assert web.get(f"{server.url}/api/runs/nope/export.html").status_code == 404


def test_the_recording_cannot_close_its_script():
    page = '<html><head></head><body><p>x</p></body></html>'
    out = self_contained(page, {"events": [{"label": "</script><script>alert(1)</script>"}]})
    script = re.search(r'<script type="application/json" id="paralab-recording">(.*?)</script>', out, re.S).group(1)
    assert "<" not in script
    assert json.loads(script)["events"][0]["label"] == "</script><script>alert(1)</script>"


def test_room_page_addresses(server):
    code = web.post(f"{server.url}/api/rooms").json()["code"]
    loose = web.get(f"{server.url}/rooms/{code[:4].lower()}-{code[4:].lower()}")
    assert loose.status_code == 307 and loose.headers["location"].endswith(f"/rooms/{code}")
    page = web.get(f"{server.url}/rooms/{code}")
    assert page.status_code == 200 and 'data-host="room"' in page.text and f'data-room="{code}"' in page.text
    missing = web.get(f"{server.url}/rooms/ZZZZ-ZZZ2")
    assert missing.status_code == 404
    assert "No room ZZZZ-ZZZ2: unknown or expired code" in missing.text
