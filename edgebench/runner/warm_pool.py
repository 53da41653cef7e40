"""Warm worker processes kept across the rows of a sweep (profile `run.workers: warm`).

Rows that differ only in batch or instance count (same model, backend, precision, options, process mode, no MPS:
`pool_key`) run in the processes the previous such row used: each row still opens a fresh session and warms it up,
what carries over is the imported framework, the CUDA context and the process's allocator state. A torch row spent
8-10 s (GPU) to 17-24 s (this CPU) importing torch in every fresh instance process (docs/results/setup-cost.md).

The pool holds the workers of one key at a time (another key, or a row that cannot reuse workers, retires them
all). When a key's block of consecutive rows starts, the pool starts, in parallel, as many workers as that block
will need (`expect`, from the plan) and has each import its backend's framework ("primed"), so later rows with more
instances find them ready; spare workers must be primed before a row's window starts (`settle`): nothing imports
during a measurement. A worker never runs the same configuration twice: the repeats of a config (`repeat`) each
get processes of their own, so a repeat interval still samples process-to-process spread. A worker of a failed row,
one whose session did not close, or one found dead is retired, never reused. After a row, workers beyond what the
block still needs are retired.
Evidence that warm workers measure like fresh ones: benchmarks/warm_vs_fresh.py, docs/results/warm-vs-fresh.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from edgebench.runner import child_process
from edgebench.runner.messages import Error, Exit, Primed
from edgebench.runner.worker_proc import WorkerProc

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.run_config import RunConfig

RETIRE_GRACE_S = 2.0  # a retired worker gets this long to leave after Exit, then SIGKILL


def run_identity(cfg: RunConfig) -> str:
    """What a worker must not have run before: the config without its repeat number."""
    return dataclasses.replace(cfg, repeat=0).config_hash()


def pool_key(cfg: RunConfig) -> tuple[Any, ...] | None:
    """What a worker may be reused across: None when the row never reuses workers (streams mode: one process holds
    every instance; MPS: the row's daemon and its pipe folder live only as long as the row)."""
    if cfg.mode != "process" or cfg.gpu_sharing == "mps":
        return None
    return (cfg.model, cfg.backend, cfg.precision, tuple(cfg.options), cfg.power_mode)


def block_needs(cfgs: Sequence[RunConfig | None]) -> list[int]:
    """For each row of a plan (None: a row that will not run: skipped, or done before a resume), how many workers
    its block needs: the block is the run of consecutive rows of its pool key (rows that will not run do not break
    it), and it needs its most instances times its number of repeats (each repeat gets processes of its own).
    0 for a row that does not run or cannot reuse workers."""
    needs = [0] * len(cfgs)
    block: list[int] = []
    key: tuple[Any, ...] | None = None

    def close_block() -> None:
        runs = [cfgs[i] for i in block]
        need = max(c.instances for c in runs if c) * len({c.repeat for c in runs if c}) if runs else 0
        for i in block:
            needs[i] = need

    for i, cfg in enumerate(cfgs):
        if cfg is None:
            continue
        k = pool_key(cfg)
        if k != key or k is None:
            close_block()
            block, key = [], k
        if k is not None:
            block.append(i)
    close_block()
    return needs


class WarmPool:
    """Idle warm workers of one pool key, handed to rows and taken back."""

    def __init__(self, sizes: Mapping[tuple[Any, ...], int] | None = None) -> None:
        self.sizes = dict(sizes or {})  # pool key -> the most workers the key's block of rows ahead needs
        self.key: tuple[Any, ...] | None = None
        self.idle: list[WorkerProc] = []
        self.busy: list[WorkerProc] = []
        self.spawned = 0  # processes started over the pool's life (tests and the benchmark read it)
        self.identity = ""  # run_identity of the row in flight

    def expect(self, key: tuple[Any, ...], workers: int) -> None:
        """The rows ahead of this key (its block of consecutive rows) need at most `workers` processes."""
        self.sizes[key] = workers

    def take(self, key: tuple[Any, ...], placements: Sequence[str], spawn: Callable[[], WorkerProc],
             identity: str = "") -> list[WorkerProc]:
        """One worker per placement that has not run `identity` (run_identity) before: an idle one that last ran the
        same placement, else a never-used one, else a new one from `spawn()` (primed). Spares up to `sizes[key]` are
        started with them (see settle). Idle workers found dead are retired first."""
        self._hold(key)
        dead = [w for w in self.idle if w.proc.exitcode is not None]
        self.idle = [w for w in self.idle if w not in dead]
        retire(dead)
        chosen: list[WorkerProc] = []
        self.busy = chosen  # as each is chosen: a spawn() that raises leaves nothing unaccounted for
        for placement in placements:
            fit = [w for w in self.idle if identity not in w.ran]
            match = next((w for w in fit if w.placement == placement), None)
            if match is None:
                match = next((w for w in fit if not w.placement), None)
            if match is None:
                match = self._spawn(spawn)
            else:
                self.idle.remove(match)
            match.placement = placement
            chosen.append(match)
        self._fill(self.sizes.get(key, 0) - len(chosen), spawn)
        self.identity = identity
        return chosen

    def prewarm(self, key: tuple[Any, ...], instances: int, spawn: Callable[[], WorkerProc]) -> None:
        """Start the workers a new key needs now (they import their framework while the row's probe runs); take()
        then finds them. Nothing happens for the key the pool already holds."""
        if key != self.key:
            self._hold(key)
            self._fill(max(instances, self.sizes.get(key, 0)), spawn)

    def _hold(self, key: tuple[Any, ...]) -> None:
        """Make `key` the pool's key: another key's workers are retired."""
        if key != self.key:
            self.close()
            self.key = key

    def _fill(self, idle: int, spawn: Callable[[], WorkerProc]) -> None:
        """Start workers until `idle` of them are idle."""
        while len(self.idle) < idle:
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
                    msg = Error(None, "preload", f"exited with code {w.proc.exitcode}")
                if msg is None:
                    problems.append(f"spare worker (pid {w.pid}) not primed in time; retired")
                elif isinstance(msg, Primed):
                    w.primed = True
                    continue
                else:
                    text = msg.text if isinstance(msg, Error) else type(msg).__name__
                    problems.append(f"spare worker (pid {w.pid}) failed to import its framework: {text}; retired")
                self.idle.remove(w)
                retire([w])
                break
        return problems

    def give_back(self, workers: Sequence[WorkerProc], ok: bool, instances: int) -> None:
        """After a row: its workers go back to idle when it ended well (else they are killed; so is one that left,
        e.g. after its session failed to close), and workers beyond what the key still needs are retired."""
        self.busy = []
        if not ok:
            retire(workers)
            workers = []
        gone = [w for w in workers if w.unfit or w.proc.exitcode is not None]
        retire(gone)
        workers = [w for w in workers if w not in gone]
        for w in workers:
            w.rows += 1
            w.ran.add(self.identity)
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
            w.conn.send(Exit())
    child_process.stop([w.child for w in workers], RETIRE_GRACE_S, terminate=False)
    for w in workers:
        w.exited = True
        with contextlib.suppress(OSError):
            w.conn.close()
