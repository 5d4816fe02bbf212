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

    α–β model: a message of m bytes costs α + m·β (α: latency per message, β: seconds per byte),
    for the algorithms gloo runs:
        ring all_reduce            2(p−1)·α + 2(p−1)/p · m·β
        ring all_gather / reduce_scatter, all_to_all, scatter, gather   (p−1)·α + (p−1)/p · m·β
        reduce (a ring reduce-scatter, then every chunk sent to the root)   2(p−1)·α + 2(p−1)/p · m·β
        binomial-tree broadcast    ⌈log₂p⌉ · (α + m·β)
        dissemination barrier      ⌈log₂p⌉ · α          (no data: a latency only)
        send / recv                α + m·β              (a ping-pong round trip: 2(α + m·β))

    α and β are fitted by least squares to one-way message times (half a ping-pong round trip);
    `fit_line` also gives their standard errors and r², and says when the fit is poor or clamped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

POOR_R2 = 0.9              # below this the times do not lie on one line
UNCERTAIN = 0.5            # a standard error above half the value: the value is not known


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
    if op in ("all_reduce", "reduce"):
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * size_bytes * beta
    if op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        return (p - 1) * alpha + (p - 1) / p * size_bytes * beta
    if op == "broadcast":
        return steps * (alpha + size_bytes * beta)
    if op == "barrier":
        return steps * alpha
    return alpha + size_bytes * beta   # send / recv


def model_formula(op: str, p: int) -> tuple[str, str]:
    """`predict`'s model of `op` on `p` ranks in words: (algorithm, "T(m) = general = with p filled in")."""
    steps = max(math.ceil(math.log2(p)), 1) if p > 1 else 0
    if op in ("all_reduce", "reduce"):
        algorithm = "ring all-reduce" if op == "all_reduce" else "ring reduce-scatter, then the chunks to the root"
        return algorithm, f"T(m) = 2(p−1)·α + 2(p−1)/p · m·β = {2 * (p - 1)}·α + {_fraction(2 * (p - 1), p)} · m·β"
    if op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        return f"ring {op.replace('_', '-')}", f"T(m) = (p−1)·α + (p−1)/p · m·β = {p - 1}·α + {_fraction(p - 1, p)} · m·β"
    if op == "broadcast":
        return "binomial-tree broadcast", f"T(m) = ⌈log₂p⌉ · (α + m·β) = {steps} · (α + m·β)"
    if op == "barrier":
        return "dissemination barrier", f"T(m) = ⌈log₂p⌉ · α = {steps}·α"
    return "send / recv", "T(m) = α + m·β"


def _fraction(a: int, b: int) -> str:
    """a/b in lowest terms: "3/4", or "2" when it is whole."""
    g = math.gcd(a, b)
    return str(a // b) if a % b == 0 else f"{a // g}/{b // g}"


@dataclass(frozen=True)
class Fit:
    """t = α + m·β fitted to message times, with how far to trust it."""
    alpha: float
    beta: float
    alpha_stderr: float                   # standard errors of the unclamped least-squares line
    beta_stderr: float
    r2: float                             # the share of the times' variance the line explains
    clamped: tuple[str, ...] = field(default=())   # "alpha" / "beta": the line gave it below 0, 0 is used

    def warnings(self) -> list[str]:
        """What makes the fit unreliable, in words (empty when it is sound)."""
        greek = {"alpha": "α", "beta": "β"}
        out = [f"{greek[name]} clamped to 0: the best line gives {greek[name]} < 0" for name in self.clamped]
        if self.r2 < POOR_R2:
            out.append(f"poor fit: r² = {self.r2:.2f} (the times do not lie on one line)")
        for name, value, err in (("α", self.alpha, self.alpha_stderr), ("β", self.beta, self.beta_stderr)):
            if value > 0 and err > UNCERTAIN * value:
                out.append(f"{name} uncertain: ± {err / value:.0%}")
        return out


def fit_line(sizes: list[int], seconds: list[float]) -> Fit:
    """Least-squares fit of t = α + m·β to one-way message times; α and β kept non-negative."""
    n = len(sizes)
    mean_m, mean_t = sum(sizes) / n, sum(seconds) / n
    sxx = sum((m - mean_m) ** 2 for m in sizes)
    sst = sum((t - mean_t) ** 2 for t in seconds)
    slope = sum((m - mean_m) * (t - mean_t) for m, t in zip(sizes, seconds)) / sxx if sxx else 0.0
    intercept = mean_t - slope * mean_m
    ssr = sum((t - intercept - slope * m) ** 2 for m, t in zip(sizes, seconds))
    variance = ssr / (n - 2) if n > 2 else 0.0                  # of a time about the line
    beta_stderr = math.sqrt(variance / sxx) if sxx else 0.0
    alpha_stderr = math.sqrt(variance * (1 / n + mean_m ** 2 / sxx)) if sxx else math.sqrt(variance / n)
    r2 = 1 - ssr / sst if sst else 1.0
    beta = max(slope, 0.0)
    alpha = max(mean_t - beta * mean_m, 0.0)
    clamped = tuple(name for name, raw in (("beta", slope), ("alpha", mean_t - beta * mean_m)) if raw < 0)
    return Fit(alpha, beta, alpha_stderr, beta_stderr, r2, clamped)


def fit_alpha_beta(sizes: list[int], seconds: list[float]) -> tuple[float, float]:
    """(α, β) of `fit_line`."""
    fit = fit_line(sizes, seconds)
    return fit.alpha, fit.beta
