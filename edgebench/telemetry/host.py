"""Host sampler: CPU and memory through psutil, package energy through RAPL (powercap sysfs).

Channels (units in the names):
  cpu_util_pct, cpu{N}_util_pct   busy share of all cores / of core N over the last interval
  mem_used_mib                    system memory not available (total - available)
  rss_mib, proc_cpu_pct           summed over the watched pids and their children
                                  (proc_cpu_pct is % of one core, so it can exceed 100)
  rapl_<zone>_energy_mj           counter: energy of RAPL zone since start(), wrap-around handled
  rapl_<zone>_power_mw            gauge: mean power between the previous sample and this one
  energy_total_mj, power_total_mw the same summed over the package zones (`intel-rapl:N`, not
                                  psys, which already contains them) — the names every sampler
                                  uses for "the board/package total"

Where powercap is absent or unreadable (most VMs and containers) the timeline gets a note that
says why and no power channel at all: a missing measurement is never reported as 0 W.

Utilization is computed from `psutil.cpu_times(percpu=True)` deltas kept inside the sampler
(what `psutil.cpu_percent(percpu=True)` does, minus its module-global state, which any other
caller in the process would disturb). Samples are taken on `time.monotonic_ns()`, the runner's
clock; start() and stop() each take one sample synchronously, so the timeline spans the whole
measured window.
"""

from __future__ import annotations

import math
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.errors import exc_text
from edgebench.telemetry.base import Channel, PollingSampler, RowChannel, Timeline

_PACKAGE_ZONE = re.compile(r"^intel-rapl:(\d+)$")
_MIB = 1024.0 * 1024.0
COST_NOTE_PREFIX = "host sampler cost:"
CHILDREN_REFRESH_S = 1.0  # listing children walks all of /proc (~1 ms per 100 processes); not every sample


@dataclass
class _RaplZone:
    index: int
    label: str  # sanitized name, e.g. "package0"
    name: str  # raw name file content, e.g. "package-0"
    energy_path: Path
    max_range_uj: int
    in_total: bool
    last_uj: int = 0
    total_uj: int = 0
    failed: bool = False


def _read_text(path: Path) -> str:
    with open(path) as fh:
        return fh.read().strip()


def _read_uj(path: Path) -> int:
    text = _read_text(path)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"not an integer: {text[:40]!r}") from None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def discover_rapl(sysfs_root: str | Path = "/") -> tuple[list[_RaplZone], list[str]]:
    """Readable RAPL package zones under <root>/sys/class/powercap, plus notes on what is not.

    A zone is used only when its name, energy_uj and max_energy_range_uj all read as expected.
    """
    base = Path(sysfs_root) / "sys" / "class" / "powercap"
    notes: list[str] = []
    try:
        entries = list(base.iterdir())
    except FileNotFoundError:
        return [], [f"RAPL not available: {base} does not exist (no powercap driver, or not exposed here)"]
    except OSError as exc:
        return [], [f"RAPL not readable: {base}: {_why(exc)}"]
    found = []
    for entry in entries:
        m = _PACKAGE_ZONE.match(entry.name)
        if m:
            found.append((int(m.group(1)), entry))
    if not found:
        return [], [f"RAPL not available: {base} has no intel-rapl:N zone"]
    zones: list[_RaplZone] = []
    for index, zdir in sorted(found):
        path = zdir / "name"
        try:
            name = _read_text(path)
            path = zdir / "max_energy_range_uj"
            max_range = _read_uj(path)
            path = zdir / "energy_uj"
            first = _read_uj(path)
        except (OSError, ValueError) as exc:
            notes.append(f"RAPL not readable: {path}: {_why(exc)}")
            continue
        label = re.sub(r"[^a-z0-9]", "", name.lower()) or f"zone{index}"
        if any(z.label == label for z in zones):
            label = f"{label}_{index}"
        zones.append(_RaplZone(index, label, name, zdir / "energy_uj", max_range, name.lower() != "psys", last_uj=first))
    return zones, notes


def rapl_status(sysfs_root: str | Path = "/") -> str | None:
    """None when every RAPL package zone can be read, else why not (for `edgebench doctor`)."""
    zones, notes = discover_rapl(sysfs_root)
    return "; ".join(notes) if notes or not zones else None


