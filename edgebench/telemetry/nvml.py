"""NVML sampler (discrete NVIDIA GPUs): power, the total-energy counter, utilization, clocks,
temperature, memory and clock-event (throttle) reasons of one GPU, sampled in a daemon thread.

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
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.telemetry.base import Channel, Timeline, sample_on_grid

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
    return f"{type(exc).__name__}: {exc}"


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


class NvmlSampler:
    """One GPU's NVML telemetry on the runner's clock (time.monotonic_ns)."""

    name = "nvml"

    def __init__(self, interval_s: float = 0.05, device_index: int = 0, nvml: Any = None,
                 energy_interval_s: float = ENERGY_INTERVAL_S) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s, self.device_index = float(interval_s), int(device_index)
        self.energy_interval_s = max(float(energy_interval_s), self.interval_s)
        self.device_info: dict[str, Any] = {}
        self.cpu_cost_us_per_sample: float | None = None
        self._nvml, self._handle = nvml, None
        self._fields: list[tuple[str, Callable[[], dict[str, float]]]] = []
        self._failed: set[str] = set()
        self._timeline: Timeline | None = None
        self._thread: threading.Thread | None = None
        self._stop_evt = threading.Event()
        self._field_ns: dict[str, list[int]] = {}  # field -> [wall ns, reads]
        self._cost_ns = self._samples = self._energy_at_ns = 0
        self._energy_base_mj = 0.0

    def watch_pids(self, pids: list[int]) -> None:
        """Ignored: NVML's per-process accounting is not needed for the device totals reported here."""

    # ------------------------------------------------------------------ start / stop

    def start(self) -> None:
        if self._timeline is not None:
            raise RuntimeError("NvmlSampler.start() called twice")
        nvml = self._nvml = self._nvml or _import_nvml()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise EdgebenchError(f"NVML unavailable: {exc} (needs the NVIDIA driver; {INSTALL_HINT})") from None
        try:
            self._handle = nvml.nvmlDeviceGetHandleByIndex(self.device_index)
        except nvml.NVMLError as exc:
            count = self._try(lambda: nvml.nvmlDeviceGetCount())
            nvml.nvmlShutdown()
            raise EdgebenchError(f"NVML device {self.device_index}: {exc} ({count} GPU(s) visible to NVML)") from None
        tl = Timeline(self.name, interval_s=self.interval_s)
        self.device_info = self._device_info()
        gpu = self.device_info.get("name") or f"GPU {self.device_index}"
        for field, channels, read in self._candidates():
            try:
                first = read()
            except nvml.NVMLError as exc:
                tl.notes.append(f"{field}: {_why(nvml, exc)} on {gpu} (nvml)")
                continue
            if field == "energy":  # the counter runs since driver load: report it relative to start()
                self._energy_base_mj = first["energy_total_mj"]
            for ch in channels:
                tl.add_channel(ch)
            self._fields.append((field, read))
        limit = self.device_info.get("power_limit_mw")
        tl.notes.append(
            f"nvml device {self.device_index}: {gpu}, driver {self.device_info.get('driver_version') or '?'}, "
            f"enforced power limit {f'{limit / 1e3:.1f} W' if limit else 'unknown'}"
        )
        if "power_total_mw" in tl.channels:
            tl.notes.append("nvml power_total_mw is nvmlDeviceGetPowerUsage (a ~1 s average on Ampere and newer)")
        if "energy_total_mj" in tl.channels:
            tl.notes.append(f"nvml energy_total_mj read every {self.energy_interval_s:g} s (and at start/stop)")
        self._timeline = tl
        self._stop_evt.clear()
        self._sample(force=True)
        self._thread = threading.Thread(target=self._loop, name="edgebench-nvml-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> Timeline:
        if self._timeline is None or self._thread is None:
            raise RuntimeError("NvmlSampler.stop() called before start()")
        self._stop_evt.set()
        self._thread.join()
        self._sample(force=True)
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass
        tl = self._timeline
        if self._samples:
            n = self._samples
            self.cpu_cost_us_per_sample = self._cost_ns / n / 1e3
            per_read = sorted(((ns / k / 1e3, f) for f, (ns, k) in self._field_ns.items() if k), reverse=True)[:3]
            tl.notes.append(f"nvml sampler cost: {self.cpu_cost_us_per_sample:.0f} us CPU per sample over {n} samples "
                            f"(slowest reads: {', '.join(f'{f} {us:.0f} us' for us, f in per_read)})")
        return tl

    # ------------------------------------------------------------------ fields

    def _candidates(self) -> list[tuple[str, list[Channel], Callable[[], dict[str, float]]]]:
        nvml, h = self._nvml, self._handle

        def energy() -> dict[str, float]:
            return {"energy_total_mj": float(nvml.nvmlDeviceGetTotalEnergyConsumption(h)) - self._energy_base_mj}

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
        ]

    def _try(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self._nvml.NVMLError:
            return None

    def _device_info(self) -> dict[str, Any]:
        nvml, h = self._nvml, self._handle
        text = {key: self._try(fn) for key, fn in (
            ("name", lambda: nvml.nvmlDeviceGetName(h)), ("uuid", lambda: nvml.nvmlDeviceGetUUID(h)),
            ("pci_bus_id", lambda: nvml.nvmlDeviceGetPciInfo(h).busId),
            ("driver_version", lambda: nvml.nvmlSystemGetDriverVersion()))}
        return {
            "index": self.device_index,
            **{k: None if v is None else _text(v) or None for k, v in text.items()},
            "power_limit_mw": self._try(lambda: int(nvml.nvmlDeviceGetEnforcedPowerLimit(h))),
            "power_limit_default_mw": self._try(lambda: int(nvml.nvmlDeviceGetPowerManagementDefaultLimit(h))),
            "sm_clock_max_mhz": self._try(lambda: int(nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM))),
        }

    # ------------------------------------------------------------------ sampling

    def _loop(self) -> None:
        assert self._timeline is not None
        sample_on_grid(self._stop_evt, self.interval_s, time.monotonic_ns(), self._sample, self._timeline, "nvml")

    def _sample(self, force: bool = False) -> None:
        cost0 = time.thread_time_ns()
        tl = self._timeline
        assert tl is not None
        t_ns = time.monotonic_ns()
        sample: dict[str, float] = {}
        energy_due = force or t_ns - self._energy_at_ns >= self.energy_interval_s * 1e9 - self.interval_s * 5e8
        for field, read in self._fields:
            if field == "energy":
                if not energy_due:
                    continue
                self._energy_at_ns = t_ns
            t0 = time.perf_counter_ns()
            try:
                sample.update(read())
            except self._nvml.NVMLError as exc:
                if field not in self._failed:
                    self._failed.add(field)
                    tl.notes.append(f"nvml {field} read failed mid-run (samples left empty): {_why(self._nvml, exc)}")
            cost = self._field_ns.setdefault(field, [0, 0])
            cost[0] += time.perf_counter_ns() - t0
            cost[1] += 1
        tl.append(t_ns, sample)
        self._samples += 1
        self._cost_ns += time.thread_time_ns() - cost0
