"""The sampler protocol, the timeline it returns, and the base class every sampler subclasses.

Every sampler timestamps with `time.monotonic_ns()` — the same clock the runner uses for
per-inference (start_ns, end_ns) — so a timeline can be cut to exactly the measured window.
Units live in channel names' metadata: mW for power, mJ for energy, % for utilization,
MHz for clocks, C for temperature, MiB for memory.

A sampler class declares what the rest of edgebench needs to know about it (SamplerBase: its name,
power scope, energy counter, availability check, factory, row channels, throttle verdict);
`telemetry.catalog` lists the classes and derives every table from those declarations.
"""

from __future__ import annotations

import csv
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from edgebench.errors import exc_text


@dataclass(frozen=True)
class Channel:
    name: str  # e.g. "cpu_util_pct", "rapl_package0_energy_mj", "power_total_mw"
    unit: str  # "%", "mJ", "mW", "MiB", "MHz", "C"
    kind: str = "gauge"  # "gauge" (instantaneous) or "counter" (monotonic cumulative, e.g. energy)


@dataclass
class Timeline:
    """Timestamped samples of named channels. `values[name][i]` belongs to `t_ns[i]`; NaN = missing."""

    source: str
    channels: dict[str, Channel] = field(default_factory=dict)
    t_ns: list[int] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # stated absences, e.g. "RAPL not readable: ..."
    interval_s: float | None = None  # the interval actually used

    def add_channel(self, channel: Channel) -> None:
        if channel.name not in self.channels:
            self.channels[channel.name] = channel
            self.values[channel.name] = [math.nan] * len(self.t_ns)

    def append(self, t_ns: int, sample: dict[str, float]) -> None:
        self.t_ns.append(t_ns)
        for name in self.channels:
            self.values[name].append(float(sample.get(name, math.nan)))

    def window(self, start_ns: int, end_ns: int) -> Timeline:
        """Samples with start_ns <= t <= end_ns."""
        idx = [i for i, t in enumerate(self.t_ns) if start_ns <= t <= end_ns]
        out = Timeline(self.source, dict(self.channels), notes=list(self.notes), interval_s=self.interval_s)
        out.t_ns = [self.t_ns[i] for i in idx]
        out.values = {n: [v[i] for i in idx] for n, v in self.values.items()}
        return out

    def mean(self, name: str) -> float | None:
        vals = [v for v in self.values.get(name, []) if not math.isnan(v)]
        return sum(vals) / len(vals) if vals else None

    def max(self, name: str) -> float | None:
        vals = [v for v in self.values.get(name, []) if not math.isnan(v)]
        return max(vals) if vals else None

    def counter_delta(self, name: str, start_ns: int, end_ns: int) -> float | None:
        """Increase of a cumulative counter over [start_ns, end_ns], linearly interpolated at the
        window edges. None when the counter has fewer than two samples spanning the window."""
        pts = [(t, v) for t, v in zip(self.t_ns, self.values.get(name, [])) if not math.isnan(v)]
        if len(pts) < 2 or pts[0][0] > start_ns or pts[-1][0] < end_ns:
            return None
        return _interp(pts, end_ns) - _interp(pts, start_ns)

    def integrate(self, name: str, start_ns: int, end_ns: int) -> float | None:
        """Trapezoidal integral of a gauge over [start_ns, end_ns] in unit*seconds
        (mW -> mJ). None without two samples spanning the window."""
        pts = [(t, v) for t, v in zip(self.t_ns, self.values.get(name, [])) if not math.isnan(v)]
        if len(pts) < 2 or pts[0][0] > start_ns or pts[-1][0] < end_ns:
            return None
        inner = [(t, v) for t, v in pts if start_ns < t < end_ns]
        seq = [(start_ns, _interp(pts, start_ns)), *inner, (end_ns, _interp(pts, end_ns))]
        total = 0.0
        for (t0, v0), (t1, v1) in zip(seq, seq[1:]):
            total += (v0 + v1) / 2.0 * (t1 - t0) / 1e9
        return total

    def to_csv(self, path: Path) -> None:
        names = list(self.channels)
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t_ns", *[f"{n}[{self.channels[n].unit}]" for n in names]])
            for i, t in enumerate(self.t_ns):
                w.writerow([t, *["" if math.isnan(self.values[n][i]) else repr(self.values[n][i]) for n in names]])


