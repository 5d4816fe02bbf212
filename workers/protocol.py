"""The event protocol (v2) shared by the ranks and the server, without torch.

An event is one JSON object. Ranks send events as JSON lines over a byte stream (a TCP socket), after
a hello line that names the run, the rank and the run's token. The server adds `seq` and records it.
Two other message shapes travel on the same stream and are not events:

- a tensor blob, stored so that `GET /api/runs/{id}/tensors/{tid}` can return a full tensor later:
  a frame, the line `{"blob": id, "shape", "dtype", "nbytes": n}` then n raw bytes (the values,
  little-endian float32); `frame_length` says how many bytes follow a line. (The first format, one
  line with the values as base64 in `"data"`, is still read);
- a supervisor report, `{"supervisor": "exited", "exits": [{"rank", "code", "stopped"}], ...}`.

Each event kind has one constructor here, a dataclass (`Collective(...)`, `Metric(...)`, …) whose
`to_dict()` is what goes on the wire: every producer builds its events through them. The JSON
Schema (`json_schema()`, served at GET /api/protocol) and the server's check at ingest
(`problem()`) are generated from the same classes by pydantic. Dataclasses, not pydantic models, on
the ranks' side: the tracer builds two events per traced call and a dataclass costs about a
microsecond to build and turn into a dict (see docs/protocol.md).

See docs/protocol.md for every field.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import re
from typing import Any, Callable, Literal, Union

VERSION = 2

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

CollectiveOp = Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                       "all_to_all", "scatter", "gather", "barrier"]
Number = Union[float, str]   # a float, or "inf"/"nan" spelled out where JSON has no such number
Json = Any


MAX_BLOB_BYTES = 4 * MAX_BLOB_ELEMENTS


class BlobValues(bytes):
    """A tensor blob's values as little-endian float32 bytes, copied at the traced call; `encode`
    writes them raw after the blob's header line (a frame). Base64 in a JSON line, as blobs were
    first sent, cost a 64 Ki-value blob more than many a collective, on a rank and on the server."""

    __slots__ = ()


class Grid(list):
    """A preview's grid (lists of floats) with its JSON text already written (`text`, by
    `workers.preview`, for the whole grid at once): `encode` puts that text in the line instead of
    having `json` write 1,024 floats one by one (0.15–0.3 ms a grid, twice a traced call)."""

    __slots__ = ("text",)

    def __init__(self, rows: list, text: bytes):
        super().__init__(rows)
        self.text = text


class Encoded(dict):
    """A message with its line already written (`line`, what `encode` gives for it): the tracer
    writes each event once to check its size, and the channel sends that line rather than
    writing the event again. A copy: changing the message afterwards leaves the line stale."""

    __slots__ = ("line",)

    def __init__(self, message: dict, line: bytes):
        super().__init__(message)
        self.line = line


_GRID_MARK = "\x00grid"   # a placeholder no message holds: JSON writes it "\u0000grid"
_GRID_PLACE = re.compile(rb'"\\u0000grid(\d+)"')
_LINE = json.JSONEncoder(separators=(",", ":"), allow_nan=True)   # one encoder: `json.dumps` with options makes one a call


def encode(message: dict) -> bytes:
    """One message as it goes on the stream: a JSON line, compact; a blob of `BlobValues`, its frame."""
    if is_frame(message):
        return b"".join(frame(message))
    grids: list[Grid] = []
    if "tensors" in message or "tensor" in message:
        message = _marked(message, grids)
    line = _LINE.encode(message).encode()
    if grids:   # in one pass: a replace per grid rescans the line (500 grids: seconds)
        line = _GRID_PLACE.sub(lambda place: grids[int(place[1])].text, line)
    return line + b"\n"


def _marked(message: dict, grids: list) -> dict:
    """`message` with each preview's `Grid` replaced by a placeholder string (`grids` gets them, in order)."""
    def mark(preview):
        if not isinstance(preview, dict) or type(preview.get("preview")) is not Grid:
            return preview
        grids.append(preview["preview"])
        return {**preview, "preview": f"{_GRID_MARK}{len(grids) - 1}"}
    marked = dict(message)
    if isinstance(message.get("tensors"), list):
        marked["tensors"] = [mark(p) for p in message["tensors"]]
    if "tensor" in message:
        marked["tensor"] = mark(message["tensor"])
    return marked if grids else message


