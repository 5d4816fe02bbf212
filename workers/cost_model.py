"""What a collective costs: bus bandwidth as nccl-tests counts it, and the α–β (latency–bandwidth)
model's prediction for the usual algorithms.

    algbw = size / time                 size in bytes, nccl-tests' convention (see docs/protocol.md)
    busbw = algbw × factor              the factor makes busbw comparable with the link's speed:
        all_reduce                 2(n−1)/n      each byte crosses the links twice (reduce, then share)
        all_gather, reduce_scatter, all_to_all, scatter, gather    (n−1)/n
        broadcast, reduce, send/recv                               1

    wire bytes: what each rank sends on the links for the algorithm gloo runs, `size × factor` with the
    same factors (nccl-tests'): all_reduce 2(n−1)/n·size (a ring's reduce-scatter then all-gather),
    all_gather, reduce_scatter, all_to_all, scatter, gather (n−1)/n·size, broadcast, reduce and send
    size, a recv 0 (its bytes are counted at the sender), a barrier 0.

    α–β model: a message of m bytes costs α + m·β (α: latency per message, β: seconds per byte)
        ring all_reduce            2(p−1)·α + 2(p−1)/p · m·β
        ring all_gather / reduce_scatter, all_to_all, scatter, gather   (p−1)·α + (p−1)/p · m·β
        tree broadcast / reduce    ⌈log₂p⌉ · (α + m·β)
        barrier                    ⌈log₂p⌉ · α
        send / recv                α + m·β
"""

from __future__ import annotations

import math


def bus_factor(op: str, n: int) -> float:
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        return (n - 1) / n
    return 1.0


def wire_bytes(op: str, n: int, size_bytes: int) -> int:
    """Bytes each rank sends on the wire for `op` on `n` ranks with nccl-tests' `size_bytes`."""
    if op in ("recv", "barrier"):
        return 0
    return round(size_bytes * bus_factor(op, n))


def bandwidths(op: str, n: int, size_bytes: int, seconds: float) -> tuple[float, float]:
    """(algbw, busbw) in bytes per second."""
    if seconds <= 0 or size_bytes <= 0:
        return 0.0, 0.0
    algbw = size_bytes / seconds
    return algbw, algbw * bus_factor(op, n)


def predict(op: str, p: int, size_bytes: int, alpha: float, beta: float) -> float:
    """Seconds the α–β model predicts for `op` on `p` ranks moving `size_bytes`."""
    steps = max(math.ceil(math.log2(p)), 1) if p > 1 else 0
    if op == "all_reduce":
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * size_bytes * beta
    if op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        return (p - 1) * alpha + (p - 1) / p * size_bytes * beta
    if op in ("broadcast", "reduce"):
        return steps * (alpha + size_bytes * beta)
    if op == "barrier":
        return steps * alpha
    return alpha + size_bytes * beta   # send / recv


def fit_alpha_beta(sizes: list[int], seconds: list[float]) -> tuple[float, float]:
    """Least-squares fit of t = α + m·β to one-way message times; both kept non-negative."""
    n = len(sizes)
    mean_m, mean_t = sum(sizes) / n, sum(seconds) / n
    var = sum((m - mean_m) ** 2 for m in sizes)
    beta = sum((m - mean_m) * (t - mean_t) for m, t in zip(sizes, seconds)) / var if var else 0.0
    beta = max(beta, 0.0)
    alpha = max(mean_t - beta * mean_m, 0.0)
    return alpha, beta
