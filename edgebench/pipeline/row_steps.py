"""The row steps: how one config's results.csv row is computed from what was measured, one step after another.

A step has a name and a function of (the facts, the row so far) that returns its columns: the columns
results.schema names it the owner of (the `step` next to each column), no others (results.row.Row.put refuses them,
naming the step and the owner). It reads the facts (RowFacts: what the sweep and pipeline.execute measured) and the
columns of the steps before it; it never measures anything itself. A step may also return a note for the row's
reason, as (columns, note); the outcome step places the notes in its stated order.

Adding a measurement: its columns in results/schema.py (each naming the new step), a function here and its RowStep in
ROW_STEPS where its inputs are ready; a fact on RowFacts if execute must record something new for it. Importing this
module refuses a column that no step in ROW_STEPS owns and a step that owns no column.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.evaluation.accuracy import cosine_empty_reason
from edgebench.evaluation.tensorcores import kernel_summary
from edgebench.models.inputs import describe_inputs
from edgebench.models.spec import ModelSpec
from edgebench.models.weights import resolve_weights
from edgebench.pipeline.plan import threads_note
from edgebench.pipeline.probe_step import probe_fields
from edgebench.results.row import (
    MEASURED,
    IdleBaseline,
    Row,
    Verdict,
    energy_fields,
    judged_outcome,
    merge_telemetry,
    outcome_fields,
    why_empty,
)
from edgebench.results.schema import COLUMNS, SchemaError, ownership_problems
from edgebench.runner.backlog import LatencyTrend, trend_gap
from edgebench.runner.load import arrival_fields, load_fields, slo_fields
from edgebench.runner.metrics import Summary, percentile_gaps
from edgebench.runner.orchestrator import RunOutcome
from edgebench.runner.probe import ProbeResult
from edgebench.telemetry.host_share import busy_reading, not_checked_reason
from edgebench.telemetry.power_calibration import PowerCalibration, calibrated_fields
from edgebench.telemetry.row_fields import telemetry_fields


@dataclass
class RowFacts:
    """What a row's steps compute from. The sweep gives identity and thermal; pipeline.execute the rest, as far as
    it got (a skipped row has identity and verdict only; a row whose instances failed has no summary)."""

    identity: dict[str, Any] = field(default_factory=dict)  # results.row.identity()
    thermal: dict[str, Any] = field(default_factory=dict)  # pipeline.cooldown: cooldown_s/_note, temp_c_start/_end
    verdict: Verdict = field(default_factory=Verdict)  # what decides status and reason
    cfg: RunConfig | None = None
    profile: Profile | None = None
    spec: ModelSpec | None = None
    artifact: Any = None  # the precision variant the backend prepared from (models.artifacts)
    prepared: Any = None  # backends.base.Prepared
    row_dir: Path | None = None
    accuracy_samples: int | None = None  # inputs compared with FP32 / labelled images scored
    probe: ProbeResult | None = None
    run: RunOutcome | None = None  # runner.orchestrator.run_instances: None when the instances never ran
    summary: Summary | None = None  # runner.metrics.summarize of a run that measured
    trend: LatencyTrend | None = None  # runner.backlog.window_trend: a fixed-rate window's latency trend
    setup_s: float | None = None  # pipeline.phases: the row's wall time outside its window and warm-up
    main_peak: Any = None  # pipeline.main_memory.RowPeak, started with the row: the harness process's peak
    accuracy: dict[str, Any] = field(default_factory=dict)  # pipeline.execute.accuracy_part: agreement with FP32
    labelled: dict[str, Any] = field(default_factory=dict)  # models.labelled: the data set and its scores
    samplers: tuple[str, ...] = ()  # the telemetry samplers the row ran, in the profile's order
    idle: IdleBaseline | None = None
    idle_absent: str = ""  # why there is no idle baseline (pipeline.empty_reasons.idle_absent)
    calibration: tuple[PowerCalibration | None, str] | None = None  # pipeline.execute.power_calibration


Columns = Mapping[str, Any]
StepOutput = Columns | tuple[Columns, str]  # its columns, or its columns and a note for the reason


@dataclass(frozen=True)
class RowStep:
    name: str  # the owner named next to each of its columns in results.schema
    compute: Callable[[RowFacts, Row], StepOutput]


# ------------------------------------------------------------------------------------------------ the steps

def setup_columns(f: RowFacts, row: Row) -> Columns:
    """What the row ran from and how long getting there took."""
    if f.cfg is None or f.prepared is None or f.spec is None or f.row_dir is None or f.profile is None:
        return {}
    cfg = f.cfg
    return {
        "weights": weights_cell(f.spec, f.artifact),
        "onnx_sha256": f.artifact.sha256,
        "artifact_dir": str(f.row_dir.relative_to(f.row_dir.parent.parent)),
        "options": cfg.options_cell,
        "accuracy_samples": f.accuracy_samples,
        "warmup_s": cfg.warmup_s,
        "calibration_source": calibration_label(f.artifact.sidecar) if cfg.precision == "int8" else None,
        "input_shapes": describe_inputs(f.prepared.inputs, cfg.batch),
        "batch_note": batch_note(f.spec, cfg.batch),
        "threads_note": threads_note(f.profile, cfg.instances, os.cpu_count() or 1, cfg.threads_per_instance),
        "probe": probe_fields(f.probe, "").get("probe"),
        "workers": f.run.workers if f.run is not None else None,
        "setup_s": f.setup_s,
    }


def backend_columns(f: RowFacts, row: Row) -> Columns:
    """The backend's facts: provider and Prepared.info["row_fields"] (trt engines, ORT's DLA check); its tensor-core
    evidence goes to the tensor_cores step."""
    if f.prepared is None:
        return {}
    fields = {k: v for k, v in f.prepared.info.get("row_fields", {}).items() if k != "tensor_core_evidence"}
    return {"provider": f.prepared.info.get("provider", ""), **fields}


def metrics_columns(f: RowFacts, row: Row) -> Columns:
    """The runner's summary of the window: throughput, latency percentiles, window, stability."""
    s = f.summary
    if s is None:
        return {}
    return {
        "throughput_ips": s.throughput_ips,
        "window_s": s.window_s,
        "inferences": s.inferences,
        "samples": s.samples,
        "per_instance_ips": ";".join(f"{v:.6g}" for v in s.per_instance_ips),
        "stability_pct": s.stability_pct,
        "stability_bound_pct": s.stability_bound_pct,
        **{f"latency_ms_{k}": s.latency_ms.get(k) for k in ("mean", "p50", "p90", "p95", "p99", "max", "min")},
    }