def frame(message: dict) -> tuple[bytes, bytes]:
    """A blob's frame in two parts, written one after the other: its header line (`nbytes` in
    place of `data`), then the raw values."""
    data = message["data"]
    header = {k: v for k, v in message.items() if k != "data"}
    header["nbytes"] = len(data)
    return _LINE.encode(header).encode() + b"\n", data


def is_frame(message: dict) -> bool:
    """A blob whose values are raw bytes (`BlobValues`): it goes as a frame, not a JSON line."""
    return type(message.get("data")) is BlobValues and "blob" in message


def frame_length(message: dict) -> int | None:
    """How many raw bytes follow this message's line on the stream: a blob frame's `nbytes`, or None
    for a message that is one line. Raises ValueError for a length no blob can have."""
    if "blob" not in message or "nbytes" not in message:
        return None
    n = message["nbytes"]
    if type(n) is not int or not 0 <= n <= MAX_BLOB_BYTES:
        raise ValueError(f"a blob's nbytes must be an integer from 0 to {MAX_BLOB_BYTES}, not {n!r}")
    return n


def decode_stream(data: bytes) -> list[dict]:
    """Every message in `data`, bytes as a stream carries them: JSON lines, and blob frames (a line,
    then its raw values). Raises ValueError for a line that is not a message or a frame cut short."""
    messages, at = [], 0
    while at < len(data):
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        line, at = data[at:end], end + 1
        if not line.strip():
            continue
        message = decode(line)
        if (length := frame_length(message)) is not None:
            if at + length > len(data):
                raise ValueError(f"blob {message['blob']!r} is cut short: {len(data) - at} of its {length} bytes")
            message["data"], at = data[at:at + length], at + length
        messages.append(message)
    return messages


def blob_values(blob: dict) -> bytes:
    """A blob's values as bytes, whichever format it came in (raw from a frame; base64 from the first
    format's `data`). Raises ValueError for base64 that is not."""
    data = blob.get("data", b"")
    if isinstance(data, str):
        return base64.b64decode(data, validate=True)
    return bytes(data)


def decode(line: bytes | str) -> dict:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    return message


# ---- the event kinds ---------------------------------------------------------------------------
EVENT_TYPES: dict[str, type] = {}


def _event(cls=None, *, extra: str = "forbid"):
    """Make `cls` an event constructor: a keyword-only dataclass whose `to_dict()` leaves out the
    optional fields (those with a default) that are None. `extra`: whether the server accepts fields
    the class does not name (pydantic's `extra`)."""
    def make(cls):
        cls.__pydantic_config__ = {"extra": extra, "strict": True}
        cls = dataclasses.dataclass(cls, slots=True, kw_only=True)
        cls.to_dict = _to_dict_for(dataclasses.fields(cls))
        EVENT_TYPES[cls.__dataclass_fields__["kind"].default] = cls
        return cls
    return make(cls) if cls is not None else make


def _to_dict_for(fields) -> Callable[[Any], dict]:
    """`to_dict` written out for one class's fields (the tracer calls it twice per traced call; a loop
    over the fields with getattr costs three times as much)."""
    required = [f.name for f in fields if f.default is dataclasses.MISSING or f.name == "kind"]
    optional = [f.name for f in fields if f.name not in required]
    lines = ["def to_dict(self):", '    """The event as it goes on the wire."""',
             "    out = {" + ", ".join(f"{name!r}: self.{name}" for name in required) + "}"]
    for name in optional:
        lines += [f"    if self.{name} is not None:", f"        out[{name!r}] = self.{name}"]
    lines.append("    return out")
    namespace: dict = {}
    exec("\n".join(lines), namespace)   # noqa: S102  code built from our own field names only
    return namespace["to_dict"]


class _Base:
    __slots__ = ()

    def to_dict(self) -> dict:   # replaced per class by _event
        raise NotImplementedError


@_event
class Run(_Base):
    """The server's own event: the run's status (rank null)."""
    kind: Literal["run"] = "run"
    rank: None = None
    t: float
    status: Literal["queued", "running", "paused", "done", "failed", "cancelled"]
    position: int | None = None
    backend: str | None = None
    stepping: bool | None = None
    error: dict[str, Json] | None = None


