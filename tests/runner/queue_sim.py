"""Single-server FIFO queues in numpy, as a fixed-rate row records them: shared by tests/runner/test_backlog.py, and
run as a script for the false-alarm / detection table in docs/methodology.md (issues 35, 54):

    .venv/bin/python tests/runner/queue_sim.py            # 200 windows at loads <= 1, 60 overloaded, per cell
    .venv/bin/python tests/runner/queue_sim.py --issue35  # the rule it replaced, on the same windows

A queue at load rho (offered arrivals x mean service time) starts empty at t = 0, as a row's streams do, and is
stopped at window_s: the inferences that ended by then are the row's (a stream records only what it served).
Arrivals are `random` (n streams of period n / rate, each at a uniform random phase: unsynchronised cameras, the
harness's default) or `poisson`; service times are `clocked` (every one the mean) or `lognormal` (sigma 0.5:
cv 0.53).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

if __name__ == "__main__":  # as a script: this checkout's edgebench
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from edgebench.runner.backlog import LatencyTrend, latency_trend

STREAMS = 32  # random-phase arrivals: 32 cameras, as issue 35's row


def period_ns(kind: str, rate_hz: float) -> int | None:
    """Each random-phase stream's period in whole ns (None for Poisson arrivals), as a row's streams have one."""
    return None if kind == "poisson" else round(STREAMS / rate_hz * 1e9)


def periodic(kind: str, rate_hz: float, window_s: float) -> dict[str, int | None]:
    """latency_trend's period_ns / streams / window_end_ns for a window of this queue (empty for Poisson)."""
    period = period_ns(kind, rate_hz)
    return {} if period is None else {"period_ns": period, "streams": STREAMS, "window_end_ns": round(window_s * 1e9)}


