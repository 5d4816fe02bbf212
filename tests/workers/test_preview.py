"""Tensor previews: a grid of at most 32x32 values, exact statistics, the `exact` flag and blob ids."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from workers import preview as previews
from workers.protocol import MAX_BLOB_ELEMENTS, MAX_EVENT_BYTES, PREVIEW_SIDE, encode, frame_length


def grid_shape(p: dict) -> tuple[int, int]:
    rows = p["preview"]
    return len(rows), (len(rows[0]) if rows else 0)


@pytest.mark.parametrize("shape, grid", [
    ((), (1, 1)),
    ((7,), (1, 7)),
    ((3, 5), (3, 5)),
    ((2, 3, 4), (6, 4)),
])
def test_as_grid_folds_leading_dims_into_rows(shape, grid):
    assert tuple(previews.as_grid(torch.zeros(shape)).shape) == grid


def test_small_tensor_is_shown_exactly():
    t = torch.arange(8 * 16, dtype=torch.float32).reshape(8, 16) / 7
    p = previews.preview(t, "W1", "r0t3")
    assert p["name"] == "W1"
    assert p["shape"] == [8, 16]
    assert p["dtype"] == "float32"
    assert p["exact"] is True
    assert p["id"] == "r0t3"
    assert grid_shape(p) == (8, 16)
    flat = [v for row in p["preview"] for v in row]
    assert flat == pytest.approx(t.flatten().tolist(), rel=5e-4)    # rounded to 4 significant digits
    assert p["stats"] == pytest.approx({"min": 0.0, "max": 127 / 7, "mean": float(t.mean()), "abs_max": 127 / 7})


@pytest.mark.parametrize("shape, grid", [
    ((1000, 1000), (32, 32)),
    ((5000,), (1, 32)),
    ((5000, 1), (32, 1)),
    ((4, 8, 100), (32, 32)),
    ((33, 3), (32, 3)),
])
def test_large_tensor_grid_is_bounded(shape, grid):
    t = torch.randn(shape)
    p = previews.preview(t, "big", "r0t0")
    assert grid_shape(p) == grid
    assert p["exact"] is False
    assert p["shape"] == list(shape)


def test_downsampled_grid_averages_blocks_and_stats_cover_every_value():
    t = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64)
    t[63, 63] = -1e6                      # an outlier the grid averages away but the stats keep
    p = previews.preview(t, "x", None)
    assert grid_shape(p) == (PREVIEW_SIDE, PREVIEW_SIDE)
    block = t[0:2, 2:4]
    assert p["preview"][0][1] == pytest.approx(float(block.mean()), rel=5e-4)
    assert p["stats"]["min"] == -1e6
    assert p["stats"]["max"] == 64 * 64 - 2
    assert p["stats"]["abs_max"] == 1e6
    assert p["stats"]["mean"] == pytest.approx(float(t.mean()))


def test_side_argument_bounds_the_grid():
    p = previews.preview(torch.randn(100, 100), "x", None, side=4)
    assert grid_shape(p) == (4, 4)


@pytest.mark.parametrize("dtype, name", [
    (torch.float64, "float64"), (torch.bfloat16, "bfloat16"), (torch.float16, "float16"),
    (torch.int64, "int64"), (torch.int32, "int32"),
])
def test_dtype_is_named_without_torch_prefix(dtype, name):
    t = torch.arange(6).reshape(2, 3).to(dtype)
    p = previews.preview(t, "x", "r0t0")
    assert p["dtype"] == name
    assert p["preview"] == [[0, 1, 2], [3, 4, 5]]
    assert p["stats"]["max"] == 5


def test_empty_tensor():
    p = previews.preview(torch.zeros(0, 5), "empty", "r0t0")
    assert p["shape"] == [0, 5]
    assert p["stats"] == {"min": 0.0, "max": 0.0, "mean": 0.0, "abs_max": 0.0}
    assert p["preview"] == []


def test_non_finite_values_stay_valid_json():
    """A diverged computation must not break the page: JSON.parse rejects NaN and Infinity."""
    t = torch.tensor([[1.0, float("nan")], [float("inf"), -float("inf")]])
    p = previews.preview(t, "diverged", "r0t0")
    text = json.dumps(p, allow_nan=False)     # raises on NaN/Infinity
    assert json.loads(text)["preview"][0][0] == 1.0
    assert p["stats"]["max"] in ("nan", "inf")


def test_blob_id_only_when_the_tensor_is_kept():
    small = torch.zeros(MAX_BLOB_ELEMENTS)
    large = torch.zeros(MAX_BLOB_ELEMENTS + 1)
    assert previews.preview(small, "x", "r0t1")["id"] == "r0t1"
    assert previews.blob(small, "r0t1") is not None
    assert previews.preview(large, "x", "r0t2")["id"] is None
    assert previews.blob(large, "r0t2") is None


def on_the_wire(message: dict) -> dict:
    """A message as the server reads it: a line, and for a blob's frame the raw values after it."""
    line, _, rest = encode(message).partition(b"\n")
    read = json.loads(line)
    if (length := frame_length(read)) is not None:
        assert len(rest) == length
        read["data"] = rest
    return read


