"""The capacity verdict of a fixed-rate row (issue 54, build item 4): the backlog, scheduled arrivals minus
completions, tested by an exact sign-flip test (runner.sign_flip, runner.backlog_growth).

- the test is exact: its p-value is the enumeration's, and under its null (independent symmetric increments) it
  rejects at most its 1% (2,000 draws, within the binomial interval);
- it is monotone: raising any increment never weakens the evidence (checked on random vectors), and on simulated
  queues coupled across loads (tests/runner/queue_sim.coupled_window: the same arrivals and service draws, every
  service scaled by the load, the server starting late by 0 to 2 s) no window is flagged at one load and late start
  and ok at a higher load or a later start, for every seed. The rule it replaced (issue 35's, re-stated here) is not:
  on the same family a later start, a larger backlog, turns its verdict from invalid to ok;
- it holds on the serial device's kind of queue: 5 random-phase streams, clocked services, a 1% overload flagged in
  every 60 s window, 90-95% load in none.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from queue_sim import coupled_window, issue35_growing, periodic

from edgebench.runner.backlog import latency_trend
from edgebench.runner.backlog_growth import (
    ALPHA,
    SUB_WINDOWS,
    backlog_growth,
    growth_of_increments,
    sub_windows_of,
)
from edgebench.runner.sign_flip import sign_flip_bounds, sign_flip_p

MS = 1_000_000
S = 1_000_000_000


# ------------------------------------------------------------------------------------ the sign-flip test is exact


def brute_force_p(x: np.ndarray) -> float:
    signs = np.array(list(itertools.product([1, -1], repeat=len(x))))
    return float(np.mean(signs @ np.abs(x) >= x.sum() - 1e-9))


@pytest.mark.parametrize("seed", range(8))
def test_the_p_value_is_the_enumerations(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.3, 1.0, 9).round(2)  # rounded: ties between patterns are counted as the enumeration does
    assert sign_flip_p(x) == pytest.approx(brute_force_p(x), abs=1e-12)


def test_all_positive_is_the_smallest_p_and_all_zero_the_largest():
    assert sign_flip_p(np.ones(16)) == 2.0**-16
    assert sign_flip_p(np.zeros(16)) == 1.0
    assert sign_flip_p(-np.ones(16)) == 1.0
    assert sign_flip_p([]) == 1.0


def test_under_its_null_the_test_rejects_at_most_its_level():
    """2,000 draws of 16 independent symmetric increments (normal, and heavy-tailed t with 2 df, each with its own
    scale): rejections at 1% stay within the 99% binomial interval of 1% (at most 35 of 2,000)."""
    rng = np.random.default_rng(54)
    for draw in (lambda: rng.normal(0.0, rng.uniform(0.5, 3.0, 16)), lambda: rng.standard_t(2, 16)):
        rejected = sum(sign_flip_p(draw()) <= ALPHA for _ in range(2000))
        assert rejected <= 35, rejected


def test_raising_any_increment_never_raises_p():
    """The monotone property the verdict rests on, on 500 random vectors and raises of every size and sign case
    (a negative increment moved towards 0, across it, a positive one raised)."""
    rng = np.random.default_rng(7)
    for _ in range(500):
        x = rng.normal(0.2, 1.0, 10)
        k = int(rng.integers(10))
        raised = x.copy()
        raised[k] += float(rng.exponential(2.0))
        assert sign_flip_p(raised) <= sign_flip_p(x) + 1e-12


def test_a_t_test_is_not_monotone_where_the_sign_flip_test_is():
    """Why not a t-test on the increments: one large increment inflates the standard deviation it divides by, so
    16 sub-windows that each grew by 2 +- 1 are 'growing' for t, and the same with one sub-window that grew by 200
    more are not. The sign-flip p only falls."""
    x = np.full(16, 2.0) + np.tile([1.0, -1.0], 8)
    more = x.copy()
    more[3] += 200.0

    def t_stat(v: np.ndarray) -> float:
        return float(v.mean() / (v.std(ddof=1) / np.sqrt(len(v))))

    assert t_stat(x) > 2.6 > t_stat(more)  # 2.6: t's one-sided 99% at 15 df
    assert sign_flip_p(more) <= sign_flip_p(x) <= ALPHA


def test_the_interval_is_the_tests_inversion():
    rng = np.random.default_rng(3)
    x = rng.normal(1.5, 1.0, 16)
    lo, hi = sign_flip_bounds(x, ALPHA)
    assert lo < float(x.mean()) < hi
    eps = 1e-6
    assert sign_flip_p(x - (lo - eps)) <= ALPHA < sign_flip_p(x - (lo + eps))
    assert sign_flip_p((hi + eps) - x) <= ALPHA < sign_flip_p((hi - eps) - x)
    # too few increments to reach 1% at all: the bounds say nothing
    assert sign_flip_bounds(np.ones(6), ALPHA) == (-np.inf, np.inf)


# ------------------------------------------------------------------------------------ the backlog's count


def test_the_backlog_is_arrivals_minus_completions_and_its_growth_the_overload():
    """One arrival every ms, served one per 1.25 ms (a 25% overload): the backlog grows by 200 a second."""
    arrival = np.arange(4000, dtype=np.int64) * MS
    end = np.arange(1, 4001, dtype=np.int64) * 1_250_000
    b = backlog_growth(arrival, end, 0, 3 * S, period_ns=MS, streams=1)
    assert b is not None
    assert (b.sub_windows, b.span_s) == (SUB_WINDOWS, pytest.approx(16 * 187 / 1000))  # whole periods: 187 ms each
    assert b.growth_per_s == pytest.approx(200.0, rel=0.01) and b.served_per_s == pytest.approx(800.0, rel=0.01)
    assert b.lo_per_s > 190.0 and b.hi_per_s < 210.0 and b.p_value == 2.0**-16 and b.growing
    assert b.end_backlog - b.start_backlog == b.arrivals - b.completions
    assert b.latency_lo_ms_per_s == pytest.approx(b.lo_per_s / b.served_per_s * 1000.0)
    assert set(b.fields()) == {"backlog_growth_per_s", "backlog_growth_lo_per_s", "backlog_growth_hi_per_s"}


def test_the_backlog_at_the_start_counts_what_arrived_before_and_was_not_done():
    arrival = np.array([0, 1, 2, 10, 11], dtype=np.int64) * MS
    end = np.array([1, 30, 40, 50, 60], dtype=np.int64) * MS
    b = backlog_growth(arrival, end, 5 * MS, 45 * MS, sub_windows=16)
    assert b is not None
    assert b.start_backlog == 2  # arrived at 1 and 2 ms, done at 30 and 40 ms
    assert (b.arrivals, b.completions, b.end_backlog) == (2, 2, 2)  # 10 and 11 arrived, 30 and 40 done by 45 ms


def test_periodic_sub_windows_are_whole_periods():
    # 60 s of 100 ms periods: 16 sub-windows of 37 periods, the last 0.8 s left out
    assert sub_windows_of(60 * S, 100 * MS) == (16, 16 * 37 * 100 * MS, True)
    # 10 s of 0.67 s periods: 14 whole periods, one each
    assert sub_windows_of(10 * S, 670 * MS) == (14, 14 * 670 * MS, True)
    # fewer than 7 periods cannot reach 1%: equal parts of the span, as for Poisson arrivals
    assert sub_windows_of(3 * S, 500 * MS) == (16, 3 * S, False) and sub_windows_of(3 * S, None) == (16, 3 * S, False)


def test_increments_of_a_steady_periodic_queue_are_zero_and_say_nothing():
    b = growth_of_increments(np.zeros(16), 60.0, 3, 3000, 3000)
    assert b.p_value == 1.0 and not b.growing and b.growth_per_s == 0.0


# ------------------------------------------------------------------------------------ monotone in the overload

LOADS = (0.9, 0.95, 0.98, 1.0, 1.005, 1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0)


def invalid(arrival: str, service: str, service_ms: float, window_s: float, seed: int, rho: float,
            late_s: float = 0.0, rule: str = "backlog") -> bool:
    """The verdict of one window of a coupled path: the backlog's rule, or issue 35's (the trend's lower bound above
    0 and the growth it proves over the window at least the window's median latency), each with the throughput
    tolerance (achieved below 85% of offered: runner.metrics.overload_reason)."""
    arrival_ns, end_ns, offered = coupled_window(rho, service_ms, window_s, arrival, service, seed, late_s)
    t = latency_trend(arrival_ns, end_ns, **periodic(arrival, 1e3 / service_ms, window_s))
    assert t is not None
    if len(arrival_ns) < 0.85 * offered:
        return True
    return t.growing if rule == "backlog" else issue35_growing(t)


def inversions(flags: list[bool]) -> list[int]:
    """Indices flagged invalid with a later (more overloaded) one ok."""
    return [i for i, f in enumerate(flags) if f and not all(flags[i:])]


@pytest.mark.parametrize("arrival, service, service_ms, window_s", [
    ("random", "clocked", 5.0, 30.0),
    ("random", "lognormal", 5.0, 30.0),
    ("poisson", "lognormal", 5.0, 30.0),
    ("poisson", "clocked", 1.0, 10.0),
])
def test_more_overload_never_turns_an_invalid_window_ok(arrival, service, service_ms, window_s):
    """Over loads 0.9 to 5, 12 coupled paths a queue (the same arrivals and service draws, every service scaled by the
    load): no path is invalid at one load and ok at a higher one; every window at 1.2 or more is invalid, none at
    0.9-0.98. (Measured on 40 paths each of these and of lognormal 20 ms / 60 s windows: 0 inversions.)"""
    for seed in range(12):
        flags = [invalid(arrival, service, service_ms, window_s, seed, rho) for rho in LOADS]
        assert inversions(flags) == [], (seed, [int(f) for f in flags])
        assert all(flags[LOADS.index(1.2):]) and not any(flags[:LOADS.index(0.98) + 1])


@pytest.mark.parametrize("rho", [1.05, 1.2, 2.0])
def test_a_larger_backlog_from_a_late_start_never_turns_an_invalid_window_ok(rho):
    """A saturated server (load >= 1.05) that starts 0, 0.5, 1, 2 or 4 s late holds that much more backlog at every
    instant of the same path: never ok where the on-time path was invalid (12 paths, clocked and lognormal 5 ms
    services on random phases, 30 s)."""
    for service, seed in itertools.product(("clocked", "lognormal"), range(12)):
        flags = [invalid("random", service, 5.0, 30.0, seed, rho, late) for late in (0.0, 0.5, 1.0, 2.0, 4.0)]
        assert inversions(flags) == [], (service, seed, rho, flags)


def test_the_rule_it_replaced_is_not_monotone_in_the_backlog():
    """Issue 35's rule on clocked 5 ms services, random phases, 30 s: at 1.05 load on time the window is invalid,
    and the same path with the server starting 2 s late (2 s more backlog at every instant) is ok: the median latency
    the proven growth must reach rose with the backlog. The backlog's rule calls both invalid."""
    old = [invalid("random", "clocked", 5.0, 30.0, 0, 1.05, late, rule="issue35") for late in (0.0, 2.0)]
    assert old == [True, False]
    assert [invalid("random", "clocked", 5.0, 30.0, 0, 1.05, late) for late in (0.0, 2.0)] == [True, True]


# ------------------------------------------------------------------------------------ the serial device's queue


def serial_device_window(rho: float, seed: int, window_s: float = 60.0, service_ms: float = 50.0,
                         streams: int = 5) -> tuple[np.ndarray, np.ndarray, int]:
    """The null backend's serial device as benchmarks/capacity_calibration.py drives it: `streams` random-phase
    streams, one server of clocked `service_ms` services with a small jitter (lognormal, sigma 0.02: a sleep's on a
    busy host), started together."""
    rng = np.random.default_rng(seed)
    rate_hz = rho / (service_ms / 1e3)
    period = round(streams / rate_hz * 1e9)
    phases = rng.integers(0, period, streams)
    k = np.arange(int(window_s * 1e9 / period) + 2, dtype=np.int64)
    arrival_ns = np.sort((phases[:, None] + k[None, :] * period).ravel())
    arrival_ns = arrival_ns[arrival_ns < window_s * 1e9]
    services = rng.lognormal(np.log(service_ms / 1e3), 0.02, len(arrival_ns))
    done = np.cumsum(services)
    end_s = done + np.maximum.accumulate(arrival_ns / 1e9 - (done - services))
    served = end_s <= window_s
    return arrival_ns[served], (end_s[served] * 1e9).astype(np.int64), period


@pytest.mark.parametrize("rho, invalid", [(0.90, False), (0.95, False), (1.01, True), (1.05, True)])
def test_the_serial_devices_queue_is_decided_at_one_percent_in_60_s(rho, invalid):
    """10 seeded 60 s windows a load of 5 streams on 50 ms services (the calibration benchmark's device and its 10
    runs): 1% and 5% overloads invalid in all, 90% and 95% in none."""
    for seed in range(10):
        arrival_ns, end_ns, period = serial_device_window(rho, seed)
        t = latency_trend(arrival_ns, end_ns, period_ns=period, streams=5, window_end_ns=60 * S)
        assert t is not None and t.backlog is not None
        assert t.growing == invalid, (rho, seed, t.backlog)
