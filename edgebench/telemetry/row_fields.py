"""A row's telemetry columns from the samplers' timelines over the measured window (power, energy, GPU utilisation,
temperature and clocks, throttling), and the sampler notes that make a row's telemetry untrustworthy."""

from __future__ import annotations

from typing import Any

from edgebench.telemetry import catalog
from edgebench.telemetry.registry import power_summary


def telemetry_fields(timelines: list[Any], start_ns: int, end_ns: int) -> dict[str, Any]:
    """Row fields from every sampler's timeline over the window; earlier samplers in the profile's
    list win where two provide the same field (dgpu lists nvml before host: GPU power fills the row).
    Which columns a timeline fills comes from its sampler class (power_summary: power, energy and
    row_channels); a sampler whose class gives a throttle verdict adds to `throttled` (any sampler saying
    throttled makes it true) and to `throttle_reasons` (every sampler's causes, in list order)."""

    fields: dict[str, Any] = {}
    classes = catalog.tables().classes
    for tl in timelines:
        for key, value in power_summary(tl, start_ns, end_ns).items():
            if fields.get(key) is None:
                fields[key] = value
        cls = classes.get(tl.source)
        verdict = cls.throttle_verdict(tl, start_ns, end_ns) if cls is not None else None
        if verdict is not None:
            throttled, reasons = verdict
            fields["throttled"] = bool(fields.get("throttled")) or throttled
            fields["throttle_reasons"] = ";".join(r for r in (fields.get("throttle_reasons"), *reasons) if r) or None
    if len(timelines) > 1:
        fields["telemetry_source"] = "+".join(tl.source for tl in timelines)
    return fields


TELEMETRY_FAULT_PREFIX = "telemetry: "  # a sampler note starting so (e.g. jtop lost connection) makes the row invalid


def telemetry_faults(timelines: list[Any]) -> list[str]:
    """Sampler notes that say the telemetry of this row cannot be trusted (each names cause and fix)."""
    return [n for tl in timelines for n in tl.notes if n.startswith(TELEMETRY_FAULT_PREFIX)]