def test_blob_round_trips_little_endian_float32():
    t = torch.randn(3, 5, dtype=torch.float64)
    b = on_the_wire(previews.blob(t, "r1t7"))
    assert b["blob"] == "r1t7"
    assert b["shape"] == [3, 5]
    assert b["dtype"] == "float64"
    data = b["data"]
    values = struct.unpack(f"<{len(data) // 4}f", data)
    assert list(values) == pytest.approx(t.flatten().tolist(), rel=1e-6)


def test_blob_of_a_non_contiguous_tensor_is_row_major():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()     # [[0, 3], [1, 4], [2, 5]]
    data = on_the_wire(previews.blob(t, "x"))["data"]
    assert struct.unpack("<6f", data) == (0, 3, 1, 4, 2, 5)


@pytest.mark.parametrize("shape", [(1000, 1000), (1_000_000,), (10, 10, 10, 10, 10)])
def test_preview_size_does_not_grow_with_the_tensor(shape):
    p = previews.preview(torch.randn(shape), "a rather long tensor name", None)
    assert len(encode(p)) < MAX_EVENT_BYTES


@pytest.mark.parametrize("magnitude", [1e-14, 3e-7, 1e-3, 0.5, 1.0, 37.0, 1e4, 6e6, 2e11, 9e14])
def test_grid_values_are_those_of_4_significant_digits(magnitude):
    """The grid is rounded for the whole tensor at once: each value the same float as
    float(f"{v:.4g}"), so JSON writes it short ("0.1235", not "0.12350000000000001")."""
    t = torch.randn(32, 32) * magnitude
    t[0, 0], t[0, 1] = 0.0, -0.0
    shown = previews.preview(t, "x", None)["preview"]
    assert shown == [[float(f"{v:.4g}") for v in row] for row in t.tolist()]
    if magnitude < 1e6:                           # below 9e7: 11 characters at most (the tracer counts on it)
        assert all(len(json.dumps(v)) <= 11 for row in shown for v in row)


def test_grid_keeps_exact_halves_rounded_to_even_as_text_formatting_does():
    t = torch.full((16, 16), 1.0625)              # 1.0625 is exact in binary: a true tie at 4 digits
    t[0, 0] = -2.03125
    shown = previews.preview(t, "x", None)["preview"]
    assert shown[0][0] == float(f"{-2.03125:.4g}") and shown[1][1] == float(f"{1.0625:.4g}") == 1.062


def test_blob_values_are_copied_at_the_call_and_go_raw_after_the_header_line():
    """A blob keeps the values the tensor had when it was taken (the program may change the tensor
    before the channel writes it); its frame is a JSON line naming how many bytes follow, then the
    values as little-endian float32."""
    t = torch.randn(300, 7)
    kept = t.clone()
    b = previews.blob(t, "r0t5")
    t.zero_()
    values = kept.numpy().astype("<f4").tobytes()
    header = {"blob": "r0t5", "shape": [300, 7], "dtype": "float32", "nbytes": len(values)}
    assert encode(b) == (json.dumps(header, separators=(",", ":")) + "\n").encode() + values


def test_a_frame_length_no_blob_can_have_is_refused():
    assert frame_length({"kind": "log"}) is None and frame_length({"blob": "x", "data": "AAAA"}) is None
    for wrong in (-1, 4 * MAX_BLOB_ELEMENTS + 1, "12", 1.5):
        with pytest.raises(ValueError, match="nbytes must be an integer"):
            frame_length({"blob": "x", "nbytes": wrong})


@pytest.mark.parametrize("shape", [(64, 256), (1, 65792), (512, 512), (256, 64), (33, 3), (100, 70), (32, 4096)])
def test_a_grid_is_the_mean_of_each_block_whichever_way_it_is_taken(shape):
    """Equal blocks are averaged by a cheaper op than the adaptive pool: the same means."""
    t = torch.randn(shape)
    out = (min(shape[0], PREVIEW_SIDE), min(shape[1], PREVIEW_SIDE))
    expected = torch.nn.functional.adaptive_avg_pool2d(t[None, None], out)[0, 0]
    assert torch.allclose(previews.downsample(t, PREVIEW_SIDE), expected, rtol=1e-5, atol=1e-6)
