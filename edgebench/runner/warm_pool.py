"""Warm worker processes kept across the rows of a sweep (profile `run.workers: warm`).

Rows that differ only in batch or instance count (same model, backend, precision, options, process mode, no MPS:
`pool_key`) run in the processes the previous such row used: each row still opens a fresh session and warms it up,
what carries over is the imported framework, the CUDA context and the process's allocator state. A torch row spent
8-10 s (GPU) to 17-24 s (this CPU) importing torch in every fresh instance process (docs/results/setup-cost.md).

The pool holds the workers of one key at a time (another key retires them all). When a key first appears it
starts, in parallel, as many workers as the sweep will need for it (`sizes`, from the plan) and has each import its
backend's framework ("primed"), so later rows with more instances find them ready; spare workers must be primed
before a row's window starts (`settle`): nothing imports during a measurement. A worker of a failed row is killed,
never reused. After a row, workers beyond what the key still needs (`sizes`, or that row's count) are retired.
Evidence that warm workers measure like fresh ones: benchmarks/warm_vs_fresh.py, docs/results/warm-vs-fresh.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from edgebench.runner.worker_proc import WorkerProc

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.run_config import RunConfig

RETIRE_GRACE_S = 2.0  # a retired worker gets this long to leave after ("exit",), then SIGKILL


def pool_key(cfg: RunConfig) -> tuple[Any, ...] | None:
    """What a worker may be reused across: None when the row never reuses workers (streams mode: one process holds
    every instance; MPS: the row's daemon and its pipe folder live only as long as the row)."""
    if cfg.mode != "process" or cfg.gpu_sharing == "mps":
        return None
    return (cfg.model, cfg.backend, cfg.precision, tuple(cfg.options), cfg.power_mode)


class WarmPool:
    """Idle warm workers of one pool key, handed to rows and taken back."""

    def __init__(self, sizes: Mapping[tuple[Any, ...], int] | None = None) -> None:
        self.sizes = dict(sizes or {})  # pool key -> the most instances a planned row of that key runs
        self.key: tuple[Any, ...] | None = None
        self.idle: list[WorkerProc] = []
        self.busy: list[WorkerProc] = []
        self.spawned = 0  # processes started over the pool's life (tests and the benchmark read it)

    def take(self, key: tuple[Any, ...], placements: Sequence[str],
             spawn: Callable[[], WorkerProc]) -> list[WorkerProc]:
        """One worker per placement: an idle one that last ran the same placement, else a never-used one, else a new
        one from `spawn()` (primed). Spares up to `sizes[key]` are started with them (see settle)."""
        if key != self.key:
            self.close()
            self.key = key
        chosen: list[WorkerProc] = []
        for placement in placements:
            match = next((w for w in self.idle if w.placement == placement), None)
            if match is None:
                match = next((w for w in self.idle if not w.placement), None)
            if match is None:
                match = self._spawn(spawn)
            else:
                self.idle.remove(match)
            match.placement = placement
            chosen.append(match)
        while len(self.idle) + len(chosen) < self.sizes.get(key, 0):
            self.idle.append(self._spawn(spawn))
        self.busy = list(chosen)
        return chosen

    def prewarm(self, key: tuple[Any, ...], instances: int, spawn: Callable[[], WorkerProc]) -> None:
        """Start the workers a new key needs now (they import their framework while the row's probe runs); take()
        then finds them. Nothing happens for the key the pool already holds."""
        if key == self.key:
            return
        self.close()
        self.key = key
        while len(self.idle) < max(instances, self.sizes.get(key, 0)):
            self.idle.append(self._spawn(spawn))

    def _spawn(self, spawn: Callable[[], WorkerProc]) -> WorkerProc:
        self.spawned += 1
        return spawn()

    def settle(self, deadline_ns: int) -> list[str]:
        """Wait (until deadline_ns at most) for every idle worker to be primed; one that fails or is late is retired.
        Returns what was wrong, one line each (the row's notes)."""
        problems = []
        for w in list(self.idle):
            while not w.primed:
                left_s = (deadline_ns - time.monotonic_ns()) / 1e9
                try:
                    msg = w.conn.recv() if w.conn.poll(max(0.0, left_s)) else None
                except (EOFError, OSError):
                    msg = ("error", -1, "preload", f"exited with code {w.proc.exitcode}")
                if msg is None:
                    problems.append(f"spare worker (pid {w.pid}) not primed in time; retired")
                elif msg[0] == "primed":
                    w.primed = True
                    continue
                else:
                    problems.append(f"spare worker (pid {w.pid}) failed to import its framework: {msg[-1]}; retired")
                self.idle.remove(w)
                retire([w])
                break
        return problems

    def give_back(self, workers: Sequence[WorkerProc], ok: bool, instances: int) -> None:
        """After a row: its workers go back to idle when it ended well (else they are killed), and workers beyond
        what the key still needs are retired."""
        self.busy = []
        if not ok:
            retire(workers)
            workers = []
        for w in workers:
            w.rows += 1
        self.idle = list(workers) + [w for w in self.idle if w not in workers]
        keep = max(self.sizes.get(self.key, 0) if self.key is not None else 0, instances)
        extra, self.idle = self.idle[keep:], self.idle[:keep]
        retire(extra)

    def close(self) -> None:
        """Retire every worker (the sweep's end, a new key, Ctrl-C)."""
        workers, self.idle, self.busy = self.idle + self.busy, [], []
        retire(workers)
        self.key = None

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def retire(workers: Sequence[WorkerProc]) -> None:
    """Ask each to exit, give them RETIRE_GRACE_S, then SIGKILL whatever their process groups still hold."""
    for w in workers:
        with contextlib.suppress(OSError, ValueError):
            w.conn.send(("exit",))
    end = time.monotonic() + RETIRE_GRACE_S
    for w in workers:
        if w.proc.pid is not None:
            w.proc.join(max(0.0, end - time.monotonic()))
    for w in workers:
        kill_group(w, signal.SIGKILL)
        if w.proc.pid is not None:
            w.proc.join(5.0)
        w.exited = True
        with contextlib.suppress(OSError):
            w.conn.close()


def kill_group(w: WorkerProc, sig: int) -> None:
    """Signal the worker's whole process group once it has its own, else just the worker."""
    pid = w.proc.pid
    if pid is None:
        return
    if not w.own_group:
        with contextlib.suppress(OSError):
            w.own_group = os.getpgid(pid) == pid
    try:
        if w.own_group:
            os.killpg(pid, sig)
        elif w.proc.exitcode is None:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
