"""The runner's temporary folders (<tmp>/edgebench-run-<pid>-*), and removing the ones a killed harness left.

Each folder records its owner: `owner.json` with the harness's pid and that process's start time (from
/proc/<pid>/stat, clock ticks since boot), written before anything else goes in. A folder is stale only when
it is ours (same uid), has an owner record, and that owner is gone: no process with that pid, or one that
started at another time (the pid was reused). A folder without an owner record (being created right now, or
left by an older edgebench) is never touched, nor is one whose owner cannot be checked.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "edgebench-run-"
OWNER = "owner.json"


def process_start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22); None where unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:  # the command name (field 2) may hold spaces and ')': fields after the last ')'
        return int(text.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def make_workdir(root: str | None = None) -> str:
    """A new <root>/edgebench-run-<pid>-XXXX folder with its owner record."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root)
    owner = {"pid": os.getpid(), "start_ticks": process_start_ticks(os.getpid())}
    tmp = os.path.join(path, f".{OWNER}.tmp")
    with open(tmp, "w") as fh:
        json.dump(owner, fh)
    os.replace(tmp, os.path.join(path, OWNER))
    return path


def _owner_alive(owner: dict) -> bool | None:
    """True / False when the owner can be judged, None when it cannot (the folder is then kept)."""
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a process of another user holds that pid: alive, and not our harness's start time below
    except OSError:
        return None
    recorded = owner.get("start_ticks")
    if isinstance(recorded, int):
        now = process_start_ticks(pid)
        if now is not None and now != recorded:
            return False  # the pid was reused by a process that started later
    return True


def stale_workdirs(root: str | None = None) -> list[Path]:
    """Folders under root (default: the temp folder) left by a harness that is gone."""
    base = Path(root or tempfile.gettempdir())
    try:
        entries = [p for p in base.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return []
    stale = []
    for path in sorted(entries):
        try:
            if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
                continue
            owner = json.loads((path / OWNER).read_text())
        except (OSError, ValueError):
            continue  # no owner record (being created, or an older edgebench's): never touched
        if isinstance(owner, dict) and owner.get("pid") != os.getpid() and _owner_alive(owner) is False:
            stale.append(path)
    return stale


def remove_stale_workdirs(root: str | None = None) -> list[Path]:
    """Remove the stale folders; returns those removed."""
    removed = []
    for path in stale_workdirs(root):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed
