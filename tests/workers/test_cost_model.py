"""`workers.cost_model`: bus bandwidth factors as nccl-tests defines them (doc/PERFORMANCE.md there),
the α–β model's predictions, and the least-squares fit that recovers α and β from message times.
(That traced `end` events carry duration/algbw/busbw consistent with these is checked on live runs
in tests/app/test_collectives_lesson.py.)"""

from __future__ import annotations

import math
import random

import pytest

import numpy as np

from workers.cost_model import bandwidths, bus_factor, fit_alpha_beta, fit_line, predict

WORLDS = (2, 3, 4, 8, 16)


@pytest.mark.parametrize("n", WORLDS)
def test_bus_factors_follow_nccl_tests(n):
    assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        assert bus_factor(op, n) == pytest.approx((n - 1) / n), op
    for op in ("broadcast", "reduce", "send", "recv"):
        assert bus_factor(op, n) == 1.0, op


def test_bus_factor_examples():
    assert bus_factor("all_reduce", 8) == 1.75
    assert bus_factor("all_reduce", 2) == 1.0
    assert bus_factor("all_gather", 4) == 0.75
    assert bus_factor("all_reduce", 1) == 0.0          # one rank moves nothing over a bus


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send"])
def test_bandwidths_are_size_over_time_and_times_the_factor(op):
    algbw, busbw = bandwidths(op, 4, 1 << 20, 0.002)
    assert algbw == pytest.approx((1 << 20) / 0.002)
    assert busbw == pytest.approx(algbw * bus_factor(op, 4))


def test_all_reduce_bus_bandwidth_example():
    # 1 GB all-reduced in 1 s on 8 ranks: algbw 1 GB/s, busbw 1.75 GB/s
    assert bandwidths("all_reduce", 8, 10**9, 1.0) == pytest.approx((1e9, 1.75e9))


@pytest.mark.parametrize("size, seconds", [(1024, 0.0), (1024, -1e-6), (0, 0.01)])
def test_bandwidths_of_nothing_or_no_time_are_zero(size, seconds):
    assert bandwidths("all_reduce", 4, size, seconds) == (0.0, 0.0)


ALPHA, BETA, M = 5e-6, 1e-9, 1 << 20


@pytest.mark.parametrize("op, p, want", [
    ("all_reduce", 4, 2 * 3 * ALPHA + 2 * 3 / 4 * M * BETA),
    ("all_reduce", 8, 14 * ALPHA + 1.75 * M * BETA),
    ("all_gather", 8, 7 * ALPHA + 7 / 8 * M * BETA),
    ("reduce_scatter", 3, 2 * ALPHA + 2 / 3 * M * BETA),
    ("all_to_all", 4, 3 * ALPHA + 3 / 4 * M * BETA),
    ("scatter", 2, ALPHA + M * BETA / 2),
    ("gather", 16, 15 * ALPHA + 15 / 16 * M * BETA),
    ("broadcast", 8, 3 * (ALPHA + M * BETA)),          # ⌈log₂ 8⌉ = 3 tree steps
    ("broadcast", 3, 2 * (ALPHA + M * BETA)),          # ⌈log₂ 3⌉ = 2
    ("reduce", 5, 8 * ALPHA + 8 / 5 * M * BETA),        # gloo: a ring reduce-scatter, then the chunks to the root
    ("reduce", 2, 2 * ALPHA + M * BETA),
    ("barrier", 8, 3 * ALPHA),
    ("barrier", 2, ALPHA),
    ("send", 8, ALPHA + M * BETA),
    ("recv", 2, ALPHA + M * BETA),
])
def test_predict_follows_the_alpha_beta_formulas(op, p, want):
    assert predict(op, p, M, ALPHA, BETA) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "broadcast", "barrier"])
def test_one_rank_costs_nothing(op):
    assert predict(op, 1, M, ALPHA, BETA) == 0.0


@pytest.mark.parametrize("p", WORLDS)
def test_ring_all_reduce_costs_a_reduce_scatter_plus_an_all_gather(p):
    assert predict("all_reduce", p, M, ALPHA, BETA) == pytest.approx(
        predict("reduce_scatter", p, M, ALPHA, BETA) + predict("all_gather", p, M, ALPHA, BETA))


def test_ring_bandwidth_term_barely_grows_with_the_ranks():
    """2(p−1)/p·m·β: from 1× at 2 ranks to under 2× at any size; the latency term grows linearly."""
    bandwidth_only = [predict("all_reduce", p, M, 0.0, BETA) for p in (2, 4, 8, 64)]
    assert bandwidth_only == sorted(bandwidth_only)
    assert bandwidth_only[-1] < 2 * M * BETA
    assert predict("all_reduce", 64, M, ALPHA, 0.0) == pytest.approx(126 * ALPHA)


SIZES = [4 << k for k in range(0, 19, 3)]               # the lesson's sweep: 4 B … 1 MiB


