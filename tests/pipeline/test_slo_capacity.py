"""Capacity first (issue 35): the SLO search learns what the device serves (a closed-loop row at its first count, or
the achieved rate of a probe whose backlog grew), never probes a count whose offered rate exceeds it, bisects only
between counts it admits, measures the count above the answer once, and drops a capacity that count contradicts.
Search logic against scripted probes: a device that serves `served` inferences/s to any count, with `rate` per
stream; a count over it misses (its backlog grows, its probe reports what was served), one under meets while its
p99 stays under the SLO."""

from __future__ import annotations

import pytest

from edgebench.config.run_config import RunConfig
from edgebench.pipeline.slo_search import (
    Capacity,
    Probe,
    backlog_grew,
    capacity_config,
    capacity_of,
    describe_probes,
    probe_config,
    probe_of,
    search_max_streams,
    search_record,
)


def device(served: float, rate: float, verdicts: dict[int, str] | None = None):
    """probe(n) of a device that serves `served`/s: over it the backlog grows (missed, served_hz set), else met
    (or verdicts[n]); records the counts probed."""
    calls: list[int] = []

    def probe(n: int) -> Probe:
        calls.append(n)
        if n * rate > served:
            return Probe(n, "missed", 500.0 + n, "invalid", "latency grows 10 ms/s ...", served_hz=served)
        return Probe(n, (verdicts or {}).get(n, "met"), 10.0 + n, "ok", trend_hi_ms_per_s=0.001)

    return probe, calls


def test_a_closed_loop_capacity_stops_the_doubling_and_the_count_above_is_probed_once():
    """The issue's H200: ~950/s served, 30/s per stream: 31 streams fit, 32 (960/s) do not. From 16 with the
    capacity: 16, 31, then 32 once. Without it the search doubles to 32 and bisects."""
    probe, calls = device(950.0, 30.0)
    result = search_max_streams(probe, 40, 16, rate_hz=30.0, capacity=Capacity(953.0, "closed loop at 16 streams"))
    assert calls == [16, 31, 32]
    assert result.max_streams == 31 and result.answer == "31" and result.over_capacity
    assert result.first_miss is not None and result.first_miss.streams == 32
    blind, blind_calls = device(950.0, 30.0)
    old = search_max_streams(blind, 40, 16)
    assert old.max_streams == 31 and len(blind_calls) > len(calls)  # 16, 32, 24, 28, 30, 31
    assert old.capacity is None and not old.over_capacity


def test_an_overloaded_probe_teaches_the_capacity_and_the_bisection_stays_under_it():
    """No closed-loop capacity: 16 meets, 32 is over and reports 950/s served: the bisection tries 31 at once
    (31 x 30 = 930 <= 950) instead of 24, 28, 30, 31."""
    probe, calls = device(950.0, 30.0)
    result = search_max_streams(probe, 40, 16, rate_hz=30.0)
    assert calls == [16, 32, 31]
    assert result.max_streams == 31 and result.capacity == Capacity(950.0, "served at 32 streams while the backlog grew")
    record = search_record(cfg(rate_hz=30.0), result, 1)
    assert (record["capacity_per_s"], record["capacity_max_streams"]) == (950.0, 31)
    assert record["capacity_source"] == "served at 32 streams while the backlog grew"


def test_a_served_rate_below_what_a_met_count_offered_bounds_nothing():
    """The CI run of test_option_sets_...: 5 streams of 90/s met (450/s offered), 6 missed while serving 430/s (6
    processes hand the device's lock to one another more slowly on a busy 2-core host). 430/s would admit 4 streams,
    fewer than met: a reading a measurement contradicts is noted, not kept as the capacity the line reports."""

    def probe(n: int) -> Probe:
        if n <= 5:
            return Probe(n, "met", 10.0 + n, "ok", trend_hi_ms_per_s=0.001)
        return Probe(n, "missed", 500.0, "invalid", "backlog grows ...", served_hz=430.0)

    result = search_max_streams(probe, 8, 2, rate_hz=90.0, capacity=Capacity(480.0, "closed loop at 2 streams"))
    assert result.max_streams == 5 and result.capacity == Capacity(480.0, "closed loop at 2 streams")
    assert any(n.startswith("served 430/s at 6 streams while the backlog grew, less than the 450/s 5 streams met at")
               for n in result.notes), result.notes
    record = search_record(cfg(rate_hz=90.0), result)
    assert record["capacity_max_streams"] == 5 >= result.max_streams