@_event
class Rank(_Base):
    """A rank came to the end of its program."""
    kind: Literal["rank"] = "rank"
    rank: int
    t: float
    status: Literal["finished"]


@_event
class Collective(_Base):
    """One end of a traced collective call."""
    kind: Literal["collective"] = "collective"
    phase: Literal["begin", "end"]
    rank: int
    t: float
    op: CollectiveOp
    group: str
    ranks: list[int]
    cseq: int
    shape: list[int]
    dtype: str | None
    bytes: int
    wire_bytes: int
    site: str | None
    reduce_op: str | None = None
    root: int | None = None
    label: str | None = None
    bucket: int | None = None
    torch_op: str | None = None                   # recorded at torch's dispatch level: the op (c10d.allreduce_)
    mesh: dict[str, Json] | None = None           # a DTensor's collective: its device mesh
    placements: dict[str, Json] | None = None     # … and the placements before and after
    tensors: list[dict[str, Json]] | None = None
    t_call: float | None = None
    duration: float | None = None
    algbw: float | None = None
    busbw: float | None = None
    error: str | None = None


@_event
class P2P(_Base):
    """One end of a traced send or receive."""
    kind: Literal["p2p"] = "p2p"
    phase: Literal["begin", "end"]
    rank: int
    t: float
    op: Literal["send", "recv"]
    group: str
    ranks: list[int]
    peer: int | None
    tag: int
    shape: list[int]
    dtype: str | None
    bytes: int
    wire_bytes: int
    site: str | None
    label: str | None = None
    chunk: int | None = None
    torch_op: str | None = None
    tensors: list[dict[str, Json]] | None = None
    t_call: float | None = None
    duration: float | None = None
    algbw: float | None = None
    busbw: float | None = None
    error: str | None = None


@_event
class Compute(_Base):
    """One end of a local computation's span."""
    kind: Literal["compute"] = "compute"
    phase: Literal["begin", "end"]
    rank: int
    t: float
    name: str
    stage: int | None = None
    microbatch: int | None = None


@_event
class Tensor(_Base):
    """A named tensor outside any collective."""
    kind: Literal["tensor"] = "tensor"
    rank: int
    t: float
    name: str
    tensor: dict[str, Json] | None = None
    place: dict[str, Json] | None = None
    origin: list[list[int]] | None = None


@_event
class Gate(_Base):
    """Step mode: a rank waits before a call, or was released into it."""
    kind: Literal["gate"] = "gate"
    phase: Literal["waiting", "released"]
    rank: int
    t: float
    call: Literal["collective", "p2p"]
    op: str | None = None
    group: str | None = None
    ranks: list[int] | None = None
    cseq: int | None = None
    peer: int | None = None
    tag: int | None = None
    label: str | None = None
    site: str | None = None
    shape: list[int] | None = None
    bytes: int | None = None


@_event
class Check(_Base):
    """A comparison with the single-process reference (or a judge's check of what a program did)."""
    kind: Literal["check"] = "check"
    rank: int
    t: float
    name: str
    passed: bool
    detail: str
    max_abs_err: Number | None = None
    atol: float | None = None
    rtol: float | None = None
    differences: list[dict[str, Json]] | None = None
    expected: list[Json] | None = None
    performed: list[Json] | None = None
    tensors: list[dict[str, Json]] | None = None


@_event(extra="ignore")
class Metric(_Base):
    """A number for the page, with the formula that predicts it."""
    kind: Literal["metric"] = "metric"
    rank: int
    t: float
    name: str
    value: Number
    unit: str
    formula: str | None = None
    expected: float | None = None
    psi: int | None = None
    bytes: int | None = None
    algbw: float | None = None
    busbw: float | None = None
    predicted: float | None = None
    elements_sent: int | None = None


@_event
class Log(_Base):
    """A message from a rank; an error has where it was raised."""
    kind: Literal["log"] = "log"
    rank: int
    t: float
    level: str
    message: str
    site: str | None = None
    traceback: str | None = None
    output: str | None = None          # level "output" (the server's): the tail of what the rank printed
    output_bytes: int | None = None    # how much it printed in all
    dropped_bytes: int | None = None   # how much of that is not kept


