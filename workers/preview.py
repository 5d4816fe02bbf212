"""Bounded tensor previews: statistics and a downsampled grid of at most 32x32 values.

A preview never grows with the tensor, so every event stays under 16 KiB. The full tensor (up to
`MAX_BLOB_ELEMENTS` values) travels once as a blob and is fetched by `id` on demand.
"""

from __future__ import annotations

import base64
import math

import torch
import torch.nn.functional as F

from workers.protocol import MAX_BLOB_ELEMENTS, PREVIEW_SIDE


def as_grid(tensor: torch.Tensor) -> torch.Tensor:
    """View any tensor as 2-D: the last dim as columns, all others folded into rows."""
    t = tensor.detach()
    if t.dim() == 0:
        return t.reshape(1, 1)
    if t.dim() == 1:
        return t.reshape(1, -1)
    return t.reshape(-1, t.shape[-1])


def downsample(grid: torch.Tensor, side: int) -> torch.Tensor:
    """Average blocks so that neither side exceeds `side` values."""
    rows, cols = grid.shape
    if rows <= side and cols <= side:
        return grid
    out = (min(rows, side), min(cols, side))
    return F.adaptive_avg_pool2d(grid[None, None], out)[0, 0]


def _rounded(values: torch.Tensor) -> list:
    # NaN and infinities as "nan"/"inf"/"-inf", as in the stats: JSON has no such numbers
    return [[float(f"{v:.4g}") if math.isfinite(v) else str(v) for v in row] for row in values.tolist()]


def preview(tensor: torch.Tensor, name: str, tensor_id: str | None, side: int = PREVIEW_SIDE) -> dict:
    """The protocol's tensor preview: name, shape, dtype, stats, a small grid and the blob id."""
    values = tensor.detach().float().cpu()
    numel = values.numel()
    stats = {"min": 0.0, "max": 0.0, "mean": 0.0, "abs_max": 0.0}
    if numel:
        stats = {
            "min": float(values.min()), "max": float(values.max()),
            "mean": float(values.mean()), "abs_max": float(values.abs().max()),
        }
        stats = {k: (v if math.isfinite(v) else str(v)) for k, v in stats.items()}
    grid = downsample(as_grid(values), side) if numel else values.reshape(0, 0)
    return {
        "name": name,
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "stats": stats,
        "preview": _rounded(grid),
        "exact": numel == grid.numel(),
        "id": tensor_id if numel <= MAX_BLOB_ELEMENTS else None,
    }


def blob(tensor: torch.Tensor, tensor_id: str) -> dict | None:
    """The full tensor as float32 bytes, or None when it is too large to keep."""
    if tensor.numel() > MAX_BLOB_ELEMENTS:
        return None
    values = tensor.detach().float().cpu().contiguous()
    data = values.numpy().astype("<f4").tobytes()
    return {
        "blob": tensor_id,
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "data": base64.b64encode(data).decode(),
    }
