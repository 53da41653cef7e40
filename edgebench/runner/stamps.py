"""Per-inference timestamps in bounded chunks (issue 37): an instance writes them to files as it goes, and the
orchestrator's process reads them back a chunk at a time, so neither ever holds a whole row's timestamps.

Before issue 37 an instance kept every timestamp in buffers that doubled when full (a copy of the whole buffer and
first-touch page faults for the new one, inside the measured window: 0.8 s stalls at 8 and 16 million inferences made
a 10 s null row "unstable, 30% from the mean"), and the orchestrator loaded them all and summarised with whole-row
arrays (6.5 GiB at 58 million inferences).

On disk (the row's temporary work folder), one raw little-endian int64 file per column, one entry per inference:

    <prefix>.start.i64   start_ns (a fixed-rate stream: the scheduled arrival)
    <prefix>.end.i64     end_ns
    <prefix>.issued.i64  fixed-rate streams only: when the inference really began

`StampSink` is the instance's side: CHUNK_INFERENCES entries per column preallocated and every page touched before
the start signal; the timed loop stores into them and calls `flush` when they are full (a plain write of 8 MiB per
column into the page cache, ~2-5 ms per million inferences, no allocation, no copy of what came before).
`Stamps` is the reading side: `count`, `open_loop` and `chunks(size)`; `FileStamps` reads the files, `ArrayStamps`
serves arrays already in memory (tests, replays) through the same interface, so one summary code path serves both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

CHUNK_INFERENCES = 1 << 20  # entries per column an instance holds before writing them out (8 MiB per column)
READ_CHUNK = 1 << 20  # entries per column the orchestrator's process reads at a time
MIN_CHUNK = 4096  # an instance expecting few inferences preallocates this many
COLUMNS = ("start", "end", "issued")


@dataclass
class StampChunk:
    """Consecutive inferences of one instance: int64 ns arrays of equal length."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    issued_ns: np.ndarray | None  # fixed-rate streams only

    def __len__(self) -> int:
        return len(self.start_ns)


class Stamps(Protocol):
    """One instance's timestamps, readable in chunks of at most `size` inferences, in the order they were taken."""

    @property
    def count(self) -> int: ...

    @property
    def open_loop(self) -> bool: ...

    def chunks(self, size: int = READ_CHUNK) -> Iterator[StampChunk]: ...


class ArrayStamps:
    """Stamps over arrays already in memory (views, never copies)."""

    def __init__(self, start_ns: Any, end_ns: Any, issued_ns: Any = None) -> None:
        import numpy as np

        self.start_ns = np.asarray(start_ns, dtype=np.int64)
        self.end_ns = np.asarray(end_ns, dtype=np.int64)
        self.issued_ns = None if issued_ns is None else np.asarray(issued_ns, dtype=np.int64)

    @property
    def count(self) -> int:
        return len(self.start_ns)

    @property
    def open_loop(self) -> bool:
        return self.issued_ns is not None

    def chunks(self, size: int = READ_CHUNK) -> Iterator[StampChunk]:
        for a in range(0, self.count, max(1, size)):
            b = a + size
            yield StampChunk(self.start_ns[a:b], self.end_ns[a:b], None if self.issued_ns is None else self.issued_ns[a:b])


def column_path(prefix: str, column: str) -> str:
    return f"{prefix}.{column}.i64"


class FileStamps:
    """Stamps in the files a StampSink wrote under `prefix`; `count` entries per column."""

    def __init__(self, prefix: str, count: int) -> None:
        self.prefix = prefix
        self._count = count
        self._open_loop = os.path.exists(column_path(prefix, "issued"))

    @property
    def count(self) -> int:
        return self._count

    @property
    def open_loop(self) -> bool:
        return self._open_loop

    def chunks(self, size: int = READ_CHUNK) -> Iterator[StampChunk]:
        import numpy as np

        names = COLUMNS if self._open_loop else COLUMNS[:2]
        handles = [open(column_path(self.prefix, c), "rb") for c in names]  # noqa: SIM115 - closed below
        try:
            left = self._count
            while left > 0:
                n = min(size, left)
                cols = [np.fromfile(fh, dtype="<i8", count=n) for fh in handles]
                if any(len(c) != n for c in cols):
                    raise OSError(f"{self.prefix}: timestamp files hold fewer than the {self._count} inferences reported")
                left -= n
                yield StampChunk(cols[0], cols[1], cols[2] if self._open_loop else None)
        finally:
            for fh in handles:
                fh.close()


class StampSink:
    """An instance's chunk buffers and the files they are written to (call `close` when the loop ends).

    `buffers` are `columns` int64 arrays of `capacity` entries, every page touched at construction (before the start
    signal). The timed loop stores entry j of its current chunk at buffers[c][j] and calls flush(j) when j reaches
    capacity (and once at the end with what is left); `written` counts the entries already in the files."""

    def __init__(self, prefix: str, columns: int, capacity: int = CHUNK_INFERENCES) -> None:
        import numpy as np

        self.prefix = prefix
        self.capacity = max(1, capacity)
        self.buffers = [np.empty(self.capacity, dtype=np.int64) for _ in range(columns)]
        for buf in self.buffers:
            buf.fill(0)  # first-touch page faults here, not in the timed loop
        self.files = [open(column_path(prefix, c), "wb", buffering=0) for c in COLUMNS[:columns]]  # noqa: SIM115
        self.written = 0

    def flush(self, n: int) -> None:
        """Write the first n entries of every buffer to its file."""
        if n <= 0:
            return
        for buf, fh in zip(self.buffers, self.files, strict=True):
            view = memoryview(buf[:n]).cast("B")  # type: ignore[arg-type]  # an ndarray is a buffer
            done = 0
            while done < len(view):  # a raw file may write less than asked
                done += fh.write(view[done:])
        self.written += n

    def close(self) -> None:
        for fh in self.files:
            fh.close()


def chunk_capacity(rate_ips: float, duration_s: float) -> int:
    """Entries per chunk: 1.5x the expected count of a duration_s window, between MIN_CHUNK and CHUNK_INFERENCES, so
    a slow instance preallocates little and a fast one never more than a chunk."""
    want = int(rate_ips * duration_s * 1.5) + MIN_CHUNK
    return max(MIN_CHUNK, min(CHUNK_INFERENCES, want))


def whole_column(stamps: Stamps, column: str) -> np.ndarray:
    """One column ("start_ns", "end_ns" or "issued_ns") of every inference in one array: for tests and small rows;
    the pipeline reads chunks."""
    import numpy as np

    parts = [getattr(c, column) for c in stamps.chunks()]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
