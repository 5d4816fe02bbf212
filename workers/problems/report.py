"""What a rank sends the judge: its named outputs and the communication it performed, as JSON
(never pickle: the judge reads what learner code may have written), and the checks on the judge's
side that refuse anything else.

    {"outputs": {"output Y": {"shape": [8, 16], "dtype": "float32", "values": [...]},
                 "1F1B order": ["0F0", "0F1", ...], "activations held": 3},
     "calls": [{"kind": "collective", "op": "all_reduce", "group": "tp", "shape": [8, 16], "peer": null,
                "dtype": "float32"}, ...],
     "error": "ZeroDivisionError: division by zero (your line 7: 1 / 0)"}      (only when it failed)

Torch-free to import; `encode` and `decode` import torch when called.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

MAX_REPORT_BYTES = 1 << 20         # per rank; what a harness reports is a few kilobytes
MAX_ELEMENTS = 1 << 16             # per tensor
MAX_CALLS = 4096
MAX_TEXT = 2000                    # an error message, a fact's string
DTYPES = ("float32", "float64", "int64")


class ReportError(ValueError):
    """A report that is not what a rank of the harness sends."""


@dataclass
class Report:
    outputs: dict[str, object] = field(default_factory=dict)   # name → tensor, or a fact (str, number, list)
    calls: list[dict] = field(default_factory=list)             # the begin of each traced call, in order
    error: str | None = None
    hung: bool = False                                          # stopped by the judge inside a call


def encode(outputs: dict, calls: list[dict], error: str | None = None, trace: list[dict] | None = None,
           hung: bool = False, events: list[dict] | None = None) -> bytes:
    """The report of one rank (tensors become shape, dtype and values). `trace` (each call begun and
    ended, with the learner's line) and `hung` (written when the runner found the rank stuck) serve
    the hang report only, `events` (the rank's protocol events) the judged run's recording
    (workers/judge_events.py): no check reads them."""
    import torch

    def value(v):
        if isinstance(v, torch.Tensor):
            v = v.detach().cpu()
            dtype = str(v.dtype).removeprefix("torch.")
            if dtype not in DTYPES:
                v, dtype = v.float(), "float32"
            return {"shape": list(v.shape), "dtype": dtype, "values": v.flatten().tolist()}
        return v

    body = {"outputs": {name: value(v) for name, v in outputs.items()},
            "calls": [{k: c.get(k) for k in ("kind", "op", "group", "shape", "peer", "dtype")} for c in calls]}
    if error is not None:
        body["error"] = error[:MAX_TEXT]
    if trace is not None:
        body["trace"] = trace
    if hung:
        body["hung"] = True
    if events is not None:
        body["events"] = events
    return json.dumps(body).encode()


def decode(data: bytes) -> Report:
    """A rank's report, every field checked; ReportError says what is wrong."""
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(f"it is over {MAX_REPORT_BYTES} bytes")
    try:
        body = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ReportError(f"it is not JSON ({str(exc)[:200]})") from None
    if not isinstance(body, dict) or not isinstance(body.get("outputs"), dict) or not isinstance(body.get("calls"), list):
        raise ReportError("it lacks its outputs or its calls")
    error = body.get("error")
    if error is not None and not isinstance(error, str):
        raise ReportError("its error is not text")
    if len(body["calls"]) > MAX_CALLS:
        raise ReportError(f"it lists over {MAX_CALLS} calls")
    return Report({_text(name): _output(name, v) for name, v in body["outputs"].items()},
                  [_call(c) for c in body["calls"]], error and error[:MAX_TEXT], body.get("hung") is True)


def _text(value) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ReportError(f"{str(value)[:80]!r} is not a short text")
    return value


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _output(name: str, value):
    if isinstance(value, dict):
        return _tensor(name, value)
    if isinstance(value, str):
        return _text(value)
    if _number(value):
        return value
    if isinstance(value, list) and len(value) <= MAX_CALLS and all(isinstance(v, str) or _number(v) for v in value):
        return [_text(v) if isinstance(v, str) else v for v in value]
    raise ReportError(f"output {name!r} is neither a tensor nor a fact")


def _tensor(name: str, value: dict):
    import torch

    shape, dtype, values = value.get("shape"), value.get("dtype"), value.get("values")
    if dtype not in DTYPES:
        raise ReportError(f"output {name!r}: dtype {str(dtype)[:20]!r} is not one of {', '.join(DTYPES)}")
    if not isinstance(shape, list) or len(shape) > 8 or not all(isinstance(d, int) and 0 <= d <= MAX_ELEMENTS for d in shape):
        raise ReportError(f"output {name!r}: its shape is not a list of sizes")
    if not isinstance(values, list) or len(values) != math.prod(shape) or len(values) > MAX_ELEMENTS \
            or not all(_number(v) for v in values):
        raise ReportError(f"output {name!r}: its values do not fill its shape {shape}")
    return torch.tensor(values, dtype=getattr(torch, dtype)).reshape(shape)


def _call(call) -> dict:
    if not isinstance(call, dict) or call.get("kind") not in ("collective", "p2p"):
        raise ReportError("a call is not a collective or a send/recv")
    shape, peer = call.get("shape"), call.get("peer")
    if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape) or not (peer is None or isinstance(peer, int)):
        raise ReportError("a call's shape or peer is malformed")
    return {"kind": call["kind"], "op": _text(call.get("op")), "group": _text(call.get("group") or ""),
            "shape": shape, "peer": peer, "dtype": _text(call.get("dtype") or "float32")}
