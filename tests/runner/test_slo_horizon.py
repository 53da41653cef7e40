"""An SLO verdict over a horizon (issue 35): a count meets only when its p99 plus the latency growth its window
cannot exclude (the trend's upper bound x run.slo_horizon_s) stays within the SLO; a window that cannot tell is
run longer (runner.load.horizon_window_s) up to run.max_duration_s, else the count is unmeasured, never met.

On simulated single-server queues (tests/runner/queue_sim.py, as the SLO search would run them: a first window of
8 s, longer ones as horizon_window_s asks, at most 120 s), 20 seeded searches a cell: a stable 90% / 95% load is
never missed (no false alarm) and met in every one (but 2 of 20 Poisson-arrival 4 ms cells at 95%, which stay
unmeasured at 120 s: a queue whose memory is that long cannot be bounded over 600 s from 2 minutes); a 1% / 2%
overload is never met, and missed in every one.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from queue_sim import queue_window

from edgebench.runner.backlog import LatencyTrend, latency_trend
from edgebench.runner.backlog_growth import growth_of_increments
from edgebench.runner.load import growth_bound_ms, holds_text, horizon_window_s, slo_verdict

DRAWS = 20
FIRST_S, MAX_S, HORIZON_S = 8.0, 120.0, 600.0


def trend(slope: float, half: float, span_s: float = 30.0, p50_ms: float = 10.0,
          increments: list[int] | None = None) -> LatencyTrend:
    """A latency trend; with `increments` (the backlog's, one per sub-window) a backlog growth beside it."""
    backlog = None if increments is None else growth_of_increments(increments, span_s, 0, 98 * 16, 97 * 16)
    return LatencyTrend(slope, slope - half, slope + half, span_s=span_s, bins=20, inferences=3000, p50_ms=p50_ms,
                        backlog=backlog)


# ------------------------------------------------------------------------------------ the verdict of one window


def test_a_count_meets_only_when_p99_plus_the_growth_it_cannot_exclude_holds_over_the_horizon():
    flat = trend(0.001, 0.003)  # hi 0.004 ms/s: 2.4 ms over 600 s
    assert slo_verdict(12.1, 33.0, "ok", 3000, 0, trend=flat, horizon_s=600.0) == ("met", "")
    assert growth_bound_ms(flat, 600.0) == pytest.approx(2.4)
    assert holds_text(12.1, 0.004, 600.0, 33.0) == "holds for 600 s: p99 12.1 ms + growth <= 0.004 ms/s x 600 s = " \
                                                   "14.5 ms <= 33 ms"
    # the same p99 with a window too short to bound the slope: unmeasured, never met, and it says why
    wide = trend(0.01, 0.09)  # hi 0.1 ms/s: 60 ms over 600 s
    verdict, why = slo_verdict(12.1, 33.0, "ok", 3000, 0, trend=wide, horizon_s=600.0)
    assert verdict == "unmeasured"
    assert "cannot exclude a growth of 0.1 ms/s [-0.08, 0.1] (95%)" in why and "= 72.1 ms > 33 ms" in why
    assert "run.max_duration_s" in why
    # a falling trend adds nothing; without a horizon the window's p99 alone decides, as before issue 35
    assert slo_verdict(12.1, 33.0, "ok", 3000, 0, trend=trend(-0.5, 0.2), horizon_s=600.0)[0] == "met"
    assert slo_verdict(12.1, 33.0, "ok", 3000, 0, trend=wide, horizon_s=0.0) == ("met", "")
    assert growth_bound_ms(wide, 0.0) is None and growth_bound_ms(None, 600.0) is None
    # no trend (too few inferences for one): nothing bounds the growth
    assert slo_verdict(12.1, 33.0, "ok", 3000, 0, trend=None, horizon_s=600.0)[0] == "unmeasured"


def test_a_proven_growth_that_breaks_the_slo_within_the_horizon_is_a_miss_whatever_the_p99():
    """The issue's CPU case: 5 streams at 101.5% of the serial device, p99 379 ms against 500 ms in its window."""
    growing = trend(29.3, 2.1, span_s=6.47, p50_ms=91.0, increments=[1] * 16)  # 16 of 16 sub-windows grew
    assert growing.growing and growing.backlog is not None and growing.backlog.p_value == 2.0**-16
    verdict, why = slo_verdict(379.0, 500.0, "invalid", 662, 0, "backlog grows ...", trend=growing, horizon_s=600.0)
    assert verdict == "missed"
    # the latency growth shown: the trend's lower bound, or the backlog's lower bound over what it served, the larger
    assert growing.proven_ms_per_s == pytest.approx(27.2)
    assert why == ("slo: missed within the 600 s horizon: the backlog grows, latency at >= 27.2 ms/s: p99 379 ms + "
                   "27.2 ms/s x 600 s = 1.67e+04 ms > 500 ms")
    # a latency trend whose lower bound is above 0 but a backlog the sign-flip test cannot show growing: no miss
    # for the horizon (the row is ok), and the trend's bound is not taken as shown
    noisy = trend(29.3, 2.1, span_s=6.47, p50_ms=91.0, increments=[5, -4] * 8)
    assert not noisy.growing and noisy.proven_ms_per_s == 0.0
    # a p99 over the SLO with a rise its window proves but the row is not invalid for: the reason names it
    rising = trend(30.0, 15.0, span_s=6.2, p50_ms=120.0)
    assert not rising.growing
    assert slo_verdict(612.0, 500.0, "ok", 662, 300, trend=rising, horizon_s=600.0) == (
        "missed", "slo: p99 612 ms over 500 ms with latency rising 30 ms/s [15, 45] (95%) over 6.2 s of arrivals")
    assert slo_verdict(612.0, 500.0, "ok", 662, 300, trend=trend(1.0, 2.0), horizon_s=600.0) == ("missed", "")
    # a horizon too short for the growth to matter leaves the invalid row unmeasured, as before
    assert slo_verdict(379.0, 500.0, "invalid", 662, 0, "x", trend=growing, horizon_s=1.0)[0] == "unmeasured"


def test_the_window_that_could_tell_is_longer_within_max_duration_and_none_once_decided():
    # met: nothing to run again; a p99 over the SLO, or no horizon, neither
    assert horizon_window_s(12.1, 33.0, 600.0, 0.001, -0.002, 0.004, 8.0, 60.0) is None
    assert horizon_window_s(40.0, 33.0, 600.0, 0.001, -0.1, 0.1, 8.0, 60.0) is None
    assert horizon_window_s(12.1, 33.0, 0.0, 0.001, -0.1, 0.1, 8.0, 60.0) is None
    # a flat slope, an interval 3x too wide: (3)^(2/3) x 1.3 ~ 2.7x the window (stable queues: width ~ T^-1.5)
    allowed = (33.0 - 12.1) / 600.0
    need = horizon_window_s(12.1, 33.0, 600.0, 0.0, -3 * allowed, 3 * allowed, 8.0, 60.0)
    assert need == pytest.approx(8.0 * 1.3 * 3 ** (2 / 3))
    # an interval only a little too wide still at least doubles the window; never past max_duration_s
    assert horizon_window_s(12.1, 33.0, 600.0, 0.0, -1.1 * allowed, 1.1 * allowed, 8.0, 60.0) == 16.0
    assert horizon_window_s(12.1, 33.0, 600.0, 0.0, -50 * allowed, 50 * allowed, 8.0, 60.0) == 60.0
    # an interval wholly above what the horizon allows can only become a proven growth: width down to slope / 3
    assert horizon_window_s(100.0, 500.0, 600.0, 15.0, 2.0, 28.0, 6.5, 300.0) == pytest.approx(
        6.5 * 1.3 * (13.0 / 5.0) ** 2)
    # a short window's noisy slope above `allowed`, its interval still holding 0: sized for a queue that meets
    # (slope at most allowed / 2), not for proving that slope. The H200's 31 streams at 1.5 s (issue 35): 10 s,
    # where sizing for the slope asked for the 60 s maximum at once
    allowed = (33.0 - 7.04) / 600.0
    assert horizon_window_s(7.04, 33.0, 600.0, 0.132, -0.13, 0.394, 1.51, 60.0) == pytest.approx(
        1.51 * 1.3 * (0.262 / (allowed / 2)) ** (2 / 3))
    assert horizon_window_s(7.04, 33.0, 600.0, 0.132, -0.13, 0.394, 1.51, 60.0) < 11.0
    # a slope under allowed / 2 is taken as measured
    assert horizon_window_s(12.1, 33.0, 600.0, 0.01, -0.08, 0.1, 8.0, 120.0) == pytest.approx(
        8.0 * 1.3 * (0.09 / ((33.0 - 12.1) / 600.0 - 0.01)) ** (2 / 3))
    # at max_duration_s already: the count stays unmeasured
    assert horizon_window_s(12.1, 33.0, 600.0, 0.0, -0.1, 0.1, 59.0, 60.0) is None


# ------------------------------------------------------------------------------------ simulated searches


def horizon_search(rho: float, service_ms: float, arrival: str, service: str, seed: int,
                   slo_ms: float) -> tuple[str, list[float]]:
    """One count of an SLO search on a simulated queue: (its verdict, the windows it ran), as the search runs a
    probe: a first window, longer ones while the verdict is unmeasured for want of one, at most MAX_S."""
    window, windows = FIRST_S, []
    while True:
        arrival_ns, end_ns = queue_window(rho, service_ms, window, arrival, service, seed)
        t = latency_trend(arrival_ns, end_ns)
        assert t is not None
        p99 = float(np.percentile((end_ns - arrival_ns) / 1e6, 99))
        status = "invalid" if t.growing else "ok"  # runner.metrics.judge on the trend
        verdict, _why = slo_verdict(p99, slo_ms, status, len(arrival_ns), 0, trend=t, horizon_s=HORIZON_S)
        windows.append(window)
        longer = horizon_window_s(p99, slo_ms, HORIZON_S, t.slope_ms_per_s, t.lo_ms_per_s, t.hi_ms_per_s,
                                  t.span_s, MAX_S) if verdict == "unmeasured" and status == "ok" else None
        if longer is None:
            return verdict, windows
        window = longer


CELLS = [  # (service ms, arrivals, services, SLO ms): the serial CPU device's 10 ms; a GPU's 1 ms; MLPerf's Poisson
    (10.0, "random", "clocked", 500.0),
    (1.0, "random", "clocked", 33.0),
    (1.0, "random", "lognormal", 33.0),
    (1.0, "poisson", "lognormal", 200.0),
    (4.0, "poisson", "clocked", 500.0),
]


@pytest.mark.parametrize("rho", [0.90, 0.95])
@pytest.mark.parametrize("service_ms, arrival, service, slo_ms", CELLS)
def test_a_stable_load_is_never_missed_and_met_once_its_window_can_tell(rho, service_ms, arrival, service, slo_ms):
    verdicts = Counter(horizon_search(rho, service_ms, arrival, service, seed, slo_ms)[0] for seed in range(DRAWS))
    assert verdicts["missed"] == 0, verdicts  # 20 runs, no false alarm
    slow_memory = arrival == "poisson" and service_ms == 4.0 and rho == 0.95
    assert verdicts["met"] >= (DRAWS - 2 if slow_memory else DRAWS), verdicts


@pytest.mark.parametrize("rho", [1.01, 1.02])
@pytest.mark.parametrize("service_ms, arrival, service, slo_ms", CELLS)
def test_an_overload_of_one_or_two_percent_is_never_met_and_missed_within_max_duration(rho, service_ms, arrival,
                                                                                       service, slo_ms):
    runs = [horizon_search(rho, service_ms, arrival, service, seed, slo_ms) for seed in range(DRAWS)]
    assert Counter(v for v, _w in runs) == {"missed": DRAWS}
    assert max(w[-1] for _v, w in runs) <= MAX_S


def test_a_window_that_met_says_how_short_a_window_would_have_sufficed():
    from edgebench.runner.load import enough_window_s

    # the H200's 60 s window at 31 streams (issue 35): 0.0002 ms/s where 0.039 was allowed: ~2.5 s would have told
    allowed = (33.0 - 9.5) / 600.0
    assert enough_window_s(9.5, 33.0, 600.0, 0.0, 0.0002, 60.0) == pytest.approx(60.0 * 1.3 * (0.0002 / allowed) ** (2 / 3))
    assert 2.0 < enough_window_s(9.5, 33.0, 600.0, 0.0, 0.0002, 60.0) < 3.0
    # never longer than the window that met, whose interval just fits
    assert enough_window_s(9.5, 33.0, 600.0, 0.0, 0.99 * allowed, 8.0) == 8.0
    # a positive slope is kept (at most allowed / 2): less room for the interval, a longer window
    assert enough_window_s(9.5, 33.0, 600.0, 0.01, 0.012, 60.0) > enough_window_s(9.5, 33.0, 600.0, 0.0, 0.002, 60.0)
    # nothing to say without a horizon, a p99 within the SLO or a trend
    assert enough_window_s(9.5, 33.0, 0.0, 0.0, 0.0002, 60.0) is None
    assert enough_window_s(40.0, 33.0, 600.0, 0.0, 0.0002, 60.0) is None
    assert enough_window_s(9.5, 33.0, 600.0, None, None, 60.0) is None
