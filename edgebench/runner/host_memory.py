"""Host memory, for the warm pool (issue 37: an 8 GB board shares its memory between the CPU and the GPU, and has no
NVML, the reader of the pool's device-memory check).

The SLO search keeps a stream count's instances x repeats workers (each repeat runs in processes of its own), and
a torch worker holds hundreds of MiB of host memory before it opens a session; at 8 streams x 3 repeats that is
more than an Orin Nano has. The pool therefore asks, before it starts workers: would they fit in the host memory
available now, above a reserve left for the row's own sessions and the rest of the system? What one worker takes is
measured: the proportional set size (PSS: shared pages split among the processes sharing them, so workers forked
from one framework server are not counted many times over) of the pool's own primed, used and opened workers of
that configuration, the most seen. Before the first is measured, the pool assumes the most measured of another
configuration, else warm_pool.UNMEASURED_WORKER_MIB, and checks again once it has measured one."""

from __future__ import annotations

import contextlib

RESERVE_SHARE = 0.10  # workers the pool starts never take the last 10% of the host's memory
RESERVE_MIN_MIB = 512.0  # nor the last 512 MiB


def available_mib() -> tuple[float, float] | None:
    """(available, total) host memory in MiB (psutil's `available`: free plus what the kernel can reclaim), None
    where it cannot be read."""
    try:
        import psutil

        vm = psutil.virtual_memory()
    except Exception:  # noqa: BLE001 - no psutil, no /proc/meminfo: nothing is checked
        return None
    return vm.available / 2**20, vm.total / 2**20


def worker_mib(pid: int) -> float | None:
    """What process `pid` holds of the host's memory: its PSS where the kernel reports it, else its RSS (an upper
    bound); None when it cannot be read (it left)."""
    with contextlib.suppress(Exception):
        import psutil

        proc = psutil.Process(pid)
        with contextlib.suppress(Exception):
            pss = getattr(proc.memory_full_info(), "pss", None)
            if pss:
                return float(pss) / 2**20
        return float(proc.memory_info().rss) / 2**20
    return None


def reserve_mib(total_mib: float) -> float:
    return max(RESERVE_MIN_MIB, RESERVE_SHARE * total_mib)


def affordable(available: float, total: float, per_worker: float, margin: float) -> int:
    """How many more workers of `per_worker` MiB (x margin) fit in `available` above the reserve."""
    room = available - reserve_mib(total)
    return max(0, int(room // (per_worker * margin))) if per_worker > 0 else 1 << 30
