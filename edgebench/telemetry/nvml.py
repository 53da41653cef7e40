"""NVML sampler (discrete NVIDIA GPUs): power, the total-energy counter, utilization, clocks,
temperature, memory and clock-event (throttle) reasons of the GPU(s) a row uses, sampled in a daemon thread.
Several GPUs (a row placed on cuda:0 and cuda:1): the row-level channels are the SUM of power and energy
over them, every GPU keeps its own gpu<N>_ channels (see NvmlSampler, gpu_devices).

Channels: power_total_mw (nvmlDeviceGetPowerUsage: a ~1 s average on Ampere and newer, so row energy
comes from the counter), energy_total_mj (counter: nvmlDeviceGetTotalEnergyConsumption, relative to
start()), gpu_util_pct / mem_util_pct, sm_clock_mhz / mem_clock_mhz, temperature_c, mem_used_mib, and
throttle_reasons (bitmask of nvmlDeviceGetCurrentClocksEventReasons, or ...ClocksThrottleReasons on
older pynvml; see `decode_throttle_reasons`).

Every field is probed once at start(): one the GPU does not answer (any NVMLError, e.g. power
NOT_SUPPORTED on Jetson) gets no channel and a note ("power: NOT_SUPPORTED on Orin (nvml)"), never
zeros. Only nvml*Get* calls are made: no GPU setting is ever changed. `device_index` is NVML's index
(PCI bus order; CUDA's default order may differ on multi-GPU hosts: `device_info` has the bus id/UUID).
`nvml` is the one seam for tests: the pynvml module (default: imported lazily at start()).

Size: one sampler with its NVML seam, throttle-reason decoding and multi-GPU sums; the channel rules
are read against the sampler loop that produces them.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from edgebench.errors import EdgebenchError, exc_text
from edgebench.placement import placements_of
from edgebench.telemetry.base import Channel, PollingSampler, RowChannel, Timeline
from edgebench.telemetry.gpu_processes import GpuProcesses

_MIB = 1024.0 * 1024.0
INSTALL_HINT = "pip install 'edgebench[gpu]' (nvidia-ml-py)"
# nvmlDeviceGetTotalEnergyConsumption cost 4-9 ms of CPU per call on an H200 (driver 580), 100x the other
# reads; a counter needs no 20 Hz reads (the row interpolates it at the window edges), so it is read at
# start, at stop and every ENERGY_INTERVAL_S in between.
ENERGY_INTERVAL_S = 0.25

# Clock-event reason bits as nvml.h / pynvml define them (nvmlClocksEventReason* == ...ThrottleReason*).
THROTTLE_BITS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"), (0x80, "hw_power_brake"),
    (0x100, "display_clock_setting"), (0x200, "board_limit"), (0x400, "reliability"),
)
# Reasons that say "clocks are low by choice", not "the run was slowed by power/heat".
NOT_THROTTLING = frozenset({"gpu_idle", "applications_clocks_setting", "display_clock_setting", "sync_boost"})


def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the set bits, lowest first; bits NVML does not define become 'unknown_0x...'."""
    mask, names = int(mask), dict(THROTTLE_BITS)
    return [names.get(1 << i, f"unknown_{1 << i:#x}") for i in range(mask.bit_length()) if mask >> i & 1]


def throttle_summary(timeline: Timeline, start_ns: int, end_ns: int) -> tuple[bool, list[str]]:
    """(throttled, reasons) over the samples in [start_ns, end_ns]: reasons is every reason seen in
    the window (bit order); throttled is True when any of them is a slowdown (not in NOT_THROTTLING,
    unknown bits included). (False, []) when the timeline has no throttle_reasons samples there."""
    mask = 0
    for value in timeline.window(start_ns, end_ns).values.get("throttle_reasons", []):
        mask |= 0 if math.isnan(value) else int(value)
    reasons = decode_throttle_reasons(mask)
    return any(r not in NOT_THROTTLING for r in reasons), reasons


def _import_nvml() -> Any:
    try:
        import pynvml
    except ImportError as exc:
        raise EdgebenchError(f"NVML unavailable: pynvml is not installed ({exc.msg}); {INSTALL_HINT}") from None
    return pynvml


