"""Other processes on a row's GPU, through NVML (the nvml sampler's `processes` field; issue 54, build item 7).

Each read lists the GPU's compute processes (nvmlDeviceGetComputeRunningProcesses) and the SM utilization NVML
sampled per process since the last read (nvmlDeviceGetProcessUtilization: one sample per process that used the GPU
in NVML's last sample period, each with its CPU timestamp in us). A process is the row's own when its pid is one the
sampler was told to watch (the instances) or the harness itself; an MPS server (nvidia-cuda-mps-server) is neither:
it runs its clients' work. The channels:

  others_gpu_procs    processes on the GPU that are not the row's
  others_gpu_sm_pct   the SM % NVML attributes to them (summed, at most 100); absent where NVML gives no per-process
                      utilization (MIG, some vGPUs: a note says so), 0 when it sampled none of them

NVML names processes by their pid in the host's PID namespace. In a container with its own namespace the row's
instances carry other pids there, so their own GPU use would read as others'; `attributable` is False when NVML
listed processes on a GPU the row's instances use and none of them was the row's, and the sampler then leaves the
channels empty with a note instead.

`nvml` is the pynvml module (the sampler's one seam); only nvml*Get* calls are made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

MPS_SERVER = "nvidia-cuda-mps-server"
FIRST_LOOKBACK_US = 1_000_000  # the first read takes the samples of the last second


def process_name(pid: int) -> str:
    """The process's name (psutil), "" where it cannot be read (gone, another namespace, no psutil)."""
    try:
        import psutil

        return str(psutil.Process(pid).name())
    except Exception:  # noqa: BLE001 - psutil.Error, ImportError: an unknown name
        return ""


class GpuProcesses:
    """Reads of one GPU's other processes; keeps what it needs between reads (the last sample's timestamp)."""

    def __init__(self, nvml: Any, handle: Any, name_of: Callable[[int], str] = process_name) -> None:
        self.nvml = nvml
        self.handle = handle
        self.name_of = name_of
        self.last_seen_us = 0
        self.util_missing: str | None = None  # why per-process utilization is not read (set once)
        self.listed_any = False  # NVML listed a process on this GPU at least once
        self.own_seen = False  # ... and one of them was the row's
        self._neutral: dict[int, bool] = {}  # pid -> is an MPS server

    def _neutral_pid(self, pid: int) -> bool:
        if pid not in self._neutral:
            self._neutral[pid] = self.name_of(pid) == MPS_SERVER
        return self._neutral[pid]

    def read(self, own: set[int]) -> dict[str, float]:
        """The channels now. NVMLError from listing the processes propagates (the sampler notes it once)."""
        nvml = self.nvml
        listed = {int(p.pid) for p in nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)}
        self.listed_any = self.listed_any or bool(listed)
        self.own_seen = self.own_seen or bool(listed & own)
        others = {pid for pid in listed - own if not self._neutral_pid(pid)}
        out = {"others_gpu_procs": float(len(others))}
        if self.util_missing is None:
            sm = self._others_sm(own)
            if sm is not None:
                out["others_gpu_sm_pct"] = sm
        return out

    def _others_sm(self, own: set[int]) -> float | None:
        nvml = self.nvml
        since = self.last_seen_us or int(time.time() * 1e6) - FIRST_LOOKBACK_US
        try:
            samples = nvml.nvmlDeviceGetProcessUtilization(self.handle, since)
        except nvml.NVMLError as exc:
            if getattr(exc, "value", None) == nvml.NVML_ERROR_NOT_FOUND:
                return 0.0  # no process used the GPU since the last read
            self.util_missing = str(exc) or type(exc).__name__
            return None
        latest: dict[int, tuple[int, float]] = {}  # pid -> (timestamp, sm %) of its newest sample
        for s in samples:
            pid, stamp = int(s.pid), int(s.timeStamp)
            self.last_seen_us = max(self.last_seen_us, stamp)
            if pid not in latest or stamp > latest[pid][0]:
                latest[pid] = (stamp, float(s.smUtil))
        self.own_seen = self.own_seen or any(pid in own for pid in latest)
        sm = sum(v for pid, (_t, v) in latest.items() if pid not in own and not self._neutral_pid(pid))
        return min(100.0, sm)

    @property
    def attributable(self) -> bool:
        """False when NVML listed processes on this GPU and none was the row's (a PID namespace apart)."""
        return self.own_seen or not self.listed_any
