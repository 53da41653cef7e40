"""Single-server FIFO queues in numpy, as a fixed-rate row records them: shared by tests/runner/test_backlog.py, and
run as a script for the false-alarm / detection table in docs/methodology.md (issue 35):

    .venv/bin/python tests/runner/queue_sim.py            # 300 stable and 60 overloaded windows per cell, ~1 min

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


def arrivals_s(kind: str, rate_hz: float, window_s: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted arrival times in [0, window_s) of `rate_hz` arrivals per second in all."""
    if kind == "poisson":
        gaps = rng.exponential(1.0 / rate_hz, int(rate_hz * window_s * 1.2) + 100)
        times = np.cumsum(gaps)
        return times[times < window_s]
    period = STREAMS / rate_hz
    phases = rng.uniform(0.0, period, STREAMS)
    k = np.arange(int(window_s / period) + 2)
    times = np.sort((phases[:, None] + k[None, :] * period).ravel())
    return times[times < window_s]


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
    return (arrive[served] * 1e9).astype(np.int64), (end[served] * 1e9).astype(np.int64)


def trend_of(rho: float, service_ms: float, window_s: float, arrival: str, service: str, seed: int) -> LatencyTrend:
    trend = latency_trend(*queue_window(rho, service_ms, window_s, arrival, service, seed))
    assert trend is not None
    return trend


def flagged_share(rho: float, service_ms: float, window_s: float, arrival: str, service: str,
                  draws: int, first_seed: int = 0) -> float:
    """The share of `draws` seeded windows whose latency trend says the backlog grows."""
    return sum(trend_of(rho, service_ms, window_s, arrival, service, first_seed + i).growing
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
    print("share of windows flagged (latency trend growing); stable: 300 draws, overloaded: 60")
    print(f"{'arrival':8s} {'service':9s} {'ms':>3s} {'window':>6s}   rho 0.90  0.95   1.01  1.02")
    for arrival in ("random", "poisson"):
        for service in ("clocked", "lognormal"):
            for service_ms in (1.0, 5.0, 20.0):
                for window_s in (10.0, 30.0):
                    shares = [flagged_share(rho, service_ms, window_s, arrival, service, 300 if rho < 1 else 60,
                                            first_seed=1000)
                              for rho in (0.90, 0.95, 1.01, 1.02)]
                    print(f"{arrival:8s} {service:9s} {service_ms:3.0f} {window_s:5.0f}s       "
                          + "  ".join(f"{s:.3f}" for s in shares), flush=True)


if __name__ == "__main__":
    main()