def _why(nvml: Any, exc: BaseException) -> str:
    if getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", object()):
        return "NOT_SUPPORTED"
    return exc_text(exc)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_status(nvml: Any = None) -> str | None:
    """None when NVML answers and sees a GPU here, else why not (for `edgebench doctor`)."""
    try:
        nvml = nvml or _import_nvml()
    except EdgebenchError as exc:
        return str(exc)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return f"NVML unavailable: {exc} (needs the NVIDIA driver)"
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except nvml.NVMLError as exc:
        return f"NVML answers but cannot count GPUs: {exc}"
    finally:
        nvml.nvmlShutdown()
    return None if count > 0 else "NVML sees no GPU"


def gpu_devices(placements: Sequence[str], environ: Mapping[str, str] | None = None) -> list[int | str]:
    """The NVML devices (index, or UUID when CUDA_VISIBLE_DEVICES names GPUs by UUID) that a row's
    placements use, in first-use order; CUDA's GPU 0 when no placement names a CUDA GPU (default_gpu: also the
    GPU the idle baseline is measured on).

    `cuda:N` / `gpu:N` is the N-th GPU CUDA sees; `cuda` / `gpu` is GPU 0. CUDA_VISIBLE_DEVICES remaps
    (e.g. "2,3": cuda:1 is NVML GPU 3, and the default is NVML GPU 2). NVML numbers GPUs in PCI bus order; CUDA
    does too with CUDA_DEVICE_ORDER=PCI_BUS_ID, and by default (FASTEST_FIRST) wherever the GPUs are of one model."""
    env = os.environ if environ is None else environ
    visible_text = env.get("CUDA_VISIBLE_DEVICES")
    visible = [v.strip() for v in visible_text.split(",") if v.strip()] if visible_text else None

    def nvml_device(n: int) -> int | str:
        if visible is not None and n < len(visible):
            return int(visible[n]) if visible[n].isdecimal() else visible[n]
        return n

    out: list[int | str] = []
    for placement in placements_of(placements):
        if not placement.is_gpu:
            continue
        device = nvml_device(placement.number)
        if device not in out:
            out.append(device)
    return out or [default_gpu(visible)]


def default_gpu(visible: Sequence[str] | None) -> int:
    """The NVML index of CUDA's GPU 0 (the GPU a row without a GPU placement, and the idle baseline, sample): the
    first entry of CUDA_VISIBLE_DEVICES when it is an index ("1", "2,3"), else NVML GPU 0: unset or empty; a value
    that hides every GPU ("-1", "none", as CPU-only sweeps on a GPU host set it); a UUID or MIG name, which NVML
    opens only whole (CUDA also takes prefixes) and which must not stop a sweep's baseline where a CPU row ran
    before. The GPU rows' own placements map UUIDs as before (gpu_devices)."""
    first = visible[0] if visible else ""
    return int(first) if first.isdecimal() else 0


def free_memory_mib(placement: str, nvml: Any = None) -> float | None:
    """Free memory in MiB of the GPU `placement` names (cuda:N / gpu:N, mapped as gpu_devices maps it), from NVML;
    None for a placement that names no CUDA GPU, or when NVML cannot say (not installed, no driver, an error)."""
    if placement.partition(":")[0] not in ("cuda", "gpu"):
        return None
    device = gpu_devices([placement])[0]
    try:
        nvml = nvml or _import_nvml()
        nvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no NVML: the caller goes on without the figure
        return None
    try:
        handle = (nvml.nvmlDeviceGetHandleByIndex(device) if isinstance(device, int)
                  else nvml.nvmlDeviceGetHandleByUUID(device))
        return float(nvml.nvmlDeviceGetMemoryInfo(handle).free) / 2**20
    except Exception:  # noqa: BLE001 - NVMLError and its subclasses
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def list_gpus(nvml: Any = None) -> list[dict[str, Any]]:
    """Every GPU NVML sees: index (NVML, PCI bus order), name, UUID, PCI bus id, power limit
    (for system.json, so a row's gpu<N>_ channels map to physical GPUs). LookupError when NVML is absent."""
    try:
        nvml = nvml or _import_nvml()
    except EdgebenchError as exc:
        raise LookupError(str(exc)) from None
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise LookupError(f"NVML unavailable: {exc}") from None
    try:
        sampler = NvmlSampler(nvml=nvml)
        sampler._nvml = nvml
        out = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            out.append(sampler._device_info(_Gpu(i, nvml.nvmlDeviceGetHandleByIndex(i))))
        return out
    except nvml.NVMLError as exc:
        raise LookupError(f"NVML cannot list GPUs: {exc}") from None
    finally:
        nvml.nvmlShutdown()


