"""Arrival models of open-loop streams: when each stream's frames arrive (profile run.arrival, --arrival).

A fixed-rate row has n streams of rate_hz arrivals per second each (period = 1 / rate_hz). The arrival model says
how those arrivals sit in time; the row's `arrival` column names it and `arrival_seed` the seed of its draws:

  even     stream i of n starts at phase i * period / n, then one arrival every period: the n streams interleave
           perfectly, the best case for queueing (no two arrivals closer than period / n).
  random   each stream's phase is drawn uniformly from [0, period), then one arrival every period: unsynchronised
           cameras (each free-running at the same frame rate, started whenever it was plugged in). Drawn afresh per
           repeat (the seed depends on run.seed and the row's repeat), so repeats sample different phase patterns.
  poisson  each stream's inter-arrival gaps are drawn from an exponential distribution of mean period (a Poisson
           process of rate_hz per stream, n * rate_hz in all), as MLPerf LoadGen's Server scenario.
  aligned  every stream at phase 0: synchronised triggers (one hardware trigger, a shared frame clock), the worst
           case: n arrivals at the same instant every period.

Stream i draws from numpy's default_rng([arrival_seed, i]); arrival_seed = arrival_seed_of(run.seed, repeat).
Schedules are offsets (ns) from the row's one stream origin, which the start signal carries to every stream
(runner.messages.Go.origin_ns), so the phases hold across processes; latency still counts from the scheduled
arrival (runner.worker.measure_fixed_rate), so queueing behind a late predecessor is part of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgebench.config.sections import ARRIVALS

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

FIRST_BLOCK = 4096  # offsets drawn when the schedule is made (runner.worker takes them in blocks of this size)
SEEDED = ("random", "poisson")  # the models that draw from arrival_seed (even and aligned draw nothing)


def arrival_seed_of(seed: int, repeat: int) -> int:
    """The seed of a row's draws: a 32-bit number from (run.seed, repeat), different for every repeat."""
    import numpy as np

    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(repeat)]).generate_state(1)[0])


class StreamSchedule:
    """The arrivals of stream `index` of `instances`, as offsets in ns from the stream's start; take() them in order."""

    def __init__(self, arrival: str, index: int, instances: int, period_ns: int, seed: int) -> None:
        import numpy as np

        if arrival not in ARRIVALS:
            raise ValueError(f"arrival {arrival!r} is not one of {', '.join(ARRIVALS)}")
        self.arrival = arrival
        self.period_ns = max(1, int(period_ns))
        self._rng = np.random.default_rng([int(seed), int(index)])
        self._next_k = 0  # index of the next arrival take() returns
        self._last_ns = 0  # poisson: the offset of the last arrival handed out
        if arrival == "even":
            self.phase_ns = (index * self.period_ns) // max(1, instances)
        elif arrival == "random":
            self.phase_ns = int(self._rng.integers(0, self.period_ns))
        else:  # aligned; poisson draws its first gap like every other
            self.phase_ns = 0
        self._ready = self._draw(FIRST_BLOCK)  # drawn now, before the stream starts: its first take costs no draw

    def take(self, count: int) -> np.ndarray:
        """The next `count` arrival offsets (int64 ns, non-decreasing)."""
        import numpy as np

        ready, self._ready = self._ready, self._ready[count:]
        if len(ready) >= count:
            return ready[:count]
        return np.concatenate([ready, self._draw(count - len(ready))])

    def _draw(self, count: int) -> np.ndarray:
        import numpy as np

        if self.arrival == "poisson":
            gaps = np.rint(self._rng.exponential(float(self.period_ns), size=count)).astype(np.int64)  # whole ns
            out = self._last_ns + np.cumsum(gaps)  # exact in int64: how the draws are blocked changes nothing
            if count:
                self._last_ns = int(out[-1])
            return out
        k = np.arange(self._next_k, self._next_k + count, dtype=np.int64)
        self._next_k += count
        return self.phase_ns + k * self.period_ns


def first_offsets_ns(arrival: str, instances: int, period_ns: int, seed: int) -> list[int]:
    """Each stream's first arrival offset (for tests and the docs' pictures)."""
    return [int(StreamSchedule(arrival, i, instances, period_ns, seed).take(1)[0]) for i in range(instances)]
