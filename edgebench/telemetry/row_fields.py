"""A row's telemetry columns from the samplers' timelines over the measured window (power, energy, GPU utilisation,
temperature and clocks, throttling), and the sampler notes that make a row's telemetry untrustworthy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgebench.telemetry.jetson_throttle import throttle_summary as jetson_throttle_summary
from edgebench.telemetry.nvml import throttle_summary
from edgebench.telemetry.registry import power_summary

# row column <- (first channel present, in this order) per sampler: nvml names, then jtop / tegrastats names
GPU_ROW_CHANNELS: tuple[tuple[str, str, Callable[[Any, str], Any]], ...] = (
    ("gpu_util_pct_mean", "gpu_util_pct", lambda w, c: w.mean(c)),    # nvml, jtop
    ("gpu_util_pct_mean", "gpu_load_pct", lambda w, c: w.mean(c)),    # tegrastats GR3D
    ("gpu_temp_c_max", "temperature_c", lambda w, c: w.max(c)),       # nvml
    ("gpu_temp_c_max", "temp_gpu_c", lambda w, c: w.max(c)),          # jtop / tegrastats zone "gpu"
    ("gpu_sm_clock_mhz_mean", "sm_clock_mhz", lambda w, c: w.mean(c)),  # nvml
    ("gpu_sm_clock_mhz_mean", "gpu_freq_mhz", lambda w, c: w.mean(c)),  # jtop
)


def telemetry_fields(timelines: list[Any], start_ns: int, end_ns: int) -> dict[str, Any]:
    """Row fields from every sampler's timeline over the window; earlier samplers in the profile's
    list win where two provide the same field (dgpu lists nvml before host: GPU power fills the row)."""

    fields: dict[str, Any] = {}
    for tl in timelines:
        for key, value in power_summary(tl, start_ns, end_ns).items():
            if fields.get(key) is None:
                fields[key] = value
        win = tl.window(start_ns, end_ns)
        for key, channel, agg in GPU_ROW_CHANNELS:
            if channel in tl.channels and fields.get(key) is None:
                fields[key] = agg(win, channel)
        if "throttle_reasons" in tl.channels:
            throttled, reasons = throttle_summary(tl, start_ns, end_ns)
            fields["throttled"] = throttled
            fields["throttle_reasons"] = ";".join(reasons) or None
        if tl.source == "jetson_throttle":  # Jetson: NVML has no clock-event reasons there; sysfs evidence instead

            throttled, reasons = jetson_throttle_summary(tl, start_ns, end_ns)
            fields["throttled"] = bool(fields.get("throttled")) or throttled
            fields["throttle_reasons"] = ";".join(r for r in (fields.get("throttle_reasons"), *reasons) if r) or None
    if len(timelines) > 1:
        fields["telemetry_source"] = "+".join(tl.source for tl in timelines)
    return fields


TELEMETRY_FAULT_PREFIX = "telemetry: "  # a sampler note starting so (e.g. jtop lost connection) makes the row invalid


def telemetry_faults(timelines: list[Any]) -> list[str]:
    """Sampler notes that say the telemetry of this row cannot be trusted (each names cause and fix)."""
    return [n for tl in timelines for n in tl.notes if n.startswith(TELEMETRY_FAULT_PREFIX)]