# how the row-level channels of several GPUs combine their per-GPU values
_SUM, _MEAN, _MAX, _OR = "sum", "mean", "max", "or"
COMBINE: dict[str, str] = {
    "power_total_mw": _SUM, "energy_total_mj": _SUM, "mem_used_mib": _SUM,
    "gpu_util_pct": _MEAN, "mem_util_pct": _MEAN, "sm_clock_mhz": _MEAN, "mem_clock_mhz": _MEAN,
    "temperature_c": _MAX, "throttle_reasons": _OR, "others_gpu_procs": _SUM, "others_gpu_sm_pct": _MEAN,
}
OTHERS_CHANNELS = ("others_gpu_procs", "others_gpu_sm_pct")  # the `processes` field (telemetry/gpu_processes.py)


def _combine(how: str, values: list[float]) -> float:
    if any(math.isnan(v) for v in values):
        return math.nan  # a sum or mean missing one GPU is not that quantity
    if how == _SUM:
        return float(sum(values))
    if how == _MEAN:
        return float(sum(values) / len(values))
    if how == _MAX:
        return float(max(values))
    mask = 0
    for v in values:
        mask |= int(v)
    return float(mask)


@dataclass
class _Gpu:
    """One sampled GPU: its handle, what it answered at start(), and its channel prefix."""

    device: int | str
    handle: Any = None
    label: str = ""  # "gpu<NVML index>": per-GPU channel prefix when several GPUs are sampled
    info: dict[str, Any] = dc_field(default_factory=dict)
    fields: list[tuple[str, Callable[[], dict[str, float]]]] = dc_field(default_factory=list)
    energy_base_mj: float = 0.0
    processes: GpuProcesses | None = None  # other processes on it (a row whose instances use a GPU)


