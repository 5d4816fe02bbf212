"""The one place that wraps `torch.distributed`: every collective and point-to-point call becomes a
`begin` and an `end` event, whether a lesson calls it through `workers.comm` or directly.

The wrappers replace the names in both `torch.distributed` and `torch.distributed.distributed_c10d`:
`P2POp` and `batch_isend_irecv` compare ops with c10d's own `isend`/`irecv`, so both must agree.
A call made from inside another traced call (c10d's deprecated aliases call their replacements)
passes through untraced, so each user-visible call is one pair of events.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import sys
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from workers import preview as previews
from workers.cost_model import bandwidths, wire_bytes
from workers.protocol import MAX_EVENT_BYTES, P2P, PREVIEW_SIDE, SERVER_FIELDS_BYTES, Collective, Encoded, Tensor, encode
from workers.site_path import shown_path

_SKIPPED_FILES = {str(Path(__file__).resolve()), str(Path(__file__).resolve().parent / "comm.py"),
                  str(Path(__file__).resolve().parent / "dispatch_trace.py")}
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)
_DECORATOR_MODULES = {"typing_extensions", "warnings"}   # @deprecated wraps c10d's private aliases


@dataclass(frozen=True)
class OpSpec:
    """How to read one torch.distributed function's arguments."""

    kind: str                      # "collective" or "p2p"
    op: str                        # the protocol's op name
    inputs: tuple[str, ...] = ()   # argument names whose tensors go in
    outputs: tuple[str, ...] = ()  # argument names whose tensors come out
    peer: str | None = None        # p2p: the argument naming the other rank
    root: str | None = None        # broadcast/reduce/scatter/gather: the root rank's argument
    size_from: str = "inputs"      # which side is the collective's "size" (nccl-tests' convention)


SPECS: dict[str, OpSpec] = {
    "all_reduce": OpSpec("collective", "all_reduce", ("tensor",), ("tensor",)),
    "all_gather": OpSpec("collective", "all_gather", ("tensor",), ("tensor_list",), size_from="outputs"),
    "all_gather_into_tensor": OpSpec("collective", "all_gather", ("input_tensor",), ("output_tensor",), size_from="outputs"),
    "all_gather_single": OpSpec("collective", "all_gather", ("input_tensor",), ("output_tensor",), size_from="outputs"),
    "reduce_scatter": OpSpec("collective", "reduce_scatter", ("input_list",), ("output",)),
    "reduce_scatter_tensor": OpSpec("collective", "reduce_scatter", ("input",), ("output",)),
    "reduce_scatter_single": OpSpec("collective", "reduce_scatter", ("input",), ("output",)),
    "broadcast": OpSpec("collective", "broadcast", ("tensor",), ("tensor",), root="src"),
    "reduce": OpSpec("collective", "reduce", ("tensor",), ("tensor",), root="dst"),
    "all_to_all": OpSpec("collective", "all_to_all", ("input_tensor_list",), ("output_tensor_list",)),
    "all_to_all_single": OpSpec("collective", "all_to_all", ("input",), ("output",)),
    "scatter": OpSpec("collective", "scatter", ("scatter_list",), ("tensor",), root="src", size_from="outputs"),
    "gather": OpSpec("collective", "gather", ("tensor",), ("gather_list",), root="dst"),
    "barrier": OpSpec("collective", "barrier"),
    "send": OpSpec("p2p", "send", ("tensor",), (), peer="dst"),
    "isend": OpSpec("p2p", "send", ("tensor",), (), peer="dst"),
    "recv": OpSpec("p2p", "recv", (), ("tensor",), peer="src", size_from="outputs"),
    "irecv": OpSpec("p2p", "recv", (), ("tensor",), peer="src", size_from="outputs"),
}
ASYNC_ALWAYS = {"isend", "irecv"}


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def _nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


class TracedWork:
    """Stands in for a `Work` handle: the call's `end` event is sent when the work is waited on."""

    def __init__(self, work: Any, finish: Callable[[], None]):
        self._work = work
        self._finish = finish
        self._finished = False

    def wait(self, *args, **kwargs):
        result = self._work.wait(*args, **kwargs)
        self._end()
        return result

    def is_completed(self) -> bool:
        done = self._work.is_completed()
        if done:
            self._end()
        return done

    def _end(self):
        if not self._finished:
            self._finished = True
            self._finish()

    def __getattr__(self, name):
        return getattr(self._work, name)