@_event
class Schedule(_Base):
    """pp: the ideal grid of the schedule the run follows (rank 0)."""
    kind: Literal["schedule"] = "schedule"
    rank: int
    t: float
    schedule: str
    grid: list[Json]
    notes: list[Json] | str | None = None
    placement: list[Json] | None = None
    bubble_fraction: float | None = None
    slow_stage: int | None = None
    slow_factor: float | None = None


@_event
class Topology(_Base):
    """three_d: the rank grid (rank 0)."""
    kind: Literal["topology"] = "topology"
    rank: int
    t: float
    tp: int
    pp: int
    dp: int
    groups: dict[str, list[list[int]]]
    coordinates: list[list[int]]



@_event
class Host(_Base):
    """The server's own event, for a job started outside it (`paralab trace`): one torchrun node
    (an agent on a host) whose ranks joined, with the clock the server puts their times on. For a run
    on a Ray cluster (app/cluster.py): one of the run's nodes and its ranks there."""
    kind: Literal["host"] = "host"
    rank: None = None
    t: float
    node: int                   # torchrun's node rank (GROUP_RANK)
    host: str                   # the host's name
    ranks: list[int]            # the global ranks of this node that have joined so far
    offset_s: float             # server clock minus this host's clock, measured when its first rank joined
    skew_s: float               # how far that offset may be off: half the best round trip

KINDS = tuple(EVENT_TYPES)


@dataclasses.dataclass(slots=True, kw_only=True)
class SupervisorReport:
    """Not an event: the supervisor's word, when every rank has ended, on how each ended (`exits`:
    `{rank, code, stopped}`; `code` < 0 is a signal) and whether the wall-clock limit was passed."""
    exits: list[dict[str, Json]]
    timed_out: bool
    output: list[dict[str, Json]] | None = None   # per rank that printed: {rank, bytes, tail}
    node: str | None = None     # on a Ray cluster: the node whose ranks these are (each node reports its own)

    def to_dict(self) -> dict:
        report = {"supervisor": "exited", "exits": self.exits, "timed_out": self.timed_out, "output": self.output or []}
        return {**report, "node": self.node} if self.node else report


def event(kind: str, **fields) -> dict:
    """The event of `kind` with `fields`, checked by its constructor, as a dict."""
    if kind not in EVENT_TYPES:
        raise ValueError(f"unknown event kind {kind!r}: the kinds are {', '.join(KINDS)}")
    return EVENT_TYPES[kind](**fields).to_dict()


# ---- schema and validation (pydantic, built on first use) ---------------------------------------
@functools.cache
def _adapter():
    from typing import Annotated

    from pydantic import Field, TypeAdapter
    return TypeAdapter(Annotated[Union[tuple(EVENT_TYPES.values())], Field(discriminator="kind")])


def json_schema() -> dict:
    """Protocol v2's JSON Schema: one definition per event kind, `kind` telling them apart."""
    schema = _adapter().json_schema()
    for definition in schema["$defs"].values():
        if "kind" in definition.get("properties", {}):   # the discriminator: always there
            definition["required"] = ["kind", *definition.get("required", [])]
    schema["title"] = f"paralab event protocol v{VERSION}"
    schema["description"] = ("One event, as a rank sends it; the server adds `seq` (run-wide order, 1, 2, 3, …) "
                             "when it records it.")
    return schema


def problem(message: dict, line: bytes | None = None) -> str | None:
    """What is wrong with an event a rank sent, naming the field, as "rank N sent …" goes on
    ("a collective event whose field `bytes` …"); None when it is well formed. `line`: the JSON
    line `message` was decoded from, when nothing in it has changed since: checked as it came
    (writing the event again to check it cost twice the check itself)."""
    from pydantic import ValidationError
    if "seq" in message:
        return "an event with the field `seq`, which is the server's to assign"
    try:
        _adapter().validate_json(line if line is not None else json.dumps(message, allow_nan=True))
    except ValidationError as exc:
        error = exc.errors()[0]
        kind = message.get("kind")
        where = ".".join(str(part) for part in error["loc"][1:])
        if not where:
            return f"an event whose field `kind` is {kind!r}, not one of the kinds ({', '.join(KINDS)})"
        if error["type"] == "unexpected_keyword_argument":
            return f"a {kind} event with the field `{where}`, which a {kind} event does not have"
        if error["type"] == "missing":
            return f"a {kind} event without the field `{where}`"
        return f"a {kind} event whose field `{where}` is wrong: {error['msg']}"
    return None
