"""What an SLO search decides (pipeline.slo_search runs it): which stream count to probe next, when a count is
accepted, and what the answer is.

A count's probe (one row per repeat, each repeat's windows run longer while they cannot bound the growth over the
horizon) has a verdict: met, missed, unmeasured, failed or skipped. `repeated_probe` accepts a count only when
every repeat met. `search_max_streams` doubles from the first count until a count misses, then bisects between
the last count that met and the first that did not, each count probed at most once. With capacities (a
closed-loop row's throughput, what a probe served while its backlog grew), no count whose offered rate exceeds the
lowest is probed, the bisection tries the highest count it admits first, and the count above the answer is
measured once (a capacity it contradicts is dropped, and the search steps up from that count 1, 2, 4, ... streams
at a time instead of doubling it). `monotonic_note` says when the probes contradict the
search's assumption (p99 never falls as streams are added); `describe_probes`, `p99_list` and `holds_at` are the
texts of its slo_search.csv line.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edgebench.runner.load import P99_FLOOR, holds_text

# a p99 that falls by more than this share of itself AND of the SLO as streams are added breaks the search's
# assumption; smaller falls are run-to-run noise of percentiles far below the SLO
P99_FALL_REL = 0.10
P99_FALL_SLO_SHARE = 0.05


@dataclass
class Probe:
    streams: int
    verdict: str  # met / missed / unmeasured / failed / skipped (runner.load.SLO_VERDICTS + skipped)
    p99_ms: float | None  # of a repeated count: the worst (largest) repeat's
    status: str
    reason: str = ""
    repeats: list[Probe] = field(default_factory=list)  # a repeated count: each repeat's probe, in the order run
    served_hz: float | None = None  # the achieved rate of a probe whose backlog grew: what the device served
    trend_hi_ms_per_s: float | None = None  # the latency trend's upper bound (95%)
    longer_s: float | None = None  # unmeasured for want of a longer window: the window that could tell
    windows_s: list[float] = field(default_factory=list)  # each window this repeat ran (longer ones after the first)

    @property
    def met(self) -> bool:
        return self.verdict == "met"

    @property
    def p99s_ms(self) -> list[float | None]:
        """Each repeat's p99 (the probe's own when it is not repeated)."""
        return [r.p99_ms for r in self.repeats] if self.repeats else [self.p99_ms]


def repeated_probe(streams: int, repeats: int, measure: Callable[[int], Probe]) -> Probe:
    """Measure `streams` up to `repeats` times (measure(j) is repeat j) and judge the count on all of them: met only
    when every repeat met; the first repeat that did not meet ends it and gives the count its verdict, status and
    reason. The count's p99 is its worst repeat's."""
    done: list[Probe] = []
    for j in range(repeats):
        done.append(measure(j))
        if done[-1].verdict != "met":
            break
    last = done[-1]
    p99s = [p.p99_ms for p in done if p.p99_ms is not None]
    worst = max(p99s) if p99s else None
    reason = last.reason if last.verdict == "met" or len(done) == 1 else f"repeat {len(done) - 1}: {last.reason}"
    served = [p.served_hz for p in done if p.served_hz is not None]
    return Probe(streams, last.verdict, worst, last.status, reason, done, served_hz=min(served) if served else None)


@dataclass(frozen=True)
class Capacity:
    """What the device served, in inferences (batches) per second, and where that was measured."""

    per_s: float
    source: str  # 'closed loop at 8 streams', 'served at 6 streams while the backlog grew'
    # a closed loop's own jitter: one standard error of per_s, % of it (its sub-windows' spread, renewal model:
    # runner.metrics.jitter_sigma_pct / sqrt(sub-windows)); None where unknown
    se_pct: float | None = None
    # a closed loop measured while other processes took a material share of the CPU/GPU its instances could use
    # (the row's host_busy, with the figure its reason gives): '' when not; a busy host lowers a closed loop's reading
    busy: str = ""

    def streams(self, rate_hz: float) -> int:
        """The most streams of `rate_hz` it admits: floor(per_s / rate_hz)."""
        return math.floor(self.per_s / rate_hz * (1 + 1e-12))


REFERENCE_Z = 2.576  # two-sided 99%: how far apart two readings of one capacity may be from their jitter alone
REFERENCE_FLOOR_PCT = 1.0  # below this the readings agree whatever their jitter says (a 1% overload is the finest
# load the calibration decides: docs/results/calibration/capacity-verdict.md)
# above this a reference moved too far for a load stated against it, whatever its jitter says: the jitter of a
# closed loop of processes sharing one device (each process's gaps between completions) overstates the noise of
# their total (on the serial device: 51 consecutive readings moved at most 1.12% where that jitter allowed 2-34%)
REFERENCE_CAP_PCT = 3.0


def reference_allowed_pct(before: Capacity, after: Capacity) -> float:
    """How far apart (% of `before`) two readings of one capacity may be: what both readings' jitter explains at 99%,
    at least REFERENCE_FLOOR_PCT and at most REFERENCE_CAP_PCT."""
    jitter = REFERENCE_Z * math.hypot(before.se_pct or 0.0, after.se_pct or 0.0)
    return min(max(jitter, REFERENCE_FLOOR_PCT), REFERENCE_CAP_PCT)


def reference_busy(before: Capacity, after: Capacity | None) -> str:
    """'' when neither reading of the reference was taken on a busy host, else which and the figure: a host busy for
    the whole search lowers both readings alike, so their agreement says nothing of the device's capacity."""
    busy = [f"the {c.source} ({c.busy})" for c in (before, after) if c is not None and c.busy]
    return "; ".join(busy)


