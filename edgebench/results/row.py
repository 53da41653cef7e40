"""A results.csv row as the row steps write it, and the computations of the steps that need nothing but the row.

pipeline/row_steps.py runs the row steps in order; each writes the columns results.schema says it owns (the
`step` next to each column) and reads the columns of the steps before it. `Row.put` refuses a column the step does
not own (RowAssemblyError names the step and the owner) and a value of the wrong type (ColumnTypeError). This module
never calls into another stage: what a step needs from the measurement, the pipeline passes in as data.

The rules where more than one source could fill a column belong to the one step that owns it:
  telemetry    one entry per sampler, in the profile's order (merge_telemetry): per column the first sampler that
               measured it (dgpu lists nvml before host: GPU power fills the row); except throttled (true when
               any sampler reported throttling, false when samplers looked and none did, empty when none could
               tell), throttle_reasons (every sampler's, ';'-joined) and telemetry_source (every sampler, '+'-joined)
  tensor_cores tensor_core_evidence is the kernel profile's text when a profile ran, else the backend's (TensorRT:
               the layer precisions the engine builder chose)
  slo          slo_ms is the SLO step's (the load step leaves the configured bound to it)

status and reason are the outcome step's (outcome_fields), in one order: skipped by the plan | failed (the reason,
then the artifact, GPU-sharing and probe notes) | the runner's judgment, then invalid for each telemetry fault,
invalid when throttled, then notes: the artifact (a file already quantized), GPU sharing, the probe; then the SLO
step's note (judged on the outcome so far: judged_outcome); then, unless failed, layer profile, accuracy vs FP32,
accuracy vs labels.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgebench import __version__
from edgebench.config.run_config import RunConfig
from edgebench.results.schema import COLUMN_STEPS, ColumnTypeError, type_problem

TELEMETRY_JOINED = {"throttle_reasons": ";", "telemetry_source": "+"}
THROTTLE_SOURCES = ("nvml", "jetson_throttle")  # the samplers that read throttling
MEASURED = ("ok", "invalid")


class RowAssemblyError(ValueError):
    """A step wrote a column it does not own (or one that is no column): an internal error."""


class Row(dict):
    """An assembled row: column -> value; `writers`: column -> the step that wrote it; `notes`: step -> what it adds
    to the reason (the outcome step reads them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writers: dict[str, str] = {}
        self.notes: dict[str, str] = {}

    def put(self, step: str, fields: Mapping[str, Any]) -> None:
        """Write `step`'s columns; "" and None are both an empty cell (None, as the reader gives it back)."""
        for name, value in check_fields(step, fields, step).items():
            if name in self.writers:
                raise RowAssemblyError(f"column {name!r} written twice: by step {self.writers[name]!r} and {step!r}")
            self[name] = None if value == "" else value
            self.writers[name] = step


def check_fields(writer: str, fields: Mapping[str, Any], owner: str) -> Mapping[str, Any]:
    """`fields` when every one is a column `owner` owns, with its column's type; `writer` names who wrote them."""
    for name, value in fields.items():
        if name not in COLUMN_STEPS:
            raise RowAssemblyError(f"step {writer!r} wrote {name!r}, which is not a results column")
        if COLUMN_STEPS[name] != owner:
            raise RowAssemblyError(f"column {name!r} written by two steps: {writer!r} and {COLUMN_STEPS[name]!r}, "
                                   f"its owner in results.schema")
        if problem := type_problem(name, value):
            raise ColumnTypeError(f"column {name!r} written by step {writer!r}: {problem}")
    return fields


@dataclass(frozen=True)
class IdleBaseline:
    power_w: float  # mean power with nothing running (pipeline.idle.idle_baseline)
    gpu_board_ok: bool  # it also holds for a gpu-board row (measured on every GPU the row's nvml sampler reads)


@dataclass
class Verdict:
    """What decides status and reason, as the pipeline found it; the outcome step applies it in its stated order."""

    skip_reason: str | None = None  # the plan dropped the config
    failure: str | None = None  # nothing measured: an instance died, a bad input, an internal error
    judged: tuple[str, str] | None = None  # runner.metrics.judge: ("ok" | "invalid", reason)
    artifact_notes: list[str] = field(default_factory=list)  # the file the row ran from (one already quantized)
    telemetry_faults: list[str] = field(default_factory=list)
    sharing_notes: list[str] = field(default_factory=list)  # runner.mps: the MPS daemon's notes
    probe_notes: str = ""  # pipeline.probe_step: where the probe (accuracy, kernel/layer profile) failed
    layer_profile_note: str = ""
    accuracy_notes: list[str] = field(default_factory=list)
    labels_note: str = ""


def identity(cfg: RunConfig, run_id: str, index: int, power_mode: str | None = None) -> dict[str, Any]:
    """The identity step's columns: what ran and where it sits in the run. `power_mode`: the mode as nvpmodel named
    it after the switch (default: the config's)."""
    return {
        "edgebench_version": __version__,
        "run_id": run_id,
        "row_index": index,
        "config_hash": cfg.config_hash(),
        "workload": cfg.workload_cell,
        "repeat": cfg.repeat,
        "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": cfg.model,
        "backend": cfg.backend,
        "precision": cfg.precision,
        "batch": cfg.batch,
        "instances": cfg.instances,
        "mode": cfg.mode,
        "placement": cfg.placement,
        "threads_per_instance": cfg.threads_per_instance,
        "power_mode": power_mode if power_mode is not None else cfg.power_mode,
        "scenario": cfg.scenario,
        "gpu_sharing": cfg.gpu_sharing if cfg.uses_gpu else None,
    }


# ----------------------------------------------------------------------------------------------- outcome

class Outcome:
    """status and reason, changed only by these steps (a skipped or failed row stays so)."""

    def __init__(self, status: str, reason: str = "") -> None:
        self.status = status
        self.reasons = [reason] if reason else []

    def invalidate(self, reason: str) -> None:
        if self.status == "ok":
            self.status = "invalid"
        self.note(reason)

    def note(self, text: str) -> None:
        if text:
            self.reasons.append(text)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def judged_outcome(verdict: Verdict, throttled: bool | None, throttle_reasons: str | None) -> Outcome:
    """The outcome up to the SLO step's note (module docstring): its status is final, its reason so far."""
    if verdict.skip_reason is not None:
        return Outcome("skipped", verdict.skip_reason)
    if verdict.failure is not None or verdict.judged is None:
        out = Outcome("failed", verdict.failure or "no measurement")
    else:
        out = Outcome(*verdict.judged)
        for fault in verdict.telemetry_faults:
            out.invalidate(fault)
        if throttled:
            out.invalidate(f"device throttled: {throttle_reasons}")
    for note in (*verdict.artifact_notes, *verdict.sharing_notes, verdict.probe_notes):
        out.note(note)
    return out


def outcome_fields(verdict: Verdict, throttled: bool | None, throttle_reasons: str | None,
                   slo_note: str = "") -> dict[str, Any]:
    """The outcome step: status and reason, in the one order the module docstring states."""
    out = judged_outcome(verdict, throttled, throttle_reasons)
    if verdict.skip_reason is None:
        out.note(slo_note)
    if out.status in MEASURED:
        for note in (verdict.layer_profile_note, *verdict.accuracy_notes, verdict.labels_note):
            out.note(note)
    return {"status": out.status, "reason": out.reason}


# ----------------------------------------------------------------------------------------------- derived steps

def merge_telemetry(samplers: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The telemetry step's columns from the per-sampler fields, by the rules in the module docstring."""
    out: dict[str, Any] = {}
    for sampler, fields in samplers:
        for name, value in check_fields(f"telemetry:{sampler}", fields, "telemetry").items():
            if name == "throttled":
                out[name] = value if out.get(name) is None else (bool(out[name]) or bool(value))
            elif name in TELEMETRY_JOINED:
                if value:
                    out[name] = TELEMETRY_JOINED[name].join(v for v in (out.get(name), value) if v)
                else:
                    out.setdefault(name, None)
            elif out.get(name) is None:
                out[name] = value
    return out


def energy_fields(row: Mapping[str, Any], idle: IdleBaseline | None) -> dict[str, Any]:
    """The energy step: energy_per_inference_mj (energy_j / samples), and with an idle baseline that applies to the
    row (a gpu-board row only when the baseline covers its GPUs) power_w_idle and energy_per_inference_dynamic_mj."""
    energy_j, samples = row.get("energy_j"), row.get("samples")
    if energy_j is None or not samples:
        return {}
    fields = {"energy_per_inference_mj": energy_j * 1000.0 / samples}
    power_w = row.get("power_w_mean")
    if idle is None or power_w is None or (row.get("power_scope") == "gpu-board" and not idle.gpu_board_ok):
        return fields
    dynamic_j = (power_w - idle.power_w) * row["window_s"]
    return {**fields, "power_w_idle": idle.power_w, "energy_per_inference_dynamic_mj": dynamic_j * 1000.0 / samples}


def why_empty(row: Mapping[str, Any], samplers: Sequence[str], idle_absent: str | None,
              latency: Sequence[str] = ()) -> str | None:
    """The empty_reasons step for a measured row (status ok or invalid): why a column a reader could take for an
    answer is empty, one 'column[, column]: why' entry each, '; '-joined, or None when no column needs one.
    `idle_absent`: why there is no idle baseline; None when there is one (an empty power_w_idle then means it does
    not apply: measured on one GPU only, CUDA's GPU 0, the row's power covers other or more GPUs). `latency`: the entries of the latency
    percentiles too few inferences back (runner.metrics.percentile_gaps), first: validity is per metric, so an
    unbacked percentile is an empty cell with its reason here, never an invalid row."""
    out = list(latency)
    if row.get("throttled") is None:
        ran = ", ".join(samplers) or "none"
        out.append(f"throttled, throttle_reasons: not checked (this row's samplers {ran} do not read throttling, "
                   f"{' and '.join(THROTTLE_SOURCES)} do)")
    if row.get("power_mode") is None:
        out.append("power_mode: not switched by this sweep (power.modes not set), system.json records the mode")
    if row.get("gpu_sharing") is None:
        out.append("gpu_sharing: no CUDA placement in this row")
    if row.get("arrival") in ("even", "aligned") and row.get("arrival_seed") is None:
        out.append(f"arrival_seed: {row['arrival']} arrivals draw nothing")
    if row.get("power_w_idle") is None:
        if row.get("power_w_mean") is None:
            why = "no power measured in this row (energy_source says why)"
        elif idle_absent is not None:
            why = idle_absent
        else:
            why = ("the idle baseline was measured on one GPU only (CUDA's GPU 0: the first index CUDA_VISIBLE_DEVICES "
                   "names, else NVML GPU 0); this row's power covers other or more GPUs")
        out.append(f"power_w_idle, energy_per_inference_dynamic_mj: {why}")
    return "; ".join(out) or None
