"""Child processes of the runner: how one is started, how it is ended, how its exit is put into words.

Every process the runner starts (instance workers, warm workers, the probe) is started here, with
multiprocessing's "spawn" context (never a fork of this process: a CUDA context must not be copied), or, for warm
workers under run.worker_start: forkserver (`server_modules`), forked from a framework server: multiprocessing's
"forkserver", a process started once per sweep that imports edgebench's worker code and the backend's framework
(torch, onnxruntime) and touches no GPU, so every worker forked from it is still a fresh process with a fresh CUDA
context, without paying for the import (issue 37: 32 fresh torch workers on a 16-core H200 took 77 s to reach their
sessions, most of it 32 concurrent `import torch`). Forked workers share the framework's memory pages, which a
deployed process does not: docs/results/worker-start.md. One server per process (multiprocessing keeps one):
workers of a backend whose framework the server did not import are spawned. `spawn(..., own_group=True)`
makes the child call os.setsid() before its target runs, so it leads a process group of its own and everything it
starts (framework helper processes) can be signalled with it; it also dies with this process (Linux:
PR_SET_PDEATHSIG, edgebench.process_lifetime), since leaving our process group means a signal to our group no longer reaches it. `stop` ends children (SIGTERM to each group, a grace period, then SIGKILL to every group, so
grandchildren go too); `exit_text` says how a child ended, in the words rows use ("died with SIGKILL"; it lives in
edgebench.errors, so that stages below the runner, models.export, word a dead child the same way).
Only the standard library (and edgebench.errors and edgebench.process_lifetime, themselves standard library only) is imported here: a spawned child
unpickles this module before its target.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from edgebench.errors import exit_text as exit_text  # re-exported: callers name it child_process.exit_text
from edgebench.process_lifetime import die_with_parent

JOIN_AFTER_KILL_S = 5.0  # how long a SIGKILLed child gets to be reaped
_ENV_LOCK = threading.Lock()
_server_modules: tuple[str, ...] | None = None  # what this process's framework server imports (set once)


def context() -> Any:
    """The "spawn" multiprocessing context (its Pipe, Queue and RawArray go with processes it starts)."""
    return multiprocessing.get_context("spawn")


def server_context(modules: Sequence[str]) -> Any | None:
    """The "forkserver" context whose server imports `modules` first, or None where a worker must be spawned: not
    Linux, or this process's server was set up for other modules. The server itself
    starts with the first process started from it, with this process's environment of that moment."""
    global _server_modules
    if not sys.platform.startswith("linux"):
        return None
    wanted = tuple(modules)
    ctx = multiprocessing.get_context("forkserver")
    if _server_modules is None:
        ctx.set_forkserver_preload(list(wanted))
        _server_modules = wanted
    return ctx if _server_modules == wanted else None