def _interp(pts: list[tuple[int, float]], t: int) -> float:
    for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
        if t0 <= t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    raise ValueError("t outside the samples")


def sample_on_grid(stop: threading.Event, interval_s: float, first_ns: int, sample: Callable[[], None],
                   timeline: Timeline, name: str) -> None:
    """Call sample() every interval_s on a fixed time grid starting at first_ns until `stop` is set.
    Ticks missed under load are skipped (the grid is kept, not shifted). An exception ends sampling
    with a note in the timeline instead of killing the benchmark it runs beside."""
    interval_ns = int(interval_s * 1e9)
    next_ns = first_ns + interval_ns
    while not stop.wait(max(0.0, (next_ns - time.monotonic_ns()) / 1e9)):
        try:
            sample()
        except Exception as exc:  # noqa: BLE001 - say why the timeline ends early
            timeline.notes.append(f"{name} sampler stopped early: {exc_text(exc)}")
            return
        next_ns += interval_ns
        now = time.monotonic_ns()
        if next_ns < now:
            next_ns += ((now - next_ns) // interval_ns + 1) * interval_ns


class GridThread:
    """The background thread of a polling sampler: `sample()` on sample_on_grid's fixed grid until stop().
    One place for what host, nvml, ina3221 and jetson_throttle each used to spell out."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self, interval_s: float, first_ns: int, sample: Callable[[], None], timeline: Timeline) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=sample_on_grid, args=(self._stop, interval_s, first_ns, sample, timeline, self.name),
            name=f"edgebench-{self.name}-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread (no-op when it is not running)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None


class Sampler(Protocol):
    name: str

    def start(self) -> None:
        """Begin sampling in the background."""

    def stop(self) -> Timeline:
        """Stop and return everything sampled since start()."""

    def watch_pids(self, pids: list[int]) -> None:
        """Processes whose resources to attribute to the run (instances); may be ignored."""


# --------------------------------------------------------------------------- what a sampler class declares

ROW_AGGREGATIONS = ("mean", "max")  # Timeline.mean / Timeline.max over the measured window


@dataclass(frozen=True)
class RowChannel:
    """One row column a sampler fills: `column` <- `aggregation` of its channel `channel` over the window.
    A sampler may declare several channels for one column: the first its timeline has (and that has a value)
    fills it. Across samplers, the one listed first in the profile wins (telemetry_fields)."""

    column: str  # a results column, e.g. "gpu_util_pct_mean"
    channel: str  # a channel of this sampler's timeline, e.g. "gpu_util_pct"
    aggregation: str = "mean"

    def __post_init__(self) -> None:
        if self.aggregation not in ROW_AGGREGATIONS:
            raise ValueError(f"RowChannel {self.column} <- {self.channel}: aggregation {self.aggregation!r} is not "
                             f"one of {', '.join(ROW_AGGREGATIONS)}")

    def value(self, window: Timeline) -> float | None:
        """The aggregate over a timeline already cut to the window; None without a finite sample."""
        value = window.mean(self.channel) if self.aggregation == "mean" else window.max(self.channel)
        return None if value is None or math.isnan(value) else value


class SamplerBase:
    """The base of every sampler: its declarations and the one-shot start/stop guards.

    Declarations are class attributes and class methods, read by `telemetry.catalog` without making an
    instance (so config can validate names, and doctor can ask `missing`, with no framework imported):
      name            what a profile lists in telemetry.samplers, and the source of its timelines
      power_scope     what its power_total_mw / energy_total_mj cover (the row's power_scope), or None
      counter_label   the hardware counter behind its energy_total_mj (energy_source "counter:<label>"), or None
      row_channels    the row columns it fills from its channels (RowChannel)
      missing()       None when it can run here, else why not; create() the sampler for a row;
      throttle_verdict()  (throttled, causes) over a window, or None where the sampler gives no such evidence

    Guards: start() once, stop() once (make a new sampler per measured row). start() twice, stop() before
    start(), stop() twice and stop() after a start() that raised are RuntimeErrors naming the class.
    A subclass implements _start() and _stop() (or is a PollingSampler) and keeps only what is its own.
    """

    name: str = ""  # a class attribute (not ClassVar: the Sampler protocol reads it from instances)
    power_scope: ClassVar[str | None] = None
    counter_label: ClassVar[str | None] = None
    row_channels: ClassVar[tuple[RowChannel, ...]] = ()

    @classmethod
    def missing(cls, sysfs_root: str | Path = "/") -> str | None:
        """None when this sampler can run here (under sysfs_root), else why not, with the fix."""
        return None

    @classmethod
    def create(cls, interval_s: float, sysfs_root: str | Path = "/", placements: Sequence[str] = ()) -> SamplerBase:
        """The sampler for one row (make_sampler's factory). `placements` are the row's (e.g. ("cuda:0",))."""
        return cls(interval_s=interval_s, sysfs_root=sysfs_root)  # type: ignore[call-arg]

    @classmethod
    def throttle_verdict(cls, timeline: Timeline, start_ns: int, end_ns: int) -> tuple[bool, list[str]] | None:
        """(throttled, causes) for [start_ns, end_ns] from this sampler's timeline; None = no evidence either way."""
        return None

    def __init__(self, interval_s: float) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = float(interval_s)
        self._state = "new"  # -> "started" -> "stopped"; "failed" when start() raised

    def watch_pids(self, pids: list[int]) -> None:
        """Processes whose resources to attribute to the run. Ignored unless the sampler measures processes."""

    def start(self) -> None:
        """Begin sampling in the background."""
        if self._state != "new":
            raise RuntimeError(f"{type(self).__name__}.start() called twice")
        self._state = "failed"  # until _start() returns
        self._start()
        self._state = "started"

    def stop(self) -> Timeline:
        """Stop and return everything sampled since start()."""
        if self._state != "started":
            raise RuntimeError(f"{type(self).__name__}.stop() called before start() or twice")
        self._state = "stopped"
        return self._stop()

    def _start(self) -> None:
        raise NotImplementedError

    def _stop(self) -> Timeline:
        raise NotImplementedError


class PollingSampler(SamplerBase):
    """A sampler that reads its source on a fixed time grid in a daemon thread (GridThread).

    start(): `_begin()` builds the timeline (channels, notes), one sample is taken synchronously at start_ns,
    then the grid starts there. stop(): the grid ends, one more sample is taken synchronously (so the timeline
    brackets the measured window), and `_finish()` adds what the sampler reports at the end.
    A subclass supplies _begin() and _sample(), and overrides _first_sample/_last_sample/_finish as it needs.
    """

    def __init__(self, interval_s: float) -> None:
        super().__init__(interval_s)
        self.start_ns: int | None = None
        self._timeline: Timeline | None = None
        self._grid = GridThread(self.name)

    def _begin(self) -> Timeline:
        raise NotImplementedError

    def _sample(self) -> None:
        raise NotImplementedError

    def _first_sample(self) -> None:
        self._sample()

    def _last_sample(self) -> None:
        self._sample()

    def _finish(self, timeline: Timeline) -> Timeline:
        return timeline

    def _start(self) -> None:
        self._timeline = tl = self._begin()
        self.start_ns = time.monotonic_ns()
        self._first_sample()
        self._grid.start(self.interval_s, self.start_ns, self._sample, tl)

    def _stop(self) -> Timeline:
        self._grid.stop()
        tl = self._timeline
        assert tl is not None
        self._last_sample()
        return self._finish(tl)
