"""The runner's temporary folders (<tmp>/edgebench-run-<pid>-*), and removing the ones a killed harness left.

Each folder records its owner: `owner.json` with the harness's pid and that process's start time (from
/proc/<pid>/stat, clock ticks since boot), written before anything else goes in. A folder is stale only when
it is ours (same uid), has an owner record, and that owner is gone: no process with that pid, or one that
started at another time (the pid was reused). A folder without an owner record (being created right now, or
left by an older edgebench) is never touched, nor is one whose owner cannot be checked.

Where a row's folder goes (issue 37: its timestamp chunk files take 16-24 bytes an inference, ~2 GB at 10^8): the
system temp folder, unless that is RAM-backed (tmpfs or ramfs, as /tmp is on many Linux systems), where the files
would take the board's memory; then the hidden folder `<run folder>/.edgebench-work` on the results disk
(`run_work_root`). `EDGEBENCH_WORK_DIR` names another folder for them, whatever the temp folder is.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

PREFIX = "edgebench-run-"
OWNER = "owner.json"
RUN_WORK = ".edgebench-work"  # a run folder's work root, beside its rows/, used when the temp folder is in RAM
WORK_DIR_ENV = "EDGEBENCH_WORK_DIR"  # where the work folders go, whatever the temp folder is
MOUNT_TABLES = ("/proc/self/mountinfo", "/proc/mounts")
RAM_FS = frozenset({"tmpfs", "ramfs"})


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
    """A new <root>/edgebench-run-<pid>-XXXX folder with its owner record; root (default: the temp folder) is
    created when missing."""
    if root is not None:
        os.makedirs(root, mode=0o700, exist_ok=True)
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


def remove_workdir(path: str) -> None:
    """Remove a work folder, and its run folder's work root (RUN_WORK) once that holds nothing else: a run folder
    keeps no empty hidden folder after its rows."""
    shutil.rmtree(path, ignore_errors=True)
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.basename(parent) == RUN_WORK:
        with contextlib.suppress(OSError):
            os.rmdir(parent)  # fails while another folder is in it


def _unescape(field: str) -> str:
    """A mount table field as the kernel wrote it: space, tab, newline and backslash as octal escapes (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mounts(text: str) -> list[tuple[str, str]]:
    """(mount point, fs type) of every line, in the table's order: /proc/self/mountinfo (`36 35 98:0 / /tmp rw -
    tmpfs tmpfs rw`: the point is field 5, the type the first after the `-`) or /proc/mounts (`tmpfs /tmp tmpfs rw 0
    0`). Lines of neither form are left out."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if "-" in fields[5:]:
            dash = fields.index("-", 5)
            if dash + 1 < len(fields):
                out.append((_unescape(fields[4]), fields[dash + 1]))
        elif len(fields) >= 3 and fields[1].startswith("/"):
            out.append((_unescape(fields[1]), fields[2]))
    return out


def mount_fs_type(path: str | os.PathLike[str], mounts: str | os.PathLike[str] | None = None) -> str | None:
    """The file system type (`ext4`, `tmpfs`, ...) of the mount `path` lives on: of the longest mount point that is
    a prefix of its resolved path (the later line where one point is mounted twice: the one on top). `mounts`: the
    mount table to read (default /proc/self/mountinfo, else /proc/mounts). None when unknown (no table readable, no
    mount matches)."""
    tables = [mounts] if mounts is not None else list(MOUNT_TABLES)
    text = None
    for table in tables:
        try:
            text = Path(table).read_text(errors="replace")
            break
        except OSError:
            continue
    if text is None:
        return None
    real = os.path.realpath(path)
    best, fs = -1, None
    for point, kind in _mounts(text):
        point = point.rstrip("/") or "/"
        inside = point == "/" or real == point or real.startswith(point + "/")
        if inside and len(point) >= best:
            best, fs = len(point), kind
    return fs


def ram_backed(path: str | os.PathLike[str], mounts: str | os.PathLike[str] | None = None) -> bool:
    """Whether `path` lives on a file system held in RAM (tmpfs, ramfs): its files take the machine's memory. An
    unknown type (no mount table, as off Linux) counts as not RAM: the folder is used as before."""
    return mount_fs_type(path, mounts) in RAM_FS


def run_work_root(run_dir: str | os.PathLike[str] | None) -> tuple[str | None, str]:
    """(the root a row's work folder goes under, None for the temp folder; why, "" for the temp folder as before).

    EDGEBENCH_WORK_DIR when set; else, when the temp folder is RAM-backed and a run folder is known, the run folder's
    hidden RUN_WORK (on the results disk: gigabytes of timestamps of a long row no longer take the board's memory).
    A RUN_WORK that is a symlink is never written through (the temp folder is used)."""
    env = os.environ.get(WORK_DIR_ENV, "").strip()
    if env:
        return env, f"${WORK_DIR_ENV}"
    if run_dir is None:
        return None, ""
    temp = tempfile.gettempdir()
    kind = mount_fs_type(temp)
    if kind not in RAM_FS:
        return None, ""
    root = Path(run_dir) / RUN_WORK
    if root.is_symlink():
        return None, ""
    return str(root), f"the temp folder {temp} is a {kind}, held in RAM"


def remove_stale_run_workdirs(run_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """remove_stale_workdirs of every root a sweep's rows may have used: the temp folder, EDGEBENCH_WORK_DIR, the
    run folder's RUN_WORK and that of every other run folder beside it (a killed run that is never resumed would
    keep its timestamp chunks, gigabytes at 10^8 inferences, on the results disk; each RUN_WORK removed too once
    empty); returns the folders removed."""
    roots: list[str | None] = [None]
    if env := os.environ.get(WORK_DIR_ENV, "").strip():
        roots.append(env)
    run_roots: list[Path] = []
    if run_dir is not None:
        here = Path(run_dir)
        with contextlib.suppress(OSError):
            run_roots = [p / RUN_WORK for p in sorted(here.parent.iterdir()) if p != here and p.is_dir()]
        run_roots.insert(0, here / RUN_WORK)
    run_roots = [r for r in run_roots if r.is_dir() and not r.is_symlink()]
    roots += [str(r) for r in run_roots]
    removed: list[Path] = []
    seen: set[str] = set()
    for root in roots:
        key = os.path.realpath(root or tempfile.gettempdir())
        if key not in seen:
            seen.add(key)
            removed += remove_stale_workdirs(root)
    for run_root in run_roots:
        with contextlib.suppress(OSError):
            run_root.rmdir()  # only when nothing else is in it
    return removed
