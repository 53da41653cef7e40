"""One instance's life inside a worker process: open, warm up, start signal, timed loop, report.

`run_instance` is what a worker process (runner/worker_proc.py) runs for each instance of a row: on its main thread
in mode "process", on one thread per instance in mode "streams". The process leads its own process group (the
orchestrator kills the whole group; runner/child_process.py) and had its thread-count environment variables set
before any framework was imported.

Messages to the orchestrator (runner/messages.py) go over the worker's own pipe (one per process, so a killed one
cannot corrupt another's channel): Phase (open, warmup), Ready (warm-up done, about to wait for the start signal),
Done (measured phase over, timestamps in the chunk files of runner/stamps.py), Error (an exception ended the instance).
The start signal is Go from the orchestrator, sent once every instance of the row is ready; it records the
window's start before sending it, so that time precedes every instance's first timed inference. For a fixed-rate
row Go carries one origin for every stream's schedule (the window's start plus a lead), so the arrival model's
phases hold across processes: `aligned` streams arrive at the same nanosecond, `even` ones exactly spread,
whatever order the workers wake in.

The timed loop is the harness overhead the null backend measures, so it is kept lean: two clock
reads around infer(), two stores into preallocated int64 buffers through memoryviews, and a single
integer compare; the shared stop flag and the shared per-instance counter are touched only once per
CHECK_INTERVAL_NS (or when the chunk is full and is written out: runner/stamps.py). The chunk buffers are
allocated and every page of them touched before the start signal, so neither an allocation nor a first-touch page
fault lands inside the measured window, and an instance's memory does not grow with its inference count (issue 37:
buffers that doubled when full stalled a null row 0.8 s at 8 and 16 million inferences). Sessions may define an optional `set_phase(name: str)` hook ("warmup",
"measure"); the null backend uses it for fault injection.

A measuring process does nothing but measure: every instance runs exactly open -> warm-up -> start -> window ->
close. The accuracy outputs and the kernel profile (torch.profiler/CUPTI stays attached after it ends and slows
every later launch) run in a separate probe process (runner/probe.py), never in an instance.

With `cfg.rate_hz` set the instance is an open-loop stream instead (`measure_fixed_rate`): arrival k is
scheduled by the row's arrival model (runner/arrivals.py: random phases by default, even, poisson, aligned)
whether or not the previous inference is done, an inference starts at max(its arrival, the previous one's end),
and its latency is end - arrival, so time spent queued behind a slow predecessor counts.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from edgebench.backends.base import Placement
from edgebench.backends.registry import get_backend
from edgebench.errors import exc_text
from edgebench.runner.arrivals import StreamSchedule, arrival_seed_of
from edgebench.runner.messages import Done, Error, Message, Phase, Ready
from edgebench.runner.stamps import StampSink, chunk_capacity

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Prepared
    from edgebench.config.run_config import RunConfig

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
CHECK_INTERVAL_NS = 1_000_000  # stop flag / shared counter are looked at once per millisecond
MAX_SLEEP_NS = 50_000_000  # a fixed-rate stream waiting for its next arrival looks at the stop flag this often
SCHEDULE_BLOCK = 4096  # arrival offsets drawn at a time (between two inferences, never inside one)


def thread_env(threads: int) -> dict[str, str]:
    """Environment that caps the math libraries' thread pools at `threads`."""
    return {name: str(threads) for name in THREAD_ENV_VARS}


def describe(exc: BaseException) -> str:
    """'Type: message', one line, for the orchestrator's reason (a message-less one says where it was raised)."""
    return " ".join(exc_text(exc).split())


def warm_up(infer: Callable[[], None], warmup_s: float) -> tuple[int, float]:
    """Run infer() for warmup_s (at least once). Returns (inferences, inferences per second)."""
    now = time.monotonic_ns
    t_start = now()
    deadline = t_start + int(warmup_s * 1e9)
    n = 0
    while True:
        infer()
        n += 1
        t = now()
        if t >= deadline:
            break
    return n, n / max((t - t_start) / 1e9, 1e-9)


