"""The samplers edgebench knows, in one list, and every table derived from what their classes declare.

Adding a sampler is one module with a SamplerBase subclass (its name, power_scope, counter_label,
row_channels, missing(), create(), throttle_verdict() as it needs) and one line in SAMPLER_CLASSES.
Nothing else names it: config validates `telemetry.samplers` against the names, make_sampler and doctor
use the factories and availability checks (registry.SAMPLERS), power_summary and telemetry_fields read
power scope, counter and row channels by a timeline's source.

Importing this module imports every sampler module; each imports only the standard library at its top
(psutil, pynvml, jtop inside methods), so config can validate names with no framework installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from edgebench.telemetry.base import RowChannel, SamplerBase
from edgebench.telemetry.host import HostSampler
from edgebench.telemetry.ina3221 import Ina3221Sampler
from edgebench.telemetry.jetson_throttle import JetsonThrottleSampler
from edgebench.telemetry.jtop import JtopSampler
from edgebench.telemetry.nvml import NvmlSampler
from edgebench.telemetry.tegrastats import TegrastatsSampler

SAMPLER_CLASSES: tuple[type[SamplerBase], ...] = (
    HostSampler,  # psutil CPU/memory, RAPL package energy
    NvmlSampler,  # discrete NVIDIA GPUs
    JtopSampler,  # Jetson, through jtop.service (jetson-stats)
    Ina3221Sampler,  # Jetson, INA3221 rails straight from sysfs
    TegrastatsSampler,  # Jetson, parses `tegrastats --interval`
    JetsonThrottleSampler,  # Jetson throttle evidence: clocks vs their caps, thermal trips, over-current counters
)


@dataclass(frozen=True)
class SamplerTables:
    """What the rest of edgebench reads about samplers, derived from their classes (`derive`)."""

    classes: dict[str, type[SamplerBase]]  # name -> class, in SAMPLER_CLASSES order

    @property
    def names(self) -> tuple[str, ...]:
        """Sorted: what a profile may list in telemetry.samplers (and what error messages list)."""
        return tuple(sorted(self.classes))

    @property
    def power_scopes(self) -> dict[str, str]:
        """name -> what its power_total_mw / energy_total_mj cover (the row's power_scope)."""
        return {n: c.power_scope for n, c in self.classes.items() if c.power_scope}

    @property
    def counter_labels(self) -> dict[str, str]:
        """name -> the hardware counter behind its energy_total_mj (energy_source "counter:<label>")."""
        return {n: c.counter_label for n, c in self.classes.items() if c.counter_label}

    @property
    def row_channels(self) -> dict[str, tuple[RowChannel, ...]]:
        """name -> the row columns its timeline fills (column <- channel, aggregation)."""
        return {n: c.row_channels for n, c in self.classes.items() if c.row_channels}


def derive(classes: tuple[type[SamplerBase], ...]) -> SamplerTables:
    """The tables for these classes. ValueError (naming the class) on a declaration that cannot work:
    a missing or duplicate name, or a row channel that is not a RowChannel."""
    by_name: dict[str, type[SamplerBase]] = {}
    for cls in classes:
        if not isinstance(cls, type) or not issubclass(cls, SamplerBase):
            raise ValueError(f"{cls!r}: a sampler class must subclass telemetry.base.SamplerBase")
        where = f"{cls.__module__}.{cls.__qualname__}"
        if not isinstance(cls.name, str) or not cls.name.isidentifier():
            raise ValueError(f"{where}: sampler name {cls.name!r} is not a plain identifier (set `name` on the class)")
        if cls.name in by_name:
            other = by_name[cls.name]
            raise ValueError(f"{where}: sampler name {cls.name!r} is already declared by "
                             f"{other.__module__}.{other.__qualname__}")
        bad = [rc for rc in cls.row_channels if not isinstance(rc, RowChannel)]
        if bad:
            raise ValueError(f"{where}: row_channels must be RowChannel(column, channel, aggregation), got {bad[0]!r}")
        by_name[cls.name] = cls
    return SamplerTables(by_name)


@lru_cache(maxsize=4)
def _derived(classes: tuple[type[SamplerBase], ...]) -> SamplerTables:
    return derive(classes)


def tables() -> SamplerTables:
    """The tables of SAMPLER_CLASSES as it is now (read at each call, so a test may extend the list)."""
    return _derived(SAMPLER_CLASSES)


SAMPLER_NAMES: tuple[str, ...] = tables().names  # checked at import: a bad declaration fails here, naming its class
