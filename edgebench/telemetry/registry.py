"""Samplers by name, what each needs to run here, and the per-row summary of a timeline (all from what the
sampler classes in catalog.SAMPLER_CLASSES declare).

`power_total_mw` (gauge) and `energy_total_mj` (counter) are the channel names every sampler uses
for "the board/package total", so `power_summary` reads any sampler's timeline the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from edgebench.errors import ConfigError, exc_text
from edgebench.telemetry import catalog
from edgebench.telemetry.base import Sampler, Timeline
from edgebench.telemetry.host import COST_NOTE_PREFIX

Factory = Callable[[float, str | Path, Sequence[str]], Sampler]  # (interval_s, sysfs_root, placements)
Availability = Callable[[str | Path], str | None]  # sysfs_root -> None, or why the sampler cannot run here


def sampler_entries(tables: catalog.SamplerTables) -> dict[str, tuple[Factory, Availability]]:
    """name -> (factory, availability check), from each class's `create` and `missing`."""
    return {name: (cls.create, cls.missing) for name, cls in tables.classes.items()}


# name -> (factory, availability check), derived from the sampler classes in catalog.SAMPLER_CLASSES
SAMPLERS: dict[str, tuple[Factory, Availability]] = sampler_entries(catalog.tables())


def make_sampler(name: str, interval_s: float, sysfs_root: str | Path = "/",
                 placements: Sequence[str] = ()) -> Sampler:
    """A sampler by name. `placements` (the row's, e.g. ("cuda:0", "cuda:1")) go to its factory: nvml samples
    every GPU the row uses and sums their power and energy; the other samplers ignore them."""
    entry = SAMPLERS.get(name)
    if entry is None:
        known = ", ".join(sorted(SAMPLERS))
        raise ConfigError("profile", "telemetry.samplers", f"unknown sampler {name!r} (known: {known})")
    missing = entry[1](sysfs_root)
    if missing is not None:
        raise ConfigError("profile", "telemetry.samplers", f"sampler {name!r} cannot run here: {missing}")
    return entry[0](interval_s, sysfs_root, placements)


def sampler_availability(sysfs_root: str | Path = "/") -> dict[str, str | None]:
    """name -> None when the sampler can run here, else the reason (for `edgebench doctor`)."""
    out: dict[str, str | None] = {}
    for name, (_factory, missing) in SAMPLERS.items():
        try:
            out[name] = missing(sysfs_root)
        except Exception as exc:  # a broken check must not break doctor
            out[name] = f"availability check failed: {exc_text(exc)}"
    return out


def power_summary(timeline: Timeline, start_ns: int, end_ns: int) -> dict[str, Any]:
    """Row fields for the window [start_ns, end_ns] of one timeline; None where unavailable: power and energy,
    the telemetry_* columns, and the columns its sampler class declares in row_channels.

    energy_j prefers the hardware counter (`energy_total_mj` delta, "counter:<hw>"), else the
    trapezoidal integral of `power_total_mw` ("integrated"), else None with
    energy_source "none: <why>". power_w_mean is energy_j over the window (None without energy);
    power_w_max is the highest power_total_mw sample inside the window.
    """
    duration_s = (end_ns - start_ns) / 1e9
    win = timeline.window(start_ns, end_ns)
    tables = catalog.tables()
    out: dict[str, Any] = {
        "power_w_mean": None,
        "power_w_max": None,
        "power_scope": None,
        "energy_j": None,
        "energy_source": None,
        **row_channel_fields(timeline.source, win),
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
        out["energy_source"] = f"counter:{tables.counter_labels.get(timeline.source, timeline.source)}"
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
        out["power_scope"] = tables.power_scopes.get(timeline.source, timeline.source)
        out["energy_j"] = energy_mj / 1e3
        out["power_w_mean"] = energy_mj / 1e3 / duration_s
    if has_power:
        max_mw = win.max("power_total_mw")
        out["power_w_max"] = None if max_mw is None else max_mw / 1e3
    return out


def row_channel_fields(source: str, window: Timeline) -> dict[str, Any]:
    """The columns the sampler named `source` declares (row_channels), from a timeline cut to the window. For
    a column declared with several channels, the first present in the timeline with a value fills it."""
    fields: dict[str, Any] = {}
    for rc in catalog.tables().row_channels.get(source, ()):
        if fields.get(rc.column) is None and rc.channel in window.channels:
            fields[rc.column] = rc.value(window)
    return fields