def test_the_capacity_measured_again_after_the_probes_says_whether_it_held():
    """A busy host lowers a closed loop's reading: the search's reference is measured again after its probes, and a
    reading that moved by more than both readings' jitter explains (at least 1%, at most 3%), or one read on a busy
    host, is 'unsure', with a note."""
    from edgebench.pipeline.slo_decide import SloResult, reference_moved_pct, reference_note
    from edgebench.pipeline.slo_search import capacity_reference

    before = Capacity(98.0, "closed loop at 4 streams", se_pct=0.2)
    assert reference_moved_pct(before, Capacity(97.5, "closed loop at 4 streams after the probes", 0.2)) is None
    moved = Capacity(91.0, "closed loop at 4 streams after the probes", se_pct=0.2)
    assert reference_moved_pct(before, moved) == pytest.approx(-7.14, abs=0.01)
    # noisy readings (se 1% each: 2.576 x 1.41 = 3.6% allowed, capped at 3%) cannot tell a 2.5% move apart, while a
    # move past the cap is unsure whatever the jitter (se 3% each would allow 10.9%)
    assert reference_moved_pct(Capacity(98.0, "c", 1.0), Capacity(95.55, "c", 1.0)) is None
    assert reference_moved_pct(Capacity(98.0, "c", 3.0), Capacity(94.0, "c", 3.0)) == pytest.approx(-4.08, abs=0.01)
    note = reference_note(before, moved)
    assert note is not None and note.startswith("capacity reference unsure: the closed loop at 4 streams read 98/s "
                                                "before the probes and 91/s after (-7.1%, beyond the 1.0% its jitter")
    assert reference_note(before, None) is None
    result = SloResult(4, False, capacity_before=before, capacity_after=moved)
    assert capacity_reference(result) == "unsure (-7.1%)"
    result.capacity_after = Capacity(98.4, "closed loop at 4 streams after the probes", 0.2)
    assert capacity_reference(result) == "steady (+0.4%)"
    assert capacity_reference(SloResult(4, False)) is None
    # a host busy for the whole search lowers both readings alike: they agree, and the reference is still unsure
    busy_row = {"status": "ok", "inferences": 900, "window_s": 10.0, "stability_bound_pct": 1.0, "host_busy": True,
                "reason": "busy host: other processes took 80% of the CPU this row's instances could use"}
    busy_before, _ = capacity_of(4, busy_row)
    busy_after, _ = capacity_of(4, busy_row, when="after the probes")
    assert busy_before is not None and busy_after is not None and busy_before.busy.startswith("busy host: ")
    assert reference_moved_pct(busy_before, busy_after) is None
    assert capacity_reference(SloResult(4, False, capacity_before=busy_before, capacity_after=busy_after)) \
        == "unsure (+0.0%)"
    busy_note = reference_note(busy_before, busy_after)
    assert busy_note is not None and busy_note.startswith("capacity reference unsure: measured on a busy host, the "
                                                          "closed loop at 4 streams (busy host: other processes took")
    gpu_busy, _ = capacity_of(4, {**busy_row, "reason": "busy GPU: other processes took 40% of the SM time of this "
                                                        "row's GPU(s)", "cpu_taken_by_others_pct": 2.0})
    assert gpu_busy is not None and gpu_busy.busy.startswith("busy GPU: other processes took 40%")
    quiet, _ = capacity_of(4, {**busy_row, "host_busy": False})
    assert quiet is not None and quiet.busy == "" and reference_note(quiet, quiet) is None
    # a row's jitter gives the standard error: stability_bound_pct / z(5 sub-windows) / sqrt(5)
    cap, _ = capacity_of(4, {"status": "ok", "inferences": 980, "window_s": 10.0, "stability_bound_pct": 3.09})
    assert cap is not None and cap.se_pct == pytest.approx(3.09 / 3.0902 / 5**0.5, rel=1e-3)


def test_a_count_the_capacity_excludes_is_never_probed_before_the_answer_and_its_check_is_not_a_lower_bound():
    """The SLO binds below the capacity: 16 and 24 meet, 28 misses (p99); then the bisection stays between 24 and
    28. Where the check above the answer is unmeasured (a window too short to tell) but over the capacity, the
    answer is the count below, not 'at least'."""
    probe, calls = device(950.0, 30.0, {n: "missed" for n in range(27, 32)})
    result = search_max_streams(probe, 40, 16, rate_hz=30.0, capacity=Capacity(950.0, "closed loop at 16 streams"))
    assert calls == [16, 31, 23, 27, 25, 26] and result.max_streams == 26
    assert all(n * 30.0 <= 950.0 for n in calls)

    probe, calls = device(950.0, 30.0)
    unmeasured = Probe(32, "unmeasured", 20.0, "ok", "cannot exclude ...")
    result = search_max_streams(lambda n: unmeasured if n == 32 else probe(n), 40, 16, rate_hz=30.0,
                                capacity=Capacity(950.0, "closed loop at 16 streams"))
    assert result.answer == "31" and not result.lower_bound and result.over_capacity


