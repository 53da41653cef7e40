"""Open-loop (fixed-rate) rows: offered vs achieved rate, queueing vs service time, the SLO verdict.

A fixed-rate instance stores, per inference, its scheduled arrival (start_ns), when it really began
(issued_ns) and its end (end_ns); see runner.worker.measure_fixed_rate. Latency is end - arrival, so
the row's latency percentiles (runner.metrics) already include time spent waiting; this module adds
how that latency splits into queueing (issued - arrival) and service (end - issued), and the verdict of
an SLO probe (slo_fields): met, missed, or unmeasured when the window holds too few inferences for a p99
judgement (never `missed` for that reason alone).

The horizon (issue 35). A probe's verdict must hold for cfg.slo_horizon_s (run.slo_horizon_s, --horizon-s; 600 s
as MLPerf Server's minimum run), not only for its window: a backlog that grows 1% too fast looks fine for seconds.
The window's latency trend (runner.backlog) bounds the growth: a count meets only when its p99 plus the growth the
window cannot exclude, max(trend upper bound, 0) x horizon, stays within the SLO. A row whose backlog is shown to
grow (`growing`, the row invalid) and would break the SLO within the horizon at the latency growth that proves
(LatencyTrend.proven_ms_per_s) misses. In
between, the window cannot tell: the probe is `unmeasured` and `horizon_window_s` says how long a window could
(the search runs it, up to run.max_duration_s).

How sure a p99 under the SLO is (issue 54). A p99 within the SLO is met only when MLPerf LoadGen's early-stopping
rule shows it at 99% over the window's queries (runner.early_stopping: 459 queries with none over, 662 with one),
the queries counted as LoadGen counts them: the inferences the window served and the arrivals scheduled in it that
were still queued at its end (queued_at_end; those that had waited longer than the SLO by then are over it). A p99
the rule cannot show is `unmeasured` with the queries it needs (slo_queries, slo_overlatency say how many there were);
the p99 of all the window's queries over the SLO is `missed`, as LoadGen's INVALID. A backlog shown to grow
(runner.backlog_growth) that breaks the SLO within the horizon misses whatever the window's p99.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from edgebench.runner.arrivals import FIRST_BLOCK, SEEDED, StreamSchedule, arrival_seed_of
from edgebench.runner.backlog import window_trend
from edgebench.runner.early_stopping import (
    EARLY_STOPPING_CONFIDENCE,
    TARGET_PERCENTILE,
    early_stopping_met,
    queries_needed,
)
from edgebench.runner.exact_rank import chunked_percentiles
from edgebench.runner.metrics import MIN_INFERENCES_FOR
from edgebench.runner.stamps import StampChunk
from edgebench.runner.window_stamps import inside_chunks, stamps_of

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.run_config import RunConfig
    from edgebench.runner.backlog import LatencyTrend
    from edgebench.runner.metrics import Summary
    from edgebench.runner.orchestrator import InstanceResult


P99_FLOOR = MIN_INFERENCES_FOR["p99"]  # inferences a p99 judgement needs (662, MLPerf's single-stream floor)
# inferences over the SLO that put the p99 of a P99_FLOOR-inference window over it whatever the others took
# (numpy's p99 interpolates between sorted values floor(0.99 (n-1)) and the next): 8 of 662
MISSES_FOR_P99_OVER = P99_FLOOR - math.floor(0.99 * (P99_FLOOR - 1))
SLO_VERDICTS = ("met", "missed", "unmeasured", "failed")  # "failed": the probe did not run to the end


def slo_met(p99_ms: float | None, slo_ms: float, status: str) -> bool:
    """A probe meets its SLO only when it is a valid measurement whose p99 was measured and is <= slo_ms."""
    return status == "ok" and p99_ms is not None and p99_ms <= slo_ms


def growth_bound_ms(trend: LatencyTrend | None, horizon_s: float) -> float | None:
    """The latency growth a window cannot exclude over `horizon_s`: max(trend upper bound, 0) x horizon (None
    without a trend or a horizon)."""
    if trend is None or horizon_s <= 0:
        return None
    return max(trend.hi_ms_per_s, 0.0) * horizon_s


def holds_text(p99_ms: float, hi_ms_per_s: float, horizon_s: float, slo_ms: float) -> str:
    """'holds for 600 s: p99 12.1 ms + growth <= 0.004 ms/s x 600 s = 14.5 ms <= 33 ms' (or '... > 33 ms')."""
    total = p99_ms + max(hi_ms_per_s, 0.0) * horizon_s
    word = "holds" if total <= slo_ms else "cannot be shown to hold"
    return (f"{word} for {horizon_s:g} s: p99 {p99_ms:.3g} ms + growth <= {max(hi_ms_per_s, 0.0):.3g} ms/s x "
            f"{horizon_s:g} s = {total:.4g} ms {'<=' if total <= slo_ms else '>'} {slo_ms:g} ms")


def p99_over_all(overlatency: int, queries: int) -> bool:
    """The p99 of all `queries` is over the bound when `overlatency` of them are (LoadGen's index: the sorted
    latencies' element int(0.99 n) is over it exactly when n - int(0.99 n) or more are)."""
    return queries > 0 and overlatency >= queries - int(queries * TARGET_PERCENTILE)


def slo_verdict(p99_ms: float | None, slo_ms: float, status: str, inferences: int, over_slo: int,
                reason: str = "", *, trend: LatencyTrend | None = None, horizon_s: float = 0.0,
                queued: int = 0, overdue: int = 0) -> tuple[str, str]:
    """(verdict, why) of one SLO probe; `why` is empty when the p99 speaks for itself.

    The window's queries are its `inferences` (those over slo_ms: `over_slo`) and, as LoadGen counts every query it
    issued, the `queued` arrivals scheduled in the window that no stream completed by its end (queued_at_end), of
    which `overdue` had waited longer than slo_ms by then: they are over it whatever they take.

    met         the row is ok, its p99 <= slo_ms, LoadGen's early stopping shows the p99 within slo_ms at 99% over
                the window's queries (runner.early_stopping: at most so many over for so many queries, 459 with none
                over), and (horizon_s > 0) p99 + the growth its window cannot exclude over the horizon
                (growth_bound_ms) <= slo_ms
    missed      its p99 > slo_ms (a measured p99 over the SLO is a miss even in an invalid row; `why` names a
                latency rise the window proves that the row is not invalid for); or the p99 of all the window's
                queries, the queued ones counted, is over it; or its backlog is shown to grow (trend.growing) at a
                rate that breaks the SLO within the horizon (trend.proven_ms_per_s); or, without a p99, at least
                MISSES_FOR_P99_OVER queries exceeded the SLO: the p99 of a window of P99_FLOOR inferences holding
                them is over it (an overloaded device completes few inferences)
    unmeasured  too few inferences for a p99 and too few over the SLO to call it missed, an invalid row whose
                p99 is under the SLO, a p99 under it that early stopping cannot show at 99% (more queries could:
                the search runs a longer window), or a window too short to bound the growth over the horizon (the
                search runs it longer: horizon_window_s): neither met nor missed, and the search treats it as
                neither
    failed      the probe did not run to the end
    """
    if status == "failed":
        return "failed", ""
    queries, overs = inferences + queued, over_slo + overdue
    if p99_ms is not None:
        if p99_ms > slo_ms:  # the p99 speaks for itself; a rising latency the row is not invalid for is named
            if trend is None or trend.growing or trend.lo_ms_per_s <= 0:
                return "missed", ""
            return "missed", (f"slo: p99 {p99_ms:.4g} ms over {slo_ms:g} ms with latency rising "
                              f"{trend.slope_ms_per_s:.3g} ms/s [{trend.lo_ms_per_s:.3g}, {trend.hi_ms_per_s:.3g}] "
                              f"(95%) over {trend.span_s:.3g} s of arrivals")
        if queued and p99_over_all(overs, queries):
            return "missed", (f"slo: missed counting the arrivals still queued at the window's end: {overs} of the "
                              f"window's {queries} scheduled arrivals took longer than {slo_ms:g} ms ({overdue} of "
                              f"them still queued then, after more than {slo_ms:g} ms), so their p99 is over it; the "
                              f"{inferences} completed ones' p99 is {p99_ms:.3g} ms")
        proven = trend.proven_ms_per_s if trend is not None else 0.0
        if trend is not None and trend.growing and horizon_s > 0 and p99_ms + proven * horizon_s > slo_ms:
            return "missed", (f"slo: missed within the {horizon_s:g} s horizon: the backlog grows, latency at >= "
                              f"{proven:.3g} ms/s: p99 {p99_ms:.3g} ms + {proven:.3g} ms/s x {horizon_s:g} s = "
                              f"{p99_ms + proven * horizon_s:.4g} ms > {slo_ms:g} ms")
        if status != "ok":
            return "unmeasured", f"slo: p99 {p99_ms:.3g} ms is under {slo_ms:g} ms but the row is {status} ({reason})"
        if not early_stopping_met(overs, queries):
            need = queries_needed(overs)
            return "unmeasured", (f"slo: unmeasured: p99 {p99_ms:.3g} ms is within {slo_ms:g} ms, but {overs} of "
                                  f"{queries} queries over it cannot show that at {EARLY_STOPPING_CONFIDENCE:.0%} "
                                  f"(LoadGen's early stopping needs {need} queries with {overs} over: {need - queries} "
                                  f"more, none over); a longer window (run.max_duration_s) can")
        if horizon_s > 0 and trend is None:
            return "unmeasured", (f"slo: unmeasured over the {horizon_s:g} s horizon: no latency trend to bound "
                                  "the growth (too few inferences or bins)")
        if horizon_s > 0 and trend is not None and p99_ms + max(trend.hi_ms_per_s, 0.0) * horizon_s > slo_ms:
            return "unmeasured", (f"slo: unmeasured: p99 {p99_ms:.3g} ms meets, but the {trend.span_s:.3g} s window "
                                  f"cannot exclude a growth of {trend.hi_ms_per_s:.3g} ms/s "
                                  f"[{trend.lo_ms_per_s:.3g}, {trend.hi_ms_per_s:.3g}] (95%), which "
                                  f"{holds_text(p99_ms, trend.hi_ms_per_s, horizon_s, slo_ms).split(': ', 1)[1]} "
                                  f"within the horizon; a longer window (run.max_duration_s) narrows the interval")
        return "met", ""
    if overs >= MISSES_FOR_P99_OVER:
        return "missed", (f"slo: missed without a p99: {overs} of {queries} queries took longer than "
                          f"{slo_ms:g} ms; {MISSES_FOR_P99_OVER} such among the {P99_FLOOR} a p99 needs put it over")
    return "unmeasured", (f"slo: unmeasured: {inferences} inferences in the window, a p99 needs {P99_FLOOR} "
                          f"({overs} over {slo_ms:g} ms); lengthen run.max_duration_s")


def queued_at_end(cfg: RunConfig, instances: Sequence[InstanceResult], summary: Summary,
                  slo_ms: float) -> tuple[int, int] | None:
    """(queued, overdue) of a fixed-rate window: the arrivals scheduled in it (window start to end) that no stream
    completed by its end, and those of them that had waited longer than `slo_ms` at the end. A stream records only
    what it served, so its schedule is drawn again (runner.arrivals.StreamSchedule, the row's seed and repeat; its
    origin is its first recorded arrival less the schedule's first offset) and its arrivals counted up to the window's
    end; a stream serves its arrivals in order, so the queued ones are its last. None when a schedule does not match
    what the stream recorded (the count up to its last served arrival differs): then nothing is added."""
    import numpy as np

    if cfg.rate_hz is None:
        return None
    w0, w1 = summary.window_start_ns, summary.window_end_ns
    period_ns = max(1, round(1e9 / float(cfg.rate_hz)))
    seed = arrival_seed_of(cfg.seed, cfg.repeat)
    queued = overdue = 0
    for position, r in enumerate(instances):
        src = stamps_of(r)
        if not src.open_loop or not src.count:
            continue
        first = next((int(c.start_ns[0]) for c in src.chunks() if len(c)), None)
        served, last = 0, None
        for c in inside_chunks(src, w0, w1):
            if len(c):
                served += len(c)
                last = int(c.start_ns.max())
        if first is None:
            continue
        schedule = StreamSchedule(cfg.arrival, int(getattr(r, "instance", position)), cfg.instances, period_ns, seed)
        offsets = schedule.take(1)
        origin = first - int(offsets[0])
        while int(offsets[-1]) <= w1 - origin:
            offsets = np.concatenate([offsets, schedule.take(FIRST_BLOCK)])
        arrival = origin + offsets[(offsets >= w0 - origin) & (offsets <= w1 - origin)]
        if last is not None and int(np.count_nonzero(arrival <= last)) != served:
            return None
        waiting = arrival[served:]
        queued += len(waiting)
        overdue += int(np.count_nonzero(w1 - waiting > slo_ms * 1e6))
    return queued, overdue


def slo_fields(cfg: RunConfig, instances: Sequence[InstanceResult], summary: Summary, status: str,
               reason: str, trend: LatencyTrend | None = None) -> tuple[dict[str, Any], str]:
    """The slo_* columns of an slo-search row and the note its reason gets (empty when there is none). `trend`:
    the window's latency trend (runner.backlog.window_trend), computed here when not given."""
    import numpy as np

    assert cfg.slo_ms is not None
    if trend is None:
        trend = window_trend(instances, summary) if instances else None
    over = 0
    for src in (stamps_of(r) for r in instances):
        for c in inside_chunks(src, summary.window_start_ns, summary.window_end_ns):
            over += int(np.count_nonzero((c.end_ns - c.start_ns) > cfg.slo_ms * 1e6))
    at_end = queued_at_end(cfg, instances, summary, cfg.slo_ms) if instances else None
    queued, overdue = at_end if at_end is not None else (0, 0)
    horizon = cfg.slo_horizon_s
    verdict, why = slo_verdict(summary.latency_ms.get("p99"), cfg.slo_ms, status, summary.inferences, over, reason,
                               trend=trend, horizon_s=horizon, queued=queued, overdue=overdue)
    met = {"met": True, "missed": False, "failed": False}.get(verdict)
    if at_end is None and cfg.rate_hz is not None and instances:
        why = "; ".join(w for w in (why, "slo: the arrivals still queued at the window's end are not counted (a "
                                         "stream's schedule drawn again did not match what it served): early "
                                         "stopping counted the served inferences only") if w)
    return {"slo_ms": cfg.slo_ms, "slo_met": met, "slo_verdict": verdict, "slo_horizon_s": horizon,
            "slo_growth_bound_ms": growth_bound_ms(trend, horizon),
            "slo_queries": summary.inferences + queued if at_end is not None else None,
            "slo_overlatency": over + overdue if at_end is not None else None}, why


def horizon_window_s(p99_ms: float | None, slo_ms: float, horizon_s: float, slope_ms_per_s: float | None,
                     lo_ms_per_s: float | None, hi_ms_per_s: float | None, window_s: float,
                     max_duration_s: float) -> float | None:
    """How long a window could tell what this one could not (None when it told: no horizon, no p99, a p99 over
    the SLO, or p99 + growth bound within it): an estimate, at least twice `window_s`, at most `max_duration_s`.

    The interval's half-width w shrinks with the window T: on a stable queue about as T^-1.5 (20 bins of
    T/20 each, each bin's median from ~T inferences), under overload about as T^-0.5 (the backlog is a random
    walk with drift). Met needs slope + w <= allowed = (slo - p99) / horizon. While the interval still holds a
    growth the horizon allows (its lower bound under `allowed`), the next window is sized for a queue that meets:
    its slope taken as the one measured but at most allowed / 2 (a short window's slope is mostly noise: on an
    H200 a 1.5 s window at 31 streams read 0.13 [-0.13, 0.39] ms/s where 60 s read 0.000 [-0.001, 0.001], and
    sizing for that 0.13 asked for the 60 s at once, where ~10 s could tell). If that window cannot tell either,
    the next is sized from its narrower interval. An interval wholly above `allowed` can only become a proven
    growth, which needs w <= slope / 3 (the lower bound then proves 2/3 of the growth, more than a backlog growing
    from empty has as its median). Past max_duration_s the count stays unmeasured."""
    if (horizon_s <= 0 or p99_ms is None or p99_ms > slo_ms or slope_ms_per_s is None or lo_ms_per_s is None
            or hi_ms_per_s is None or window_s <= 0):
        return None
    allowed = (slo_ms - p99_ms) / horizon_s
    if hi_ms_per_s <= allowed:
        return None
    if window_s >= 0.95 * max_duration_s:
        return None
    width = max(hi_ms_per_s - slope_ms_per_s, 1e-9)
    if lo_ms_per_s < allowed:
        need = _stable_window_s(window_s, width, slope_ms_per_s, allowed)
    else:
        need = window_s * 1.3 * (width / max(slope_ms_per_s / 3, 1e-9)) ** 2
    return min(max_duration_s, max(2 * window_s, need))


def early_stopping_window_s(p99_ms: float | None, slo_ms: float, queries: int | None, overlatency: int | None,
                            window_s: float, max_duration_s: float) -> float | None:
    """The window in which LoadGen's early stopping could show a p99 within the SLO that this window's queries could
    not (None when they could, the p99 is over the SLO, the counts are unknown, or the window is at max_duration_s
    already): the queries the rule needs with this many over (queries_needed, assuming no more go over) at this
    window's query rate, with a 1.2 margin, at least 1.5 times the window, at most max_duration_s."""
    if p99_ms is None or p99_ms > slo_ms or not queries or overlatency is None or window_s <= 0:
        return None
    if early_stopping_met(overlatency, queries) or window_s >= 0.95 * max_duration_s:
        return None
    need = window_s * 1.2 * queries_needed(overlatency) / queries
    return min(max_duration_s, max(1.5 * window_s, need))


def enough_window_s(p99_ms: float | None, slo_ms: float, horizon_s: float, slope_ms_per_s: float | None,
                    hi_ms_per_s: float | None, window_s: float) -> float | None:
    """The window a row that met over the horizon says would have sufficed (None when it cannot say: no horizon,
    no p99 within the SLO, no trend), at most its own: its interval's half-width scaled by T^-1.5 (a stable queue,
    horizon_window_s) until it fits what the horizon allows, with the same 1.3 margin and slope assumption (the one
    measured, at most allowed / 2). A later repeat starts there rather than at the window this one ran to: on an
    H200 one 10 s window at 31 streams held a p99 of 26 ms (a passing stall) and sent its count to 60 s, whose
    interval (0.0002 ms/s) says ~2 s would have told."""
    if (horizon_s <= 0 or p99_ms is None or p99_ms > slo_ms or slope_ms_per_s is None or hi_ms_per_s is None
            or window_s <= 0):
        return None
    allowed = (slo_ms - p99_ms) / horizon_s
    if allowed <= 0:
        return None
    return min(window_s, _stable_window_s(window_s, max(hi_ms_per_s - slope_ms_per_s, 0.0), slope_ms_per_s, allowed))


def _stable_window_s(window_s: float, width: float, slope_ms_per_s: float, allowed: float) -> float:
    """The window whose interval, a half-width `width` now narrowing as T^-1.5 (a stable queue), would fit what the
    horizon allows beside the slope taken as the one measured but at most allowed / 2; with a 1.3 margin."""
    meets_slope = max(0.0, min(slope_ms_per_s, allowed / 2))
    return window_s * 1.3 * (width / (allowed - meets_slope)) ** (2 / 3)


def arrival_fields(cfg: RunConfig) -> dict[str, Any]:
    """`arrival` (the arrival model of a fixed-rate row, 'closed' for a closed loop) and `arrival_seed` (the seed
    its phases / gaps were drawn from; empty for even and aligned, which draw nothing, and for a closed loop)."""
    if cfg.rate_hz is None:
        return {"arrival": "closed", "arrival_seed": None}
    seed = arrival_seed_of(cfg.seed, cfg.repeat) if cfg.arrival in SEEDED else None
    return {"arrival": cfg.arrival, "arrival_seed": seed}


def load_fields(cfg: RunConfig, instances: Sequence[InstanceResult], summary: Summary) -> dict[str, Any]:
    """Row fields of a fixed-rate / slo-search row (empty dict for closed-loop rows)."""
    if cfg.rate_hz is None:
        return {}
    offered = cfg.rate_hz * cfg.instances
    fields: dict[str, Any] = {
        "rate_per_stream_hz": cfg.rate_hz,
        "offered_rate_hz": offered,
        "achieved_rate_hz": summary.inferences / summary.window_s if summary.window_s > 0 else None,
    }
    streams = [s for s in (stamps_of(r) for r in instances) if s.open_loop and s.count]
    w0, w1 = summary.window_start_ns, summary.window_end_ns

    def inside() -> Iterator[StampChunk]:
        return (c for src in streams for c in inside_chunks(src, w0, w1) if c.issued_ns is not None)

    queue = chunked_percentiles(lambda: (c.issued_ns - c.start_ns for c in inside()), (99,), 1e6)  # type: ignore[operator]
    service = chunked_percentiles(lambda: (c.end_ns - c.issued_ns for c in inside()), (50,), 1e6)  # type: ignore[operator]
    if queue is not None and service is not None:  # exact, as np.percentile over every inference (runner.exact_rank)
        fields["queue_ms_p99"] = queue[99]
        fields["service_ms_p50"] = service[50]
    if cfg.slo_ms is not None:
        fields["slo_ms"] = cfg.slo_ms
    return fields