def measure(
    infer: Callable[[], None],
    stop: memoryview,
    counts: memoryview,
    slot: int,
    sink: StampSink,
    parent_pid: int | None = None,
) -> int:
    """Timed loop until stop[0] is set; every inference's (start_ns, end_ns) goes to `sink` (runner/stamps.py: two
    columns), a chunk at a time. Returns the inferences timed.

    `stop` is a byte view of the shared stop flag; `counts` an int64 view of the shared counters,
    of which this instance writes counts[slot] (no lock: one writer, the reader only polls it).
    When the orchestrator (parent_pid) is gone the loop ends too, so an orphan never spins forever.
    A full chunk is written out where the stop flag is looked at: the loop's memory never grows (issue 37).
    """
    now = time.monotonic_ns
    getppid = os.getppid
    s = memoryview(sink.buffers[0])  # type: ignore[arg-type]
    e = memoryview(sink.buffers[1])  # type: ignore[arg-type]
    cap = sink.capacity
    j = 0  # entries in the current chunk
    done = 0  # entries written out
    next_check = 0
    while True:
        t0 = now()
        infer()
        t1 = now()
        s[j] = t0
        e[j] = t1
        j += 1
        if t1 >= next_check or j == cap:
            counts[slot] = done + j
            if stop[0] or (parent_pid is not None and getppid() != parent_pid):
                break
            next_check = t1 + CHECK_INTERVAL_NS
            if j == cap:
                sink.flush(j)
                done += j
                j = 0
    s.release()
    e.release()
    sink.flush(j)
    return done + j


def measure_fixed_rate(
    infer: Callable[[], None],
    stop: memoryview,
    counts: memoryview,
    slot: int,
    period_ns: int,
    first_arrival_ns: int,
    sink: StampSink,
    parent_pid: int | None = None,
    schedule: StreamSchedule | None = None,
) -> int:
    """Open-loop stream until stop[0] is set: arrival k at first_arrival_ns + k * period_ns, or, with a `schedule`
    (runner.arrivals), at first_arrival_ns + its k-th offset (period_ns is then unused).

    Every inference's (arrival_ns, end_ns, issued_ns) goes to `sink` (three columns), a chunk at a time; returns the
    inferences served. The loop sleeps until the next arrival when it is early;
    when it is late (the previous inference ran past this arrival) it starts at once, so the backlog
    shows as end - arrival growing. Stop flag and orchestrator are checked before every arrival and
    every MAX_SLEEP_NS while waiting for one (the loop sleeps anyway, a check costs nothing next to that).
    """
    now = time.monotonic_ns
    sleep = time.sleep
    getppid = os.getppid
    arrivals, ends, issued = sink.buffers
    cap = sink.capacity
    n = 0
    j = 0  # entries in the current chunk
    offsets: list[int] = []  # the schedule's next offsets, taken SCHEDULE_BLOCK at a time
    taken = 0  # arrivals before offsets[0]
    while True:
        if stop[0] or (parent_pid is not None and getppid() != parent_pid):
            break
        if schedule is None:
            arrival = first_arrival_ns + n * period_ns
        else:
            if n - taken >= len(offsets):
                taken += len(offsets)
                offsets = schedule.take(SCHEDULE_BLOCK).tolist()
            arrival = first_arrival_ns + offsets[n - taken]
        t0 = now()
        while t0 < arrival and not stop[0]:  # in slices, so a slow stream still sees the stop flag soon
            sleep(min(arrival - t0, MAX_SLEEP_NS) / 1e9)
            t0 = now()
        if t0 < arrival:
            break  # stopped while waiting for this arrival: it never happened
        infer()
        t1 = now()
        if j == cap:  # between two inferences, never inside one; the stream's arrivals are due regardless
            sink.flush(j)
            j = 0
        arrivals[j] = arrival
        ends[j] = t1
        issued[j] = t0
        j += 1
        n += 1
        counts[slot] = n
    sink.flush(j)
    return n