def reference_moved_pct(before: Capacity, after: Capacity) -> float | None:
    """How far (% of `before`, signed) the capacity moved between a search's closed loop before its probes and the
    same closed loop after them, when that is more than reference_allowed_pct; None when they agree. A busy host
    lowers a closed loop's reading: a reference that moved was not the device's capacity for the whole search."""
    moved = (after.per_s - before.per_s) / before.per_s * 100.0
    return moved if abs(moved) > reference_allowed_pct(before, after) else None


def reference_note(before: Capacity, after: Capacity | None) -> str | None:
    """The note of a capacity reference that moved during the search or was read on a busy host (None when it held
    on a host that was not busy, or was not re-measured and not busy)."""
    if (busy := reference_busy(before, after)):
        return (f"capacity reference unsure: measured on a busy host, {busy}: a busy host lowers a closed loop's "
                "reading, so the device may serve more than the reference the counts were bounded by")
    if after is None or (moved := reference_moved_pct(before, after)) is None:
        return None
    return (f"capacity reference unsure: the {before.source} read {before.per_s:.4g}/s before the probes and "
            f"{after.per_s:.4g}/s after ({moved:+.1f}%, beyond the {reference_allowed_pct(before, after):.1f}% its "
            "jitter explains): the host's load changed during the search, so the counts the capacity bounded rest "
            "on a reading that did not hold; each count's verdict is its own probe's")


@dataclass
class SloResult:
    max_streams: int  # the most streams that met the SLO; 0 when none met
    capped: bool  # every probe up to max_streams met it: the answer is a lower bound
    probes: list[Probe] = field(default_factory=list)  # in the order they ran
    lower_bound: bool = False  # the count just above max_streams was unmeasured, not missed
    skipped: str | None = None  # why the search could not run here (a skipped probe's reason)
    notes: list[str] = field(default_factory=list)  # unmeasured probes, a p99 that fell as streams were added
    record: dict[str, Any] = field(default_factory=dict)  # its slo_search.csv line
    capacity: Capacity | None = None  # the lowest capacity the search held at its end (None: none known)
    over_capacity: bool = False  # the count just above the answer offers more than `capacity`
    capacity_before: Capacity | None = None  # the search's closed-loop capacity, measured before its probes
    capacity_after: Capacity | None = None  # the same closed loop measured again after the probes

    @property
    def first_miss(self) -> Probe | None:
        above = [p for p in self.probes if p.streams > self.max_streams and p.verdict in ("missed", "failed")]
        return min(above, key=lambda p: p.streams) if above else None

    @property
    def answer(self) -> str:
        """The answer in words: '21', 'at least 31', 'skipped: ...', 'undetermined: ...'."""
        if self.skipped is not None:
            return f"skipped: {self.skipped}"
        if self.max_streams == 0 and self.lower_bound:
            miss = self.first_miss
            if miss is None:
                return "undetermined: no probe was measured"
            return f"undetermined (< {miss.streams}): no probe below {miss.streams} was measured"
        return ("at least " if self.capped or self.lower_bound else "") + str(self.max_streams)


