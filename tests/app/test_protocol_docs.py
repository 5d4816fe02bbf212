"""GET /api/protocol serves the schema generated from workers/protocol.py, and docs/protocol.md
documents exactly what it holds: every kind, and for each kind every field and no other."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def documented() -> dict[str, set[str]]:
    """kind → the fields its table lists, plus the fields every event has."""
    text = DOC.read_text()
    common = set(re.findall(r"^\| `(\w+)` \|", text.split("## Fields every event has")[1].split("\n## ")[0], re.M))
    kinds = {}
    for section in text.split("\n### `")[1:]:
        kind, body = section.split("`", 1)
        table = body.split("\n## ")[0]
        kinds[kind] = common | set(re.findall(r"^\| `(\w+)` \| (?:string|int|number|bool|object|list|preview)",
                                              table, re.M))
    return kinds


def test_the_schema_is_served(tmp_path):
    client = TestClient(create_app(Settings(DATA_DIR=tmp_path)))
    schema = client.get("/api/protocol").json()
    assert schema["title"] == "paralab event protocol v2"
    collective = schema["$defs"]["Collective"]
    assert {"bytes", "wire_bytes", "bucket", "t_call"} <= set(collective["properties"])
    assert collective["properties"]["bytes"]["type"] == "integer"
    assert {"kind", "rank", "t", "op", "bytes", "wire_bytes"} <= set(collective["required"])


def test_docs_list_every_kind_and_field_of_the_schema(tmp_path):
    schema = TestClient(create_app(Settings(DATA_DIR=tmp_path))).get("/api/protocol").json()
    in_schema = {d["properties"]["kind"]["const"]: set(d["properties"])
                 for d in schema["$defs"].values() if "kind" in d.get("properties", {})}
    in_docs = documented()
    assert set(in_docs) == set(in_schema)
    for kind, fields in in_schema.items():
        assert in_docs[kind] == fields, (kind, "missing", fields - in_docs[kind], "extra", in_docs[kind] - fields)
