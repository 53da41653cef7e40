"""Others' share of the host over a row's window: how much CPU (and GPU) processes other than the row's instances
took, and whether that is material (issue 54, build item 7: a busy host is named).

CPU, from the host sampler's timeline (telemetry/host.py), per sample inside the window:

    others' cores = cpu_util_pct / 100 * cores - proc_cpu_pct / 100        (at least 0)

cpu_util_pct is the busy share of all `cores` (the timeline's cpuN_util_pct channels count them), proc_cpu_pct the
instance processes' and their children's CPU in % of one core, both over the same interval: one quantity in two
units. "Others" is every other process: other users' jobs, the system, and the harness's own process (its samplers:
under 1% of a core at 10 Hz, the host sampler's cost note).

What the instances could use (`demand`, in cores): one per thread of a CPU instance (threads_per_instance) and one
per GPU or DLA instance (the thread that feeds it), at most the host's cores. Others hurt the instances only where
they need more than the cores the instances leave free, so per sample

    taken = max(0, others' cores - (cores - demand))

and `cpu_taken_by_others_pct` is its mean over the window as a share of `demand`. On a 2-core host where one
instance runs 2 threads every other process's CPU is taken from it; on a 16-core host where it runs 4, a build on
12 cores takes nothing (the scheduler gives it the free cores) and one on 14 takes half.

Material: BUSY_SHARE_PCT (10%) of the CPU the instances could use, or of the GPU's SM time (nvml's
others_gpu_sm_pct channel, telemetry/gpu_processes.py). The scheduler shares time, so a CPU-bound row can lose up
to the share others took; 10% is where that loss reaches the differences a comparison of configurations turns on
(repeats of one configuration on a quiet host differ by a few %), and it lies above what a quiet host's own
processes take (docs/results/calibration/busy-host.md measures both). The row keeps its status (the throughput is
what was measured) and says so in its reason, with the figure (BusyReading.note); host_busy marks it.

answer/busy_rows.py reads the same verdict back from a results row (the answer layer reads rows, not timelines).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from edgebench.placement import placements_of
from edgebench.telemetry.base import Timeline

BUSY_SHARE_PCT = 10.0  # others took at least this share of the CPU the instances could use, or of the GPU
HOST_SOURCE = "host"
GPU_OTHERS_CHANNEL = "others_gpu_sm_pct"  # nvml: SM utilization of processes that are not the row's
GPU_PROCS_CHANNEL = "others_gpu_procs"  # nvml: how many processes that are not the row's hold the GPU
NOTE_PREFIXES = ("busy host: ", "busy GPU: ")  # how BusyReading.note's parts start in a row's reason


def busy_notes(reason: str | None) -> list[str]:
    """The busy-host notes (BusyReading.note's parts) in a row's reason, in order; [] when there is none."""
    return [n for n in str(reason or "").split("; ") if n.startswith(NOTE_PREFIXES)]


def demand_cores(placements: Iterable[str], threads_per_instance: int | None, cores: int) -> float:
    """The cores the instances could use: threads_per_instance per CPU instance, one per GPU/DLA instance, at most
    `cores`."""
    threads = max(1, int(threads_per_instance or 1))
    want = sum(threads if p.kind == "cpu" else 1 for p in placements_of(placements))
    return float(min(max(want, 1), cores))


@dataclass(frozen=True)
class CpuShare:
    cores: int  # the host's cores (the per-core channels of the host timeline)
    demand: float  # cores the instances could use (demand_cores)
    others_cores: float  # mean over the window: cores busy with other processes
    taken_cores: float  # mean over the window: of those, the cores the instances could have used
    instances_cores: float | None  # mean CPU the instances got, in cores
    samples: int

    @property
    def others_pct(self) -> float:
        """% of all host cores."""
        return 100.0 * self.others_cores / self.cores

    @property
    def taken_pct(self) -> float:
        """% of the CPU the instances could use."""
        return 100.0 * self.taken_cores / self.demand

    @property
    def material(self) -> bool:
        return self.taken_pct >= BUSY_SHARE_PCT

    def note(self) -> str:
        got = f" and got {self.instances_cores:.2g}" if self.instances_cores is not None else ""
        return (f"{NOTE_PREFIXES[0]}other processes took {self.taken_pct:.0f}% of the CPU this row's instances could use "
                f"({self.others_cores:.2g} of {self.cores} cores on average, {self.others_pct:.0f}% of the host, "
                f"where the instances could use {self.demand:g}{got}): its throughput may be cut")


def host_timeline(timelines: Sequence[Timeline]) -> Timeline | None:
    """The host sampler's timeline, when it measured the instances' own CPU (proc_cpu_pct)."""
    for tl in timelines:
        if tl.source == HOST_SOURCE and "cpu_util_pct" in tl.channels and "proc_cpu_pct" in tl.channels:
            return tl
    return None


def timeline_cores(tl: Timeline) -> int:
    return sum(1 for name in tl.channels if name.startswith("cpu") and name[3:-9].isdecimal()
               and name.endswith("_util_pct"))


def cpu_share(tl: Timeline, start_ns: int, end_ns: int, placements: Iterable[str],
              threads_per_instance: int | None) -> CpuShare | None:
    """Others' CPU over the samples inside [start_ns, end_ns] that have both channels; None without one."""
    cores = timeline_cores(tl)
    if cores <= 0:
        return None
    demand = demand_cores(placements, threads_per_instance, cores)
    win = tl.window(start_ns, end_ns)
    others: list[float] = []
    got: list[float] = []
    for host_pct, proc_pct in zip(win.values["cpu_util_pct"], win.values["proc_cpu_pct"], strict=True):
        if math.isnan(host_pct) or math.isnan(proc_pct):
            continue
        others.append(max(0.0, host_pct / 100.0 * cores - proc_pct / 100.0))
        got.append(proc_pct / 100.0)
    if not others:
        return None
    free = cores - demand
    taken = [max(0.0, o - free) for o in others]
    return CpuShare(cores, demand, sum(others) / len(others), sum(taken) / len(taken), sum(got) / len(got),
                    len(others))


def gpu_others_pct(timelines: Sequence[Timeline], start_ns: int, end_ns: int) -> tuple[float | None, float | None]:
    """(mean SM % of the row's GPU(s) used by other processes, the most other processes seen on them) over the
    window, from the nvml timeline; None where NVML did not attribute it (its notes say why)."""
    for tl in timelines:
        if GPU_OTHERS_CHANNEL in tl.channels or GPU_PROCS_CHANNEL in tl.channels:
            win = tl.window(start_ns, end_ns)
            return win.mean(GPU_OTHERS_CHANNEL), win.max(GPU_PROCS_CHANNEL)
    return None, None


@dataclass(frozen=True)
class BusyReading:
    cpu: CpuShare | None
    gpu_pct: float | None  # SM time taken by other processes, % of the row's GPU(s)
    gpu_procs: float | None

    @property
    def busy(self) -> bool | None:
        """True when others took a material share of the CPU or the GPU; None when neither was read."""
        if self.cpu is None and self.gpu_pct is None:
            return None
        return bool((self.cpu is not None and self.cpu.material)
                    or (self.gpu_pct is not None and self.gpu_pct >= BUSY_SHARE_PCT))

    def fields(self) -> dict[str, Any]:
        return {"others_cpu_pct_mean": self.cpu.others_pct if self.cpu is not None else None,
                "cpu_taken_by_others_pct": self.cpu.taken_pct if self.cpu is not None else None,
                "others_gpu_pct_mean": self.gpu_pct, "host_busy": self.busy}

    def note(self) -> str:
        """For the row's reason: each material share with its figure; "" when there is none."""
        notes = [self.cpu.note()] if self.cpu is not None and self.cpu.material else []
        if self.gpu_pct is not None and self.gpu_pct >= BUSY_SHARE_PCT:
            procs = f" ({self.gpu_procs:.0f} other process(es))" if self.gpu_procs else ""
            notes.append(f"{NOTE_PREFIXES[1]}other processes took {self.gpu_pct:.0f}% of the SM time of this row's GPU(s)"
                         f"{procs}: its throughput may be cut")
        return "; ".join(notes)


def busy_reading(timelines: Sequence[Timeline], start_ns: int, end_ns: int, placements: Iterable[str],
                 threads_per_instance: int | None) -> BusyReading:
    """Others' share of the CPU and the GPU over the window, from the row's timelines."""
    tl = host_timeline(timelines)
    cpu = cpu_share(tl, start_ns, end_ns, placements, threads_per_instance) if tl is not None else None
    gpu_pct, gpu_procs = gpu_others_pct(timelines, start_ns, end_ns)
    return BusyReading(cpu, gpu_pct, gpu_procs)


def not_checked_reason(timelines: Sequence[Timeline]) -> str:
    """Why a measured row has no host_busy (for empty_reasons)."""
    if host_timeline(timelines) is None:
        sources = ", ".join(tl.source for tl in timelines) or "none"
        return (f"not checked: no host sampler timeline with the instances' own CPU (proc_cpu_pct) in this row "
                f"(samplers: {sources}; telemetry.samplers needs host)")
    return "not checked: no host sample inside the window had both cpu_util_pct and proc_cpu_pct"