def stream_phase_ns(index: int, instances: int, period_ns: int) -> int:
    """Offset of stream `index`'s first arrival under arrival model `even`: the streams spread evenly over one
    period."""
    return (index * period_ns) // max(1, instances)


def stream_schedule(cfg: RunConfig, index: int, period_ns: int) -> StreamSchedule:
    """Stream `index`'s arrivals under the row's arrival model, drawn from the row's arrival seed."""
    return StreamSchedule(cfg.arrival, index, cfg.instances, period_ns, arrival_seed_of(cfg.seed, cfg.repeat))


def run_instance(
    index: int,
    slot: int,
    cfg: RunConfig,
    prepared: Prepared,
    send: Callable[[Message], None],
    wait_start: Callable[[float], int],
    stop: memoryview,
    counts: memoryview,
    workdir: str,
    parent_pid: int | None = None,
    on_close_error: Callable[[str], None] | None = None,
) -> bool:
    """One instance from open to its timestamps on disk, then its session closed. Reports every failure; returns
    True when done. `counts[slot]` is its inference counter; `wait_start(barrier_timeout_s)` returns when the
    orchestrator gives the start signal (and raises when it does not come in time), with the origin a fixed-rate
    stream's arrivals count from (0: this instance's own clock at the signal). A session that fails to close
    does not change the result already sent; `on_close_error` hears of it (a warm worker then leaves the pool)."""
    phase = "open"
    session = None
    sink: StampSink | None = None
    try:
        send(Phase(index, phase))
        backend = get_backend(prepared.backend)
        placement = Placement(device=cfg.placements[index], instance=index, threads=cfg.threads_per_instance)
        session = backend.open(prepared, placement)
        set_phase = getattr(session, "set_phase", None)
        timing_inputs = prepared.feeds(cfg.batch, cfg.seed + index)  # every input, valid per dtype
        session.feed(timing_inputs)
        phase = "warmup"
        send(Phase(index, phase))
        if set_phase is not None:
            set_phase("warmup")
        warm_n, rate_ips = warm_up(session.infer, cfg.warmup_s)
        rate_hz = getattr(cfg, "rate_hz", None)
        expected_ips = rate_ips if rate_hz is None else min(rate_ips, float(rate_hz))
        prefix = os.path.join(workdir, f"instance{index}")
        sink = StampSink(prefix, 2 if rate_hz is None else 3, chunk_capacity(expected_ips, cfg.duration_s))
        period_ns = max(1, round(1e9 / float(rate_hz))) if rate_hz is not None else 0
        schedule = stream_schedule(cfg, index, period_ns) if rate_hz is not None else None  # drawn before the start
        send(Ready(index, warm_n))
        phase = "barrier"
        origin_ns = wait_start(cfg.barrier_timeout_s)  # a fixed-rate row's shared schedule origin (0: none sent)
        phase = "measure"
        if set_phase is not None:
            set_phase("measure")
        if rate_hz is None:
            timed = measure(session.infer, stop, counts, slot, sink, parent_pid)
        else:
            timed = measure_fixed_rate(session.infer, stop, counts, slot, period_ns,
                                       origin_ns or time.monotonic_ns(), sink, parent_pid, schedule)
        phase = "collect"
        sink.close()
        send(Done(index, timed, prefix))
        return True
    except BaseException as exc:  # noqa: BLE001 - every failure is reported, then the child exits non-zero
        try:
            send(Error(index, phase, describe(exc), exc.errno if isinstance(exc, OSError) else None))
        except Exception:  # noqa: BLE001 - the pipe may be gone; the exit code still tells
            pass
        return False
    finally:
        if sink is not None:
            sink.close()
        if session is not None:
            try:
                session.close()
            except Exception as exc:  # noqa: BLE001 - closing after the result is sent cannot change it
                if on_close_error is not None:
                    on_close_error(describe(exc))


def exit_now(code: int) -> None:
    """End the child without the interpreter's teardown: its results are on disk and sent, its sessions closed;
    tearing down torch/CUDA took seconds per row (the collect phase waits for every child's exit)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