def search_max_streams(probe: Callable[[int], Probe], max_streams: int, start: int = 1, *,
                       rate_hz: float | None = None, capacity: Capacity | None = None) -> SloResult:
    """Exponential search from `start`, then bisection; each stream count is probed at most once.

    Unmeasured probes do not stop the doubling (more streams bring more inferences per window); in the
    bisection an unmeasured middle is treated like a miss for the direction only, and the answer is then
    marked a lower bound. A skipped probe ends the search.

    With `rate_hz`, capacities bound the counts probed: `capacity` (a closed-loop row's) and the served rate of
    every probe whose backlog grew (Probe.served_hz), unless a count that met offered more than it served (then a
    note says so and the reading bounds nothing). No count above the lowest capacity's `streams` is probed
    by the doubling or the bisection, and the bisection tries that count first; the count just above the answer
    is probed once anyway, and if it meets, the capacities are dropped (a note says so) and the search goes on
    above it."""
    seen: dict[int, Probe] = {}
    order: list[Probe] = []
    caps: list[Capacity] = [capacity] if capacity is not None and rate_hz else []
    notes: list[str] = []

    def limit() -> int:
        if not caps or not rate_hz:
            return max_streams
        return max(0, min(max_streams, min(c.streams(rate_hz) for c in caps)))

    def verdict(n: int) -> str:
        if n not in seen:
            seen[n] = p = probe(n)
            order.append(p)
            if rate_hz and p.served_hz is not None and p.verdict != "met":
                met = max((q.streams for q in order if q.verdict == "met"), default=0)
                if p.served_hz < met * rate_hz:  # a reading a measurement contradicts is not a reference
                    notes.append(f"served {p.served_hz:.4g}/s at {n} streams while the backlog grew, less than the "
                                 f"{met * rate_hz:.4g}/s {met} streams met at: not taken as the capacity (the device "
                                 "served less with more streams, or the host got busier)")
                else:
                    caps.append(Capacity(p.served_hz, f"served at {n} streams while the backlog grew"))
        return seen[n].verdict

    def skipped(n: int, good: int) -> SloResult:
        return _result(good, False, order, skipped=seen[n].reason or "skipped")

    good, upper = 0, None  # upper: the fewest streams that did not meet (for the direction)
    step = 0  # after a contradicted capacity: the next count is good + step, step doubling while they meet
    n = max(1, min(start, max_streams))
    while True:
        while True:  # doubling, within the capacity (and under a count known to miss)
            n = min(n, limit(), max_streams if upper is None else upper - 1)
            if n <= good:
                break
            v = verdict(n)
            if v == "skipped":
                return skipped(n, good)
            if v in ("missed", "failed"):
                upper = n if upper is None else min(upper, n)
                break
            if v == "met":
                good = n
            if n >= limit():
                break
            if step:
                n, step = min(good + step, limit()), 2 * step
            else:
                n = min(2 * n, limit())
        if upper is not None:  # bisection between what met and the first that did not or the capacity's bound
            while (hi := min(upper, limit() + 1)) - good > 1:
                top = limit()  # the most the capacity admits, first: where the capacity binds, it is the answer
                mid = top if caps and top < upper and top not in seen else (good + hi) // 2
                v = verdict(mid)
                if v == "skipped":
                    return skipped(mid, good)
                if v == "met":
                    good = mid
                else:
                    upper = min(upper, mid)
        above = good + 1
        if not caps or above > max_streams or above in seen or above <= limit():
            break
        v = verdict(above)  # excluded by the capacity: measured once, as the answer's first miss
        if v == "skipped":
            return skipped(above, good)
        if v != "met":
            break
        lowest = min(caps, key=lambda c: c.per_s)
        notes.append(f"capacity {lowest.per_s:.4g}/s ({lowest.source}) was wrong: {above} streams met at "
                     f"{above * (rate_hz or 0):.4g}/s offered; the search went on above it one stream, then 2, 4, "
                     "... at a time (a count offers at most what the counts met since add again)")
        caps.clear()
        # no capacity is known now, only that `above` was served: step up from it, not doubling it, so a probe
        # overloads the device by no more than the search has climbed since (the H200: 32 next, not 36)
        # a count above it that already missed stays the upper end
        upper = min((p.streams for p in order if p.streams > above and p.verdict in ("missed", "failed")),
                    default=None)
        good, step = above, 2
        n = min(above + 1, max_streams)
    nearest = min((p for p in order if p.streams > good), key=lambda p: p.streams, default=None)
    lowest_cap = min(caps, key=lambda c: c.per_s) if caps else None
    over = lowest_cap is not None and good + 1 > limit() and good + 1 <= max_streams
    capped = nearest is None and good >= max_streams
    result = _result(good, capped, order, notes=notes,
                     lower_bound=nearest is not None and nearest.verdict == "unmeasured" and not over)
    result.capacity, result.over_capacity = lowest_cap, over
    return result


