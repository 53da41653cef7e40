"""CUDA MPS for one row: a private MPS control daemon that edgebench starts before the row's instances
and stops after them, only when the row asks for it (run.gpu_sharing: mps / --gpu-sharing mps).

  start   `nvidia-cuda-mps-control -d` with CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY pointing at
          folders of this row (the pipe folder falls back to a short /tmp folder when the row's path is
          too long for the daemon's Unix sockets), then waits for the daemon's `control` pipe
  run     every instance process gets the same two variables, so its CUDA context is an MPS client of
          this daemon and of no other
  stop    `echo quit | nvidia-cuda-mps-control` with the same variables: on success, on an exception,
          and on SIGTERM (turned into SystemExit while the daemon runs, so the stop still happens)

The GPU's settings are never touched (no compute-mode change, no nvidia-smi): MPS runs on a GPU in the
default compute mode; a GPU in EXCLUSIVE_PROCESS mode is the administrator's choice, not edgebench's.
Rows without a CUDA placement and rows with gpu_sharing time-slicing never see any of this.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import EdgebenchError

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.run_config import RunConfig

MPS_CONTROL = "nvidia-cuda-mps-control"
PIPE_DIR_MAX_CHARS = 60  # Unix socket paths are limited to 107 bytes; the daemon adds its own file names
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 30.0


class MpsError(EdgebenchError):
    """The MPS daemon could not be started or stopped; the message says which and why."""


def mps_missing_reason() -> str | None:
    """None when nvidia-cuda-mps-control is on PATH, else why an MPS row is skipped."""
    if shutil.which(MPS_CONTROL) is None:
        return (f"gpu_sharing=mps needs {MPS_CONTROL} on PATH (CUDA MPS ships with the NVIDIA driver); "
                "not found on this machine")
    return None


@dataclass
class GpuSharing:
    """What a row runs under: the label, the environment its instances get, and what happened."""

    mode: str  # "time-slicing" or "mps"
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # stop problems, stated in the row's reason


class MpsDaemon:
    """One private MPS control daemon. `start()` -> the instances' environment; `stop()` -> problems."""

    def __init__(self, folder: str | Path, *, start_timeout_s: float = START_TIMEOUT_S,
                 stop_timeout_s: float = STOP_TIMEOUT_S) -> None:
        self.folder = Path(folder).resolve()
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.exe: str | None = None
        self.pipe_dir: Path | None = None
        self.log_dir: Path | None = None
        self._own_tmp: Path | None = None
        self.running = False

    @property
    def env(self) -> dict[str, str]:
        assert self.pipe_dir is not None and self.log_dir is not None
        return {"CUDA_MPS_PIPE_DIRECTORY": str(self.pipe_dir), "CUDA_MPS_LOG_DIRECTORY": str(self.log_dir)}

    def _run(self, args: list[str], stdin: str | None, timeout_s: float) -> tuple[int, str]:
        """(exit code, last line of its output). Output goes through a file, not a pipe: a daemon that
        kept an inherited pipe open would make the wait for EOF hang."""
        assert self.exe is not None and self.log_dir is not None
        out_path = self.log_dir / f"control-{'start' if args else 'quit'}.out"
        try:
            with open(out_path, "w") as out:
                proc = subprocess.run([self.exe, *args], input=stdin, env={**os.environ, **self.env}, stdout=out,
                                      stderr=subprocess.STDOUT, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise MpsError(f"{MPS_CONTROL} {' '.join(args) or '(quit)'} did not return within {timeout_s:g} s") from None
        except OSError as exc:
            raise MpsError(f"{MPS_CONTROL} could not run: {exc}") from None
        lines = out_path.read_text(errors="replace").strip().splitlines()
        return proc.returncode, lines[-1] if lines else "no output"

    def start(self) -> dict[str, str]:
        reason = mps_missing_reason()
        if reason is not None:
            raise MpsError(reason)
        self.exe = shutil.which(MPS_CONTROL)
        self.log_dir = self.folder / "mps-log"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        pipe = self.folder / "mps-pipe"
        if len(str(pipe)) > PIPE_DIR_MAX_CHARS:
            self._own_tmp = pipe = Path(tempfile.mkdtemp(prefix="edgebench-mps-"))
        pipe.mkdir(parents=True, exist_ok=True)
        self.pipe_dir = pipe
        code, tail = self._run(["-d"], None, self.start_timeout_s)
        if code != 0:
            self._drop_tmp()
            raise MpsError(f"{MPS_CONTROL} -d failed (exit {code}): {tail}; logs in {self.log_dir}")
        self.running = True
        control = pipe / "control"
        deadline = time.monotonic() + self.start_timeout_s
        while not control.exists():
            if time.monotonic() >= deadline:
                problems = self.stop()
                raise MpsError(f"the MPS control daemon did not create {control} within {self.start_timeout_s:g} s; "
                               f"logs in {self.log_dir}" + (f" ({'; '.join(problems)})" if problems else ""))
            time.sleep(0.02)
        return self.env

    def stop(self) -> list[str]:
        """`echo quit | nvidia-cuda-mps-control`; returns what went wrong (empty when it quit)."""
        if not self.running:
            return []
        self.running = False
        problems = []
        try:
            code, tail = self._run([], "quit\n", self.stop_timeout_s)
            if code != 0:
                problems.append(f"MPS daemon quit failed (exit {code}): {tail}; "
                                f"stop it with CUDA_MPS_PIPE_DIRECTORY={self.pipe_dir} {MPS_CONTROL} <<< quit")
        except MpsError as exc:
            problems.append(str(exc))
        if not problems:
            self._drop_tmp()
        return problems

    def _drop_tmp(self) -> None:
        if self._own_tmp is not None:
            shutil.rmtree(self._own_tmp, ignore_errors=True)
            self._own_tmp = None


def _sigterm_to_exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def gpu_sharing(cfg: RunConfig, folder: str | Path) -> Iterator[GpuSharing]:
    """The row's GPU sharing: nothing for time-slicing (or rows without a CUDA placement); for mps a
    daemon whose pipe/log folders live under `folder`, stopped however the block ends."""
    if cfg.gpu_sharing != "mps" or not cfg.uses_gpu:
        yield GpuSharing("time-slicing")
        return
    daemon = MpsDaemon(folder)
    installed = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _sigterm_to_exit) if installed else None
    try:
        sharing = GpuSharing("mps", daemon.start())
        try:
            yield sharing
        finally:
            sharing.notes.extend(daemon.stop())
    finally:
        daemon.stop()  # a start that failed half-way
        if installed:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
