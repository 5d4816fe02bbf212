"""Labelled collectives for lesson code: `comm.all_reduce(x, group=tp, label="g: sum the partials")`.

Each function is a thin veneer over `torch.distributed` — the tracer records the call as it records
any direct `dist.*` call — that adds the teaching label shown in the page and returns the result
tensor, so lesson code reads like the maths. `fields` adds protocol fields to the call's events
(`{"bucket": 2}`, `{"chunk": 1}`: see workers/protocol.py).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from workers import tracer as _tracer_module

_active: "_tracer_module.Tracer | None" = None


def use_tracer(tracer: "_tracer_module.Tracer | None") -> None:
    """Route labels to this rank's tracer (the rank runtime calls this once)."""
    global _active
    _active = tracer


def _label(label: str | None, fields: dict | None = None) -> None:
    if _active is not None and (label or fields):
        _active.set_label(label, fields)


def all_reduce(tensor: torch.Tensor, group=None, label: str | None = None,
               op=dist.ReduceOp.SUM, fields: dict | None = None) -> torch.Tensor:
    """Every rank ends with the element-wise reduction (sum by default) of all ranks' tensors."""
    _label(label, fields)
    dist.all_reduce(tensor, op=op, group=group)
    return tensor


def all_reduce_start(tensor: torch.Tensor, group=None, label: str | None = None, op=dist.ReduceOp.SUM,
                     fields: dict | None = None):
    """Launch an all-reduce in the background (in place); returns the work to `wait()` on."""
    _label(label, fields)
    return dist.all_reduce(tensor, op=op, group=group, async_op=True)


def all_gather(tensor: torch.Tensor, group=None, label: str | None = None, fields: dict | None = None) -> torch.Tensor:
    """Concatenate every rank's tensor along dim 0, in rank order: [n*k, ...] from [k, ...]."""
    world = dist.get_world_size(group)
    out = tensor.new_empty(tensor.shape[0] * world, *tensor.shape[1:])
    _label(label, fields)
    dist.all_gather_single(out, tensor.contiguous(), group=group)
    return out


def reduce_scatter(tensor: torch.Tensor, group=None, label: str | None = None,
                   op=dist.ReduceOp.SUM, fields: dict | None = None) -> torch.Tensor:
    """Sum across ranks, then keep this rank's 1/n slice of dim 0: [k, ...] from [n*k, ...]."""
    world = dist.get_world_size(group)
    out = tensor.new_empty(tensor.shape[0] // world, *tensor.shape[1:])
    _label(label, fields)
    dist.reduce_scatter_single(out, tensor.contiguous(), op=op, group=group)
    return out


def all_to_all_single(tensor: torch.Tensor, send_splits: list[int] | None = None,
                      recv_splits: list[int] | None = None, group=None, label: str | None = None,
                      fields: dict | None = None) -> torch.Tensor:
    """Rank r sends the next send_splits[j] rows of dim 0 to rank j and receives recv_splits[j] rows
    from rank j, in rank order: [Σ recv, ...] from [Σ send, ...] (equal 1/n chunks when both are None)."""
    rows = sum(recv_splits) if recv_splits is not None else tensor.shape[0]
    out = tensor.new_empty(rows, *tensor.shape[1:])
    _label(label, fields)
    dist.all_to_all_single(out, tensor.contiguous(), output_split_sizes=recv_splits,
                           input_split_sizes=send_splits, group=group)
    return out


def isend(tensor: torch.Tensor, dst: int, group=None, label: str | None = None, tag: int = 0,
          fields: dict | None = None):
    """Start sending to rank `dst`; returns the work to `wait()` on."""
    _label(label, fields)
    return dist.isend(tensor, dst=dst, group=group, tag=tag)


def recv(tensor: torch.Tensor, src: int, group=None, label: str | None = None, tag: int = 0,
         fields: dict | None = None) -> torch.Tensor:
    """Receive from rank `src` into `tensor` (blocking); returns it."""
    _label(label, fields)
    dist.recv(tensor, src=src, group=group, tag=tag)
    return tensor