class Tracer:
    """Turns this rank's torch.distributed calls into protocol events.

    `emit` receives each message (an event or a tensor blob); `clock` gives seconds since the run
    started; `before_call` (for the step-mode gates) runs before each traced call with its event.
    Everything is made at the call, on the calling thread: a `begin` before the call starts (a
    rank that gloo aborts inside the collective has said which it was), the `end` when it returns.
    """

    def __init__(self, emit: Callable[[dict], None], rank: int, clock: Callable[[], float],
                 before_call: Callable[[dict], None] | None = None):
        self.emit = emit
        self.rank = rank
        self.clock = clock
        self.before_call = before_call
        self._group_names: dict[Any, str] = {}
        self._cseq: Counter[str] = Counter()
        self._tensor_ids = itertools.count()
        self._local = threading.local()
        self._originals: dict[tuple[Any, str], Any] = {}
        self._dispatch = None   # the dispatch level (workers/dispatch_trace.py), while installed

    # ---- groups and labels -------------------------------------------------------------------
    def name_group(self, group: Any, name: str) -> None:
        """Give a process group its teaching name (`tp`, `pp`, `dp`…)."""
        self._group_names[self._resolve(group)] = name

    def group_name(self, group: Any) -> str:
        pg = self._resolve(group)
        if pg not in self._group_names:
            self._group_names[pg] = "world" if pg is c10d._get_default_group() else f"group{len(self._group_names)}"
        return self._group_names[pg]

    def set_label(self, label: str | None, fields: dict | None = None) -> None:
        """The teaching label for the next traced call on this thread (used by `workers.comm`), and
        `fields` its event carries besides (`bucket`, `chunk`: see workers/protocol.py)."""
        self._local.label = label
        self._local.fields = fields

    @staticmethod
    def _resolve(group: Any) -> Any:
        return c10d._get_default_group() if group is None else group

    @contextmanager
    def paused(self):
        """Calls made inside pass through untraced (as nested calls do)."""
        previous = getattr(self._local, "inside", False)
        self._local.inside = True
        try:
            yield
        finally:
            self._local.inside = previous

    # ---- snapshots -----------------------------------------------------------------------
    def keep(self, tensor: torch.Tensor, tensor_id: str | None = None) -> str | None:
        """Send the full tensor once as a blob; its id (`tensor_id`, or a new one), or None when it
        is too large to keep."""
        tensor_id = tensor_id or self._new_tensor_id()
        full = previews.blob(tensor, tensor_id)
        if full is None:
            return None
        self.emit(full)
        return tensor_id

    def _new_tensor_id(self) -> str:
        return f"r{self.rank}t{next(self._tensor_ids)}"

    def snapshot(self, name: str, tensor: torch.Tensor, **fields) -> None:
        """A `tensor` event: a named tensor outside any collective (`fields` adds e.g. `place`)."""
        event = Tensor(rank=self.rank, t=self.clock(), name=name, **fields).to_dict()
        event["tensor"] = self.previews([tensor], [name], event)[0]
        self.emit(event)

    # ---- installing the wrappers -----------------------------------------------------------------
    def install(self, dispatch: bool = True) -> None:
        """Trace from now on: the `dist.*` functions, and (`dispatch`) every collective op torch
        dispatches that no `dist.*` call made (DDP, FSDP2, DTensor, functional collectives)."""
        if dispatch and self._dispatch is None:
            from workers.dispatch_trace import DispatchLevel
            level = DispatchLevel(self)
            level.install()   # first: it refuses when another tracer's is installed
            self._dispatch = level
        for name, spec in SPECS.items():
            self._patch(name, self._wrap(name, spec, getattr(c10d, name)))
        self._patch("batch_isend_irecv", self._wrap_batch(c10d.batch_isend_irecv))

    def settle(self) -> None:
        """Wait for the ends the backend's threads still owe (DDP's all-reduces end in gloo's thread)."""
        if self._dispatch is not None:
            self._dispatch.settle()

    def uninstall(self) -> None:
        for (module, name), original in self._originals.items():
            setattr(module, name, original)
        self._originals.clear()
        if self._dispatch is not None:
            self._dispatch.uninstall()
            self._dispatch = None

    def _patch(self, name: str, wrapper: Callable) -> None:
        for module in (dist, c10d):
            if hasattr(module, name):
                self._originals.setdefault((module, name), getattr(module, name))
                setattr(module, name, wrapper)

    def _wrap(self, name: str, spec: OpSpec, original: Callable) -> Callable:
        arguments = _binder_of(original)
        tracer = self

        def traced(*args, **kwargs):
            if getattr(tracer._local, "inside", False):
                return original(*args, **kwargs)
            call = arguments(args, kwargs)
            event = tracer._begin_event(spec, call, caller=sys._getframe(1))
            tracer._local.inside = True
            try:
                t_call = tracer.clock()   # the call alone is timed: previews are made before and after
                result = original(*args, **kwargs)
                t_return = tracer.clock()
            except BaseException as exc:
                tracer._end(event, spec, call, t_call, tracer.clock(), error=exc)
                raise
            finally:
                tracer._local.inside = False
            if name in ASYNC_ALWAYS or call.get("async_op"):
                if result is None:   # this rank is not in the group
                    return result
                return TracedWork(result, lambda: tracer._end(tracer._learn_source(event, spec, call, result), spec,
                                                              call, t_call))
            if spec.op == "recv" and event.get("peer") is None and isinstance(result, int):
                event["peer"] = result
            tracer._end(event, spec, call, t_call, t_return)
            return result

        traced.__wrapped__ = original
        traced.__name__ = name
        traced.__doc__ = original.__doc__
        return traced

    def _wrap_batch(self, original: Callable) -> Callable:
        tracer = self

        def batch_isend_irecv(p2p_op_list):
            if getattr(tracer._local, "inside", False):
                return original(p2p_op_list)
            caller = sys._getframe(1)
            begun = []
            for p2p in p2p_op_list:
                spec = SPECS["isend" if p2p.op is c10d.isend else "irecv"]
                call = {"tensor": p2p.tensor, "group": p2p.group, "tag": p2p.tag, spec.peer: p2p.peer}
                begun.append((tracer._begin_event(spec, call, caller), spec, call))
            tracer._local.inside = True
            try:
                t_call = tracer.clock()
                works = original(p2p_op_list)
            finally:
                tracer._local.inside = False
            if len(works) != len(begun):   # coalesced backends return one work for the whole batch
                def finish_all():
                    for event, spec, call in begun:
                        tracer._end(event, spec, call, t_call)
                return [TracedWork(w, finish_all if i == len(works) - 1 else (lambda: None))
                        for i, w in enumerate(works)]
            return [TracedWork(w, (lambda b=b: tracer._end(*b, t_call))) for w, b in zip(works, begun)]

        batch_isend_irecv.__wrapped__ = original
        return batch_isend_irecv

    # ---- events ----------------------------------------------------------------------------
    def _begin_event(self, spec: OpSpec, call: dict, caller, extra: dict | None = None) -> dict:
        """The call's `begin` event (sent after the step-mode gate lets it go); `extra`: fields the
        dispatch level adds (`torch_op`, a DTensor's `mesh` and `placements`)."""
        group = call.get("group")
        group_name = self.group_name(group)
        inputs = [t for name in spec.inputs for t in _tensors(call.get(name))]
        outputs = [t for name in spec.outputs for t in _tensors(call.get(name))]
        sized = outputs if spec.size_from == "outputs" else inputs
        primary = (inputs or outputs or [None])[0]
        ranks = dist.get_process_group_ranks(self._resolve(group))
        size = _nbytes(sized) if spec.op != "all_to_all" else _nbytes(inputs)
        if spec.op in ("scatter", "gather"):   # nccl-tests' size: every rank's chunk together, on every rank
            size = _nbytes(_tensors(call.get("tensor"))) * len(ranks)
        common = dict(
            phase="begin", rank=self.rank, t=0.0, op=spec.op, group=group_name, ranks=ranks,
            shape=list(primary.shape) if primary is not None else [],
            dtype=str(primary.dtype).removeprefix("torch.") if primary is not None else None,
            bytes=size, wire_bytes=wire_bytes(spec.op, len(ranks), size), site=self._site(caller),
            label=getattr(self._local, "label", None) or None, **(getattr(self._local, "fields", None) or {}),
            **(extra or {}))
        self._local.label = self._local.fields = None
        if spec.kind == "collective":
            self._cseq[group_name] += 1
            event = Collective(cseq=self._cseq[group_name], root=self._root(spec, call),
                               reduce_op=_reduce_op_name(call["op"]) if "op" in call else None, **common).to_dict()
        else:
            peer = call.get(spec.peer)
            group_peer = call.get(f"group_{spec.peer}")   # group_dst / group_src: the peer by its rank
            if peer is None and group_peer is not None:    # in `group` (torch's pipelining)
                peer = dist.get_global_rank(self._resolve(group), group_peer)
            event = P2P(peer=peer, tag=call.get("tag", 0), **common).to_dict()
        if self.before_call is not None:
            self.before_call(event)
        event["t"] = self.clock()
        self._emit_with_previews(event, inputs, _names(spec.inputs, inputs))
        return event

    def _root(self, spec: OpSpec, call: dict) -> int | None:
        """The root's global rank (given as `src`/`dst`, or by its rank in the group: `group_src`)."""
        if spec.root is None:
            return None
        root, group_root = call.get(spec.root), call.get(f"group_{spec.root}")
        if root is None and group_root is not None:
            root = dist.get_global_rank(self._resolve(call.get("group")), group_root)
        return root

    def _learn_source(self, event: dict, spec: OpSpec, call: dict, work) -> dict:
        """A receive from any source learns its peer (a global rank) when it completes."""
        if spec.op == "recv" and event.get("peer") is None:
            try:
                event["peer"] = dist.get_global_rank(self._resolve(call.get("group")), work._source_rank())
            except RuntimeError:       # a backend that cannot say
                pass
        return event

    def _end(self, begin: dict, spec: OpSpec, call: dict, t_call: float, t_return: float | None = None,
             error: BaseException | None = None) -> None:
        """The call's `end` event. `t_call`…`t_return` (now, when None: a work waited on) is the
        original call alone, which `duration` and the bandwidths are taken from."""
        t_return = self.clock() if t_return is None else t_return
        outputs = [t for name in spec.outputs for t in _tensors(call.get(name))]
        fields = {key: begin[key] for key in _END_FIELDS if key in begin}
        fields.update(phase="end", t=t_return, t_call=t_call, duration=t_return - t_call)
        if error is None and begin["bytes"]:
            fields["algbw"], fields["busbw"] = bandwidths(spec.op, len(begin["ranks"]), begin["bytes"], fields["duration"])
        if error is not None:
            fields["error"] = f"{type(error).__name__}: {error}"
        event = (Collective if spec.kind == "collective" else P2P)(**fields).to_dict()
        if error is None:
            self._emit_with_previews(event, outputs, _names(spec.outputs, outputs))
        else:
            self.emit(event)

    def _emit_with_previews(self, event: dict, tensors: list[torch.Tensor], names: list[str]) -> None:
        """Send `event` with its tensors' previews; in the common case the line written to check
        its size is the one sent (`Encoded`: a copy, so the tracer may still change `event`)."""
        shown, line = self._previews_and_line(tensors, names, event)
        event["tensors"] = shown
        self.emit(Encoded(event, line) if line is not None else event)

    def previews(self, tensors: list[torch.Tensor], names: list[str], event: dict) -> list[dict]:
        """Previews that keep the whole event under MAX_EVENT_BYTES once the server has numbered
        it, coarser grids if needed."""
        return self._previews_and_line(tensors, names, event)[0]

    def _previews_and_line(self, tensors: list[torch.Tensor], names: list[str],
                           event: dict) -> tuple[list[dict], bytes | None]:
        ids = [self.keep(t) for t in tensors]
        return self._fitting(lambda side: [previews.preview(t, n, i, side) for t, n, i in zip(tensors, names, ids)],
                             event)

    @staticmethod
    def _fitting(make: Callable[[int], list[dict]], event: dict) -> tuple[list[dict], bytes | None]:
        """The previews `make(side)` gives at the largest side that keeps the event within bounds,
        and the event's line with them as `tensors` when it was written to check its size (None when
        it was not: a coarser grid, or none)."""
        limit = MAX_EVENT_BYTES - SERVER_FIELDS_BYTES
        side = PREVIEW_SIDE
        shown = make(side)
        line = encode({**event, "tensors": shown})   # grids' text written already: cheap to write whole
        if len(line) <= limit:
            return shown, line
        stats_only = [{**p, "preview": [], "exact": False} for p in shown]
        bare = len(encode({**event, "tensors": stats_only}))
        if bare > limit:    # too many tensors even for their statistics
            return [], None
        # a grid's text shrinks at most with its area: the sides that cannot fit are not made
        while side > 1 and bare + (len(line) - bare) * (side / PREVIEW_SIDE) ** 2 > limit:
            side //= 2
        while True:
            shown = make(side)
            if len(encode({**event, "tensors": shown})) <= limit:
                return shown, None
            if side == 1:   # too many tensors for grids: statistics only
                return [{**p, "preview": [], "exact": False} for p in shown], None
            side //= 2

    @staticmethod
    def _site(frame) -> str | None:
        """`file:line` of the innermost caller that is neither torch nor the tracer."""
        while frame is not None:
            shown = _shown_path(frame.f_code.co_filename)
            if shown is not None and frame.f_globals.get("__name__") not in _DECORATOR_MODULES:
                return f"{shown}:{frame.f_lineno}"
            frame = frame.f_back
        return None


