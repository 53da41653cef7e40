"""A worker process: spawned once, it runs the instances of one row (a fresh worker) or of several rows in turn
(a warm worker, runner/warm_pool.py), each row from a fresh session.

Parent -> worker, over the worker's own duplex pipe (runner/messages.py): Job (run these instances of a row with
runner/worker.run_instance; keep: stay for the next job after it, else exit), Go (the start signal of the row's
window), Exit (leave; so does a closed pipe).
Worker -> parent: run_instance's messages, plus Primed (a warm worker's framework is imported, sent once before any
job), Idle (the job is over and its sessions are closed), Retire (a session of that job failed to close: the worker
leaves instead of going idle).
Every worker has its own shared stop flag (one byte) and inference counters (one int64 per instance slot),
made before it starts and reused by each of its jobs; the orchestrator zeroes them before sending a job.

A kept worker is only reused for a job that differs in batch or instance count (the pool's key): it reopens the
session, so what carries over is the imported framework, the CUDA context and the allocator's process state.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from edgebench.backends.registry import get_backend
from edgebench.runner import child_process, worker
from edgebench.runner.child_process import Child
from edgebench.runner.messages import Error, Go, Idle, Job, Message, Primed, Retire


class NoStartSignal(Exception):
    """The orchestrator's start signal did not come in time (another instance failed, or barrier_timeout_s)."""


@dataclass
class WorkerProc:
    """The parent's handle on one worker process."""

    child: Child
    conn: Any  # the parent's end of the duplex pipe
    stop_raw: Any  # RawArray("b", 1)
    counts_raw: Any  # RawArray("q", slots)
    slots: int
    rows: int = 0  # rows this process finished before (0: a fresh process)
    placement: str = ""  # what its last job ran on (a warm worker is given the same placement again)
    primed: bool = False
    forked: bool = False  # forked from the framework server (run.worker_start: forkserver), not spawned
    unfit: bool = False  # said it must not be reused (a session that did not close)
    # run_identity of every row it finished -> that row's repeat (never given the identity in another repeat)
    ran: dict[str, int] = field(default_factory=dict)
    exited: bool = False
    stop: memoryview = field(init=False, repr=False)
    counts: memoryview = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.stop = memoryview(self.stop_raw).cast("B")
        self.counts = memoryview(self.counts_raw).cast("B").cast("q")

    @property
    def proc(self) -> Any:
        """The multiprocessing Process."""
        return self.child.proc

    @property
    def pid(self) -> int | None:
        return self.child.pid

    def reset(self) -> None:
        """Zero the stop flag and the counters before a job (the worker is idle: nothing else writes them)."""
        self.stop[0] = 0
        for i in range(self.slots):
            self.counts[i] = 0


def spawn_worker(slots: int, threads: int, env: dict[str, str], name: str,
                 preload: tuple[str, str] | None = None, from_server: bool = False) -> WorkerProc:
    """Start a worker process in its own process group. `env` (thread caps, e.g. the MPS pipe folder) holds before
    it imports anything; `preload` = (backend, device): import that backend's framework at once and say Primed.
    `from_server` (run.worker_start: forkserver): fork it from the framework server instead, where there is one for
    this backend and no `env` is asked for (child_process.server_context)."""
    ctx = child_process.context()
    parent_end, child_end = ctx.Pipe(duplex=True)
    stop_raw, counts_raw = ctx.RawArray("b", 1), ctx.RawArray("q", max(1, slots))
    modules = server_modules(preload[0]) if from_server and preload is not None and not env else None
    server = modules is not None and child_process.server_context(modules) is not None
    try:
        if server:  # forked from the framework server: serve() sets its thread caps before the framework's first use
            child = child_process.spawn(serve, (child_end, stop_raw, counts_raw, threads, None, preload), name=name,
                                        server_modules=modules, server_env=worker.thread_env(threads))
        else:
            child = child_process.spawn(serve, (child_end, stop_raw, counts_raw, threads, os.getpid(), preload),
                                        name=name, env={**worker.thread_env(threads), **env})
    finally:
        child_end.close()
    return WorkerProc(child, parent_end, stop_raw, counts_raw, slots, forked=server)


