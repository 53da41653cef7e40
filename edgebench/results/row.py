"""The one place where the parts of a measurement become a results.csv row.

The pipeline hands over what it has, as plain dicts (`RowParts`); each part claims the columns it has keys for:

  identity   the config and the run (identity()): model ... placement, run_id, row_index, config_hash, ...
  setup      what the row ran from (pipeline): weights, onnx_sha256, artifact_dir, options, warmup_s,
             calibration_source, input_shapes, batch_note, accuracy_samples
  backend    the backend's facts: provider and Prepared.info["row_fields"] (trt engines, ORT's DLA check)
  metrics    the runner's summary of the window: throughput, latency percentiles, window, stability
  telemetry  one part per sampler, in the profile's order (telemetry.row_fields.telemetry_fields of its timeline)
  load       fixed-rate / SLO fields (runner.load.load_fields)
  accuracy   agreement with the FP32 reference (evaluation.accuracy.row_fields)
  labelled   the labelled data set and its scores (models.labelled)
  kernels    tensor-core evidence from a kernel profile (pipeline.execute.kernel_fields)
  thermal    the opt-in cooldown before the row and the temperature at its start and end (pipeline.cooldown)
  slo        an SLO probe's slo_ms / slo_met / slo_verdict (runner.load.slo_fields): the one part that depends on
             the outcome, so it comes as a function of (status, reason so far) that the outcome step calls

A column claimed by two parts is refused (RowAssemblyError names the column and both parts), and every value must
have its column's type (schema.type_problem; ColumnTypeError names the column and the part). Where two writers of
one column are legitimate the choice is a rule stated here, never the order of dict updates:

  tensor_core_evidence  the kernel profile's text when a profile ran (it saw the kernels that ran), else the
                        backend's (TensorRT: the layer precisions the engine builder chose)
  slo_ms                the SLO part's (load states the same configured bound)
  telemetry columns     per column, the first sampler in the profile's order that measured it (dgpu lists nvml
                        before host: GPU power fills the row); except
    throttled           true when any sampler reported throttling (nvml clock-event reasons, Jetson sysfs
                        evidence), false when samplers looked and none did, empty when none could tell
    throttle_reasons    every sampler's reasons, ';'-joined in the profile's order
    telemetry_source    every sampler, '+'-joined in the profile's order

Derived after the parts (each from columns already in the row): energy_per_inference_mj (energy_j / samples)
and, with an idle baseline that applies to the row, power_w_idle and energy_per_inference_dynamic_mj; then the
power-calibration step (a function the pipeline hands over, telemetry.power_calibration): power_w_mean_calibrated,
energy_per_inference_calibrated_mj and power_calibration, from the raw power columns, which stay as measured.

status and reason are not columns a part writes but the row's Outcome, built by explicit steps in one order
(outcome()): skipped by the plan | failed (the reason, then the GPU-sharing and probe notes; then the SLO part) | the
runner's judgment, then invalid for each telemetry fault, invalid when throttled, then notes: GPU sharing, the probe; the SLO
part, judged on the status and reason so far, and its note; layer profile, accuracy vs FP32, accuracy vs labels.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edgebench import __version__
from edgebench.config.run_config import RunConfig
from edgebench.results.schema import COLUMN_NAMES, ColumnTypeError, type_problem

PART_ORDER = ("identity", "setup", "backend", "metrics", "telemetry", "thermal", "load", "accuracy", "labelled",
              "kernels", "slo")
OUTCOME_COLUMNS = ("status", "reason")
DERIVED = {"energy_per_inference_mj": "energy", "power_w_idle": "energy", "energy_per_inference_dynamic_mj": "energy",
           "power_w_mean_calibrated": "calibration", "energy_per_inference_calibrated_mj": "calibration",
           "power_calibration": "calibration"}
# columns two parts may both write, and the part whose non-empty value wins (the rule in the docstring)
PREFERRED = {"tensor_core_evidence": ("kernels", "backend"), "slo_ms": ("slo", "load")}
# the SLO part: (status, reason so far) -> (slo columns, a note for the reason or "")
SloJudge = Callable[[str, str], tuple[dict[str, Any], str]]
# the power-calibration step: the row with its energy columns -> power_w_mean_calibrated, ..., power_calibration
Calibrate = Callable[[dict[str, Any]], dict[str, Any]]
TELEMETRY_JOINED = {"throttle_reasons": ";", "telemetry_source": "+"}


class RowAssemblyError(ValueError):
    """Two parts wrote one column, or a part wrote a column that is not a part's to write: an internal error."""