def telemetry_columns(f: RowFacts, row: Row) -> Columns:
    """Every sampler's timeline over the window, merged by results.row.merge_telemetry's rules."""
    if f.summary is None or f.run is None:
        return {}
    start, end = f.summary.window_start_ns, f.summary.window_end_ns
    return merge_telemetry([(tl.source, telemetry_fields([tl], start, end)) for tl in f.run.timelines])


def busy_host_columns(f: RowFacts, row: Row) -> StepOutput:
    """Others' share of the CPU (and of the row's GPU) over the window, and where it is material a note for the
    reason with the figure (telemetry/host_share.py); the status stays the window's."""
    if f.summary is None or f.run is None or f.cfg is None:
        return {}
    reading = busy_reading(f.run.timelines, f.summary.window_start_ns, f.summary.window_end_ns, f.cfg.placements,
                           f.cfg.threads_per_instance)
    return reading.fields(), reading.note()


def load_columns(f: RowFacts, row: Row) -> Columns:
    """The arrival model (closed for a closed loop) and its seed; fixed-rate rows that measured: offered vs achieved
    rate, queueing vs service time (slo_ms is the slo step's)."""
    if f.cfg is None:
        return {}
    arrival = arrival_fields(f.cfg)
    if f.summary is None or f.run is None:
        return arrival
    return {**arrival, **{k: v for k, v in load_fields(f.cfg, f.run.instances, f.summary).items() if k != "slo_ms"}}


def harness_columns(f: RowFacts, row: Row) -> Columns:
    """The harness process's own peak memory during the row (pipeline.main_memory), read after the steps that pass
    over the row's timestamps (load, slo); empty where the kernel kept the peak from the process's start (the
    column says per row)."""
    peak = f.main_peak
    return {"main_rss_mib_max": peak.mib()} if peak is not None and peak.since_row else {}


