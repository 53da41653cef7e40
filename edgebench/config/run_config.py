"""One row of a sweep (`RunConfig`): everything that decides what is measured, its hash (--resume)
and its label. Built by plan.py from a profile; checked on construction.

The measurement settings a profile's `run` section gives (warmup_s, duration_s, ...) take their defaults from
sections.RunSection, their one home. A field added after rows were first hashed declares the value it is left out
of the hash at (`omitted_from_hash_when`), so rows made before it existed keep their hashes (--resume finds them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from edgebench.config.sections import ARRIVALS, GPU_SHARING, MODES, PRECISIONS, RunSection
from edgebench.errors import ConfigError
from edgebench.placement import Placement, placements_of

RUN = RunSection()  # the defaults of the run settings every row carries
HASH_OMIT = "omitted_from_hash_when"
HASH_OMIT_IF = "omitted_from_hash_if"


def omitted_from_hash_when(value: Any) -> dict[str, Any]:
    """Field metadata: the field is left out of config_hash() while it holds `value`."""
    return {HASH_OMIT: value}


def omitted_from_hash_if(test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Field metadata: the field is left out of config_hash() when `test` (of the config as a dict) is true."""
    return {HASH_OMIT_IF: test}


@dataclass(frozen=True)
class RunConfig:
    """One row of a sweep: everything that decides what is measured."""

    model: str
    backend: str
    precision: str
    batch: int
    placements: tuple[Placement, ...]  # one per instance, e.g. ("cpu", "cpu") or ("gpu", "dla0"); texts are parsed
    mode: str = "process"
    threads_per_instance: int = 1
    warmup_s: float = RUN.warmup_s
    duration_s: float = RUN.duration_s
    max_duration_s: float = RUN.max_duration_s
    min_inferences: int = RUN.min_inferences
    sub_windows: int = RUN.sub_windows
    stability_tolerance_pct: float = RUN.stability_tolerance_pct
    load_timeout_s: float = RUN.load_timeout_s
    barrier_timeout_s: float = RUN.barrier_timeout_s
    collect_timeout_s: float = RUN.collect_timeout_s
    seed: int = RUN.seed
    accuracy_samples: int = RUN.accuracy_samples
    repeat: int = 0  # index among run.repeats identical measurements
    kernel_profile_steps: int = RUN.kernel_profile_steps
    options: tuple[tuple[str, Any], ...] = field(default_factory=tuple)  # backend options, sorted
    # Jetson nvpmodel mode (name or id as written in power.modes); None = unchanged
    power_mode: str | None = field(default=None, metadata=omitted_from_hash_when(None))
    # open loop: arrivals per second per instance (stream); None = closed loop
    rate_hz: float | None = field(default=RUN.rate_hz, metadata=omitted_from_hash_when(None))
    # "mps": the row's instances run under an edgebench-started MPS daemon
    gpu_sharing: str = field(default="time-slicing", metadata=omitted_from_hash_when("time-slicing"))
    # a probe of an SLO search: the row says whether its p99 stayed under this
    slo_ms: float | None = field(default=RUN.slo_ms, metadata=omitted_from_hash_when(None))
    # a probe of an SLO search: how long its verdict must hold (p99 + the growth its window cannot exclude over it);
    # rows without an SLO keep their hashes
    slo_horizon_s: float = field(default=RUN.slo_horizon_s, metadata=omitted_from_hash_if(
        lambda d: d.get("slo_ms") is None))
    # open loop: how the streams' arrivals sit in time (runner/arrivals.py); closed-loop and even rows (what every
    # fixed-rate row was before arrival models existed) keep their hashes
    arrival: str = field(default=RUN.arrival, metadata=omitted_from_hash_if(
        lambda d: d.get("rate_hz") is None or d.get("arrival") == "even"))
    # fixed input values (--value, a spec's values:), sorted; two values are two configs
    input_values: tuple[tuple[str, Any], ...] = field(default=(), metadata=omitted_from_hash_when({}))
    # everything else that changes what runs and the sweep's axes do not say (pipeline/workload.py): an external
    # ONNX file's content and its resolved inputs, given shapes, --data, weights, a labelled data set, int8
    # calibration settings; sorted (key, text) pairs. Empty (a model spec as is, the profile's defaults): left out
    # of the hash, so such rows keep the hashes they had before it existed
    workload: tuple[tuple[str, str], ...] = field(default=(), metadata=omitted_from_hash_when({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "placements", placements_of(self.placements))  # texts from tests, plan.json
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
        if self.arrival not in ARRIVALS:
            raise ConfigError("run config", "arrival", f"{self.arrival!r} is not one of {', '.join(ARRIVALS)}")
        if self.slo_ms is not None and (self.rate_hz is None or not self.slo_ms > 0):
            raise ConfigError("run config", "slo_ms", "needs rate_hz and must be > 0")
        if not self.slo_horizon_s >= 0:
            raise ConfigError("run config", "slo_horizon_s", f"{self.slo_horizon_s} must be >= 0")
        if self.arrival not in ARRIVALS:
            raise ConfigError("run config", "arrival", f"{self.arrival!r} is not one of {', '.join(ARRIVALS)}")
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
        d["placements"] = [str(p) for p in self.placements]
        d["options"] = dict(self.options)
        d["input_values"] = dict(self.input_values)
        d["workload"] = dict(self.workload)
        return d

    def config_hash(self) -> str:
        """Stable identity of what is measured (used by --resume)."""
        d = self.to_dict()
        omit = [f.name for f in fields(self)  # fields added later are left out at their old value: old rows keep
                if (HASH_OMIT in f.metadata and d[f.name] == f.metadata[HASH_OMIT])  # their hashes
                or (HASH_OMIT_IF in f.metadata and f.metadata[HASH_OMIT_IF](d))]
        for name in omit:
            del d[name]
        payload = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def label(self) -> str:
        opts = "".join(f"/{k}={v}" for k, v in self.options)
        rep = f"/r{self.repeat}" if self.repeat else ""
        pm = f"/pm={self.power_mode}" if self.power_mode is not None else ""
        load = f"/rate={self.rate_hz:g}/{self.arrival}" if self.rate_hz is not None else ""
        load += f"/slo={self.slo_ms:g}ms" if self.slo_ms is not None else ""
        load += f"/horizon={self.slo_horizon_s:g}s" if self.slo_ms is not None and self.slo_horizon_s != \
            RUN.slo_horizon_s else ""
        load += "/mps" if self.gpu_sharing == "mps" else ""
        load += "".join(f"/{k}={v}" for k, v in self.input_values)
        return (f"{self.model}/{self.backend}/{self.precision}/b{self.batch}/{self.placement}/{self.mode}"
                f"{opts}{pm}{load}{rep}")

    @property
    def workload_cell(self) -> str:
        """results.csv's workload column: every workload pair, the fixed input values and the seed of the synthetic
        inputs as 'key=text', '; '-joined (never empty: an empty cell is a row written before the column existed)."""
        values = ",".join(f"{k}:{v}" for k, v in self.input_values)
        pairs = [*self.workload, *([("values", values)] if values else []), ("seed", str(self.seed))]
        return "; ".join(f"{k}={v}" for k, v in pairs)

    @property
    def options_cell(self) -> str:
        """The backend options as results.csv's options column holds them: 'k=v;k=v' (sorted), '' for none."""
        return ";".join(f"{k}={v}" for k, v in self.options)

    @property
    def scenario(self) -> str:
        """closed-loop (each instance issues its next inference when the last is done), fixed-rate (each
        instance is an open-loop stream), or slo-search (a fixed-rate probe of a search under slo_ms)."""
        if self.rate_hz is None:
            return "closed-loop"
        return "fixed-rate" if self.slo_ms is None else "slo-search"

    @property
    def uses_gpu(self) -> bool:
        """Some placement is a CUDA GPU ('cuda', 'gpu', 'cuda:N', 'gpu:N')."""
        return any(p.is_gpu for p in self.placements)
