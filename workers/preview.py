"""Bounded tensor previews: statistics and a downsampled grid of at most 32x32 values.

A preview never grows with the tensor, so every event stays under 16 KiB. The full tensor (up to
`MAX_BLOB_ELEMENTS` values) travels once as a blob and is fetched by `id` on demand.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

from workers.protocol import MAX_BLOB_ELEMENTS, PREVIEW_SIDE, BlobValues


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
    out_rows, out_cols = min(rows, side), min(cols, side)
    if rows % out_rows == 0 and cols % out_cols == 0:   # equal blocks: up to 5x faster than the adaptive pool
        if rows == out_rows:                             # a row's blocks only (a 1-D tensor)
            return grid.reshape(rows, out_cols, cols // out_cols).mean(-1)
        return F.avg_pool2d(grid[None, None], (rows // out_rows, cols // out_cols))[0, 0]
    return F.adaptive_avg_pool2d(grid[None, None], (out_rows, out_cols))[0, 0]


_POWERS_OF_TEN = np.array([10.0 ** i for i in range(23)])   # exact doubles


def _rounded(values: torch.Tensor) -> list:
    """The grid as lists of floats rounded to 4 significant digits: each the double nearest its
    4-digit decimal, as float(f"{v:.4g}") gives (JSON writes it short). Done on the whole grid at
    once: an integer of 4 digits and a power of ten are exact doubles, so their quotient (or
    product) is correctly rounded; a Python loop over 1,024 values costs several times more (and
    torch's per-op overhead, 3 times more than numpy's on a grid this small).
    NaN and infinities are spelled "nan"/"inf"/"-inf", as in the stats: JSON has no such numbers."""
    if values.numel() <= 64:   # a few values: the loop costs less than the dozen array ops below
        return _rounded_each(values)
    grid = values.numpy().astype(np.float64)
    magnitude = np.abs(grid)
    present = magnitude > 0
    if not np.isfinite(grid).all() or (present & (magnitude < 1e-15)).any() or (magnitude >= 1e15).any():
        return _rounded_each(values)   # beyond 10**22, powers of ten are not exact doubles
    shift = 3 - np.floor(np.log10(np.where(present, magnitude, 1.0))).astype(np.int64)   # digits after the point
    scale = _POWERS_OF_TEN[np.abs(shift)]
    up = shift >= 0
    digits = np.round(np.where(up, grid * scale, grid / scale))   # half to even, as "%.4g"
    return np.where(present, np.where(up, digits / scale, digits * scale), grid).tolist()


def _rounded_each(values: torch.Tensor) -> list:
    return [[float(f"{v:.4g}") if math.isfinite(v) else str(v) for v in row] for row in values.tolist()]


def _stats(values: torch.Tensor, blocks: torch.Tensor | None) -> dict:
    """min, max, mean and abs_max of every value, in one pass over the tensor (abs_max from the
    extremes; the mean from `blocks`, the means of equal blocks, when given)."""
    low, high = (float(v) for v in torch.aminmax(values))
    abs_max = math.nan if math.isnan(low) or math.isnan(high) else max(-low, high)
    mean = float((values if blocks is None else blocks).mean(dtype=torch.float64))
    stats = {"min": low, "max": high, "mean": mean, "abs_max": abs_max}
    return {k: (v if math.isfinite(v) else str(v)) for k, v in stats.items()}


def preview(tensor: torch.Tensor, name: str, tensor_id: str | None, side: int = PREVIEW_SIDE) -> dict:
    """The protocol's tensor preview: name, shape, dtype, stats, a small grid and the blob id."""
    values = tensor.detach().float().cpu()
    numel = values.numel()
    if numel:
        whole = as_grid(values)
        grid = downsample(whole, side)
        equal_blocks = whole.shape[0] % grid.shape[0] == 0 and whole.shape[1] % grid.shape[1] == 0
        stats = _stats(values, grid if equal_blocks else None)
    else:
        grid = values.reshape(0, 0)
        stats = {"min": 0.0, "max": 0.0, "mean": 0.0, "abs_max": 0.0}
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
    """The full tensor, or None when it is too large to keep: its values copied now as float32 bytes
    (`BlobValues`), which `workers.protocol.encode` writes as base64."""
    if tensor.numel() > MAX_BLOB_ELEMENTS:
        return None
    values = tensor.detach().float().cpu().contiguous().numpy()
    if sys.byteorder != "little":
        values = values.astype("<f4")
    return {
        "blob": tensor_id,
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "data": BlobValues(values.tobytes()),
    }