@functools.lru_cache(maxsize=256)
def _binder_of(function: Callable) -> Callable[[tuple, dict], dict]:
    """`_binder` of a function's signature, once per process (the warm launcher's: its ranks install
    the wrappers on every traced run; `inspect.signature` of the 18 functions costs 1.5–2 ms)."""
    return _binder(inspect.signature(function))


def _binder(signature: inspect.Signature) -> Callable[[tuple, dict], dict]:
    """The call's arguments by name, defaults filled in, as `signature.bind` + `apply_defaults` give
    them; for a signature of plain parameters, a dict built directly (a tenth of bind's cost, paid
    on every traced call). Anything unusual (too many arguments, an unknown name) goes to `bind`,
    which raises what it always did."""
    params = list(signature.parameters.values())
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return lambda args, kwargs: _bound(signature, args, kwargs)
    names = [p.name for p in params]
    defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}

    def arguments(args: tuple, kwargs: dict) -> dict:
        if len(args) > len(names) or (kwargs and not kwargs.keys() <= set(names[len(args):])):
            return _bound(signature, args, kwargs)
        call = dict(zip(names, args))
        call.update(kwargs)
        if len(call) < len(names):
            for key in names:
                if key not in call:
                    if key not in defaults:
                        return _bound(signature, args, kwargs)   # a required argument missing: bind says so
                    call[key] = defaults[key]
            call = {key: call[key] for key in names}   # in the signature's order, as bind gives
        return call
    return arguments


def _bound(signature: inspect.Signature, args: tuple, kwargs: dict) -> dict:
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


@functools.lru_cache(maxsize=4096)
def _shown_path(filename: str) -> str | None:
    """How a site names a file (relative to the repository when inside it), or None for the
    tracer's and torch's own files. Cached: resolving a path costs system calls, and a training step
    makes many calls from the same few files."""
    if filename in _SKIPPED_FILES or filename.startswith(_TORCH_DIR):
        return None
    return shown_path(filename)


_END_FIELDS = ("rank", "op", "group", "ranks", "cseq", "reduce_op", "root", "peer", "tag", "shape", "dtype",
               "bytes", "wire_bytes", "label", "bucket", "chunk", "site", "torch_op", "mesh", "placements")


def _names(arguments: tuple[str, ...], tensors: list) -> list[str]:
    label = arguments[0] if arguments else "tensor"
    return [label] if len(tensors) == 1 else [f"{label}[{i}]" for i in range(len(tensors))]


def _reduce_op_name(op: Any) -> str:
    text = str(op)
    return text.rsplit(".", 1)[-1].lower()


for _name in SPECS:   # at import, in the warm process: a traced rank reuses them
    _binder_of(getattr(c10d, _name))