def _result(good: int, capped: bool, order: list[Probe], *, lower_bound: bool = False,
            skipped: str | None = None, notes: list[str] | None = None) -> SloResult:
    result = SloResult(good, capped, order, lower_bound=lower_bound, skipped=skipped, notes=list(notes or []))
    unmeasured = [p.streams for p in order if p.verdict == "unmeasured"]
    if unmeasured:
        result.notes.append(f"unmeasured at {', '.join(map(str, sorted(unmeasured)))} stream(s): too few inferences "
                            f"for a p99 judgement (a p99 needs {P99_FLOOR}), an invalid row, or windows up to "
                            "run.max_duration_s too short to bound the growth over the horizon; see their reasons")
    return result


def p99_falls(probes: list[Probe], slo_ms: float) -> list[tuple[Probe, Probe]]:
    """Pairs (fewer streams, more streams) whose p99 fell by more than P99_FALL_REL of the first and more than
    P99_FALL_SLO_SHARE of the SLO: where the search's assumption (p99 never falls as streams are added) fails."""
    measured = sorted((p for p in probes if p.p99_ms is not None), key=lambda p: p.streams)
    falls = []
    for i, a in enumerate(measured):
        for b in measured[i + 1:]:
            assert a.p99_ms is not None and b.p99_ms is not None
            drop = a.p99_ms - b.p99_ms
            if drop > P99_FALL_REL * a.p99_ms and drop > P99_FALL_SLO_SHARE * slo_ms:
                falls.append((a, b))
    return falls


def monotonic_note(probes: list[Probe], slo_ms: float) -> str | None:
    """None when the probes agree with the assumption, else what broke it (the largest fall, and any count that
    met above one that missed)."""
    falls = p99_falls(probes, slo_ms)
    inverted = [(a, b) for a in probes for b in probes
                if a.streams < b.streams and a.verdict == "missed" and b.verdict == "met"]
    if not falls and not inverted:
        return None
    parts = []
    if falls:
        a, b = max(falls, key=lambda ab: (ab[0].p99_ms or 0) - (ab[1].p99_ms or 0))
        parts.append(f"p99 fell as streams were added ({a.p99_ms:.3g} ms at {a.streams} -> {b.p99_ms:.3g} ms at "
                     f"{b.streams}; {len(falls)} such pair(s))")
    if inverted:
        a, b = inverted[0]
        parts.append(f"{b.streams} streams met after {a.streams} missed")
    return ("not monotonic: " + "; ".join(parts) + ": the search assumes p99 never falls as streams are added, "
            "so the answer may be off; read the probes")


def p99_list(probe: Probe | None) -> str | None:
    """Each repeat's p99 in ms, ';'-joined in the order run ('-' for a repeat without one); None without a probe."""
    if probe is None:
        return None
    return ";".join("-" if v is None else f"{v:.4g}" for v in probe.p99s_ms)


def describe_probes(probes: list[Probe]) -> str:
    def p99(p: Probe) -> str:
        if len(p.repeats) > 1:
            return f" p99={'/'.join('-' if v is None else f'{v:.3g}' for v in p.p99s_ms)}ms"
        return f" p99={p.p99_ms:.3g}ms" if p.p99_ms is not None else ""

    def windows(p: Probe) -> str:  # the windows of a repeat that was run longer for the horizon
        runs = [r.windows_s for r in (p.repeats or [p]) if len(r.windows_s) > 1]
        return f" windows={'/'.join('+'.join(f'{w:.3g}' for w in ws) for ws in runs)}s" if runs else ""

    return ", ".join(f"{p.streams}:{p.verdict}{p99(p)}{windows(p)}"
                     f"{'' if p.status in ('ok', 'skipped') else f' ({p.status})'}" for p in probes)


def holds_at(probe: Probe | None, slo_ms: float, horizon_s: float) -> str | None:
    """The horizon text of a count that met (its worst repeat: the largest p99 + growth bound), e.g. 'holds for
    600 s: p99 12.1 ms + growth <= 0.004 ms/s x 600 s = 14.5 ms <= 33 ms'; None when it did not meet or there is no
    horizon."""
    if probe is None or not probe.met or horizon_s <= 0:
        return None
    done = [r for r in (probe.repeats or [probe]) if r.p99_ms is not None and r.trend_hi_ms_per_s is not None]
    if not done:
        return None
    worst = max(done, key=lambda r: (r.p99_ms or 0.0) + max(r.trend_hi_ms_per_s or 0.0, 0.0) * horizon_s)
    assert worst.p99_ms is not None and worst.trend_hi_ms_per_s is not None
    return holds_text(worst.p99_ms, worst.trend_hi_ms_per_s, horizon_s, slo_ms)
