"""N instances, one start signal, one measured window, every phase under a deadline.

`run_instances` always runs instances in spawned worker processes (never fork; runner/worker_proc.py): mode "process"
one per instance, mode "streams" one running every instance in a thread. Each sits in its own process group, so a
failing run is cleaned up by signalling the groups (SIGTERM, then SIGKILL; runner/child_process.py); what the
orchestrator and its workers say to each other are the dataclasses of runner/messages.py. With a `pool`
(runner/warm_pool.py, profile `run.workers: warm`) a process-mode row runs in warm workers kept from the previous row
of the same model, backend, precision and options; otherwise every row starts fresh processes that exit after it.

Before any instance starts, a probe process (runner/probe.py) takes the accuracy outputs and the kernel
profile when the row asks for them (or the caller passes a probe result it already has): no instance runs
anything but open, warm-up and its window.

Phases and their deadlines (RunConfig):
  load+warmup  workers open sessions, warm up, report ready        load_timeout_s
  start        every instance ready: samplers start, the window's start is recorded, Go to each worker; an
               instance gives up waiting for it after barrier_timeout_s
  measure      until duration_s has passed and min_inferences were done, or max_duration_s
  collect      children finish their last inference and send timestamps    collect_timeout_s
An instance fault (exception, non-zero exit, death by signal, missed deadline, no start signal) gives
RunOutcome(status="failed", reason=...) naming the instance, pid, placement, phase and cause; it is
never raised. Errors of the caller (bad backend name, bad accuracy inputs) raise EdgebenchError.

Size: one state machine (start, load, start signal, measure, collect, cleanup) whose phases share the
children, the deadlines and the fault that ends them; split, every phase would need the whole run's state.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from edgebench.backends.registry import backend_target
from edgebench.errors import ConfigError
from edgebench.file_sizes import device_of, tree_bytes
from edgebench.runner import child_process
from edgebench.runner.messages import Done, Error, FromWorker, Go, Idle, Job, Phase, Primed, Ready, Retire
from edgebench.runner.probe import ProbeResult, probe_wanted, run_probe
from edgebench.runner.stamps import ArrayStamps, FileStamps, Stamps, whole_column
from edgebench.runner.warm_pool import WarmPool, pool_key, run_identity
from edgebench.runner.workdirs import make_workdir, remove_workdir
from edgebench.runner.worker_proc import WorkerProc, spawn_worker

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.backends.base import Prepared
    from edgebench.config.run_config import RunConfig
    from edgebench.telemetry.base import Sampler, Timeline

POLL_S = 0.01  # how often the orchestrator looks at messages, exits and the inference counters
MEASURE_POLL_MAX_S = 0.5  # during the window, before duration_s: longest block (faults still wake it)
MEASURE_POLL_S = 0.05  # during the window, after duration_s: how often the inference counters are read
TERM_GRACE_S = 2.0  # SIGTERM -> SIGKILL
# a fixed-rate row's streams count their arrivals from the window's start plus this: time for Go to reach every
# worker and wake it (sent one pipe at a time; ~1 ms for 32 workers), so the arrival model's phases hold
# exactly across processes. A worker that wakes later still starts from the shared origin: its first arrivals
# wait, and that wait is latency, as for a consumer that falls behind its camera.
STREAM_ORIGIN_LEAD_NS = 5_000_000
SETTLE_MARGIN_S = 5.0  # spare warm workers still importing this close to an instance's barrier_timeout_s are retired


@dataclass
class InstanceResult:
    """One instance's outcome. Its timestamps (`stamps`, runner/stamps.py) are read in chunks by everything the
    pipeline computes (issue 37); start_ns / end_ns / issued_ns load a whole column, for tests and small rows."""

    instance: int
    placement: str
    pid: int | None
    # one entry per inference of the measured phase (time.monotonic_ns): start_ns, end_ns; for a fixed-rate stream
    # start_ns is the scheduled arrival (so end - start counts queueing) and issued_ns when it really began
    stamps: Stamps = field(default_factory=lambda: ArrayStamps([], []))
    error: str | None = None  # None when this instance finished fine

    @property
    def start_ns(self) -> np.ndarray:
        return whole_column(self.stamps, "start_ns")

    @property
    def end_ns(self) -> np.ndarray:
        return whole_column(self.stamps, "end_ns")

    @property
    def issued_ns(self) -> np.ndarray | None:
        return whole_column(self.stamps, "issued_ns") if self.stamps.open_loop else None


@dataclass
class RunOutcome:
    status: str  # "ok" or "failed"
    reason: str  # "" when ok; else names the instance, pid, placement, phase and cause
    instances: list[InstanceResult]
    measure_start_ns: int  # the start signal, before every instance's first timed inference (0: not reached)
    measure_end_ns: int  # stop signalled (0 when never reached)
    # fixed-rate rows: the origin every stream's arrivals count from (measure_start_ns + STREAM_ORIGIN_LEAD_NS);
    # 0 for a closed loop or a row that never started
    stream_origin_ns: int = 0
    fault_errno: int | None = None  # failed: the errno of an instance's OSError, when that is what failed it
    timelines: list[Timeline] = field(default_factory=list)  # one per sampler started
    accuracy_outputs: dict[str, np.ndarray] | None = None  # the probe's outputs on accuracy_inputs
    threads_per_instance: int = 1
    # probe (when run here), spawn, load, warmup, load_warmup (spawn+load+warmup), measure, collect
    phase_s: dict[str, float] = field(default_factory=dict)
    kernels: list[tuple[str, float]] | None = None  # the probe's profiled GPU kernels (name, us)
    kernels_note: str = ""  # why there are none, when profiling was asked for
    probe: ProbeResult | None = None  # where accuracy_outputs and kernels came from
    workers: str = "fresh"  # "fresh", or "warm: k of n reused" (processes that ran earlier rows; runner/warm_pool),
    # with ", m forked from the framework server" under run.worker_start: forkserver
    notes: list[str] = field(default_factory=list)  # what went wrong beside the row (a spare worker retired)
    # the run's work folder while it holds the instances' timestamp files ("" when none); removed by discard_stamps,
    # or when the outcome is garbage-collected or the interpreter exits
    stamps_dir: str = ""
    # what the instances' timestamp files in the work folder took when the window ended (kept or not), and the file
    # system it was on (st_dev): a row's transient need beside its folder (results/row_files.stamps_record)
    stamps_bytes: int = 0
    stamps_dev: int | None = None

    def __post_init__(self) -> None:
        self._discard = weakref.finalize(self, remove_workdir, self.stamps_dir) if self.stamps_dir else None

    def discard_stamps(self) -> None:
        """Remove the instances' timestamp files (once the row's files are written); the stamps are unreadable after."""
        if self._discard is not None:
            self._discard()


def late_stream_start(results: list[InstanceResult], origin_ns: int) -> list[str]:
    """A note when a fixed-rate stream's worker began its first arrival more than STREAM_ORIGIN_LEAD_NS after it
    was due (it woke after the shared origin: the wait counts in its first latencies), naming the latest one."""
    if not origin_ns:
        return []
    firsts = [(next(r.stamps.chunks(1)), r.instance) for r in results if r.stamps.open_loop and r.stamps.count]
    late = [(int(c.issued_ns[0] - c.start_ns[0]), instance) for c, instance in firsts if c.issued_ns is not None]
    worst_ns, instance = max(late, default=(0, -1))
    if worst_ns <= STREAM_ORIGIN_LEAD_NS:
        return []
    return [f"stream start: instance {instance} began its first arrival {worst_ns / 1e6:.1f} ms after it was due "
            f"(its worker woke after the streams' shared origin); that wait counts in its first latencies"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the window (as timeit does): a full collection of the orchestrator's
    heap (40-115 ms after ~60 rows on this 2-core CPU) holds the GIL, so neither the stop nor the samplers' thread runs until it
    ends; with 8 busy instances on 2 cores one took 1.1 s and stretched a 0.2 s window to 1.25 s in every run of
    issue 27's null sweep. The collection it defers runs after the stop. The window is bounded (max_duration_s) and
    allocates little here (the samplers' readings)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_instances(
    cfg: RunConfig,
    prepared: Prepared,
    *,
    samplers: Sequence[Sampler] = (),
    accuracy_inputs: np.ndarray | dict[str, np.ndarray] | None = None,
    on_measure_start: Callable[[list[int]], None] | None = None,
    child_env: Mapping[str, str] | None = None,
    probe: ProbeResult | None = None,
    pool: WarmPool | None = None,
    work_root: str | None = None,
) -> RunOutcome:
    """Run cfg.instances instances of `prepared` and return their per-inference timestamps.

    `child_env` is added to every instance process's environment (e.g. the CUDA MPS pipe folder).
    `accuracy_inputs`: [N, *sample] for the one input, or {input name: [N, *sample]} for every input; their
    outputs (and the kernel profile, cfg.kernel_profile_steps) come from a probe process run before the
    instances, unless `probe` is a result the caller already has (then no probe runs here).
    `pool`: warm workers to run in (and return to) when the row can reuse them (warm_pool.pool_key).
    `work_root`: the folder the row's work folder (its instances' timestamp files) is made in; None: the system temp
    folder (workdirs.run_work_root says when a run folder's is used instead)."""

    backend_target(prepared.backend)  # unknown backend: a caller error, raised before any child starts
    if isinstance(accuracy_inputs, dict):
        _check_accuracy_feeds(prepared, accuracy_inputs)
    elif accuracy_inputs is not None:
        sample = tuple(prepared.first_input.shape)
        if accuracy_inputs.ndim != len(sample) + 1 or tuple(accuracy_inputs.shape[1:]) != sample or len(accuracy_inputs) == 0:
            raise ConfigError(
                "run_instances", "accuracy_inputs",
                f"shape {list(accuracy_inputs.shape)} is not [N>=1, {', '.join(map(str, sample))}]",
            )
    probe_s = None
    if probe is None and probe_wanted(cfg, accuracy_inputs):
        probe = run_probe(cfg, prepared, accuracy_inputs, child_env=child_env)
        probe_s = probe.seconds
    key = pool_key(cfg) if pool is not None and not child_env else None
    if pool is not None and key is None:
        pool.close()  # MPS / streams rows start fresh processes: the last key's idle workers do not stay resident
    run = _Run(cfg, prepared, samplers, on_measure_start, dict(child_env or {}), pool if key is not None else None, key,
               work_root)
    try:
        outcome = run.execute()
    finally:
        run.cleanup()
    if probe_s is not None:
        outcome.phase_s = {"probe": probe_s, **outcome.phase_s}
    if probe is not None:
        outcome.probe = probe
        outcome.accuracy_outputs = probe.accuracy_outputs
        outcome.kernels, outcome.kernels_note = probe.kernels, probe.kernels_note
    return outcome


def prewarm(cfg: RunConfig, prepared: Prepared, pool: WarmPool) -> None:
    """Before a row's probe: start the warm workers its pool key needs, if the pool does not hold that key yet, so
    they import their framework while the probe runs (run_instances then takes them and waits for them)."""
    key = pool_key(cfg)
    if key is not None:
        pool.prewarm(key, cfg.instances, functools.partial(_spawn_warm, cfg, prepared.backend, {},
                                                           pool.fork_from_server))


def _spawn_warm(cfg: RunConfig, backend: str, env: dict[str, str], from_server: bool = False) -> WorkerProc:
    return spawn_worker(1, cfg.threads_per_instance, env, "edgebench-warm-worker", preload=(backend, cfg.placements[0]),
                        from_server=from_server)


def _check_accuracy_feeds(prepared: Prepared, feeds: dict[str, np.ndarray]) -> None:
    """Every input of `prepared`, each its full shape with N>=1 on its batch axis (the same N), or exactly its
    shape when it has no batch axis."""
    counts = set()
    for d in prepared.inputs:
        arr = feeds.get(d.name)
        if arr is None:
            raise ConfigError("run_instances", "accuracy_inputs", f"no array for input '{d.name}'")
        if d.batch_axis is None:
            if tuple(arr.shape) != d.shape:
                raise ConfigError("run_instances", "accuracy_inputs",
                                  f"input '{d.name}' has no batch axis: shape {list(arr.shape)} is not {list(d.shape)}")
            continue
        n = arr.shape[d.batch_axis] if arr.ndim == len(d.shape) + 1 else 0
        if n == 0 or tuple(arr.shape) != d.full_shape(n):
            raise ConfigError("run_instances", "accuracy_inputs",
                              f"input '{d.name}': shape {list(arr.shape)} is not "
                              f"{list(d.full_shape('N'))} with N>=1")  # type: ignore[arg-type]
        counts.add(n)
    if len(counts) > 1:
        raise ConfigError("run_instances", "accuracy_inputs", f"inputs have different sample counts {sorted(counts)}")


@dataclass
class _Child:
    w: WorkerProc
    instances: tuple[int, ...]
    idle: bool = False  # a warm worker finished its job and closed its sessions

    @property
    def proc(self) -> Any:
        return self.w.proc

    @property
    def conn(self) -> Any:
        return self.w.conn

    @property
    def exited(self) -> bool:
        return self.w.exited

    @exited.setter
    def exited(self, value: bool) -> None:
        self.w.exited = value


class _Run:
    def __init__(
        self,
        cfg: RunConfig,
        prepared: Prepared,
        samplers: Sequence[Sampler],
        on_measure_start: Callable[[list[int]], None] | None,
        child_env: dict[str, str] | None = None,
        pool: WarmPool | None = None,
        key: tuple[Any, ...] | None = None,
        work_root: str | None = None,
    ) -> None:
        self.child_env = child_env or {}
        self.pool, self.key = pool, key
        self.returned = False  # the warm workers went back to the pool
        self.cfg = cfg
        self.prepared = prepared
        self.samplers = list(samplers)
        self.on_measure_start = on_measure_start
        n = cfg.instances
        # records its owner: a killed harness's folder is removed at the next start (workdirs.remove_stale_run_workdirs)
        self.workdir = make_workdir(work_root)
        self.children: list[_Child] = []
        self.phase = ["startup"] * n
        self.ready = [False] * n
        self.done: dict[int, tuple[str, int]] = {}  # instance -> (its timestamp files' prefix, inferences)
        self.keep_workdir = False  # an outcome reads its timestamps from the work folder: the outcome removes it
        self.errors: dict[int, str] = {}
        self.fault: str | None = None
        self.fault_errno: int | None = None  # an instance's OSError errno (ENOSPC writing its timestamp chunks)
        self.phase_seen_ns: dict[str, int] = {}  # when the last instance entered open / warmup / ready
        self.started: list[Sampler] = []
        self.timelines: list[Timeline] = []
        self.samplers_stopped = False
        self.notes: list[str] = []
        self.t_begin_ns = time.monotonic_ns()
        self.measure_start_ns = 0
        self.measure_end_ns = 0
        self.stream_origin_ns = 0
        self.phase_s: dict[str, float] = {}

    # ------------------------------------------------------------------ phases

    def execute(self) -> RunOutcome:
        cfg = self.cfg
        self._start_children()
        deadline = self.t_begin_ns + int(cfg.load_timeout_s * 1e9)
        while self.fault is None and not all(self.ready):
            now = time.monotonic_ns()
            if now >= deadline:
                late = [i for i in range(cfg.instances) if not self.ready[i]]
                more = f" (and {len(late) - 1} more)" if len(late) > 1 else ""
                self._set_fault(
                    f"{self._who(late[0])}{more} did not report ready within load_timeout_s={cfg.load_timeout_s:g} "
                    f"(still in {self.phase[late[0]]})",
                    late,
                )
                break
            self._poll(min(0.05, (deadline - now) / 1e9))
        if self.fault is not None:
            return self._failed()

        if self.pool is not None:
            self.pool.opened()  # what one worker took on its device, for the next row's memory check
        if self.pool is not None:  # spare warm workers finish importing before any window starts, and before the
            # first ready instance gives up on the start signal (barrier_timeout_s after it said ready)
            first_ready_ns = self.phase_seen_ns.get("first_ready", deadline)
            cap = first_ready_ns + int(max(cfg.barrier_timeout_s - SETTLE_MARGIN_S, 0.0) * 1e9)
            self.notes += self.pool.settle(min(deadline, cap))
        pids = self._pids()
        for sampler in self.samplers:
            sampler.watch_pids(list(pids))
            sampler.start()
            self.started.append(sampler)
        self._poll(0.0)
        if self.fault is not None:
            return self._failed()
        with collector_paused():  # a full collection here once held the stop back 1 s (issue 27, 8 null instances)
            # recorded before the first Go is sent: it precedes every instance's first timed inference
            # (CLOCK_MONOTONIC is system-wide)
            self.measure_start_ns = time.monotonic_ns()
            self.stream_origin_ns = self.measure_start_ns + STREAM_ORIGIN_LEAD_NS if cfg.rate_hz is not None else 0
            go = Go(self.stream_origin_ns)
            for child in self.children:
                try:
                    child.conn.send(go)
                except OSError:
                    pass  # it died: _poll sees its exit
            self.phase_s.update(self._startup_phases())
            self.phase_s["load_warmup"] = (self.measure_start_ns - self.t_begin_ns) / 1e9
            self.phase = ["measure"] * cfg.instances
            if self.on_measure_start is not None:
                self.on_measure_start(list(pids))

            target = cfg.min_inferences + 2 * cfg.instances  # margin: edge inferences fall outside the overlap window
            counters = [c.w.counts for c in self.children]
            window_from_ns = self.stream_origin_ns or self.measure_start_ns  # no arrival before the origin
            while self.fault is None:
                elapsed_s = (time.monotonic_ns() - window_from_ns) / 1e9
                if elapsed_s >= cfg.max_duration_s or (elapsed_s >= cfg.duration_s and sum(map(sum, counters)) >= target):
                    break
                # Block until the earliest moment the window could end. wait() still returns at once on any
                # message or exit, so faults are seen immediately; the instances are not preempted 100x/s
                # by this process, which matters when they use every core.
                until_min_s = cfg.duration_s - elapsed_s
                self._poll(min(until_min_s, MEASURE_POLL_MAX_S) if until_min_s > 0 else MEASURE_POLL_S)
            self._stop_instances()
            self.measure_end_ns = time.monotonic_ns()
        self.phase_s["measure"] = (self.measure_end_ns - self.measure_start_ns) / 1e9
        if self.fault is not None:
            return self._failed()

        self.phase = ["collect"] * cfg.instances
        deadline = self.measure_end_ns + int(cfg.collect_timeout_s * 1e9)
        while self.fault is None and not (len(self.done) == cfg.instances and all(map(self._left, self.children))):
            now = time.monotonic_ns()
            if now >= deadline:
                late = [i for i in range(cfg.instances) if i not in self.done]
                if late:
                    more = f" (and {len(late) - 1} more)" if len(late) > 1 else ""
                    what = f"{self._who(late[0])}{more} did not finish"
                else:
                    late = [i for c in self.children if not self._left(c) for i in c.instances]
                    what = f"{self._who(late[0])} did not {'exit' if self.pool is None else 'close its session'}"
                self._set_fault(f"{what} within collect_timeout_s={cfg.collect_timeout_s:g} during collect", late)
                break
            self._poll(min(POLL_S, (deadline - now) / 1e9))
        self.phase_s["collect"] = (time.monotonic_ns() - self.measure_end_ns) / 1e9
        if self.fault is not None:
            return self._failed()
        self._stop_samplers()
        workers = self._workers_text()
        if self.pool is not None:
            self.pool.give_back([c.w for c in self.children], ok=True, instances=cfg.instances)
            self.returned = True
        results = self._results()
        with self._workdir_owned_by_outcome():
            start_notes = late_stream_start(results, self.stream_origin_ns)
            return RunOutcome(
                stamps_dir=self.workdir if self.keep_workdir else "",
                stamps_bytes=tree_bytes(self.workdir),
                stamps_dev=device_of(self.workdir),
                status="ok",
                reason="",
                instances=results,
                measure_start_ns=self.measure_start_ns,
                measure_end_ns=self.measure_end_ns,
                stream_origin_ns=self.stream_origin_ns,
                timelines=list(self.timelines),
                threads_per_instance=cfg.threads_per_instance,
                phase_s=dict(self.phase_s),
                workers=workers,
                notes=[*self.notes, *start_notes],
            )

    def _failed(self) -> RunOutcome:
        self._stop_instances()
        self._kill_children()
        self._stop_samplers()
        assert self.fault is not None
        results = self._results()
        with self._workdir_owned_by_outcome():
            return RunOutcome(
                stamps_dir=self.workdir if self.keep_workdir else "",
                stamps_bytes=tree_bytes(self.workdir),
                stamps_dev=device_of(self.workdir),
                status="failed",
                reason=self.fault,
                fault_errno=self.fault_errno,
                instances=results,
                measure_start_ns=self.measure_start_ns,
                measure_end_ns=self.measure_end_ns,
                stream_origin_ns=self.stream_origin_ns,
                timelines=list(self.timelines),
                threads_per_instance=self.cfg.threads_per_instance,
                phase_s=dict(self.phase_s),
                workers=self._workers_text(),
                notes=list(self.notes),
            )

    def _workers_text(self) -> str:
        if self.pool is None:
            return "fresh"
        reused = sum(1 for c in self.children if c.w.rows > 0)
        forked = sum(1 for c in self.children if c.w.forked)
        return f"warm: {reused} of {len(self.children)} reused" + (f", {forked} forked from the framework server"
                                                                  if forked else "")

    def _left(self, child: _Child) -> bool:
        """Done with the row: a fresh worker exited, a warm one closed its sessions (it stays for the next row)."""
        return child.exited if self.pool is None else child.idle

    def _stop_instances(self) -> None:
        for child in self.children:
            child.w.stop[0] = 1

    def cleanup(self) -> None:
        """Runs on every exit path, exceptions and Ctrl-C included: nothing is left running but a warm pool's
        workers after a row that ended well."""
        try:
            self._stop_instances()
            self._kill_children()
            if not self.samplers_stopped:
                for sampler in self.started:
                    with contextlib.suppress(Exception):
                        sampler.stop()
                self.samplers_stopped = True
        finally:
            if self.pool is None:
                for child in self.children:
                    with contextlib.suppress(OSError):
                        child.conn.close()
            if not self.keep_workdir:
                remove_workdir(self.workdir)

    # ------------------------------------------------------------------ children

    def _startup_phases(self) -> dict[str, float]:
        """spawn (until the last instance began to open its session), load (until the last began warm-up),
        warmup (until the last was ready), from the instances' own phase messages."""
        t_open = self.phase_seen_ns.get("open", 0)
        t_warm = self.phase_seen_ns.get("warmup", 0)
        t_ready = self.phase_seen_ns.get("ready", 0)
        if not (self.t_begin_ns < t_open <= t_warm <= t_ready):
            return {}
        return {"spawn": (t_open - self.t_begin_ns) / 1e9, "load": (t_warm - t_open) / 1e9,
                "warmup": (t_ready - t_warm) / 1e9}

    def _start_children(self) -> None:
        cfg = self.cfg
        groups = [(i,) for i in range(cfg.instances)] if cfg.mode == "process" else [tuple(range(cfg.instances))]
        if self.pool is not None and self.key is not None:
            spawn = functools.partial(_spawn_warm, cfg, self.prepared.backend, self.child_env,
                                      self.pool.fork_from_server)
            workers = self.pool.take(self.key, cfg.placements, spawn, run_identity(cfg), cfg.repeat)
            self.notes += self.pool.notes  # idle workers retired to make room on the device
        else:
            workers = [spawn_worker(len(g), cfg.threads_per_instance, self.child_env,
                                    f"edgebench-instance-{g[0]}" if len(g) == 1 else "edgebench-streams")
                       for g in groups]
        keep = self.pool is not None
        for w, group in zip(workers, groups, strict=True):
            w.reset()
            self.children.append(_Child(w, group))
            try:
                w.conn.send(Job(cfg, self.prepared, group, self.workdir, keep))
            except OSError:
                pass  # it died already: _poll sees its exit and names it

    def _pids(self) -> list[int]:
        return [c.proc.pid for c in self.children]

    def _pid_of(self, instance: int) -> int | None:
        for child in self.children:
            if instance in child.instances:
                return child.proc.pid  # type: ignore[no-any-return]
        return None

    def _who(self, instance: int) -> str:
        return f"instance {instance} (pid {self._pid_of(instance)}, placement {self.cfg.placements[instance]})"

    def _who_child(self, child: _Child) -> str:
        if len(child.instances) == 1:
            return self._who(child.instances[0])
        first, last = child.instances[0], child.instances[-1]
        return (f"instances {first}-{last} (pid {child.proc.pid}, placement "
                f"{'+'.join(self.cfg.placements[i] for i in child.instances)}, streams mode)")

    def _set_fault(self, reason: str, culprits: Sequence[int]) -> None:
        if self.fault is None:
            self.fault = reason
            for i in culprits:
                self.errors.setdefault(i, reason)

    def _poll(self, timeout_s: float) -> None:
        """Wait up to timeout_s for a message or an exit, then handle everything pending."""
        from multiprocessing.connection import wait

        waitables = [c.conn for c in self.children if not c.conn.closed]
        waitables += [c.proc.sentinel for c in self.children if not c.exited]
        if waitables:
            wait(waitables, max(timeout_s, 0.0))
        else:
            time.sleep(max(timeout_s, 0.0))
        for child in self.children:
            self._drain(child)
        for child in self.children:
            if not child.exited and child.proc.exitcode is not None:
                child.exited = True
                self._drain(child)  # what it sent just before exiting is in the pipe by now
                self._judge_exit(child)

    def _drain(self, child: _Child) -> None:
        while not child.conn.closed:
            try:
                if not child.conn.poll():
                    return
                msg = child.conn.recv()
            except (EOFError, OSError):
                child.conn.close()
                return
            child.w.child.leads_group = True  # it called setsid before it could send anything
            self._handle(child, msg)

    def _handle(self, child: _Child, msg: FromWorker) -> None:
        if isinstance(msg, Primed):
            child.w.primed = True
        elif isinstance(msg, (Idle, Retire)):
            child.idle = True  # done with the row; a retiring one then exits (give_back retires it)
            child.w.unfit = isinstance(msg, Retire)
            if isinstance(msg, Retire):
                self.notes.append(f"{self._who(msg.instance)}: its session did not close cleanly ({msg.reason}); "
                                  "that worker process was retired, not reused")
        elif isinstance(msg, Phase):
            self.phase_seen_ns[msg.name] = time.monotonic_ns()  # the last instance's
            self.phase[msg.instance] = msg.name
        elif isinstance(msg, Ready):
            now_ns = time.monotonic_ns()
            self.phase_seen_ns.setdefault("first_ready", now_ns)
            self.phase_seen_ns["ready"] = now_ns  # the last instance's
            self.ready[msg.instance] = True
            self.phase[msg.instance] = "barrier"
        elif isinstance(msg, Done):
            self.done[msg.instance] = (msg.path, msg.inferences)
        elif isinstance(msg, Error):
            i = child.instances[0] if msg.instance is None else msg.instance  # None: it failed before any job
            self._set_fault(f"{self._who(i)} raised {msg.text} during {msg.phase}", [i])
            if self.fault_errno is None and msg.errno is not None:
                self.fault_errno = msg.errno

    def _judge_exit(self, child: _Child) -> None:
        code = child.proc.exitcode
        pending = [i for i in child.instances if i not in self.done]
        if code == 0 and not pending:
            return
        if any(i in self.errors for i in child.instances) and code == 1:
            return  # it reported its exception already; exit code 1 is the consequence
        what = child_process.exit_text(code) if code != 0 else "exited before sending its timestamps (code 0)"
        phase = self._phase_of(pending[0]) if pending else "collect"
        self._set_fault(f"{self._who_child(child)} {what} during {phase}", pending or list(child.instances))

    def _phase_of(self, instance: int) -> str:
        if self.phase[instance] == "barrier" and self.measure_start_ns:
            return "measure"  # the start signal was sent, though the instance's message says it was still waiting
        return self.phase[instance]

    def _kill_children(self) -> None:
        """Every worker of this row is stopped, unless warm workers went back to the pool after a good row; a warm
        worker of a row that failed is never reused."""
        if self.returned:
            return
        if self.pool is not None:
            self.pool.give_back([c.w for c in self.children], ok=False, instances=self.cfg.instances)
            self.returned = True
            return
        running = [c for c in self.children if c.proc.exitcode is None]
        # SIGTERM, TERM_GRACE_S, then SIGKILL to every group: also whatever it still holds (grandchildren)
        child_process.stop([c.w.child for c in self.children], TERM_GRACE_S)
        for child in running:
            child.exited = True

    def _stop_samplers(self) -> None:
        if self.samplers_stopped:
            return
        self.samplers_stopped = True
        for sampler in self.started:
            self.timelines.append(sampler.stop())

    @contextlib.contextmanager
    def _workdir_owned_by_outcome(self) -> Iterator[None]:
        """Around building the outcome that will own the timestamp files (its finalizer removes them): if that
        raises (a short file, a Ctrl-C), no outcome owns them and cleanup() removes the work folder."""
        try:
            yield
        except BaseException:
            self.keep_workdir = False
            raise

    def _results(self) -> list[InstanceResult]:
        """Each instance's result; its timestamps stay in the work folder's files (read in chunks), which then
        belong to the outcome (RunOutcome.discard_stamps)."""
        out = []
        for i in range(self.cfg.instances):
            stamps: Stamps = ArrayStamps([], [])
            error = self.errors.get(i)
            if i in self.done:
                prefix, count = self.done[i]
                stamps = FileStamps(prefix, count)
                self.keep_workdir = True
            elif error is None:
                error = f"stopped: {self.fault}" if self.fault else "no result"
            out.append(InstanceResult(i, self.cfg.placements[i], self._pid_of(i), stamps, error))
        return out