@pytest.mark.parametrize("alpha, beta", [(5e-6, 1e-9), (2e-4, 3e-10), (1e-3, 0.0)])
def test_fit_recovers_alpha_and_beta_from_exact_times(alpha, beta):
    got_alpha, got_beta = fit_alpha_beta(SIZES, [alpha + m * beta for m in SIZES])
    assert got_alpha == pytest.approx(alpha, rel=1e-9)
    assert got_beta == pytest.approx(beta, rel=1e-9, abs=1e-20)


def test_fit_recovers_alpha_and_beta_through_noise():
    rng = random.Random(7)
    sizes = [m for m in SIZES for _ in range(20)]
    times = [(2e-5 + m * 4e-10) * (1 + rng.uniform(-0.02, 0.02)) for m in sizes]
    alpha, beta = fit_alpha_beta(sizes, times)
    assert alpha == pytest.approx(2e-5, rel=0.1)
    assert beta == pytest.approx(4e-10, rel=0.05)


def test_fit_keeps_both_non_negative():
    # times that fall with the size would need β < 0: β is clamped to 0 and α is the mean time
    alpha, beta = fit_alpha_beta([1, 10, 100], [3e-6, 2e-6, 1e-6])
    assert beta == 0.0 and alpha == pytest.approx(2e-6)
    # a line through a negative intercept: α is clamped to 0
    alpha, beta = fit_alpha_beta(SIZES, [-1e-5 + m * 1e-9 for m in SIZES])
    assert alpha == 0.0 and beta == pytest.approx(1e-9)


def test_fit_of_one_size_is_its_mean_time_and_no_slope():
    alpha, beta = fit_alpha_beta([64, 64, 64], [1e-6, 2e-6, 3e-6])
    assert (alpha, beta) == (pytest.approx(2e-6), 0.0)


def test_fit_then_predict_round_trips():
    alpha, beta = fit_alpha_beta(SIZES, [predict("send", 2, m, 3e-5, 2e-10) for m in SIZES])
    assert predict("all_reduce", 8, M, alpha, beta) == pytest.approx(predict("all_reduce", 8, M, 3e-5, 2e-10))
    assert math.isfinite(alpha) and math.isfinite(beta)


# ---- how far to trust a fit ------------------------------------------------------------------------

def test_fit_gives_the_standard_errors_and_r2_of_least_squares():
    """Against numpy's own fit: the covariance of the line's coefficients (scaled by the residuals)."""
    rng = random.Random(3)
    sizes = [m for m in SIZES for _ in range(5)]
    times = [2e-5 + m * 4e-10 + rng.gauss(0, 3e-6) for m in sizes]
    fit = fit_line(sizes, times)
    (slope, intercept), cov = np.polyfit(sizes, times, 1, cov=True)
    assert (fit.alpha, fit.beta) == pytest.approx((intercept, slope), rel=1e-9)
    assert fit.beta_stderr == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-6)
    assert fit.alpha_stderr == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-6)
    residual = np.array(times) - (intercept + slope * np.array(sizes))
    assert fit.r2 == pytest.approx(1 - (residual ** 2).sum() / ((np.array(times) - np.mean(times)) ** 2).sum())
    assert fit.clamped == () and fit.warnings() == []


def test_an_exact_line_has_no_error_and_r2_of_1():
    fit = fit_line(SIZES, [3e-5 + m * 2e-10 for m in SIZES])
    assert fit.r2 == pytest.approx(1.0)
    assert fit.alpha_stderr == pytest.approx(0, abs=1e-15) and fit.beta_stderr == pytest.approx(0, abs=1e-20)
    assert fit.warnings() == []


def test_a_clamped_beta_is_said():
    fit = fit_line([1, 10, 100], [3e-6, 2e-6, 1e-6])
    assert fit.clamped == ("beta",) and fit.beta == 0.0
    assert "β clamped to 0: the best line gives β < 0" in fit.warnings()


def test_a_clamped_alpha_is_said():
    fit = fit_line(SIZES, [-1e-5 + m * 1e-9 for m in SIZES])
    assert fit.clamped == ("alpha",) and fit.alpha == 0.0
    assert fit.warnings()[0] == "α clamped to 0: the best line gives α < 0"


def test_times_that_do_not_lie_on_a_line_are_a_poor_fit():
    """Latency noise as large as the whole bandwidth term: r² far below 0.9, α and β uncertain."""
    times = [1e-4, 9e-4, 2e-4, 8e-4, 1e-4, 7e-4, 9e-4]
    fit = fit_line(SIZES, times)
    assert fit.r2 < 0.9
    warnings = fit.warnings()
    assert any(w.startswith(f"poor fit: r² = {fit.r2:.2f}") for w in warnings), warnings
    assert any(w.startswith("β uncertain: ± ") for w in warnings), warnings
