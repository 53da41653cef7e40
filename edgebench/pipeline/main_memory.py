"""The harness's own memory per row (issue 37): the peak resident memory of the edgebench process that runs the
sweep (the orchestrator, which collects and summarises every instance's timestamps), from the row's start to its
files written: results.csv's main_rss_mib_max, beside rss_mib_max (the instances').

Linux keeps a process's peak resident set (VmHWM in /proc/self/status); writing "5" to /proc/self/clear_refs resets
it to the current resident set, so each row reads its own peak. Where the reset is refused the value is the peak
since the process started (never smaller than the row's) and `RowPeak.since_row` is False; where /proc is absent it
comes from getrusage (the same lifetime peak)."""

from __future__ import annotations

import os
import resource
from pathlib import Path

PROC = Path("/proc/self")


def reset_peak(proc: Path = PROC) -> bool:
    """Reset the process's peak resident set to its current one; False where the kernel refuses (then peaks count
    from the process's start)."""
    try:
        fd = os.open(proc / "clear_refs", os.O_WRONLY)  # never created: only the kernel's file will do
    except OSError:
        return False
    try:
        os.write(fd, b"5")
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def peak_rss_mib(proc: Path = PROC) -> float:
    """The process's peak resident set in MiB: VmHWM, or getrusage's ru_maxrss (KiB on Linux) without /proc."""
    try:
        for line in (proc / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class RowPeak:
    """Started at a row's beginning (resets the peak); `mib()` is the peak since then."""

    def __init__(self, proc: Path = PROC) -> None:
        self.proc = proc
        self.since_row = reset_peak(proc)

    def mib(self) -> float:
        return peak_rss_mib(self.proc)
