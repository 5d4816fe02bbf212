"""A recorded run served with no ranks and no launcher (the app called in-process through httpx's
ASGI transport, its lifespan not run): the tensor endpoint returns values, as strict JSON even when
a computation diverged."""

from __future__ import annotations

import asyncio
import base64
import json
import struct

import httpx
import pytest

from app.main import create_app
from app.recording import Recording
from app.settings import Settings


@pytest.fixture
def client(tmp_path):
    rec = Recording(tmp_path / "runs", "recorded1")
    rec.create({"id": "recorded1", "lesson": "tp_mlp", "world_size": 1, "params": {}, "step": False,
                "backend": "gloo", "created_at": 1.0, "status": "done", "error": None, "event_count": 1})
    rec.append('{"seq":1,"rank":null,"t":0.0,"kind":"run","status":"done"}\n')
    rec.close()
    rec.save_tensor({"blob": "r0t0", "shape": [2, 2], "dtype": "float32", "data": struct.pack("<4f", 1.5, -2.0, 0.25, 8.0)})
    old_format = {"blob": "r0t1", "shape": [2, 2], "dtype": "float32",   # recorded before frames: base64 in JSON
                  "data": base64.b64encode(struct.pack("<4f", 1.0, float("nan"), float("inf"), -float("inf"))).decode()}
    (rec.dir / "tensors" / "r0t1.json").write_text(json.dumps(old_format))
    app = create_app(Settings(DATA_DIR=tmp_path))
    app.state.manager.store.load_recorded()                  # what start() does, without a launcher
    return Client(app)


class Client:
    def __init__(self, app):
        self.app = app

    def get(self, path: str) -> httpx.Response:
        async def call():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(self.app), base_url="http://lab") as client:
                return await client.get(path)
        return asyncio.run(call())


def strict(text: str):
    def refuse(constant):
        raise ValueError(constant)
    return json.loads(text, parse_constant=refuse)


def test_full_tensor_by_id(client):
    response = client.get("/api/runs/recorded1/tensors/r0t0")
    assert response.status_code == 200
    assert strict(response.text) == {"id": "r0t0", "shape": [2, 2], "dtype": "float32", "values": [1.5, -2.0, 0.25, 8.0]}


def test_non_finite_values_are_strict_json(client):
    response = client.get("/api/runs/recorded1/tensors/r0t1")
    assert response.status_code == 200
    assert strict(response.text)["values"] == [1.0, "nan", "inf", "-inf"]


def test_recorded_run_is_served_from_disk(client):
    run = client.get("/api/runs/recorded1").json()
    assert (run["status"], run["events"]) == ("done", 1)
    assert client.get("/api/runs/recorded1/tensors/r0t9").status_code == 404