def arrivals_s(kind: str, rate_hz: float, window_s: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted arrival times in [0, window_s) of `rate_hz` arrivals per second in all. Random phases are whole ns
    and a stream's arrivals exactly one period_ns apart, as runner.arrivals schedules them."""
    if kind == "poisson":
        gaps = rng.exponential(1.0 / rate_hz, int(rate_hz * window_s * 1.2) + 100)
        times = np.cumsum(gaps)
        return times[times < window_s]
    period = period_ns(kind, rate_hz)
    assert period is not None
    phases = rng.integers(0, period, STREAMS)
    k = np.arange(int(window_s * 1e9 / period) + 2, dtype=np.int64)
    times_ns = np.sort((phases[:, None] + k[None, :] * period).ravel())
    return times_ns[times_ns < window_s * 1e9] / 1e9


def service_s(kind: str, mean_s: float, count: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "clocked":
        return np.full(count, mean_s)
    sigma = 0.5
    return rng.lognormal(np.log(mean_s) - sigma**2 / 2, sigma, count)  # mean mean_s


def fifo_ends(arrivals: np.ndarray, services: np.ndarray) -> np.ndarray:
    """End times of a single FIFO server: end_i = max(arrival_i, end_i-1) + service_i, as a running maximum."""
    done = np.cumsum(services)
    return done + np.maximum.accumulate(arrivals - (done - services))


def queue_window(rho: float, service_ms: float, window_s: float, arrival: str, service: str,
                 seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(arrival_ns, end_ns) of the inferences a window of this queue records."""
    rng = np.random.default_rng(seed)
    mean_s = service_ms / 1e3
    arrive = arrivals_s(arrival, rho / mean_s, window_s, rng)
    end = fifo_ends(arrive, service_s(service, mean_s, len(arrive), rng))
    served = end <= window_s
    return np.rint(arrive[served] * 1e9).astype(np.int64), (end[served] * 1e9).astype(np.int64)


def coupled_window(rho: float, service_ms: float, window_s: float, arrival: str, service: str, seed: int,
                   late_s: float = 0.0) -> tuple[np.ndarray, np.ndarray, int]:
    """(arrival_ns, end_ns, arrivals offered) of a queue coupled across loads: the arrivals (1 / service_ms of
    them a second) and the services' draws are the seed's whatever rho, each service scaled by rho, and the server
    starts `late_s` after the first arrival (a worker that woke late: the arrivals before wait for it). More rho or
    more late_s ends every inference later: a larger backlog at every instant of the same path."""
    rng = np.random.default_rng(seed)
    rate_hz = 1.0 / (service_ms / 1e3)
    arrive = arrivals_s(arrival, rate_hz, window_s, rng)
    ready = np.maximum(arrive, late_s)
    end = fifo_ends(ready, service_s(service, service_ms / 1e3, len(arrive), rng) * rho)
    served = end <= window_s
    return (np.rint(arrive[served] * 1e9).astype(np.int64), (end[served] * 1e9).astype(np.int64),
            int(len(arrive)))


def trend_of(rho: float, service_ms: float, window_s: float, arrival: str, service: str, seed: int) -> LatencyTrend:
    """The window's latency trend and backlog growth (random-phase streams in sub-windows of whole periods, as a
    row's are: runner.backlog_growth)."""
    trend = latency_trend(*queue_window(rho, service_ms, window_s, arrival, service, seed),
                          **periodic(arrival, rho / (service_ms / 1e3), window_s))
    assert trend is not None
    return trend


def issue35_growing(trend: LatencyTrend) -> bool:
    """The rule issue 54 replaced (issue 35's): the trend's lower bound above 0 and the growth it proves over the
    window (lower bound x span) at least the window's median latency and 1 ms. Kept to measure it beside its
    replacement on the same windows."""
    return trend.lo_ms_per_s > 0 and trend.lo_ms_per_s * trend.span_s >= max(trend.p50_ms, 1.0)


def flagged_share(rho: float, service_ms: float, window_s: float, arrival: str, service: str,
                  draws: int, first_seed: int = 0, rule: str = "backlog") -> float:
    """The share of `draws` seeded windows whose verdict says the backlog grows: the row's (the backlog's sign-flip
    test), or issue 35's rule (`rule="issue35"`)."""
    judge = issue35_growing if rule == "issue35" else (lambda t: t.growing)
    return sum(judge(trend_of(rho, service_ms, window_s, arrival, service, first_seed + i))
               for i in range(draws)) / draws


def ols_lower_bound_share(rho: float, service_ms: float, window_s: float, arrival: str, service: str,
                          draws: int) -> float:
    """The share of windows where ordinary least squares on the inferences themselves (one point each, its
    textbook standard error, 1.96) puts the slope's lower bound above 0: what the bins and Newey-West replace."""
    above = 0
    for seed in range(draws):
        arrival_ns, end_ns = queue_window(rho, service_ms, window_s, arrival, service, seed)
        x = (arrival_ns - arrival_ns.min()) / 1e9
        y = (end_ns - arrival_ns) / 1e6
        xc = x - x.mean()
        slope = float(xc @ (y - y.mean())) / float(xc @ xc)
        resid = y - y.mean() - slope * xc
        se = np.sqrt(float(resid @ resid) / (len(x) - 2) / float(xc @ xc))
        above += slope - 1.96 * se > 0
    return above / draws


def main() -> None:
    rule = "issue35" if "--issue35" in sys.argv[1:] else "backlog"
    if rule == "issue35":
        print("share of windows flagged by issue 35's rule (the trend's lower bound x span >= the median latency);")
    else:
        print("share of windows flagged (the backlog grows: runner.backlog_growth's sign-flip test, 99% one-sided);")
    print("loads <= 1: 200 draws a cell, overloads: 60")
    print(f"{'arrival':8s} {'service':9s} {'ms':>3s} {'window':>6s}   rho 0.90  0.95   1.00  1.005  1.01   1.02")
    for arrival in ("random", "poisson"):
        for service in ("clocked", "lognormal"):
            for service_ms in (1.0, 5.0, 20.0):
                for window_s in (10.0, 60.0):
                    if service_ms == 1.0 and window_s == 60.0:
                        continue
                    shares = [flagged_share(rho, service_ms, window_s, arrival, service, 200 if rho <= 1 else 60,
                                            first_seed=1000, rule=rule)
                              for rho in (0.90, 0.95, 1.00, 1.005, 1.01, 1.02)]
                    print(f"{arrival:8s} {service:9s} {service_ms:3.0f} {window_s:5.0f}s       "
                          + "  ".join(f"{s:.3f}" for s in shares), flush=True)


if __name__ == "__main__":
    main()
