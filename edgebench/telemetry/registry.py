"""Samplers by name, what each needs to run here, and the per-row summary of a timeline.

`power_total_mw` (gauge) and `energy_total_mj` (counter) are the channel names every sampler uses
for "the board/package total", so `power_summary` reads any sampler's timeline the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from edgebench.errors import ConfigError
from edgebench.telemetry.base import Sampler, Timeline
from edgebench.telemetry.host import COST_NOTE_PREFIX, HostSampler
from edgebench.telemetry.ina3221 import ina3221_status, make_ina3221_sampler
from edgebench.telemetry.jetson_throttle import jetson_throttle_missing, make_jetson_throttle_sampler
from edgebench.telemetry.jtop import jtop_missing, make_jtop_sampler
from edgebench.telemetry.nvml import NvmlSampler, gpu_devices, nvml_status
from edgebench.telemetry.tegrastats import make_tegrastats_sampler, tegrastats_missing


def _make_host(interval_s: float, sysfs_root: str | Path) -> Sampler:
    return HostSampler(interval_s=interval_s, sysfs_root=sysfs_root)


def _host_missing(sysfs_root: str | Path) -> str | None:
    try:
        import psutil  # noqa: F401
    except ImportError as exc:
        return f"psutil is not installed ({exc.msg}); pip install psutil"
    return None


def _make_nvml(interval_s: float, sysfs_root: str | Path) -> Sampler:
    return NvmlSampler(interval_s=interval_s)


def _nvml_missing(sysfs_root: str | Path) -> str | None:
    return nvml_status()


# name -> (factory, availability check). Later: jtop, ina3221, tegrastats.
SAMPLERS: dict[str, tuple[Callable[[float, str | Path], Sampler], Callable[[str | Path], str | None]]] = {
    "host": (_make_host, _host_missing),
    "nvml": (_make_nvml, _nvml_missing),
    "jtop": (make_jtop_sampler, jtop_missing),  # Jetson, through jtop.service (jetson-stats)
    "ina3221": (make_ina3221_sampler, ina3221_status),  # Jetson, INA3221 rails straight from sysfs
    "tegrastats": (make_tegrastats_sampler, tegrastats_missing),  # Jetson, parses `tegrastats --interval`
    # Jetson throttle evidence (clocks vs their caps, thermal trips, over-current counters) from sysfs
    "jetson_throttle": (make_jetson_throttle_sampler, jetson_throttle_missing),
}

# timeline.source -> the hardware counter behind its energy_total_mj (for energy_source)
COUNTER_LABELS: dict[str, str] = {"host": "rapl", "nvml": "nvml"}

# timeline.source -> what its power_total_mw / energy_total_mj cover (the row's power_scope column):
# nvml: the GPU board(s) only; host: the RAPL package domains (CPU package, not DRAM or the rest of the
# machine); jtop / ina3221 / tegrastats: the Jetson's INA3221 total, i.e. the module input (or a sum of
# rails on boards without an input monitor, which their telemetry notes say)
POWER_SCOPES: dict[str, str] = {"nvml": "gpu-board", "host": "cpu-package", "jtop": "soc-total",
                                "ina3221": "soc-total", "tegrastats": "soc-total"}


def make_sampler(name: str, interval_s: float, sysfs_root: str | Path = "/",
                 placements: Sequence[str] = ()) -> Sampler:
    """A sampler by name. `placements` (the row's, e.g. ("cuda:0", "cuda:1")) tells nvml which GPUs the
    row uses: it samples all of them and sums their power and energy; the other samplers ignore it."""
    entry = SAMPLERS.get(name)
    if entry is None:
        known = ", ".join(sorted(SAMPLERS))
        raise ConfigError("profile", "telemetry.samplers", f"unknown sampler {name!r} (known: {known})")
    missing = entry[1](sysfs_root)
    if missing is not None:
        raise ConfigError("profile", "telemetry.samplers", f"sampler {name!r} cannot run here: {missing}")
    if name == "nvml" and placements:
        return NvmlSampler(interval_s=interval_s, devices=gpu_devices(placements))
    return entry[0](interval_s, sysfs_root)


def sampler_availability(sysfs_root: str | Path = "/") -> dict[str, str | None]:
    """name -> None when the sampler can run here, else the reason (for `edgebench doctor`)."""
    out: dict[str, str | None] = {}
    for name, (_factory, missing) in SAMPLERS.items():
        try:
            out[name] = missing(sysfs_root)
        except Exception as exc:  # a broken check must not break doctor
            out[name] = f"availability check failed: {type(exc).__name__}: {exc}"
    return out


def power_summary(timeline: Timeline, start_ns: int, end_ns: int) -> dict[str, Any]:
    """Row fields for the window [start_ns, end_ns] of one timeline; None where unavailable.

    energy_j prefers the hardware counter (`energy_total_mj` delta, "counter:<hw>"), else the
    trapezoidal integral of `power_total_mw` ("integrated"), else None with
    energy_source "none: <why>". power_w_mean is energy_j over the window (None without energy);
    power_w_max is the highest power_total_mw sample inside the window.
    """
    duration_s = (end_ns - start_ns) / 1e9
    win = timeline.window(start_ns, end_ns)
    out: dict[str, Any] = {
        "power_w_mean": None,
        "power_w_max": None,
        "power_scope": None,
        "energy_j": None,
        "energy_source": None,
        "cpu_util_pct_mean": _finite(win.mean("cpu_util_pct")),
        "proc_cpu_pct_mean": _finite(win.mean("proc_cpu_pct")),
        "rss_mib_max": _finite(win.max("rss_mib")),
        "mem_used_mib_max": _finite(win.max("mem_used_mib")),
        "telemetry_samples": len(win.t_ns),
        "telemetry_source": timeline.source,
        "telemetry_interval_s": timeline.interval_s,
        "telemetry_notes": "; ".join(n for n in timeline.notes if not n.startswith(COST_NOTE_PREFIX)) or None,
    }
    has_counter = "energy_total_mj" in timeline.channels
    has_power = "power_total_mw" in timeline.channels
    energy_mj: float | None = None
    if duration_s <= 0:
        out["energy_source"] = f"none: empty window ({start_ns} >= {end_ns})"
    elif has_counter and (energy_mj := timeline.counter_delta("energy_total_mj", start_ns, end_ns)) is not None:
        out["energy_source"] = f"counter:{COUNTER_LABELS.get(timeline.source, timeline.source)}"
    elif has_power and (energy_mj := timeline.integrate("power_total_mw", start_ns, end_ns)) is not None:
        out["energy_source"] = "integrated"
    elif has_counter or has_power:
        out["energy_source"] = (
            f"none: {timeline.source} timeline does not span the window "
            f"({len(timeline.t_ns)} samples, window {duration_s:.3f} s)"
        )
    else:
        why = "; ".join(n for n in timeline.notes if "RAPL" in n or "power" in n.lower())
        out["energy_source"] = f"none: {why or f'{timeline.source} timeline has no power channel'}"
    if energy_mj is not None:
        out["power_scope"] = POWER_SCOPES.get(timeline.source, timeline.source)
        out["energy_j"] = energy_mj / 1e3
        out["power_w_mean"] = energy_mj / 1e3 / duration_s
    if has_power:
        max_mw = win.max("power_total_mw")
        out["power_w_max"] = None if max_mw is None else max_mw / 1e3
    return out


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value
