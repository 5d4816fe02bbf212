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

from workers.protocol import MAX_BLOB_ELEMENTS, PREVIEW_SIDE, BlobValues, Grid


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
    if rows % out_rows == 0 and cols % out_cols == 0:
        return torch.from_numpy(_equal_blocks(grid.float().contiguous().numpy(), out_rows, out_cols))
    return F.adaptive_avg_pool2d(grid[None, None], (out_rows, out_cols))[0, 0]


def _equal_blocks(grid: np.ndarray, out_rows: int, out_cols: int) -> np.ndarray:
    """The means of equal blocks: rows summed first (whole rows added as vectors, the fast way for
    numpy), then each row's runs of columns; about 3 times faster than torch's pooling here."""
    rows, cols = grid.shape
    if rows > out_rows:   # the ufunc itself: ndarray.sum goes through numpy's Python wrapper first
        grid = np.add.reduce(grid.reshape(out_rows, rows // out_rows, cols), axis=1)
    if cols > out_cols:
        runs = grid.reshape(out_rows, out_cols, cols // out_cols)
        grid = torch.from_numpy(runs).sum(-1).numpy() if runs.size > _LARGE else np.add.reduce(runs, axis=-1)
    return grid * np.float32(1 / ((rows // out_rows) * (cols // out_cols)))


_LARGE = 1 << 16   # from this many values, torch's reductions beat numpy's (its per-op cost no longer counts)


_POWERS_OF_TEN = np.array([10.0 ** i for i in range(23)])   # exact doubles


def _rounded(values: np.ndarray) -> list:
    """The grid as lists of floats rounded to 4 significant digits: each the double nearest its
    4-digit decimal, as float(f"{v:.4g}") gives (JSON writes it short). Done on the whole grid at
    once: an integer of 4 digits and a power of ten are exact doubles, so their quotient (or
    product) is correctly rounded; a Python loop over 1,024 values costs several times more.
    (x * up / down with one of them 1 is x * up or x / down exactly: no branch per value.)
    NaN and infinities are spelled "nan"/"inf"/"-inf", as in the stats: JSON has no such numbers."""
    if values.size <= 64:   # a few values: the loop costs less than the dozen array ops below
        return _rounded_each(values)
    grid = values.astype(np.float64)
    magnitude = np.abs(grid)
    if not magnitude.max() < 1e15:   # NaN, infinities, or beyond where powers of ten are exact doubles
        return _rounded_each(values)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log10(magnitude))   # -inf for zeros, which stay zeros below
    if np.min(exponent, where=magnitude > 0, initial=0.0) < -15:
        return _rounded_each(values)
    shift = (3 - exponent).clip(-22, 22).astype(np.intp)   # digits after the point
    up, down = _POWERS_OF_TEN[shift.clip(0, None)], _POWERS_OF_TEN[(-shift).clip(0, None)]
    digits = np.round(grid * up / down)   # half to even, as "%.4g"
    return Grid((digits * down / up).tolist(), _json_text(digits, shift, np.signbit(grid)))


_CELL = 11   # "-1.234e-05," : every value takes 11 bytes, its comma included
_MANTISSAS = np.frombuffer("".join(f"{d // 1000}.{d % 1000:03d}" for d in range(10000)).encode(),
                           np.uint8).reshape(10000, 5)        # "1.234" for 1234
_EXPONENTS = np.frombuffer("".join(f"e{p:+03d}" for p in range(-30, 31)).encode(),
                           np.uint8).reshape(61, 4)           # "e-05" for -5, at 25


def _json_text(digits: np.ndarray, shift: np.ndarray, negative: np.ndarray) -> bytes:
    """The grid as JSON, every value `digits` × 10^-`shift` written in scientific notation with
    4 digits, a fixed width for all ("-1.234e-05", " 0.000e+00": a leading space is JSON
    whitespace), its bytes taken from tables for the whole grid at once. JSON readers turn
    "1.234e-05" into the double nearest 0.00001234, the same float(f"{v:.4g}") gives."""
    rows, cols = digits.shape
    d = np.abs(digits).astype(np.intp)
    carried = d == 10000                    # 9999.5 rounded up: one more digit before the point
    d[carried] = 1000
    power = np.where(d == 0, 0, 3 - shift + carried)   # the exponent of the first digit, |power| <= 16
    cells = np.empty((rows, cols, _CELL), np.uint8)
    cells[..., 0] = np.where(negative, ord("-"), ord(" "))
    cells[..., 1:6] = _MANTISSAS[d]
    cells[..., 6:10] = _EXPONENTS[power + 30]
    cells[..., 10] = ord(",")
    lines = np.empty((rows, cols * _CELL + 2), np.uint8)   # "[" the row's cells "]," for each row
    lines[:, 0] = ord("[")
    lines[:, 1:-1] = cells.reshape(rows, -1)
    lines[:, -2] = ord("]")                                 # in place of the last cell's comma
    lines[:, -1] = ord(",")
    return b"[" + lines.tobytes()[:-1] + b"]"


def _rounded_each(values: np.ndarray) -> list:
    rows = values.tolist()
    if math.isfinite(sum(map(sum, rows))):   # no NaN nor infinity (float32 values cannot overflow a double's sum)
        return [[float(f"{v:.4g}") for v in row] for row in rows]   # a quarter less than asking each value
    return [[float(f"{v:.4g}") if math.isfinite(v) else str(v) for v in row] for row in rows]


def _stats(values: np.ndarray, blocks: np.ndarray | None) -> dict:
    """min, max, mean and abs_max of every value (abs_max from the extremes; the mean from `blocks`,
    the means of equal blocks, when given)."""
    if values.size > _LARGE:   # one pass for both
        low, high = (float(v) for v in torch.aminmax(torch.from_numpy(values)))
    else:   # the ufuncs themselves: ndarray.min and .mean go through numpy's Python wrappers first
        low, high = float(np.minimum.reduce(values, axis=None)), float(np.maximum.reduce(values, axis=None))
    abs_max = math.nan if math.isnan(low) or math.isnan(high) else max(-low, high)
    averaged = values if blocks is None else blocks
    mean = float(np.add.reduce(averaged, axis=None, dtype=np.float64)) / averaged.size   # = .mean(dtype=float64)
    stats = {"min": low, "max": high, "mean": mean, "abs_max": abs_max}
    return {k: (v if math.isfinite(v) else str(v)) for k, v in stats.items()}


def _values(tensor: torch.Tensor) -> np.ndarray:
    """The tensor's values as a float32 numpy array, without a copy when they already are (numpy:
    a small array op costs a third of torch's)."""
    t = tensor.detach()
    if t.dtype != torch.float32 or t.device.type != "cpu":
        t = t.float().cpu()
    return t.numpy()


def preview(tensor: torch.Tensor, name: str, tensor_id: str | None, side: int = PREVIEW_SIDE) -> dict:
    """The protocol's tensor preview: name, shape, dtype, stats, a small grid and the blob id."""
    return _preview(_values(tensor), list(tensor.shape), _dtype(tensor), name, tensor_id, side)


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _preview(values: np.ndarray, shape: list, dtype: str, name: str, tensor_id: str | None, side: int) -> dict:
    numel = values.size
    if numel:
        whole = values.reshape(1, -1) if values.ndim < 2 else values.reshape(-1, values.shape[-1])
        rows, cols = whole.shape
        out_rows, out_cols = min(rows, side), min(cols, side)
        equal_blocks = rows % out_rows == 0 and cols % out_cols == 0
        if (rows, cols) == (out_rows, out_cols):
            grid = whole
        elif equal_blocks:
            grid = _equal_blocks(whole, out_rows, out_cols)
        else:
            grid = F.adaptive_avg_pool2d(torch.from_numpy(whole)[None, None], (out_rows, out_cols))[0, 0].numpy()
        stats = _stats(values, grid if equal_blocks else None)
    else:
        grid = values.reshape(0, 0)
        stats = {"min": 0.0, "max": 0.0, "mean": 0.0, "abs_max": 0.0}
    return {
        "name": name,
        "shape": shape,
        "dtype": dtype,
        "stats": stats,
        "preview": _rounded(grid),
        "exact": numel == grid.size,
        "id": tensor_id if numel <= MAX_BLOB_ELEMENTS else None,
    }


def blob(tensor: torch.Tensor, tensor_id: str) -> dict | None:
    """The full tensor, or None when it is too large to keep: its values copied now as float32 bytes
    (`BlobValues`), which `workers.protocol.encode` writes raw after a header line (a frame)."""
    if tensor.numel() > MAX_BLOB_ELEMENTS:
        return None
    t = tensor.detach()
    if t.dtype != torch.float32 or t.device.type != "cpu":
        t = t.float().cpu()
    return _blob(t.numpy(), list(tensor.shape), _dtype(tensor), tensor_id)


def _blob(values: np.ndarray, shape: list, dtype: str, tensor_id: str) -> dict:
    if sys.byteorder != "little":
        values = values.astype("<f4")
    # bytes straight from the array's buffer (in C order): `BlobValues(values.tobytes())` copied twice
    return {"blob": tensor_id, "shape": shape, "dtype": dtype, "data": BlobValues(values)}
