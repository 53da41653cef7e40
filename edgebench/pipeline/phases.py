"""Per-row wall time by phase: what a row costs outside its measured window.

`PhaseClock` times the pipeline's own steps (export, precision, prepare, probe, accuracy, write ...) and takes
the runner's (spawn, load, warmup, window, collect) from the outcome; row.json keeps them as "phases" and the
row's `setup_s` is everything but the window and the warm-up (report/summary.py sums it per run).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping

MEASURED_PHASES = ("window", "warmup")  # what a row is for; everything else is set-up
RUNNER_PHASES = {"spawn": "spawn", "load": "load", "warmup": "warmup", "measure": "window", "collect": "collect",
                 "probe": "probe"}


# who wants to hear a row's phase as it starts (the live progress display: commands/progress.py); times nothing
_listeners: list[Callable[[str], None]] = []


@contextlib.contextmanager
def phase_listener(listener: Callable[[str], None]) -> Iterator[None]:
    """Call `listener(phase name)` whenever a row's phase starts, for the duration of the block."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def announce(name: str) -> None:
    for listener in list(_listeners):
        with contextlib.suppress(Exception):  # a display never costs a measurement
            listener(name)


class PhaseClock:
    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.phases_s: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        announce(name)
        t = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - t)

    def add(self, name: str, seconds: float) -> None:
        self.phases_s[name] = round(self.phases_s.get(name, 0.0) + seconds, 6)

    def add_runner(self, phase_s: Mapping[str, float], runner_wall_s: float) -> None:
        """The runner's phases under their row names; what the runner spent besides them is 'runner_other'."""
        known = 0.0
        for src, name in RUNNER_PHASES.items():
            if src in phase_s:
                self.add(name, phase_s[src])
                known += phase_s[src]
        if "spawn" not in phase_s and "load_warmup" in phase_s:  # no per-instance phase messages: one lump
            self.add("load_warmup", phase_s["load_warmup"])
            known += phase_s["load_warmup"]
        self.add("runner_other", max(0.0, runner_wall_s - known))

    def record(self) -> dict[str, float]:
        """phases plus total (wall time since the clock started) and setup (total minus window and warm-up)."""
        total = time.monotonic() - self.t0
        return {**self.phases_s, "total": round(total, 6), "setup": round(setup_s(self.phases_s, total), 6)}


def setup_s(phases_s: Mapping[str, float], total_s: float) -> float:
    return max(0.0, total_s - sum(phases_s.get(p, 0.0) for p in MEASURED_PHASES))