def serve(conn: Any, stop_raw: Any, counts_raw: Any, threads: int, parent_pid: int | None,
          preload: tuple[str, str] | None) -> None:
    """Entry point of a worker process (it leads its own process group: child_process.spawn): the framework imported
    when asked, then jobs until told to exit. Exits 0 after its last job when every instance of it finished, else 1.
    parent_pid None: forked from the framework server, which is then the parent whose death ends a timed loop."""
    if parent_pid is None:
        parent_pid = os.getppid()
    os.environ.update(worker.thread_env(threads))
    stop = memoryview(stop_raw).cast("B")
    counts = memoryview(counts_raw).cast("B").cast("q")
    lock = threading.Lock()

    def send(msg: Message) -> None:
        with lock:
            conn.send(msg)

    if preload is not None:
        try:
            preload_backend(*preload)
        except Exception as exc:  # noqa: BLE001 - the job's open will meet it again and report it per instance
            send(Error(None, "preload", worker.describe(exc)))
            worker.exit_now(1)
        send(Primed(os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            worker.exit_now(0)
        if not isinstance(msg, Job):
            worker.exit_now(0)
        cfg, prepared, instances, workdir, keep = msg.cfg, msg.prepared, msg.instances, msg.workdir, msg.keep
        os.environ.update(worker.thread_env(cfg.threads_per_instance))
        close_errors: list[str] = []
        ok = run_job(cfg, prepared, instances, workdir, conn, send, stop, counts, parent_pid, close_errors.append)
        if ok and keep and close_errors:  # its state is unknown: never reused
            send(Retire(instances[0], "; ".join(close_errors)))
        if not (ok and keep) or close_errors:
            conn.close()
            worker.exit_now(0 if ok else 1)
        send(Idle(instances[0]))


def server_modules(backend: str) -> tuple[str, ...]:
    """What the framework server imports before it forks a warm worker of `backend`: this module (edgebench's worker
    code) and the backend's `framework_modules`, imports that create no GPU context."""
    return (__name__, *getattr(get_backend(backend), "framework_modules", ()))


def preload_backend(backend: str, device: str) -> None:
    """Import what the backend's sessions need (its optional `preload(device)`), so a row does not pay for it."""
    hook = getattr(get_backend(backend), "preload", None)
    if hook is not None:
        hook(device)


def run_job(cfg: Any, prepared: Any, instances: tuple[int, ...], workdir: str, conn: Any, send: Any,
            stop: memoryview, counts: memoryview, parent_pid: int, on_close_error: Any = None) -> bool:
    """The job's instances: one on this thread (mode "process"), else one thread each (mode "streams") while this
    thread waits for the start signal and passes it on. True when every instance finished."""
    if len(instances) == 1:
        return worker.run_instance(instances[0], 0, cfg, prepared, send, lambda timeout_s: wait_go(conn, timeout_s),
                                   stop, counts, workdir, parent_pid, on_close_error)
    go = threading.Event()
    failed: list[BaseException] = []
    origin: list[int] = [0]

    def wait_start(timeout_s: float) -> int:
        if not go.wait(timeout_s) or failed:
            raise failed[0] if failed else NoStartSignal(f"no start signal within barrier_timeout_s={timeout_s:g}")
        return origin[0]

    results: dict[int, bool] = {}

    def target(slot: int, i: int) -> None:
        results[i] = worker.run_instance(i, slot, cfg, prepared, send, wait_start, stop, counts, workdir, parent_pid,
                                         on_close_error)

    threads = [threading.Thread(target=target, args=(slot, i), name=f"instance-{i}", daemon=True)
               for slot, i in enumerate(instances)]
    for t in threads:
        t.start()
    try:
        origin[0] = wait_go(conn, cfg.load_timeout_s + cfg.barrier_timeout_s)
    except BaseException as exc:  # noqa: BLE001 - every instance thread raises it from its own wait
        failed.append(exc)
    go.set()
    for t in threads:
        t.join()
    return all(results.get(i, False) for i in instances)


def wait_go(conn: Any, timeout_s: float) -> int:
    """Block until the orchestrator's Go and return its origin_ns (0: none); NoStartSignal when it does not come
    within timeout_s or something else does."""
    if not conn.poll(timeout_s):
        raise NoStartSignal(f"no start signal within barrier_timeout_s={timeout_s:g}")
    msg = conn.recv()
    if not isinstance(msg, Go):
        raise NoStartSignal(f"the orchestrator sent {type(msg).__name__.lower()!r} instead of the start signal")
    return msg.origin_ns