def trend_columns(f: RowFacts, row: Row) -> Columns:
    """A fixed-rate row's latency trend over its window and its interval (runner.backlog; judge read the same)."""
    return f.trend.fields() if f.trend is not None else {}


def tensor_core_columns(f: RowFacts, row: Row) -> Columns:
    """tensor_core_time_pct and tensor_core_evidence: the kernel profile's when one ran, else the backend's evidence
    (TensorRT: the layer precisions its builder chose)."""
    engine = f.prepared.info.get("row_fields", {}).get("tensor_core_evidence") if f.prepared is not None else None
    if f.summary is not None and f.run is not None and f.cfg is not None and f.cfg.kernel_profile_steps > 0:
        fields = kernel_fields(f.run.kernels, f.run.kernels_note)
        return {**fields, "tensor_core_evidence": fields.get("tensor_core_evidence") or engine}
    return {"tensor_core_evidence": engine} if engine is not None else {}


def calibration_columns(f: RowFacts, row: Row) -> Columns:
    """power.calibration applied to the raw power columns, which stay as measured."""
    return calibrated_fields(row, *f.calibration) if f.calibration is not None else {}


def slo_columns(f: RowFacts, row: Row) -> StepOutput:
    """An SLO probe's slo_ms / slo_met / slo_verdict, judged on the outcome so far, and its note for the reason."""
    if f.cfg is None or f.cfg.slo_ms is None or f.run is None:
        return {}
    if f.summary is None:  # the instances ran and failed
        return {"slo_ms": f.cfg.slo_ms, "slo_met": False, "slo_verdict": "failed"}
    so_far = judged_outcome(f.verdict, row.get("throttled"), row.get("throttle_reasons"))
    return slo_fields(f.cfg, f.run.instances, f.summary, so_far.status, so_far.reason, trend=f.trend)


def empty_reasons_columns(f: RowFacts, row: Row) -> Columns:
    """A measured row: why a column a reader could take for an answer is empty (results.row.why_empty)."""
    if row.get("status") not in MEASURED:
        return {}
    absent = None if f.idle is not None else (f.idle_absent or "no idle baseline for this sweep")
    latency = percentile_gaps(f.summary, f.cfg) if f.summary is not None and f.cfg is not None else []
    trend = trend_gap(f.cfg, f.summary, f.trend) if f.summary is not None and f.cfg is not None else None
    if row.get("host_busy") is None and f.run is not None:  # about the headline: beside the latency entries
        latency = [*latency, f"host_busy, others_cpu_pct_mean, cpu_taken_by_others_pct: "
                             f"{not_checked_reason(f.run.timelines)}"]
    reasons = [why_empty(row, f.samplers, absent, latency), trend, cosine_empty_reason(row)]
    return {"empty_reasons": "; ".join(r for r in reasons if r) or None}


def identity_columns(f: RowFacts, row: Row) -> Columns:
    """What ran and where it sits in the run (the sweep's results.row.identity)."""
    return f.identity


def thermal_columns(f: RowFacts, row: Row) -> Columns:
    """The cooldown before the row and the temperature at its start and end (the sweep's pipeline.cooldown)."""
    return f.thermal


def accuracy_columns(f: RowFacts, row: Row) -> Columns:
    """Agreement with the FP32 reference (execute compared the probe's outputs: evaluation.accuracy)."""
    return f.accuracy


def labelled_columns(f: RowFacts, row: Row) -> Columns:
    """The labelled data set and the scores against its labels (models.labelled)."""
    return f.labelled


def energy_columns(f: RowFacts, row: Row) -> Columns:
    """Energy per sample, and the dynamic energy above an idle baseline that applies (results.row.energy_fields)."""
    return energy_fields(row, f.idle)


def outcome_columns(f: RowFacts, row: Row) -> Columns:
    """status and reason in their one order (results.row.outcome_fields), with the SLO step's note; then the
    busy_host step's (a busy host named on the row, whatever its status)."""
    fields = outcome_fields(f.verdict, row.get("throttled"), row.get("throttle_reasons"), row.notes.get("slo", ""))
    if busy := row.notes.get("busy_host"):
        fields["reason"] = "; ".join(r for r in (fields["reason"], busy) if r)
    return fields