def test_a_capacity_the_count_above_contradicts_is_dropped_and_the_search_goes_on():
    """A closed loop at 1 process of a GPU is not saturated: it says 600/s, 20 streams; the device serves 950/s. The
    check at 21 meets, the capacity is dropped with a note, and the search finds 31."""
    probe, calls = device(950.0, 30.0)
    result = search_max_streams(probe, 64, 1, rate_hz=30.0, capacity=Capacity(600.0, "closed loop at 1 streams"))
    assert calls[:6] == [1, 2, 4, 8, 16, 20] and calls[6] == 21
    assert result.max_streams == 31 and result.answer == "31"
    assert any("capacity 600/s (closed loop at 1 streams) was wrong: 21 streams met" in n for n in result.notes)
    assert len(calls) == len(set(calls))


def test_after_a_contradicted_capacity_the_search_steps_up_instead_of_doubling():
    """The H200's ts6 search (docs/results/h200-issue35.md): a closed loop at 28 processes said 908.6/s (30 streams of
    30/s); the device served 944.6/s. 30 and 31 met; the search then probed 36 (1080/s offered, 14% over what was
    served) before 32. Stepping up from 31 probes 32, which misses and says what is served: the answer, no overload
    beyond one stream."""
    probe, calls = device(944.6, 30.0)
    result = search_max_streams(probe, 36, 28, rate_hz=30.0, capacity=Capacity(908.6, "closed loop at 28 streams"))
    assert calls == [28, 30, 31, 32] and result.answer == "31"
    # far off (a closed loop at 1 stream of a GPU): the steps double, so the overshoot past the last count that met
    # is never more than what was climbed since the capacity was dropped, plus one
    probe, calls = device(950.0, 30.0)
    result = search_max_streams(probe, 64, 1, rate_hz=30.0, capacity=Capacity(600.0, "closed loop at 1 streams"))
    after = calls[calls.index(21):]
    assert after[:5] == [21, 22, 24, 28, 36] and result.answer == "31"
    met = [n for n in after if n * 30.0 <= 950.0]
    for n in after[1:]:
        below = max(m for m in met if m < n)
        assert n - below <= below - 21 + 1


def test_stepping_up_stays_under_a_count_that_already_missed():
    """An overloaded probe at 32 served only 600/s (20 streams' worth); 20 and then 21 meet, so that capacity is
    dropped. 32 is still a count known to miss: the steps from 21 stay under it (22, 24, 28, then 31)."""
    probe, calls = device(950.0, 30.0)

    def noisy(n: int) -> Probe:
        if n == 32:
            calls.append(n)
            return Probe(n, "missed", 900.0, "invalid", "latency grows ...", served_hz=600.0)
        return probe(n)

    result = search_max_streams(noisy, 64, 16, rate_hz=30.0)
    assert calls[:4] == [16, 32, 20, 21] and result.answer == "31"
    after = calls[calls.index(21) + 1:]
    assert after and max(after) < 32 and len(calls) == len(set(calls)), calls


def test_capacity_admits_nothing_then_one_stream_is_measured_to_say_so():
    probe, calls = device(20.0, 30.0)
    result = search_max_streams(probe, 8, 2, rate_hz=30.0, capacity=Capacity(20.0, "closed loop at 2 streams"))
    assert calls == [1] and result.answer == "0"


@pytest.mark.parametrize("capacity,start,max_streams", [(13, 1, 64), (13, 4, 64), (1, 1, 64), (5, 16, 64),
                                                        (64, 1, 64), (40, 3, 50)])
def test_with_its_capacity_known_the_search_finds_the_same_answer_in_no_more_probes(capacity, start, max_streams):
    rate = 30.0
    served = capacity * rate + 15.0  # capacity streams fit, one more does not
    probe, calls = device(served, rate)
    result = search_max_streams(probe, max_streams, start, rate_hz=rate, capacity=Capacity(served, "closed loop"))
    blind, blind_calls = device(served, rate)
    assert result.max_streams == search_max_streams(blind, max_streams, start).max_streams == min(capacity, max_streams)
    assert len(calls) <= len(blind_calls) and len(calls) == len(set(calls))