class NvmlSampler(PollingSampler):
    """NVML telemetry of the GPU(s) a row uses, on the runner's clock (time.monotonic_ns).

    With several GPUs (`devices`), power_total_mw and energy_total_mj are the SUM over them (utilization
    and clocks the mean, temperature the max, throttle reasons OR-ed), and every GPU also has its own
    channels, prefixed gpu<NVML index>_ (gpu1_power_total_mw, gpu1_energy_total_mj, ...).
    `watch_processes` (a row whose instances use a GPU): the other processes on the GPU and the SM time NVML
    attributes to them, at the energy counter's cadence (telemetry/gpu_processes.py; the pids of watch_pids and
    the harness's own are the row's)."""

    name = "nvml"
    power_scope = "gpu-board"  # the GPU board(s) only
    counter_label = "nvml"
    row_channels = (RowChannel("gpu_util_pct_mean", "gpu_util_pct"),
                    RowChannel("gpu_temp_c_max", "temperature_c", "max"),
                    RowChannel("gpu_sm_clock_mhz_mean", "sm_clock_mhz"),
                    # GPU memory, where the column means system memory: what rows have always had when nvml is
                    # listed before host (dgpu); kept as it was, not decided here
                    RowChannel("mem_used_mib_max", "mem_used_mib", "max"))

    @classmethod
    def missing(cls, sysfs_root: object = "/") -> str | None:
        return nvml_status()

    @classmethod
    def create(cls, interval_s: float, sysfs_root: object = "/", placements: Sequence[str] = ()) -> NvmlSampler:
        """Samples every GPU the row's placements use (their power and energy summed); without any, CUDA's GPU 0
        (the idle baseline's GPU: NVML GPU 1 under CUDA_VISIBLE_DEVICES=1, not NVML GPU 0)."""
        gpu_row = any(p.is_gpu for p in placements_of(placements))
        return cls(interval_s=interval_s, devices=gpu_devices(placements), watch_processes=gpu_row)

    @classmethod
    def throttle_verdict(cls, timeline: Timeline, start_ns: int, end_ns: int) -> tuple[bool, list[str]] | None:
        """NVML's clock-event reasons, where the GPU answered them (no throttle_reasons channel: no verdict)."""
        if "throttle_reasons" not in timeline.channels:
            return None
        return throttle_summary(timeline, start_ns, end_ns)

    def __init__(self, interval_s: float = 0.05, device_index: int = 0, nvml: Any = None,
                 energy_interval_s: float = ENERGY_INTERVAL_S, devices: Sequence[int | str] | None = None,
                 watch_processes: bool = False) -> None:
        super().__init__(interval_s)
        self.watch_processes = watch_processes
        self._own: set[int] = {os.getpid()}  # the row's processes: the harness and (watch_pids) its instances
        self.devices: list[int | str] = list(devices) if devices else [int(device_index)]
        self.device_index = self.devices[0]
        self.energy_interval_s = max(float(energy_interval_s), self.interval_s)
        self.device_info: dict[str, Any] = {}  # the first GPU's (see devices_info for all)
        self.devices_info: list[dict[str, Any]] = []
        self.cpu_cost_us_per_sample: float | None = None
        self._nvml = nvml
        self._gpus: list[_Gpu] = []
        self._combined: list[str] = []  # row-level channels combined over several GPUs
        self._failed: set[tuple[str, str]] = set()
        self._field_ns: dict[str, list[int]] = {}  # field -> [wall ns, reads]
        self._cost_ns = self._samples = self._energy_at_ns = 0

    def watch_pids(self, pids: list[int]) -> None:
        """The row's instances: their GPU use is not others' (with watch_processes)."""
        self._own = {int(p) for p in pids} | {os.getpid()}

    # ------------------------------------------------------------------ start / stop

    def _open(self, device: int | str) -> Any:
        nvml = self._nvml
        try:
            if isinstance(device, str):
                return nvml.nvmlDeviceGetHandleByUUID(device)
            return nvml.nvmlDeviceGetHandleByIndex(device)
        except nvml.NVMLError as exc:
            count = self._try(lambda: nvml.nvmlDeviceGetCount())
            nvml.nvmlShutdown()
            raise EdgebenchError(f"NVML device {device}: {exc} ({count} GPU(s) visible to NVML)") from None

    def _begin(self) -> Timeline:
        nvml = self._nvml = self._nvml or _import_nvml()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise EdgebenchError(f"NVML unavailable: {exc} (needs the NVIDIA driver; {INSTALL_HINT})") from None
        self._gpus = [_Gpu(d, self._open(d)) for d in self.devices]
        tl = Timeline(self.name, interval_s=self.interval_s)
        several = len(self._gpus) > 1
        per_gpu_channels: list[set[str]] = []
        for gpu in self._gpus:
            gpu.info = self._device_info(gpu)
            index = gpu.info.get("index")
            gpu.label = f"gpu{index if index is not None else gpu.device}"
            name = gpu.info.get("name") or f"GPU {gpu.device}"
            have: set[str] = set()
            for field, channels, read in self._candidates(gpu):
                try:
                    first = read()
                except nvml.NVMLError as exc:
                    tl.notes.append(f"{field}: {_why(nvml, exc)} on {name}{f' ({gpu.label})' if several else ''} (nvml)")
                    continue
                if field == "energy":  # the counter runs since driver load: report it relative to start()
                    gpu.energy_base_mj = first["energy_total_mj"]
                for ch in channels:
                    have.add(ch.name)
                    if several:
                        tl.add_channel(Channel(f"{gpu.label}_{ch.name}", ch.unit, ch.kind))
                    else:
                        tl.add_channel(ch)
                gpu.fields.append((field, read))
            per_gpu_channels.append(have)
            limit = gpu.info.get("power_limit_mw")
            tl.notes.append(
                f"nvml device {gpu.device}: {name}, driver {gpu.info.get('driver_version') or '?'}, "
                f"enforced power limit {f'{limit / 1e3:.1f} W' if limit else 'unknown'}"
                + (f", uuid {gpu.info.get('uuid')}, bus {gpu.info.get('pci_bus_id')}" if several else "")
            )
        self.devices_info = [g.info for g in self._gpus]
        self.device_info = self.devices_info[0]
        if several:
            everywhere = set.intersection(*per_gpu_channels)
            units = {c.name: c for _f, chs, _r in self._candidates(self._gpus[0]) for c in chs}
            self._combined = [name for name in COMBINE if name in everywhere]
            for name in self._combined:
                tl.add_channel(units[name])
            labels = ", ".join(g.label for g in self._gpus)
            tl.notes.append(f"nvml samples {len(self._gpus)} GPUs ({labels}): power_total_mw and energy_total_mj "
                            "are their SUM; per-GPU figures in the gpu<N>_ channels")
            for name in ("power_total_mw", "energy_total_mj"):
                if name not in everywhere:
                    tl.notes.append(f"nvml {name}: not answered by every GPU ({labels}), so no total")
        if "power_total_mw" in tl.channels:
            tl.notes.append("nvml power_total_mw is nvmlDeviceGetPowerUsage (a ~1 s average on Ampere and newer)")
        if "energy_total_mj" in tl.channels:
            tl.notes.append(f"nvml energy_total_mj read every {self.energy_interval_s:g} s (and at start/stop)")
        return tl

    def _first_sample(self) -> None:
        self._sample(force=True)

    def _last_sample(self) -> None:
        self._sample(force=True)

    def _finish(self, tl: Timeline) -> Timeline:
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass
        self._others_notes(tl)
        if self._samples:
            n = self._samples
            self.cpu_cost_us_per_sample = self._cost_ns / n / 1e3
            per_read = sorted(((ns / k / 1e3, f) for f, (ns, k) in self._field_ns.items() if k), reverse=True)[:3]
            tl.notes.append(f"nvml sampler cost: {self.cpu_cost_us_per_sample:.0f} us CPU per sample over {n} samples "
                            f"(slowest reads: {', '.join(f'{f} {us:.0f} us' for us, f in per_read)})")
        return tl

    def _others_notes(self, tl: Timeline) -> None:
        """What the `processes` field could not read; its channels emptied where NVML's pids are not the row's."""
        for gpu in self._gpus:
            reader = gpu.processes
            if reader is None or not any(f == "processes" for f, _r in gpu.fields):
                continue
            if reader.util_missing is not None:
                tl.notes.append(f"nvml per-process utilization: {reader.util_missing} on {gpu.label}: "
                                "others_gpu_sm_pct not read (other processes counted only)")
            if not reader.attributable:
                tl.notes.append(f"nvml processes: none of the processes NVML lists on {gpu.label} is this row's "
                                "(their pids differ: a PID namespace, e.g. a container): others' GPU share not "
                                "attributed")
                for name in list(tl.values):
                    if name.endswith(OTHERS_CHANNELS):
                        tl.values[name] = [math.nan] * len(tl.values[name])

    # ------------------------------------------------------------------ fields

    def _candidates(self, gpu: _Gpu) -> list[tuple[str, list[Channel], Callable[[], dict[str, float]]]]:
        nvml, h = self._nvml, gpu.handle

        def energy() -> dict[str, float]:
            return {"energy_total_mj": float(nvml.nvmlDeviceGetTotalEnergyConsumption(h)) - gpu.energy_base_mj}

        def util() -> dict[str, float]:
            u = nvml.nvmlDeviceGetUtilizationRates(h)
            return {"gpu_util_pct": float(u.gpu), "mem_util_pct": float(u.memory)}

        def throttle() -> dict[str, float]:
            event = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
            if event is not None:
                try:
                    return {"throttle_reasons": float(event(h))}
                except nvml.NVMLError:  # a driver older than the bindings: try the old name
                    pass
            return {"throttle_reasons": float(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))}

        fields: list[tuple[str, list[Channel], Callable[[], dict[str, float]]]] = []
        if self.watch_processes:
            gpu.processes = gpu.processes or GpuProcesses(nvml, h)
            reader = gpu.processes
            fields.append(("processes", [Channel("others_gpu_procs", "processes"), Channel("others_gpu_sm_pct", "%")],
                           lambda: reader.read(self._own)))
        return [
            ("power", [Channel("power_total_mw", "mW")],
             lambda: {"power_total_mw": float(nvml.nvmlDeviceGetPowerUsage(h))}),
            ("energy", [Channel("energy_total_mj", "mJ", "counter")], energy),
            ("utilization", [Channel("gpu_util_pct", "%"), Channel("mem_util_pct", "%")], util),
            ("sm_clock", [Channel("sm_clock_mhz", "MHz")],
             lambda: {"sm_clock_mhz": float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM))}),
            ("mem_clock", [Channel("mem_clock_mhz", "MHz")],
             lambda: {"mem_clock_mhz": float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM))}),
            ("temperature", [Channel("temperature_c", "C")],
             lambda: {"temperature_c": float(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU))}),
            ("memory", [Channel("mem_used_mib", "MiB")],
             lambda: {"mem_used_mib": float(nvml.nvmlDeviceGetMemoryInfo(h).used) / _MIB}),
            ("throttle_reasons", [Channel("throttle_reasons", "bitmask")], throttle),
            *fields,
        ]

    def _try(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self._nvml.NVMLError:
            return None

    def _device_info(self, gpu: _Gpu) -> dict[str, Any]:
        nvml, h = self._nvml, gpu.handle
        text = {key: self._try(fn) for key, fn in (
            ("name", lambda: nvml.nvmlDeviceGetName(h)), ("uuid", lambda: nvml.nvmlDeviceGetUUID(h)),
            ("pci_bus_id", lambda: nvml.nvmlDeviceGetPciInfo(h).busId),
            ("driver_version", lambda: nvml.nvmlSystemGetDriverVersion()))}
        index = gpu.device if isinstance(gpu.device, int) else self._try(lambda: int(nvml.nvmlDeviceGetIndex(h)))
        return {
            "index": index,
            **{k: None if v is None else _text(v) or None for k, v in text.items()},
            "power_limit_mw": self._try(lambda: int(nvml.nvmlDeviceGetEnforcedPowerLimit(h))),
            "power_limit_default_mw": self._try(lambda: int(nvml.nvmlDeviceGetPowerManagementDefaultLimit(h))),
            "sm_clock_max_mhz": self._try(lambda: int(nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM))),
        }

    # ------------------------------------------------------------------ sampling

    def _read_gpu(self, gpu: _Gpu, energy_due: bool, t_ns: int) -> dict[str, float]:
        tl = self._timeline
        assert tl is not None
        sample: dict[str, float] = {}
        for field, read in gpu.fields:
            if field in ("energy", "processes"):  # the slow reads: at the energy counter's cadence
                if not energy_due:
                    continue
                self._energy_at_ns = t_ns
            t0 = time.perf_counter_ns()
            try:
                sample.update(read())
            except self._nvml.NVMLError as exc:
                if (gpu.label, field) not in self._failed:
                    self._failed.add((gpu.label, field))
                    where = f" on {gpu.label}" if len(self._gpus) > 1 else ""
                    tl.notes.append(f"nvml {field} read failed mid-run{where} (samples left empty): "
                                    f"{_why(self._nvml, exc)}")
            cost = self._field_ns.setdefault(field, [0, 0])
            cost[0] += time.perf_counter_ns() - t0
            cost[1] += 1
        return sample

    def _sample(self, force: bool = False) -> None:
        cost0 = time.thread_time_ns()
        tl = self._timeline
        assert tl is not None
        t_ns = time.monotonic_ns()
        energy_due = force or t_ns - self._energy_at_ns >= self.energy_interval_s * 1e9 - self.interval_s * 5e8
        per_gpu = [self._read_gpu(gpu, energy_due, t_ns) for gpu in self._gpus]
        if len(per_gpu) == 1:
            sample = per_gpu[0]
        else:
            sample = {f"{gpu.label}_{k}": v for gpu, values in zip(self._gpus, per_gpu) for k, v in values.items()}
            for name in self._combined:
                if name == "energy_total_mj" and not energy_due:
                    continue
                sample[name] = _combine(COMBINE[name], [values.get(name, math.nan) for values in per_gpu])
        tl.append(t_ns, sample)
        self._samples += 1
        self._cost_ns += time.thread_time_ns() - cost0
