"""The event protocol (v1) shared by the ranks and the server, without torch.

An event is one JSON object. Ranks send events as JSON lines over a byte stream (a TCP socket), after
a hello line that names the run, the rank and the run's token. The server adds `seq` and records it.
Two other message shapes travel on the same stream and are not events:

- a tensor blob, `{"blob": id, "shape", "dtype", "data": base64 of the little-endian values}`,
  stored so that `GET /api/runs/{id}/tensors/{tid}` can return a full tensor later;
- a supervisor report, `{"supervisor": "exited", "exits": [{"rank", "code", "signal"}], ...}`.

See docs/protocol.md for every field.
"""

from __future__ import annotations

import json

VERSION = 1

KINDS = ("run", "rank", "collective", "p2p", "compute", "tensor", "gate", "check", "metric", "log", "schedule",
         "topology")
RUN_STATUSES = ("queued", "running", "paused", "done", "failed", "cancelled")
FINAL_STATUSES = ("done", "failed", "cancelled")
COLLECTIVE_OPS = (
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
    "all_to_all", "scatter", "gather", "barrier",
)
P2P_OPS = ("send", "recv")

MAX_EVENT_BYTES = 16 * 1024
SERVER_FIELDS_BYTES = 32   # room a rank leaves in each event for the `seq` the server adds
PREVIEW_SIDE = 32          # a preview is at most PREVIEW_SIDE x PREVIEW_SIDE values
MAX_BLOB_ELEMENTS = 1 << 16  # full tensors above this size are not kept


def encode(message: dict) -> bytes:
    """One message as a JSON line, compact."""
    return json.dumps(message, separators=(",", ":"), allow_nan=True).encode() + b"\n"


def decode(line: bytes | str) -> dict:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    return message