# ------------------------------------------------------------------------------------ rows


def cfg(**kw) -> RunConfig:
    base = dict(model="null", backend="null", precision="fp32", batch=1, placements=("cpu",), rate_hz=20.3,
                slo_ms=500.0, duration_s=5.0, max_duration_s=60.0)
    base.update(kw)
    return RunConfig(**base)


def test_the_capacity_row_is_a_closed_loop_of_the_same_config_and_gives_inferences_per_second():
    base = cfg(repeat=1)
    closed = capacity_config(base, 4, 1, repeat=3)
    assert closed.rate_hz is None and closed.slo_ms is None and closed.instances == 4 and closed.repeat == 3
    assert closed.scenario == "closed-loop" and closed.options == base.options
    cap, why = capacity_of(4, {"status": "ok", "inferences": 980, "window_s": 10.0})
    assert cap == Capacity(98.0, "closed loop at 4 streams") and why == ""
    cap, why = capacity_of(4, {"status": "invalid", "reason": "throughput unstable", "inferences": 5, "window_s": 1})
    assert cap is None and "is invalid (throughput unstable)" in why
    assert capacity_of(4, None)[0] is None


def test_a_probe_window_can_be_run_longer_within_max_duration_and_keeps_the_p99_floor():
    base = cfg(min_inferences=100)
    assert probe_config(base, 5, 1, duration_s=20.0).duration_s == 20.0
    assert probe_config(base, 5, 1, duration_s=600.0).duration_s == 60.0  # never past max_duration_s
    assert probe_config(base, 5, 1, duration_s=1.0).duration_s == 5.0  # never under the profile's
    assert probe_config(base, 5, 1, duration_s=20.0).min_inferences == 662
    assert probe_config(base, 5, 1, duration_s=20.0).config_hash() != probe_config(base, 5, 1).config_hash()
    # the horizon is part of an SLO probe's identity; rows without an SLO keep their hashes
    assert cfg(slo_horizon_s=60.0).config_hash() != cfg().config_hash()
    assert cfg(slo_ms=None, slo_horizon_s=60.0).config_hash() == cfg(slo_ms=None).config_hash()


def test_a_probe_of_a_row_knows_what_was_served_and_what_window_could_tell():
    grown = {"status": "invalid", "slo_verdict": "missed", "latency_ms_p99": 379.0, "achieved_rate_hz": 98.4,
             "reason": "latency grows 29.3 ms/s [27.2, 31.3] (95%) over 6.47 s of arrivals ...", "window_s": 6.8}
    assert backlog_grew(grown) and probe_of(5, grown, 20.0).served_hz == 98.4
    short = {"status": "ok", "slo_verdict": "unmeasured", "latency_ms_p99": 60.0, "achieved_rate_hz": 90.0,
             "reason": "slo: unmeasured: ...", "window_s": 8.0, "slo_ms": 500.0, "slo_horizon_s": 600.0,
             "latency_trend_ms_per_s": 0.1, "latency_trend_lo_ms_per_s": -1.0, "latency_trend_hi_ms_per_s": 1.2}
    p = probe_of(4, short, 20.0)
    assert p.served_hz is None and p.trend_hi_ms_per_s == 1.2 and p.windows_s == [8.0]
    assert p.longer_s is not None and 16.0 <= p.longer_s <= 20.0
    assert probe_of(4, short, 8.0).longer_s is None  # already at max_duration_s: stays unmeasured
    assert probe_of(4, {**short, "status": "invalid"}, 20.0).longer_s is None  # a longer window cannot fix it


def test_windows_run_longer_are_shown_with_the_probes():
    p = Probe(4, "met", 30.0, "ok", windows_s=[8.2, 16.5])
    counted = Probe(4, "met", 30.0, "ok", repeats=[p, Probe(4, "met", 20.0, "ok", windows_s=[16.4])])
    assert describe_probes([counted]) == "4:met p99=30/20ms windows=8.2+16.5s"


def test_a_probe_starts_at_the_window_its_count_or_a_smaller_one_needed():
    from edgebench.pipeline.slo_search import first_window_s

    assert first_window_s({}, 30) is None  # nothing needed yet: the config's own window
    needed = {28: 4.5, 30: 7.7}
    assert first_window_s(needed, 30) == 7.7  # a later repeat: where the count's last one ended
    assert first_window_s(needed, 31) == 7.7  # a larger count: the longest a smaller one needed
    assert first_window_s(needed, 29) == 4.5
    assert first_window_s(needed, 27) is None  # a smaller count starts short
