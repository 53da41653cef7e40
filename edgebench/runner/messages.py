"""What the runner's processes say to each other: one frozen dataclass per kind of message, pickled over their pipes.

Orchestrator -> worker process (runner/worker_proc.py), over the worker's own duplex pipe:
  Job       run these instances of a row; keep: stay for the next job after it (a warm worker), else exit
  Go        the start signal of the row's window (sent once every instance is Ready, after the start is recorded;
            a fixed-rate row's streams all count their arrivals from its origin_ns)
  Exit      leave (so does a closed pipe)
Worker process -> orchestrator:
  Primed    a warm worker has imported its backend's framework (sent once, before any job)
  Phase     instance i entered a phase (open, warmup)
  Ready     instance i is warmed up and waits for Go
  Done      instance i's window is over; its timestamps are in an .npy file
  Error     an exception ended instance i (instance None: the worker failed before any job, importing its framework)
  Idle      the job of which instance i is the first is over and its sessions are closed (a warm worker stays)
  Retire    a session of that job did not close cleanly: the worker leaves instead of going idle
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Prepared
    from edgebench.config.run_config import RunConfig


@dataclass(frozen=True)
class Job:
    cfg: RunConfig
    prepared: Prepared
    instances: tuple[int, ...]  # the row's instance indices this worker runs (one, or all of them in streams mode)
    workdir: str  # where each instance writes its timestamps
    keep: bool  # stay for another job after this one (a warm worker)


@dataclass(frozen=True)
class Go:
    # fixed-rate rows: the one origin (time.monotonic_ns, system-wide) every stream's arrival schedule counts from,
    # so phases sit where the arrival model puts them however late each worker wakes; 0: closed loop, none
    origin_ns: int = 0


@dataclass(frozen=True)
class Exit:
    pass


@dataclass(frozen=True)
class Primed:
    pid: int  # the worker process that is primed (a process id, never an instance index)


@dataclass(frozen=True)
class Phase:
    instance: int
    name: str  # "open" or "warmup"


@dataclass(frozen=True)
class Ready:
    instance: int
    warmup_inferences: int


@dataclass(frozen=True)
class Done:
    instance: int
    inferences: int
    path: str  # the prefix of its timestamp files (runner/stamps.py): start, end, and issued for a fixed-rate stream


@dataclass(frozen=True)
class Error:
    instance: int | None  # None: the worker failed before any job (importing its framework)
    phase: str  # the phase the instance was in ("preload" before any job)
    text: str  # 'Type: message', one line (worker.describe)
    errno: int | None = None  # an OSError's errno (ENOSPC: the disk the timestamp chunks go to is full)


@dataclass(frozen=True)
class Idle:
    instance: int  # the first instance of the job that is over


@dataclass(frozen=True)
class Retire:
    instance: int  # the first instance of the job that is over
    reason: str  # why a session did not close


ToWorker = Job | Go | Exit
FromWorker = Primed | Phase | Ready | Done | Error | Idle | Retire
Message = ToWorker | FromWorker
