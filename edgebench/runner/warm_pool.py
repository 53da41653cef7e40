"""Warm worker processes kept across the rows of a sweep (profile `run.workers: warm`).

Rows that differ only in batch or instance count (same model, backend, precision, options, process mode, no MPS:
`pool_key`) run in the processes the previous such row used: each row still opens a fresh session and warms it up,
what carries over is the imported framework, the CUDA context and the process's allocator state. A torch row spent
8-10 s (GPU) to 17-24 s (this CPU) importing torch in every fresh instance process (docs/results/setup-cost.md).

The pool holds the workers of one key at a time (another key, or a row that cannot reuse workers, retires them
all). When a key's block of consecutive rows starts, the pool starts, in parallel, as many workers as that block
will need (`expect`, from the plan) and has each import its backend's framework ("primed"), so later rows with more
instances find them ready; spare workers must be primed before a row's window starts (`settle`): nothing imports
during a measurement. A worker never runs a configuration in two repeats: the repeats of a config (`repeat`) each
get processes of their own, whatever their windows, so a repeat interval still samples process-to-process spread
(a repeat run again with a longer window may reuse its own). A worker of a failed row,
one whose session did not close, or one found dead is retired, never reused. After a row, workers beyond what the
block still needs are retired.
Evidence that warm workers measure like fresh ones: benchmarks/warm_vs_fresh.py, docs/results/warm-vs-fresh.md.

Device memory (issue 27: at 32 instances on an H100 idle workers kept from earlier rows still held GPU memory while
fresh ones opened, and a row failed out of memory): before a row's workers open, the pool compares the free memory
of each GPU the row uses (`free_mib`, NVML by default; a test injects a fake budget) with what the row's workers
will take there: their count times the most one worker of this key took when a row opened (measured: free memory
when the row was handed its workers minus free memory once every instance was ready, per worker, `opened`; from a
row during whose start no other worker was still starting where there is one, else an upper bound), with a
margin. While it does not fit, idle workers the row does not use are retired (those that ran rows first), and the
pool starts no spares for that key while memory is short; the row's note says what was retired and why. A row
thus never fails from memory its own harness holds idle. Placements without device memory (cpu, dla) are not
checked.

Host memory (issue 37: an 8 GB board, whose GPU shares the host's memory, has no NVML): before the pool starts
workers, for a row or as spares, it asks whether they fit in the host memory available above a reserve
(runner/host_memory.py; one worker's share is the most PSS measured among the key's primed, used and opened
workers; before any worker of the key was measured, the most measured of another key or UNMEASURED_WORKER_MIB). A
row's own new workers always start, after idle workers it cannot use are retired while they would not fit; spares
start only as far as they fit. The row's note says what was retired or not started, and why.

Size: one pool whose three budgets (device memory, host memory, the rows ahead) decide together which workers
start, stay or go; split apart, each would need the others' state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from edgebench.runner import child_process, host_memory
from edgebench.runner.messages import Error, Exit, Primed
from edgebench.runner.worker_proc import WorkerProc
from edgebench.telemetry.nvml import free_memory_mib

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.run_config import RunConfig

RETIRE_GRACE_S = 2.0  # a retired worker gets this long to leave after Exit, then SIGKILL
MEMORY_MARGIN = 1.15  # a row's workers are assumed to need this much more than the most one took when it opened
# host memory assumed for a worker of a configuration none of whose workers was measured yet (a torch CPU worker's
# PSS was ~350 MiB here; an ORT or null one far less), where no other configuration's was measured either
UNMEASURED_WORKER_MIB = 512.0
MEMORY_HEADROOM_MIB = 256.0  # and this much on top, per device (allocator rounding, the CUDA runtime's own)


def run_identity(cfg: RunConfig) -> str:
    """What a worker must not have run in another repeat: the config without its repeat number and without how
    long its window ran (warm-up, duration, max duration, min inferences). A repeat run again with a longer window
    (the SLO search's horizon) is the same measurement of the same configuration: before, the window's length was
    part of this, so a repeat whose window differed from an earlier repeat's was given that repeat's processes
    (on an H200, every later repeat of two SLO searches ran in repeat 0's processes)."""
    return dataclasses.replace(cfg, repeat=0, warmup_s=0.0, duration_s=0.0, max_duration_s=0.0,
                               min_inferences=0).config_hash()


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

    def __init__(self, sizes: Mapping[tuple[Any, ...], int] | None = None,
                 free_mib: Callable[[str], float | None] = free_memory_mib, fork_from_server: bool = False,
                 host_mib: Callable[[], tuple[float, float] | None] = host_memory.available_mib,
                 worker_host_mib: Callable[[int], float | None] = host_memory.worker_mib) -> None:
        self.sizes = dict(sizes or {})  # pool key -> the most workers the key's block of rows ahead needs
        self.keep_sizes: dict[tuple[Any, ...], int] = {}  # key -> idle workers kept after a row, when more than sizes
        self.fork_from_server = fork_from_server  # run.worker_start: forkserver (runner/child_process.server_context)
        self.key: tuple[Any, ...] | None = None
        self.idle: list[WorkerProc] = []
        self.busy: list[WorkerProc] = []
        self.spawned = 0  # processes started over the pool's life (tests and the benchmark read it)
        self.identity = ""  # run_identity of the row in flight
        self.repeat = 0  # and its repeat
        self.free_mib = free_mib  # placement -> free device memory in MiB, None where it does not apply
        self.worker_mib: dict[tuple[tuple[Any, ...], str], float] = {}  # (key, device) -> most one worker took
        # the same from rows during whose start no other worker of the pool was starting (importing, maybe making a
        # CUDA context): exact; worker_mib counts those too (an upper bound), and is used only until this has one
        self.clean_mib: dict[tuple[tuple[Any, ...], str], float] = {}
        self.clean_take = False  # the row in flight started while every other worker of the pool was primed
        self.short: set[tuple[Any, ...]] = set()  # keys for which memory was short: no spares started for them
        self.free_at_take: dict[str, float] = {}  # device -> free MiB before the row in flight opened
        self.row_devices: dict[str, int] = {}  # device -> workers of the row in flight there
        self.retired_for_memory = 0  # over the pool's life (tests read it)
        self.notes: list[str] = []  # what the pool did to the row in flight (its notes)
        self.host_mib = host_mib  # () -> (available, total) host memory in MiB; None where it cannot be read
        self.worker_host_mib = worker_host_mib  # pid -> what that process holds of host memory, MiB
        self.host_per_worker: dict[tuple[Any, ...], float] = {}  # key -> the most one worker of it held (host)
        self.not_started_for_host = 0  # over the pool's life (tests read it)

    def expect(self, key: tuple[Any, ...], workers: int, keep: int = 0) -> None:
        """The rows ahead of this key (its block of consecutive rows) need at most `workers` processes, started
        (primed) with the next row; `keep`: idle workers kept after it though not started now (the SLO search keeps
        a count's instances x repeats but starts the later repeats' only once the first repeat met)."""
        self.sizes[key] = workers
        self.keep_sizes[key] = max(workers, keep)

    def take(self, key: tuple[Any, ...], placements: Sequence[str], spawn: Callable[[], WorkerProc],
             identity: str = "", repeat: int = 0) -> list[WorkerProc]:
        """One worker per placement that has not run `identity` (run_identity) in another repeat than `repeat`: an
        idle one that last ran the same placement, else a never-used one, else a new one from `spawn()` (primed).
        Spares up to `sizes[key]` are started with them (see settle). Idle workers found dead are retired first."""
        self._hold(key)
        dead = [w for w in self.idle if w.proc.exitcode is not None]
        self.idle = [w for w in self.idle if w not in dead]
        retire(dead)
        self.notes = []
        self.row_devices = {}
        for placement in placements:
            device = device_of(placement)
            self.row_devices[device] = self.row_devices.get(device, 0) + 1
        fits = [w for w in self.idle if w.ran.get(identity, repeat) == repeat]
        self._make_host_room(key, len(placements) - len(fits), fits)
        chosen: list[WorkerProc] = []
        self.busy = chosen  # as each is chosen: a spawn() that raises leaves nothing unaccounted for
        for placement in placements:
            fit = [w for w in self.idle if w.ran.get(identity, repeat) == repeat]
            match = next((w for w in fit if w.placement == placement), None)
            if match is None:
                match = next((w for w in fit if not w.placement), None)
            if match is None:
                match = self._spawn(spawn)
            else:
                self.idle.remove(match)
            match.placement = placement
            chosen.append(match)
        self._make_room(key)
        before = self.spawned
        self.clean_take = all(w.primed for w in self.idle)
        self._fill(self.sizes.get(key, 0) - len(chosen), spawn)
        self.clean_take = self.clean_take and self.spawned == before
        self.free_at_take = self._free_now()
        self.identity = identity
        self.repeat = repeat
        return chosen

    def _free_now(self) -> dict[str, float]:
        """device -> free MiB, for the devices of the row in flight that have device memory to read."""
        out = {}
        for device in self.row_devices:
            free = self.free_mib(device)
            if free is not None:
                out[device] = free
        return out

    def _need_mib(self, key: tuple[Any, ...], device: str) -> float | None:
        per_worker = self.clean_mib.get((key, device), self.worker_mib.get((key, device)))
        if per_worker is None:
            return None
        return self.row_devices[device] * per_worker * MEMORY_MARGIN + MEMORY_HEADROOM_MIB

    def _make_room(self, key: tuple[Any, ...]) -> None:
        """Retire idle workers the row does not use while a device cannot hold the row's workers opening."""
        for device in self.row_devices:
            need = self._need_mib(key, device)
            if need is None:
                continue
            free = self.free_mib(device)
            if free is None or free >= need:
                continue
            self.short.add(key)
            before, gone = free, 0
            # those that ran rows first (they may hold an allocator's cache), then never-used spares
            order = sorted(self.idle, key=lambda w: -w.rows)
            while order and (free is None or free < need):
                w = order.pop(0)
                self.idle.remove(w)
                retire([w])
                gone += 1
                free = self.free_mib(device)
            self.retired_for_memory += gone
            self.notes.append(
                f"warm pool: {device} had {before:.0f} MiB free and this row's {self.row_devices[device]} worker(s) "
                f"need ~{need:.0f} MiB ({self.clean_mib.get((key, device), self.worker_mib[(key, device)]):.0f} "
                f"MiB each when a row of this "
                f"configuration opened, x{MEMORY_MARGIN:g} + {MEMORY_HEADROOM_MIB:g}); retired {gone} idle "
                f"worker(s) first ({'unknown' if free is None else f'{free:.0f} MiB'} free after)")

    def _host_state(self, key: tuple[Any, ...]) -> tuple[float, float, float, bool] | None:
        """(available, total, one worker's MiB, whether that was measured for `key`) of host memory for workers of
        `key`; before any worker of it was measured (its first row starts instances x repeats at once), the most
        measured of another key, else UNMEASURED_WORKER_MIB. None where host memory cannot be read."""
        per_worker = self.host_per_worker.get(key)
        memory = self.host_mib()
        if memory is None:
            return None
        if per_worker is not None:
            return (*memory, per_worker, True)
        return (*memory, max(self.host_per_worker.values(), default=UNMEASURED_WORKER_MIB), False)

    def _make_host_room(self, key: tuple[Any, ...], starting: int, keep: Sequence[WorkerProc]) -> None:
        """Retire idle workers the row cannot use (not `keep`) while the `starting` workers it must start would not
        fit in the host memory available above the reserve."""
        state = self._host_state(key)
        if state is None or starting <= 0:
            return
        available, total, per_worker, measured = state
        if host_memory.affordable(available, total, per_worker, MEMORY_MARGIN) >= starting:
            return
        before, gone = available, 0
        order = sorted((w for w in self.idle if w not in keep), key=lambda w: -w.rows)
        while order and host_memory.affordable(available, total, per_worker, MEMORY_MARGIN) < starting:
            w = order.pop(0)
            self.idle.remove(w)
            retire([w])
            gone += 1
            available = (self.host_mib() or (available, total))[0]
        if measured:  # an assumed size is checked again once a worker of the key is measured
            self.short.add(key)
        self.retired_for_memory += gone
        if not measured and not gone:
            return
        self.notes.append(
            f"warm pool: host memory: {before:.0f} of {total:.0f} MiB available and this row starts {starting} "
            f"worker(s) of ~{per_worker:.0f} MiB each ({_sized(measured)}, x{MEMORY_MARGIN:g}) above a reserve of "
            f"{host_memory.reserve_mib(total):.0f} MiB; retired {gone} idle worker(s) it cannot use first "
            f"({available:.0f} MiB available after)")

    def _measure_host(self, workers: Sequence[WorkerProc]) -> None:
        """Note the most host memory one of `workers` (of the pool's key) holds."""
        if self.key is None:
            return
        for w in workers:
            if w.proc.exitcode is None and w.pid is not None and (mib := self.worker_host_mib(w.pid)) is not None:
                self.host_per_worker[self.key] = max(self.host_per_worker.get(self.key, 0.0), mib)

    def opened(self) -> None:
        """Every instance of the row in flight is ready (sessions open, warmed up): note what one worker took on each
        device, (free before the row - free now) / its workers there; the most seen for the key is kept; and what
        each holds of host memory with its session open (on a Jetson its CUDA memory is host memory)."""
        if self.key is None:
            return
        self._measure_host(self.busy)
        for device, before in self.free_at_take.items():
            now = self.free_mib(device)
            if now is None or not self.row_devices.get(device):
                continue
            per_worker = max(0.0, before - now) / self.row_devices[device]
            k = (self.key, device)
            self.worker_mib[k] = max(self.worker_mib.get(k, 0.0), per_worker)
            if self.clean_take:
                self.clean_mib[k] = max(self.clean_mib.get(k, 0.0), per_worker)

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
        if self.key in self.short:
            return
        self._fill_now(idle, spawn)

    def _fill_now(self, idle: int, spawn: Callable[[], WorkerProc]) -> None:
        wanted = idle - len(self.idle)
        if wanted <= 0:
            return
        if (key := self.key) is not None and (state := self._host_state(key)) is not None:
            available, total, per_worker, measured = state
            # workers started but not primed yet have not taken their memory: count it as taken
            starting = sum(1 for w in self.idle + self.busy if not w.primed)
            fit = max(0, host_memory.affordable(available, total, per_worker, MEMORY_MARGIN) - starting)
            if fit < wanted:
                if measured:  # an assumed size is checked again once a worker of the key is measured
                    self.short.add(key)
                self.not_started_for_host += wanted - fit
                self.notes.append(
                    f"warm pool: host memory: started {fit} of {wanted} spare worker(s) ({available:.0f} of "
                    f"{total:.0f} MiB available, ~{per_worker:.0f} MiB each ({_sized(measured)}, x{MEMORY_MARGIN:g}), "
                    f"{starting} still starting, a reserve of {host_memory.reserve_mib(total):.0f} MiB)")
                wanted = fit
        for _ in range(wanted):
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
        self._measure_host([w for w in self.idle if w.primed])
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
            w.ran[self.identity] = self.repeat
        self._measure_host(workers)
        self.idle = list(workers) + [w for w in self.idle if w not in workers]
        kept = 0
        if self.key is not None:
            kept = max(self.keep_sizes.get(self.key, 0), self.sizes.get(self.key) or 0)
        keep = max(kept, instances)
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


def _sized(measured: bool) -> str:
    return "PSS measured" if measured else "not measured yet: assumed"


def device_of(placement: str) -> str:
    """The device whose memory a placement uses: 'cuda' and 'gpu' are GPU 0 ('cuda:0'), others as given."""
    kind, _, index = placement.partition(":")
    if kind in ("cuda", "gpu"):
        return f"cuda:{index or 0}"
    return placement


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
