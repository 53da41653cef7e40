"""A child process that dies with its parent (Linux: PR_SET_PDEATHSIG).

Used by every process edgebench starts that could outlive the harness: the runner's workers, which leave the
harness's process group (os.setsid), so a signal to that group no longer reaches them, and the model-building
steps (models/in_child.py: the export, the fp16 conversion, the int8 calibration), which on an 8 GB board may hold
gigabytes and must not go on after the OOM killer (or a user's kill -9) ended the harness. Standard library only: a
spawned child imports it before its target.
"""

from __future__ import annotations

import os
import signal
import sys


def die_with_parent(parent_pid: int | None) -> None:
    """Linux: SIGKILL this process when its parent dies. Elsewhere nothing (the runner's timed loop checks
    getppid()). parent_pid: the pid the parent had when it started this process (a parent that died before the
    request took effect is seen as a changed getppid(), and this process exits at once); None: whoever forked it
    (multiprocessing's framework server), gone already when this process was handed to init (pid 1)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    orphaned = os.getppid() == 1 if parent_pid is None else os.getppid() != parent_pid
    if orphaned:  # the parent died before prctl took effect
        os._exit(1)
