"""The sampler protocol and the timeline it returns.

Every sampler timestamps with `time.monotonic_ns()` — the same clock the runner uses for
per-inference (start_ns, end_ns) — so a timeline can be cut to exactly the measured window.
Units live in channel names' metadata: mW for power, mJ for energy, % for utilization,
MHz for clocks, C for temperature, MiB for memory.
"""

from __future__ import annotations

import csv
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


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
            timeline.notes.append(f"{name} sampler stopped early: {type(exc).__name__}: {exc}")
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
