"""A run folder is read and written only inside itself: no symlink is followed out of it.

A run folder may come from elsewhere (fetched from a board, unpacked from an archive, copied by a user) and
hold links such as `results.csv -> /etc/passwd` or `rows/home -> /root`. `report` and `--resume` read and
write only entries that are no symlink (the path nor any folder between it and the run folder) and that
resolve inside the run folder; `--resume` refuses a run folder whose own entries are links at all, since it
writes there.
"""

from __future__ import annotations

import os
from pathlib import Path

from edgebench.errors import EdgebenchError

# what edgebench itself writes at the top of a run folder (docs/run-folder.md)
RUN_ENTRIES = ("results.csv", "attempts.csv", "results.partial.txt", "columns.json", "profile.yaml", "system.json",
               "rows", ".edgebench.lock", "predictions.csv", "search.csv")


def link_problem(run_dir: Path, path: Path) -> str | None:
    """Why `path` (under run_dir) must not be opened: a symlink on the way, or it resolves outside run_dir."""
    run_dir = Path(run_dir)
    try:
        rel = Path(os.path.relpath(path, run_dir))
    except ValueError:
        return f"{path} is not inside {run_dir}"
    if rel.parts and rel.parts[0] == "..":
        return f"{path} is not inside {run_dir}"
    current = run_dir
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            return f"{current} is a symlink (-> {os.readlink(current)}); never followed out of a run folder"
    real_root = os.path.realpath(run_dir)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        return f"{path} resolves outside {run_dir}"
    return None


def inside(run_dir: Path, path: Path) -> bool:
    return link_problem(run_dir, path) is None


def check_run_folder(run_dir: Path, action: str) -> None:
    """EdgebenchError naming the first entry of run_dir (or rows/<row>) that is a symlink or not a plain file
    or folder: `action` (e.g. "resume") never writes through it."""
    run_dir = Path(run_dir)
    candidates = [run_dir / name for name in RUN_ENTRIES]
    rows = run_dir / "rows"
    if rows.is_dir() and not rows.is_symlink():
        candidates += sorted(rows.iterdir())
    for path in candidates:
        if path.is_symlink():
            raise EdgebenchError(f"{path} is a symlink (-> {os.readlink(path)}); {action} never follows a link out "
                                 "of a run folder: remove it (or fetch the run again)")
        if path.exists() and not (path.is_file() or path.is_dir()):
            raise EdgebenchError(f"{path} is not a plain file or folder; {action} refused")