class Row(dict):
    """An assembled row: column -> value, and `writers`: column -> the part (or step) that wrote it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writers: dict[str, str] = {}


@dataclass(frozen=True)
class IdleBaseline:
    power_w: float  # mean power with nothing running (pipeline.idle.idle_baseline)
    gpu_board_ok: bool  # it also holds for a gpu-board row (measured on every GPU the row's nvml sampler reads)


@dataclass
class Verdict:
    """What decides status and reason, as the pipeline found it; outcome() applies it in its stated order."""

    skip_reason: str | None = None  # the plan dropped the config
    failure: str | None = None  # nothing measured: an instance died, a bad input, an internal error
    judged: tuple[str, str] | None = None  # runner.metrics.judge: ("ok" | "invalid", reason)
    telemetry_faults: list[str] = field(default_factory=list)
    sharing_notes: list[str] = field(default_factory=list)  # runner.mps: the MPS daemon's notes
    probe_notes: str = ""  # pipeline.probe_step: where the probe (accuracy, kernel/layer profile) failed
    layer_profile_note: str = ""
    accuracy_notes: list[str] = field(default_factory=list)
    labels_note: str = ""


@dataclass
class RowParts:
    identity: dict[str, Any] = field(default_factory=dict)  # identity(): the sweep adds it to what execute measured
    setup: dict[str, Any] = field(default_factory=dict)
    backend: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    telemetry: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (sampler, fields), profile order
    load: dict[str, Any] = field(default_factory=dict)
    accuracy: dict[str, Any] = field(default_factory=dict)
    labelled: dict[str, Any] = field(default_factory=dict)
    kernels: dict[str, Any] = field(default_factory=dict)
    thermal: dict[str, Any] = field(default_factory=dict)  # pipeline.cooldown: cooldown_s/_note, temp_c_start/_end
    slo: SloJudge | None = None
    calibrate: Calibrate | None = None
    idle: IdleBaseline | None = None
    verdict: Verdict = field(default_factory=Verdict)


def identity(cfg: RunConfig, run_id: str, index: int, power_mode: str | None = None) -> dict[str, Any]:
    """The identity part: what ran and where it sits in the run. `power_mode`: the mode as nvpmodel named it after
    the switch (default: the config's)."""
    return {
        "edgebench_version": __version__,
        "run_id": run_id,
        "row_index": index,
        "config_hash": cfg.config_hash(),
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

    @classmethod
    def failed(cls, reason: str) -> Outcome:
        return cls("failed", reason)

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


def outcome(verdict: Verdict, throttled: bool | None, throttle_reasons: str | None,
            slo: SloJudge | None = None) -> tuple[Outcome, dict[str, Any]]:
    """The row's status and reason, in the one order the module docstring states, and the SLO part's columns."""
    slo_fields: dict[str, Any] = {}
    if verdict.skip_reason is not None:
        return Outcome("skipped", verdict.skip_reason), slo_fields
    if verdict.failure is not None or verdict.judged is None:
        out = Outcome.failed(verdict.failure or "no measurement")
        for note in (*verdict.sharing_notes, verdict.probe_notes):
            out.note(note)
    else:
        out = Outcome(*verdict.judged)
        for fault in verdict.telemetry_faults:
            out.invalidate(fault)
        if throttled:
            out.invalidate(f"device throttled: {throttle_reasons}")
        for note in (*verdict.sharing_notes, verdict.probe_notes):
            out.note(note)
    if slo is not None:
        slo_fields, slo_note = slo(out.status, out.reason)
        out.note(slo_note)
    if out.status != "failed":
        for note in (verdict.layer_profile_note, *verdict.accuracy_notes, verdict.labels_note):
            out.note(note)
    return out, slo_fields


# ----------------------------------------------------------------------------------------------- the parts

def _checked(part: str, fields: dict[str, Any]) -> dict[str, Any]:
    for name, value in fields.items():
        if name in OUTCOME_COLUMNS or (name in DERIVED and DERIVED[name] != part):
            step = "the outcome" if name in OUTCOME_COLUMNS else f"the {DERIVED[name]} step"
            raise RowAssemblyError(f"part {part!r} wrote column {name!r}, which only {step} of results.row writes")
        if name not in COLUMN_NAMES:
            raise RowAssemblyError(f"part {part!r} wrote {name!r}, which is not a results column")
        if problem := type_problem(name, value):
            raise ColumnTypeError(f"column {name!r} written by part {part!r}: {problem}")
    return fields


def merge_telemetry(samplers: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One telemetry part from the per-sampler parts, by the rules in the module docstring."""
    out: dict[str, Any] = {}
    for sampler, fields in samplers:
        for name, value in _checked(f"telemetry:{sampler}", fields).items():
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


def assemble_row(parts: RowParts) -> Row:
    """The row of results.csv from its parts (module docstring: who writes what, the rules, the outcome)."""
    row = Row()
    claims: dict[str, list[tuple[str, Any]]] = {}
    telemetry = merge_telemetry(parts.telemetry)
    result, slo = outcome(parts.verdict, telemetry.get("throttled"), telemetry.get("throttle_reasons"), parts.slo)
    named = {"identity": parts.identity, "setup": parts.setup, "backend": parts.backend, "metrics": parts.metrics,
             "telemetry": telemetry, "load": parts.load, "accuracy": parts.accuracy, "labelled": parts.labelled,
             "kernels": parts.kernels, "thermal": parts.thermal, "slo": slo}
    for part in PART_ORDER:
        for name, value in _checked(part, named[part]).items():
            claims.setdefault(name, []).append((part, value))
    for name, writers in claims.items():
        part, value = writers[0]
        if len(writers) > 1:
            rule = PREFERRED.get(name)
            if rule is None or any(p not in rule for p, _ in writers):
                raise RowAssemblyError(f"column {name!r} written by two parts: "
                                       + " and ".join(repr(p) for p, _ in writers))
            by_part = dict(writers)
            part = next((p for p in rule if by_part.get(p) is not None), rule[0])
            value = by_part.get(part)
        _put(row, name, value, part)
    _derive_energy(row, parts.idle)
    if parts.calibrate is not None:
        for name, value in _checked("calibration", parts.calibrate(row)).items():
            _put(row, name, value, "calibration")
    _put(row, "status", result.status, "outcome")
    _put(row, "reason", result.reason, "outcome")
    return row


def _put(row: Row, name: str, value: Any, writer: str) -> None:
    row[name] = None if value == "" else value  # "" and None are both an empty cell: None, as the reader gives
    row.writers[name] = writer


def _derive_energy(row: Row, idle: IdleBaseline | None) -> None:
    """energy_per_inference_mj, and the dynamic energy above an idle baseline that applies to the row."""
    energy_j, samples = row.get("energy_j"), row.get("samples")
    if energy_j is None or not samples:
        return
    _put(row, "energy_per_inference_mj", energy_j * 1000.0 / samples, "energy")
    power_w = row.get("power_w_mean")
    if idle is None or power_w is None or (row.get("power_scope") == "gpu-board" and not idle.gpu_board_ok):
        return
    _put(row, "power_w_idle", idle.power_w, "energy")
    dynamic_j = (power_w - idle.power_w) * row["window_s"]
    _put(row, "energy_per_inference_dynamic_mj", dynamic_j * 1000.0 / samples, "energy")