ROW_STEPS: tuple[RowStep, ...] = (
    RowStep("identity", identity_columns),
    RowStep("setup", setup_columns),
    RowStep("backend", backend_columns),
    RowStep("metrics", metrics_columns),
    RowStep("telemetry", telemetry_columns),
    RowStep("busy_host", busy_host_columns),  # after telemetry: the same timelines, read for others' share
    RowStep("thermal", thermal_columns),
    RowStep("load", load_columns),
    RowStep("trend", trend_columns),
    RowStep("accuracy", accuracy_columns),
    RowStep("labelled", labelled_columns),
    RowStep("tensor_cores", tensor_core_columns),
    RowStep("energy", energy_columns),
    RowStep("calibration", calibration_columns),
    RowStep("slo", slo_columns),
    RowStep("harness", harness_columns),  # after every step that reads the timestamps
    RowStep("outcome", outcome_columns),
    RowStep("empty_reasons", empty_reasons_columns),
)


def run_steps(steps: tuple[RowStep, ...], facts: RowFacts) -> Row:
    """Each step in order, its columns into the row (Row.put checks owner and type), its note kept for the outcome."""
    row = Row()
    for step in steps:
        out = step.compute(facts, row)
        fields, note = out if isinstance(out, tuple) else (out, "")
        row.put(step.name, fields)
        if note:
            row.notes[step.name] = note
    return row


def build_row(facts: RowFacts) -> Row:
    """The results.csv row of one config: ROW_STEPS run in order."""
    return run_steps(ROW_STEPS, facts)


if _problems := ownership_problems(COLUMNS, tuple(s.name for s in ROW_STEPS)):
    raise SchemaError("; ".join(_problems))


# ------------------------------------------------------------------------------------------------ setup helpers

def weights_cell(spec: ModelSpec, artifact: Any) -> str:
    """`weights` column: name and sha256 (edgebench.models.weights), e.g. 'torchvision:ResNet50_Weights.IMAGENET1K_V2
    sha256:11ad3fa6...'; external ONNX rows say from-onnx."""
    return resolve_weights(spec).label if spec.source != "onnx" else str(artifact.weights)


def calibration_label(sidecar: dict[str, Any]) -> str | None:
    """'synthetic (32 samples, seed 0, sha256 0123abcd...)' from an int8 artifact's sidecar record."""
    rec = sidecar.get("calibration") if isinstance(sidecar, dict) else None
    if not isinstance(rec, dict):
        return None
    sha = str(rec.get("sha256") or "")[:16]
    notes = [str(n) for n in sidecar.get("int8_notes") or []]  # opset upgraded / per-tensor, nodes left in float
    return (f"{rec.get('source', '?')} ({rec.get('count', '?')} samples, seed {rec.get('seed', '?')}"
            + (f", sha256 {sha}" if sha else "") + ")" + "".join(f"; {n}" for n in notes))


def batch_note(spec: ModelSpec, batch: int) -> str | None:
    """Says so when the model's graph fixes the batch (the sweep's batches then do not apply)."""
    fixed = spec.fixed_batch
    notes = [] if fixed is None else [f"the model's graph fixes the batch at {fixed}; it runs at batch {batch} only"]
    unbatched = [d.name for d in spec.inputs if d.batch_axis is None]
    if unbatched:
        notes.append(f"no batch axis (fed as is): {', '.join(unbatched)}")
    return "; ".join(notes) or None


def kernel_fields(kernels: list[tuple[str, float]] | None, note: str) -> dict[str, Any]:
    """tensor_core_time_pct and a short evidence string (the top kernels by time) for the row."""
    if not kernels:
        return {"tensor_core_evidence": note or "kernel profile: no GPU kernels recorded"}
    summary = kernel_summary(kernels, top=3)
    top_kernels: list[dict[str, Any]] = summary["top_kernels"]  # type: ignore[assignment]  # kernel_summary's shape
    top = "; ".join(f"{k['name'][:60]} {k['time_us']:.0f}us{' TC' if k['tensor_core'] else ''}" for k in top_kernels)
    return {"tensor_core_time_pct": summary["tensor_core_time_pct"],
            "tensor_core_evidence": f"{summary['tensor_core_kernels']}/{summary['distinct_kernels']} kernels on "
                                   f"tensor cores; top: {top}"}