class Child:
    """The parent's handle on one spawned process (started: it has a pid)."""

    def __init__(self, proc: Any, own_group: bool = True) -> None:
        self.proc = proc  # the multiprocessing Process, started
        self.own_group = own_group  # spawned to lead its own process group
        self.leads_group = False  # known to lead it (it called setsid: getpgid said so, or it sent a message)

    @property
    def pid(self) -> int:
        return self.proc.pid  # type: ignore[no-any-return]

    @property
    def exitcode(self) -> int | None:
        return self.proc.exitcode  # type: ignore[no-any-return]

    @property
    def sentinel(self) -> Any:
        return self.proc.sentinel

    def join(self, timeout_s: float | None = None) -> None:
        self.proc.join(timeout_s)

    def signal_group(self, sig: int) -> None:
        """Signal the child's whole process group once it has its own, else (still starting, or a child spawned
        with own_group=False) just the child while it runs. A child that has exited and been reaped can no longer
        say whether it made a group; one spawned to lead its own is assumed to have, so what the group still holds
        (grandchildren) is signalled."""
        pid = self.pid
        if not self.leads_group:
            try:
                self.leads_group = os.getpgid(pid) == pid
            except OSError:  # gone
                self.leads_group = self.own_group
        try:
            if self.leads_group:
                os.killpg(pid, sig)
            elif self.exitcode is None:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def spawn(target: Callable[..., None], args: tuple[Any, ...], *, name: str | None = None,
          env: Mapping[str, str] | None = None, own_group: bool = True,
          server_modules: Sequence[str] | None = None, server_env: Mapping[str, str] | None = None) -> Child:
    """Start target(*args) in a spawned process. `env` is set around start(), so it holds before the child imports
    anything (thread caps, the MPS pipe folder); `own_group`: the child leads its own process group and dies with
    this process (see the module docstring) before target runs. `server_modules`: fork it from the framework
    server that imports these (server_context) where there is one; its `env` must then be empty (a forked child has
    the server's environment: a target that needs thread caps sets them itself, before its framework's first use)
    and it dies with the server, which leaves when this process does. `server_env`: the environment the server
    starts with if this start starts it (the first worker's thread caps, so the frameworks it imports read them)."""
    ctx = server_context(server_modules) if server_modules is not None and not env else None
    if ctx is not None and own_group:
        proc = ctx.Process(target=_run_in_own_group, args=(target, None, args), name=name)
        with child_env(dict(server_env or {})):  # (child_env also skips the console script, as for spawn)
            proc.start()
        return Child(proc, own_group)
    ctx = context()
    if own_group:
        proc = ctx.Process(target=_run_in_own_group, args=(target, os.getpid(), args), name=name)
    else:
        proc = ctx.Process(target=target, args=args, name=name)
    with child_env(dict(env or {})):
        proc.start()
    return Child(proc, own_group)


def stop(children: Sequence[Child], grace_s: float, *, terminate: bool = True) -> None:
    """End `children`: SIGTERM each running one's group (`terminate=False`: the caller has already asked them to
    leave), wait up to grace_s for all of them together, then SIGKILL every group, whatever it still holds
    (grandchildren of a child that has exited too), and reap them."""
    running = [c for c in children if c.exitcode is None]
    if terminate:
        for child in running:
            child.signal_group(signal.SIGTERM)
    end = time.monotonic() + grace_s
    for child in running:
        child.join(max(0.0, end - time.monotonic()))
    for child in children:
        child.signal_group(signal.SIGKILL)
    for child in running:
        child.join(JOIN_AFTER_KILL_S)


@contextlib.contextmanager
def child_env(values: dict[str, str]) -> Iterator[None]:
    """Spawned children inherit these; set around start() so they hold before the child imports anything.
    Also keeps the `edgebench` console script out of the children (see _no_main_script)."""
    with _ENV_LOCK, _no_main_script():
        old = {k: os.environ.get(k) for k in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for key, value in old.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _run_in_own_group(target: Callable[..., None], parent_pid: int | None, args: tuple[Any, ...]) -> None:
    """The child's side of spawn(own_group=True); parent_pid None: forked from the framework server, whose death
    (it leaves when the runner's process does) ends this child."""
    os.setsid()
    die_with_parent(parent_pid)
    target(*args)


@contextlib.contextmanager
def _no_main_script() -> Iterator[None]:
    """A spawned child runs the parent's __main__ script again before its target (multiprocessing's main-module
    fix-up); for the `edgebench` console script that imports the whole CLI, ~1 s per child on a small CPU, for
    nothing the child uses. Named like a package's __main__, the script is skipped by that fix-up. Only for
    edgebench's own console script: another program's __main__ may define what its children unpickle."""
    main = sys.modules.get("__main__")
    entry = getattr(main, "main", None)
    is_console_script = getattr(entry, "__module__", "") == "edgebench.cli"
    if main is None or getattr(main, "__spec__", None) is not None or not is_console_script:
        yield
        return
    import importlib.machinery

    main.__spec__ = importlib.machinery.ModuleSpec("edgebench.__main__", None)  # type: ignore[assignment]
    try:
        yield
    finally:
        main.__spec__ = None
