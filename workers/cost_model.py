"""What a collective costs: bus bandwidth as nccl-tests counts it, and the α–β (latency–bandwidth)
model's prediction for the usual algorithms.

    algbw = size / time                 size in bytes, nccl-tests' convention (see docs/protocol.md)
    busbw = algbw × factor              the factor makes busbw comparable with the link's speed:
        all_reduce                 2(n−1)/n      each byte crosses the links twice (reduce, then share)
        all_gather, reduce_scatter, all_to_all, scatter, gather    (n−1)/n
        broadcast, reduce, send/recv                               1

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


def model_formula(op: str, p: int) -> tuple[str, str]:
    """The α–β model of `op` on `p` ranks in words: (algorithm, "T(m) = general = with p filled in")."""
    steps = max(math.ceil(math.log2(p)), 1) if p > 1 else 0
    if op == "all_reduce":
        return "ring all-reduce", f"T(m) = 2(p−1)·α + 2(p−1)/p · m·β = {2 * (p - 1)}·α + {_fraction(2 * (p - 1), p)} · m·β"
    if op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        return f"ring {op.replace('_', '-')}", f"T(m) = (p−1)·α + (p−1)/p · m·β = {p - 1}·α + {_fraction(p - 1, p)} · m·β"
    if op in ("broadcast", "reduce"):
        return f"tree {op}", f"T(m) = ⌈log₂p⌉ · (α + m·β) = {steps} · (α + m·β)"
    if op == "barrier":
        return "barrier", f"T(m) = ⌈log₂p⌉ · α = {steps}·α"
    return "send / recv", "T(m) = α + m·β"


def _fraction(a: int, b: int) -> str:
    """a/b in lowest terms: "3/4", or "2" when it is whole."""
    g = math.gcd(a, b)
    return str(a // b) if a % b == 0 else f"{a // g}/{b // g}"


def fit_alpha_beta(sizes: list[int], seconds: list[float]) -> tuple[float, float]:
    """Least-squares fit of t = α + m·β to one-way message times; both kept non-negative."""
    n = len(sizes)
    mean_m, mean_t = sum(sizes) / n, sum(seconds) / n
    var = sum((m - mean_m) ** 2 for m in sizes)
    beta = sum((m - mean_m) * (t - mean_t) for m, t in zip(sizes, seconds)) / var if var else 0.0
    beta = max(beta, 0.0)
    alpha = max(mean_t - beta * mean_m, 0.0)
    return alpha, beta
