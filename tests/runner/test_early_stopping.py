"""LoadGen's early-stopping rule for an SLO probe's p99 (issue 54, build item 4: runner.early_stopping), and the queries
it counts as LoadGen does: the window's served inferences and its arrivals still queued at the end (runner.load)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from edgebench.config.run_config import RunConfig
from edgebench.runner.arrivals import StreamSchedule, arrival_seed_of
from edgebench.runner.backlog import LatencyTrend
from edgebench.runner.early_stopping import (
    early_stopping_met,
    over_at_most_probability,
    queries_needed,
)
from edgebench.runner.load import early_stopping_window_s, p99_over_all, queued_at_end, slo_verdict
from edgebench.runner.metrics import summarize

MS = 1_000_000

binom = pytest.importorskip("scipy.stats",
                            reason="scipy (scikit-learn's dependency, the dev extra) checks the binomial sums").binom


# ------------------------------------------------------------------------------------ the rule


def test_the_least_queries_are_loadgens():
    """459 queries with none over the bound (LoadGen's h_min at p99 / 99%: ceil(log 0.01 / log 0.99)), 662 with one
    (LoadGen's single-stream p99 floor)."""
    assert queries_needed(0) == 459 and queries_needed(1) == 662
    assert queries_needed(0, percentile=0.90) == 44  # ceil(log 0.01 / log 0.9)


@pytest.mark.parametrize("over", [0, 1, 2, 5, 10, 100, 1000])
def test_queries_needed_is_where_the_binomial_tail_crosses_one_percent(over):
    n = queries_needed(over)
    assert binom.cdf(over, n, 0.01) <= 0.01 < binom.cdf(over, n - 1, 0.01)


def test_the_probability_is_the_binomial_cdf_even_where_p_to_the_n_underflows():
    for over, queries in ((0, 459), (3, 1000), (50, 6000), (9000, 1_000_000)):
        assert over_at_most_probability(over, queries) == pytest.approx(binom.cdf(over, queries, 0.01), rel=1e-9,
                                                                        abs=1e-300)
    assert over_at_most_probability(5, 5) == 1.0 and over_at_most_probability(0, 0) == 1.0


def test_one_percent_over_is_never_enough_and_fewer_are_with_enough_queries():
    assert not early_stopping_met(100, 10_000)  # exactly 1% over: the p99 sits at the bound
    assert early_stopping_met(70, 10_000) and not early_stopping_met(85, 10_000)


# ------------------------------------------------------------------------------------ the verdict


def flat() -> LatencyTrend:
    return LatencyTrend(0.0, -0.001, 0.001, span_s=60.0, bins=20, inferences=10_000, p50_ms=20.0)


def test_a_p99_within_the_slo_that_early_stopping_cannot_show_is_unmeasured_with_what_it_needs():
    # 700 inferences, 5 over the SLO: p99 within it (5 < 7), but 5 over needs 1307 queries
    verdict, why = slo_verdict(480.0, 500.0, "ok", 700, 5, trend=flat(), horizon_s=0.0)
    assert verdict == "unmeasured"
    assert why == ("slo: unmeasured: p99 480 ms is within 500 ms, but 5 of 700 queries over it cannot show that at 99% "
                   "(LoadGen's early stopping needs 1307 queries with 5 over: 607 more, none over); a longer window "
                   "(run.max_duration_s) can")
    assert slo_verdict(480.0, 500.0, "ok", 1307, 5, trend=flat(), horizon_s=0.0) == ("met", "")


def test_arrivals_still_queued_at_the_end_count_as_loadgen_counts_them():
    """An overloaded window: 9,000 served with 50 over the SLO (p99 of the served within it), and 400 arrivals still
    queued at its end, 120 of them after more than the SLO: 170 of 9,400 queries over it, their p99 is over."""
    assert p99_over_all(170, 9400) and not p99_over_all(90, 9400)
    verdict, why = slo_verdict(430.0, 500.0, "ok", 9000, 50, trend=flat(), horizon_s=0.0, queued=400, overdue=120)
    assert verdict == "missed"
    assert why.startswith("slo: missed counting the arrivals still queued at the window's end: 170 of the window's "
                          "9400 scheduled arrivals took longer than 500 ms (120 of them still queued then")
    # without them the served ones alone would have met
    assert slo_verdict(430.0, 500.0, "ok", 9000, 50, trend=flat(), horizon_s=0.0)[0] == "met"


def test_the_window_that_early_stopping_asks_for():
    assert early_stopping_window_s(480.0, 500.0, 700, 5, 10.0, 60.0) == pytest.approx(10.0 * 1.2 * 1307 / 700)
    assert early_stopping_window_s(480.0, 500.0, 700, 0, 10.0, 60.0) is None  # met: nothing to run again
    assert early_stopping_window_s(520.0, 500.0, 700, 5, 10.0, 60.0) is None  # missed: a longer window cannot help
    assert early_stopping_window_s(480.0, 500.0, 700, 5, 59.0, 60.0) is None  # at max_duration_s already
    assert early_stopping_window_s(480.0, 500.0, 700, 6, 10.0, 12.0) == 12.0  # never past it


# ------------------------------------------------------------------------------------ the queued arrivals


@dataclass
class Stream:
    instance: int
    start_ns: np.ndarray
    end_ns: np.ndarray
    issued_ns: np.ndarray


def cfg(arrival: str) -> RunConfig:
    return RunConfig(model="m", backend="null", precision="fp32", batch=1, placements=("cpu", "cpu"), rate_hz=50.0,
                     arrival=arrival, seed=7, repeat=2, duration_s=10.0, max_duration_s=10.0, min_inferences=10)


@pytest.mark.parametrize("arrival", ["random", "poisson"])
def test_queued_arrivals_are_drawn_again_from_the_rows_schedule(arrival):
    """Two streams of 50/s for 10 s, origin 1 s: stream 0 keeps up (latency 2 ms); stream 1 serves one arrival every
    25 ms (half its rate), so its backlog grows, and the window (to stream 0's last end) holds only the first of its
    arrivals: the rest are queued, and those due more than 500 ms before the window's end are overdue."""
    c = cfg(arrival)
    period = round(1e9 / c.rate_hz)
    origin = 1_000_000_000
    streams = []
    for i in range(2):
        offsets = StreamSchedule(arrival, i, 2, period, arrival_seed_of(c.seed, c.repeat)).take(2000)
        arrival_ns = origin + offsets[offsets < 10_000_000_000]
        if i == 0:
            end = arrival_ns + 2 * MS
        else:
            end = np.maximum.accumulate(np.maximum(arrival_ns, origin + np.arange(len(arrival_ns)) * 25 * MS) + 25 * MS)
        served = end <= origin + 11_000_000_000
        streams.append(Stream(i, arrival_ns[served], end[served], arrival_ns[served]))
    summary = summarize(streams, 1, 5)
    w0, w1 = summary.window_start_ns, summary.window_end_ns
    queued, overdue = queued_at_end(c, streams, summary, 500.0)
    expected_q = expected_o = 0
    for s in streams:  # by hand: the schedule's arrivals in [w0, w1] that the stream did not complete by w1
        offsets = StreamSchedule(arrival, s.instance, 2, period, arrival_seed_of(c.seed, c.repeat)).take(2000)
        due = origin + offsets[(origin + offsets >= w0) & (origin + offsets <= w1)]
        done = set(s.start_ns[(s.start_ns >= w0) & (s.end_ns <= w1)].tolist())
        waiting = [a for a in due.tolist() if a not in done]
        expected_q += len(waiting)
        expected_o += sum(w1 - a > 500 * MS for a in waiting)
    assert (queued, overdue) == (expected_q, expected_o)
    assert queued > 50 and 0 < overdue < queued  # stream 1 fell about 2 s behind
    # a stream whose recorded arrivals are not its schedule's (one of them missing): nothing is added
    s1 = streams[1]
    gap = [streams[0], Stream(1, np.delete(s1.start_ns, 10), np.delete(s1.end_ns, 10), np.delete(s1.issued_ns, 10))]
    assert queued_at_end(c, gap, summarize(gap, 1, 5), 500.0) is None