class HostSampler(PollingSampler):
    """CPU, memory, watched-process and RAPL telemetry of the host, sampled in a daemon thread.

    One-shot: start() once, stop() once (make a new sampler per measured row).
    """

    name = "host"
    power_scope = "cpu-package"  # the RAPL package domains: the CPU package, not DRAM or the rest of the machine
    counter_label = "rapl"
    row_channels = (RowChannel("cpu_util_pct_mean", "cpu_util_pct"), RowChannel("proc_cpu_pct_mean", "proc_cpu_pct"),
                    RowChannel("rss_mib_max", "rss_mib", "max"), RowChannel("mem_used_mib_max", "mem_used_mib", "max"))

    @classmethod
    def missing(cls, sysfs_root: str | Path = "/") -> str | None:
        try:
            import psutil  # noqa: F401
        except ImportError as exc:
            return f"psutil is not installed ({exc.msg}); pip install psutil"
        return None

    def __init__(self, interval_s: float = 0.1, sysfs_root: str | Path = "/") -> None:
        super().__init__(interval_s)
        self.sysfs_root = Path(sysfs_root)
        self.stop_ns: int | None = None
        self.cpu_cost_us_per_sample: float | None = None  # sampler's own CPU time per sample
        self._lock = threading.Lock()
        self._pids: list[int] = []
        self._pids_changed = False
        self._zones: list[_RaplZone] = []
        self._ncpu = 0
        self._last_cpu: list[Any] | None = None
        self._last_t_ns = 0
        self._procs: dict[int, Any] = {}  # pid -> psutil.Process, watched pids and children
        self._proc_cpu_s: dict[int, float] = {}  # pid -> user+system seconds at the last sample
        self._children_at_ns = 0
        self._cost_ns = 0
        self._samples = 0

    # ------------------------------------------------------------------ Sampler protocol (PollingSampler hooks)

    def watch_pids(self, pids: list[int]) -> None:
        with self._lock:
            self._pids = [int(p) for p in pids]
            self._pids_changed = True

    def _begin(self) -> Timeline:
        import psutil

        tl = Timeline(self.name, interval_s=self.interval_s)
        tl.add_channel(Channel("cpu_util_pct", "%"))
        self._last_cpu = list(psutil.cpu_times(percpu=True))
        self._ncpu = len(self._last_cpu)
        for i in range(self._ncpu):
            tl.add_channel(Channel(f"cpu{i}_util_pct", "%"))
        tl.add_channel(Channel("mem_used_mib", "MiB"))
        tl.add_channel(Channel("rss_mib", "MiB"))
        tl.add_channel(Channel("proc_cpu_pct", "%"))
        self._zones, notes = discover_rapl(self.sysfs_root)
        tl.notes.extend(notes)
        for z in self._zones:
            tl.add_channel(Channel(f"rapl_{z.label}_energy_mj", "mJ", "counter"))
            tl.add_channel(Channel(f"rapl_{z.label}_power_mw", "mW"))
        package = [z for z in self._zones if z.in_total]
        if package and not any(n.startswith("RAPL not readable") for n in notes):
            tl.add_channel(Channel("energy_total_mj", "mJ", "counter"))
            tl.add_channel(Channel("power_total_mw", "mW"))
        elif package:
            tl.notes.append("power_total_mw/energy_total_mj not reported: some RAPL package zone is unreadable")
        skipped = [z.name for z in self._zones if not z.in_total]
        if skipped and package:
            tl.notes.append(f"RAPL zone(s) {', '.join(skipped)} kept out of the total (they contain the packages)")
        return tl

    def _first_sample(self) -> None:
        assert self.start_ns is not None
        self._last_t_ns = self.start_ns
        self._sample()

    def _last_sample(self) -> None:
        tl = self._timeline
        assert tl is not None
        try:
            self._sample()  # the last sample closes the measured window
        except Exception as exc:
            tl.notes.append(f"host sampler: final sample failed: {exc_text(exc)}")

    def _finish(self, tl: Timeline) -> Timeline:
        self.stop_ns = time.monotonic_ns()
        if self._samples:
            self.cpu_cost_us_per_sample = self._cost_ns / self._samples / 1e3
            share = self.cpu_cost_us_per_sample / (self.interval_s * 1e6) * 100.0
            tl.notes.append(
                f"{COST_NOTE_PREFIX} {self.cpu_cost_us_per_sample:.0f} us CPU per sample over "
                f"{self._samples} samples ({share:.2f}% of one core at interval {self.interval_s:g} s)"
            )
        return tl

    # ------------------------------------------------------------------ sampling

    def _sample(self) -> None:
        import psutil

        cost0 = time.thread_time_ns()
        tl = self._timeline
        assert tl is not None
        t_ns = time.monotonic_ns()
        dt_ns = t_ns - self._last_t_ns
        sample: dict[str, float] = {}
        self._sample_rapl(t_ns, dt_ns, sample)

        cpu = list(psutil.cpu_times(percpu=True))
        if tl.t_ns and self._last_cpu is not None and len(cpu) == len(self._last_cpu):
            busy_all = total_all = 0.0
            for i, (old, new) in enumerate(zip(self._last_cpu, cpu, strict=True)):
                busy, total = _busy_total(new)
                busy0, total0 = _busy_total(old)
                d_busy, d_total = max(0.0, busy - busy0), max(0.0, total - total0)
                busy_all += d_busy
                total_all += d_total
                if d_total > 0:
                    sample[f"cpu{i}_util_pct"] = min(100.0, 100.0 * d_busy / d_total)
            if total_all > 0:
                sample["cpu_util_pct"] = min(100.0, 100.0 * busy_all / total_all)
        self._last_cpu = cpu

        vm = psutil.virtual_memory()
        sample["mem_used_mib"] = (vm.total - vm.available) / _MIB
        self._sample_procs(t_ns, dt_ns, sample)
        tl.append(t_ns, sample)
        self._last_t_ns = t_ns
        self._samples += 1
        self._cost_ns += time.thread_time_ns() - cost0

    def _sample_rapl(self, t_ns: int, dt_ns: int, sample: dict[str, float]) -> None:
        tl = self._timeline
        assert tl is not None
        if not self._zones:
            return
        first = not tl.t_ns
        total_mj = 0.0
        total_mw = 0.0
        complete = True
        for z in self._zones:
            try:
                now_uj = _read_uj(z.energy_path)
            except (OSError, ValueError) as exc:
                if not z.failed:
                    tl.notes.append(f"RAPL read failed mid-run (sample left empty): {z.energy_path}: {_why(exc)}")
                    z.failed = True
                complete = complete and not z.in_total
                continue
            if first:
                delta_uj = 0
            elif now_uj >= z.last_uj:
                delta_uj = now_uj - z.last_uj
            else:  # counter wrapped at max_energy_range_uj
                delta_uj = z.max_range_uj - z.last_uj + now_uj
            z.last_uj = now_uj
            z.total_uj += delta_uj
            energy_mj = z.total_uj / 1e3
            sample[f"rapl_{z.label}_energy_mj"] = energy_mj
            power_mw = delta_uj / dt_ns * 1e6 if (not first and dt_ns > 0) else math.nan
            sample[f"rapl_{z.label}_power_mw"] = power_mw
            if z.in_total:
                total_mj += energy_mj
                total_mw += power_mw
        if complete and "energy_total_mj" in tl.channels:
            sample["energy_total_mj"] = total_mj
            sample["power_total_mw"] = total_mw

    def _sample_procs(self, t_ns: int, dt_ns: int, sample: dict[str, float]) -> None:
        import psutil

        with self._lock:
            pids = list(self._pids)
            changed = self._pids_changed
            self._pids_changed = False
        if not pids:
            return
        if changed or t_ns - self._children_at_ns >= CHILDREN_REFRESH_S * 1e9:
            self._refresh_procs(pids)
            self._children_at_ns = t_ns
        rss = 0.0
        cpu_s_delta = 0.0
        alive = 0
        had_prior = False
        cpu_now: dict[int, float] = {}
        for pid, proc in list(self._procs.items()):
            try:
                with proc.oneshot():
                    mem = proc.memory_info().rss
                    ct = proc.cpu_times()
            except psutil.Error:  # vanished (or zombie): skipped
                self._procs.pop(pid, None)
                continue
            alive += 1
            rss += mem
            used_s = ct.user + ct.system
            cpu_now[pid] = used_s
            if pid in self._proc_cpu_s:
                had_prior = True
                cpu_s_delta += max(0.0, used_s - self._proc_cpu_s[pid])
        self._proc_cpu_s = cpu_now
        if alive:
            sample["rss_mib"] = rss / _MIB
        if had_prior and dt_ns > 0:
            sample["proc_cpu_pct"] = 100.0 * cpu_s_delta / (dt_ns / 1e9)

    def _refresh_procs(self, pids: list[int]) -> None:
        import psutil

        procs: dict[int, Any] = {}
        for pid in pids:
            try:
                proc = self._procs.get(pid) or psutil.Process(pid)
                procs[pid] = proc
                for child in proc.children(recursive=True):
                    procs.setdefault(child.pid, self._procs.get(child.pid) or child)
            except psutil.Error:
                continue  # vanished pid: skipped
        self._procs = procs


def _busy_total(times: Any) -> tuple[float, float]:
    """(busy, total) CPU seconds as psutil.cpu_percent counts them on Linux."""
    total = sum(times)
    total -= getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)  # already in user/nice
    idle = times.idle + getattr(times, "iowait", 0.0)
    return total - idle, total
