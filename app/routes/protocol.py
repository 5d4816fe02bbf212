"""The event protocol: the JSON Schema of every event kind, generated from workers/protocol.py."""

from __future__ import annotations

from fastapi import APIRouter

from workers import protocol

router = APIRouter(prefix="/api/protocol", tags=["protocol"])


@router.get("")
def read_protocol() -> dict:
    """The event protocol's JSON Schema (one definition per `kind`)."""
    return protocol.json_schema()
