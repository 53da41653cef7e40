"""One sweep per run folder: an exclusive lock on <run_dir>/.edgebench.lock while a sweep writes there.

Two sweeps appending to one results.csv would each measure the same row at a fraction of its real speed
and `report` would pool the duplicates as repeats; `--resume` would rewrite results.csv under a writer.
So `bench` / `run` / `bench --resume` hold the folder with `flock(LOCK_EX | LOCK_NB)` for as long as they
write to it. The kernel drops the lock when the holder dies however it dies (SIGKILL included), so a lock
is never stale: the file stays behind and the next sweep takes it. The file names the holder (pid, host,
start time, command line) so a refused sweep can say who holds the folder.

flock is per host: two machines writing one folder over NFS are not guarded (the holder's host is named
so a refusal from the same host can be told apart).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError

LOCK_NAME = ".edgebench.lock"


class RunFolderBusy(EdgebenchError):
    """Another live process holds the run folder."""


class RunLock:
    """Hold a run folder; use as a context manager or acquire()/release()."""

    def __init__(self, run_dir: Path | str) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        import fcntl

        if self._fd is not None:
            return self
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise EdgebenchError(f"{self.run_dir}: cannot create the run-folder lock {self.path.name}: "
                                 f"{exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = read_holder(self.path)
            os.close(fd)
            raise RunFolderBusy(f"{self.run_dir}: in use by {describe_holder(holder)}; wait for it to end "
                                "(or stop it) before resuming this run folder") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "argv": sys.argv}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        os.fsync(fd)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        import fcntl

        try:
            os.ftruncate(self._fd, 0)  # nobody holds it: no holder to name
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_holder(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def describe_holder(holder: dict[str, Any]) -> str:
    if not holder.get("pid"):
        return "another edgebench process (it has not written its pid yet)"
    cmd = " ".join(str(a) for a in holder.get("argv") or [])[:120]
    return (f"pid {holder['pid']} on host {holder.get('host', '?')} since {holder.get('started_utc', '?')}"
            + (f" ({cmd})" if cmd else ""))
