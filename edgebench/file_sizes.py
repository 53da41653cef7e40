"""What a folder's files take on disk, for the disk-full line's measured sizes (pipeline/disk_full.py): one walk
shared by the row folders (results/) and the instances' timestamp work folders (runner/)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def tree_bytes(path: Path | str) -> int:
    """The bytes of every file under `path` (0 when it is gone)."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def device_of(path: Path | str) -> int | None:
    """The file system (st_dev) `path` is on; None when it cannot be read."""
    try:
        return os.stat(path).st_dev
    except OSError:
        return None
