"""Passes over a row's timestamps, a chunk at a time (issue 37): the instances' overlap window and the inferences
inside it. runner/metrics.py, runner/backlog.py and runner/load.py read timestamps only through these, so what they
compute never needs a row's timestamps in memory at once.

An instance's timestamps are anything runner/stamps.py's `Stamps` describes (the runner's files), or an object with
start_ns / end_ns (/ issued_ns) arrays (tests, replays of latencies.npz), served through the same chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from edgebench.runner import stamps
from edgebench.runner.stamps import ArrayStamps, StampChunk, Stamps


def stamps_of(instance: Any) -> Stamps:
    """The Stamps of a runner InstanceResult (`.stamps`), of a Stamps itself, or of arrays (start_ns, end_ns and,
    for a fixed-rate stream, issued_ns attributes)."""
    if hasattr(instance, "stamps"):
        return instance.stamps  # type: ignore[no-any-return]
    if hasattr(instance, "chunks"):
        return instance  # type: ignore[no-any-return]
    return ArrayStamps(instance.start_ns, instance.end_ns, getattr(instance, "issued_ns", None))


def overlap_window(sources: Sequence[Stamps]) -> tuple[int, int]:
    """(latest first start, earliest last end) over the instances, each of which holds an inference: the span in
    which every instance was running (may be empty: end <= start). One pass."""
    firsts, lasts = [], []
    for src in sources:
        lo, hi = None, None
        for c in src.chunks(stamps.READ_CHUNK):
            a, b = int(c.start_ns.min()), int(c.end_ns.max())
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
        assert lo is not None and hi is not None
        firsts.append(lo)
        lasts.append(hi)
    return max(firsts), min(lasts)


def inside_chunks(src: Stamps, w0: int, w1: int, size: int | None = None) -> Iterator[StampChunk]:
    """The instance's inferences entirely inside [w0, w1] (start >= w0 and end <= w1), in their order, chunk by
    chunk (a chunk may be empty) of `size` (stamps.READ_CHUNK) inferences."""
    for c in src.chunks(size or stamps.READ_CHUNK):
        keep = (c.start_ns >= w0) & (c.end_ns <= w1)
        if bool(keep.all()):
            yield c
        else:
            yield StampChunk(c.start_ns[keep], c.end_ns[keep], None if c.issued_ns is None else c.issued_ns[keep])
