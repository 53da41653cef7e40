"""The idle baseline: mean power with nothing running, measured once per sweep, and whether it applies to a row."""

from __future__ import annotations

from typing import Any

from edgebench.config.profile import Profile
from edgebench.telemetry import registry
from edgebench.telemetry.nvml import gpu_devices
from edgebench.telemetry.row_fields import telemetry_fields


def idle_applies(row: dict[str, Any], samplers: list[Any]) -> bool:
    """The idle baseline was measured on one GPU only, CUDA's GPU 0 (nvml.gpu_devices of no placement: NVML GPU 0,
    or the first GPU CUDA_VISIBLE_DEVICES names): a GPU-board row on other/several GPUs gets no dynamic energy
    (subtracting one GPU's idle power from two GPUs' power would be wrong). The baseline's GPU is worked out again
    here from the environment, which nothing in a sweep changes."""
    if row.get("power_scope") != "gpu-board":
        return True
    baseline = gpu_devices(())
    return all(list(getattr(s, "devices", baseline)) == baseline
               for s in samplers if getattr(s, "name", "") == "nvml")


def idle_baseline(profile: Profile) -> tuple[float | None, str]:
    """Mean power with nothing running, over telemetry.idle_baseline_s, from the profile's samplers.
    (None, why) when the baseline is off or no sampler measures power here."""
    import time


    seconds = profile.telemetry.idle_baseline_s
    if seconds <= 0:
        return None, "idle baseline off (telemetry.idle_baseline_s = 0)"
    samplers = [registry.make_sampler(name, profile.telemetry.interval_s) for name in profile.telemetry.samplers]
    for s in samplers:
        s.start()
    t0 = time.monotonic_ns()
    time.sleep(seconds)
    t1 = time.monotonic_ns()
    fields = telemetry_fields([s.stop() for s in samplers], t0, t1)
    if fields.get("power_w_mean") is None:
        return None, f"no power measurable for an idle baseline ({fields.get('energy_source')})"
    return fields["power_w_mean"], f"idle {fields['power_w_mean']:.3f} W over {seconds:g} s ({fields['energy_source']})"
