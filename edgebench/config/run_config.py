"""One row of a sweep (`RunConfig`): everything that decides what is measured, its hash (--resume)
and its label. Built by plan.py from a profile; checked on construction.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from edgebench.config.fields import GPU_SHARING, MODES, PRECISIONS
from edgebench.errors import ConfigError


@dataclass(frozen=True)
class RunConfig:
    """One row of a sweep: everything that decides what is measured."""

    model: str
    backend: str
    precision: str
    batch: int
    placements: tuple[str, ...]  # one per instance, e.g. ("cpu", "cpu") or ("gpu", "dla0")
    mode: str = "process"
    threads_per_instance: int = 1
    warmup_s: float = 1.0
    duration_s: float = 5.0
    max_duration_s: float = 60.0
    min_inferences: int = 662
    sub_windows: int = 5
    stability_tolerance_pct: float = 15.0
    load_timeout_s: float = 300.0
    barrier_timeout_s: float = 120.0
    collect_timeout_s: float = 60.0
    seed: int = 0
    accuracy_samples: int = 16
    repeat: int = 0  # index among run.repeats identical measurements
    kernel_profile_steps: int = 0
    options: tuple[tuple[str, Any], ...] = field(default_factory=tuple)  # backend options, sorted
    power_mode: str | None = None  # Jetson nvpmodel mode (name or id as written in power.modes); None = unchanged
    rate_hz: float | None = None  # open loop: arrivals per second per instance (stream); None = closed loop
    gpu_sharing: str = "time-slicing"  # "mps": the row's instances run under an edgebench-started MPS daemon
    slo_ms: float | None = None  # a probe of an SLO search: the row says whether its p99 stayed under this
    input_values: tuple[tuple[str, Any], ...] = ()  # fixed input values (--value, a spec's values:), sorted

    def __post_init__(self) -> None:
        if self.batch < 1:
            raise ConfigError("run config", "batch", f"{self.batch} must be >= 1")
        if not self.placements:
            raise ConfigError("run config", "instances", "must be >= 1")
        if self.mode not in MODES:
            raise ConfigError("run config", "mode", f"{self.mode!r} is not one of {', '.join(MODES)}")
        if self.precision not in PRECISIONS:
            raise ConfigError("run config", "precision", f"{self.precision!r} is not one of {', '.join(PRECISIONS)}")
        if self.max_duration_s < self.duration_s:
            raise ConfigError("run config", "max_duration_s", "is shorter than duration_s")
        if self.rate_hz is not None and not self.rate_hz > 0:
            raise ConfigError("run config", "rate_hz", f"{self.rate_hz} must be > 0 (or null for a closed loop)")
        if self.slo_ms is not None and (self.rate_hz is None or not self.slo_ms > 0):
            raise ConfigError("run config", "slo_ms", "needs rate_hz and must be > 0")
        if self.gpu_sharing not in GPU_SHARING:
            raise ConfigError("run config", "gpu_sharing", f"{self.gpu_sharing!r} is not one of {', '.join(GPU_SHARING)}")

    @property
    def instances(self) -> int:
        return len(self.placements)

    @property
    def placement(self) -> str:
        """Row label: placements joined with '+', e.g. 'cpu+cpu', 'gpu+dla0'."""
        return "+".join(self.placements)

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["placements"] = list(self.placements)
        d["options"] = dict(self.options)
        d["input_values"] = dict(self.input_values)
        return d

    def config_hash(self) -> str:
        """Stable identity of what is measured (used by --resume)."""
        d = self.to_dict()
        if d.get("power_mode") is None:  # rows without a power mode keep the hashes they had before it existed
            d.pop("power_mode", None)
        if d.get("rate_hz") is None:  # likewise closed-loop rows and time-slicing rows
            d.pop("rate_hz", None)
        if d.get("gpu_sharing") == "time-slicing":
            d.pop("gpu_sharing", None)
        if d.get("slo_ms") is None:
            d.pop("slo_ms", None)
        if not d.get("input_values"):  # likewise rows without fixed input values; two values are two configs
            d.pop("input_values", None)
        payload = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def label(self) -> str:
        opts = "".join(f"/{k}={v}" for k, v in self.options)
        rep = f"/r{self.repeat}" if self.repeat else ""
        pm = f"/pm={self.power_mode}" if self.power_mode is not None else ""
        load = f"/rate={self.rate_hz:g}" if self.rate_hz is not None else ""
        load += f"/slo={self.slo_ms:g}ms" if self.slo_ms is not None else ""
        load += "/mps" if self.gpu_sharing == "mps" else ""
        load += "".join(f"/{k}={v}" for k, v in self.input_values)
        return (f"{self.model}/{self.backend}/{self.precision}/b{self.batch}/{self.placement}/{self.mode}"
                f"{opts}{pm}{load}{rep}")

    @property
    def scenario(self) -> str:
        """closed-loop (each instance issues its next inference when the last is done), fixed-rate (each
        instance is an open-loop stream), or slo-search (a fixed-rate probe of a search under slo_ms)."""
        if self.rate_hz is None:
            return "closed-loop"
        return "fixed-rate" if self.slo_ms is None else "slo-search"

    @property
    def uses_gpu(self) -> bool:
        """Some placement is a CUDA GPU ('cuda', 'gpu', 'cuda:N')."""
        return any(p in ("cuda", "gpu") or p.startswith("cuda:") for p in self.placements)
