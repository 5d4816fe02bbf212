"""No test, and no part of paralab, calls httpx's one-call functions (`httpx.get(url)`…): each builds a
client and a TLS context (~50 ms of CPU), and in a polling loop that kept a core busy. Tests use
tests/web.py's functions or one `httpx.Client`; paralab's own code one client (app/run_cli.py)."""

from __future__ import annotations

import re

from tests.conftest import REPO

ONE_CALL = re.compile(r"(?<!`)\bhttpx\.(get|post|put|patch|delete|request|stream)\(")


def test_nothing_calls_httpx_one_call_functions():
    sources = [p for folder in ("app", "workers", "tests") for p in (REPO / folder).rglob("*.py")]
    calls = [f"{path.relative_to(REPO)}:{number}" for path in sources
             for number, line in enumerate(path.read_text().splitlines(), 1) if ONE_CALL.search(line)]
    assert calls == [], f"use tests/web.py's functions (or one httpx.Client) instead: {calls}"
