"""Creating runs/<run-id>/: a unique folder every time, and one clear line when --out cannot hold it.

Run ids have one-second resolution (UTC time + profile name, readable and sortable); two sweeps started
in the same second with the same --out get `<id>`, `<id>-2`, ... The folder is created with mkdir (atomic:
exactly one process creates a given name), so this is race-free between processes.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from edgebench.errors import EdgebenchError
from edgebench.results.column_dictionary import write_dictionary

MAX_SUFFIX = 1000


def out_dir_problem(out: Path) -> str | None:
    """Why `out` cannot hold run folders (None when it can, or can be created)."""
    for parent in (out, *out.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                return f"{parent} is a file, not a folder" if parent == out else \
                    f"{parent} is a file, so {out} cannot be a folder under it"
            try:
                if os.statvfs(parent).f_flag & os.ST_RDONLY:
                    return f"{parent} is on a read-only file system"
            except OSError:
                pass
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"{parent} is not writable by this user"
            return None
    return None


def _why(exc: OSError) -> str:
    if exc.errno == errno.EROFS:
        return "read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENOTDIR:
        return "a path component is a file, not a folder"
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    return exc.strerror or type(exc).__name__


def create_run_dir(out: Path | str, run_id: str) -> Path:
    """Create and return a new out/<run_id>[-N] holding only the column dictionary (columns.csv/.md: what every
    results.csv column means, its unit, per sample or per batch); EdgebenchError naming --out when impossible."""
    out = Path(out)
    problem = out_dir_problem(out)
    if problem:
        raise EdgebenchError(f"--out {out}: {problem}")
    try:
        out.mkdir(parents=True, exist_ok=True)  # a missing parent is created, as documented
    except OSError as exc:
        raise EdgebenchError(f"--out {out}: cannot create it: {_why(exc)}") from None
    for n in range(1, MAX_SUFFIX + 1):
        run_dir = out / (run_id if n == 1 else f"{run_id}-{n}")
        try:
            run_dir.mkdir()
            write_dictionary(run_dir)
            return run_dir
        except FileExistsError:
            continue
        except OSError as exc:
            raise EdgebenchError(f"--out {out}: cannot create the run folder {run_dir.name}: {_why(exc)}") from None
    raise EdgebenchError(f"--out {out}: {MAX_SUFFIX} run folders named {run_id}* already exist")
