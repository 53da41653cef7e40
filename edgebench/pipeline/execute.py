"""Measure one RunConfig: artifacts -> prepare -> instances (+ telemetry) -> the parts of its row, beside the row
files (results.row assembles the row from the parts)."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.atomic_files import write_json_atomic
from edgebench.backends.registry import get_backend
from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.device.system import board_name
from edgebench.evaluation.accuracy import accuracy_feeds, compare_outputs, row_fields
from edgebench.evaluation.tensorcores import kernel_summary
from edgebench.models.inputs import describe_inputs, sample_count
from edgebench.models.spec import ModelSpec
from edgebench.models.weights import resolve_weights
from edgebench.pipeline.empty_reasons import idle_absent
from edgebench.pipeline.idle import idle_applies
from edgebench.pipeline.model_cache import ModelCache
from edgebench.pipeline.phases import PhaseClock
from edgebench.pipeline.plan import threads_note
from edgebench.pipeline.probe_step import probe_fields, row_probe
from edgebench.results.row import IdleBaseline, RowParts
from edgebench.results.row_files import write_row_files
from edgebench.runner import orchestrator  # module-qualified: the jtop sweep test wraps run_instances
from edgebench.runner.load import load_fields, slo_fields
from edgebench.runner.metrics import judge, summarize
from edgebench.runner.mps import gpu_sharing
from edgebench.runner.warm_pool import WarmPool
from edgebench.telemetry import registry
from edgebench.telemetry.power_calibration import (
    PowerCalibration,
    calibrated_fields,
    for_board,
    parse_calibration,
    read_calibration_file,
)
from edgebench.telemetry.row_fields import telemetry_faults, telemetry_fields

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def calibration_label(sidecar: dict[str, Any]) -> str | None:
    """'synthetic (32 samples, seed 0, sha256 0123abcd...)' from an int8 artifact's sidecar record."""
    rec = sidecar.get("calibration") if isinstance(sidecar, dict) else None
    if not isinstance(rec, dict):
        return None
    sha = str(rec.get("sha256") or "")[:16]
    notes = [str(n) for n in sidecar.get("int8_notes") or []]  # opset upgraded / per-tensor, nodes left in float
    return (f"{rec.get('source', '?')} ({rec.get('count', '?')} samples, seed {rec.get('seed', '?')}"
            + (f", sha256 {sha}" if sha else "") + ")" + "".join(f"; {n}" for n in notes))


def kernel_fields(kernels: list[tuple[str, float]] | None, note: str) -> dict[str, Any]:
    """tensor_core_time_pct and a short evidence string (the top kernels by time) for the row."""
    if not kernels:
        return {"tensor_core_evidence": note or "kernel profile: no GPU kernels recorded"}

    summary = kernel_summary(kernels, top=3)
    top = "; ".join(f"{k['name'][:60]} {k['time_us']:.0f}us{' TC' if k['tensor_core'] else ''}"
                    for k in summary["top_kernels"])  # type: ignore[union-attr]
    return {"tensor_core_time_pct": summary["tensor_core_time_pct"],
            "tensor_core_evidence": f"{summary['tensor_core_kernels']}/{summary['distinct_kernels']} kernels on "
                                    f"tensor cores; top: {top}"}


def execute(cfg: RunConfig, profile: Profile, models: ModelCache, row_dir: Path,
            idle_power_w: float | None = None, pool: WarmPool | None = None) -> RowParts:
    """Measure one config; returns the parts of its row beyond the identity (the sweep adds that; results.row
    assembles them). Raises EdgebenchError on bad input.

    The accuracy outputs, the kernel profile and a trt layer profile come from a probe process (pipeline/probe_step)
    that runs before the instances and is reused across the rows it applies to; every phase's wall time goes to
    row.json "phases" and the row's setup_s. `pool`: warm worker processes (run.workers: warm) the instances run in."""

    clock = PhaseClock()
    with clock("export"):
        spec = models.spec(cfg.model)
        models.fp32(spec)  # the exported (or given) fp32 ONNX, cached by content hash
    with clock("precision"):
        artifact = models.variant(spec, cfg.precision)
    with clock("prepare"):
        backend = get_backend(cfg.backend)
        prepared = backend.prepare(cfg, artifact, models.artifacts)
    parts = RowParts(setup={
        "weights": _weights_cell(spec, artifact),
        "onnx_sha256": artifact.sha256,
        "artifact_dir": str(row_dir.relative_to(row_dir.parent.parent)),
        "options": ";".join(f"{k}={v}" for k, v in cfg.options),
        "accuracy_samples": cfg.accuracy_samples or None,
        "warmup_s": cfg.warmup_s,
        "calibration_source": calibration_label(artifact.sidecar) if cfg.precision == "int8" else None,
        "input_shapes": prepared_input_shapes(prepared, cfg.batch),
        "batch_note": batch_note(spec, cfg.batch),
        "threads_note": threads_note(profile, cfg.instances, os.cpu_count() or 1, cfg.threads_per_instance),
    })
    # backend-specific row columns (trt: dla_fallback_layers, engine_build_s, engine_cache, engine evidence)
    parts.backend = {"provider": prepared.info.get("provider", ""), **prepared.info.get("row_fields", {})}
    acc_in = None
    clock_inputs = time.monotonic()
    labelled = models.labelled(spec, cfg.accuracy_samples)  # real images + labels when accuracy.dataset is set
    if labelled is not None:
        acc_in = {spec.input_name: labelled.inputs}
        parts.setup["accuracy_samples"] = len(labelled.labels)
        parts.labelled = labelled.row_fields()
    elif cfg.accuracy_samples > 0:
        acc_in = accuracy_feeds(prepared.input_set, cfg.accuracy_samples, cfg.seed, spec.data)
        parts.setup["accuracy_samples"] = sample_count(acc_in, prepared.input_set)  # real data may hold fewer
    clock.add("accuracy_inputs", time.monotonic() - clock_inputs)
    if pool is not None:  # a new model x backend x ...: its warm workers import their framework during the probe
        orchestrator.prewarm(cfg, prepared, pool)
    with clock("probe"):  # never in a measured process; reused across batches and instance counts
        probe = row_probe(cfg, prepared, acc_in, models.probes, row_dir)
    probe_row = probe_fields(probe, "")
    parts.setup["probe"] = probe_row.get("probe")
    parts.verdict.probe_notes = probe_row.get("reason", "")
    interval = profile.telemetry.interval_s
    # placements: nvml samples every GPU the row's instances use (power/energy summed over them)
    samplers = [registry.make_sampler(name, interval, placements=cfg.placements) for name in profile.telemetry.samplers]

    with gpu_sharing(cfg, row_dir) as sharing:  # mps: a daemon for this row's instances, stopped after them
        t_runner = time.monotonic()
        outcome = orchestrator.run_instances(cfg, prepared, samplers=samplers, child_env=sharing.env, probe=probe,
                                             pool=pool)
        clock.add_runner(outcome.phase_s, time.monotonic() - t_runner)
    parts.verdict.sharing_notes = [*sharing.notes, *outcome.notes]
    parts.setup["workers"] = outcome.workers
    if outcome.status != "ok":
        parts.verdict.failure = outcome.reason
        if cfg.slo_ms is not None:
            failed = {"slo_ms": cfg.slo_ms, "slo_met": False, "slo_verdict": "failed"}
            parts.slo = lambda _status, _reason: (failed, "")
        with clock("write"):
            _write_files(row_dir, cfg, outcome, artifact, prepared, labelled, clock)
        return _with_setup(parts, clock)
    results_t0 = time.monotonic()

    summary = summarize(outcome.instances, cfg.batch, cfg.sub_windows)
    parts.verdict.judged = judge(summary, cfg)
    lat = summary.latency_ms
    parts.metrics = {
        "throughput_ips": summary.throughput_ips,
        "window_s": summary.window_s,
        "inferences": summary.inferences,
        "samples": summary.samples,
        "per_instance_ips": ";".join(f"{v:.6g}" for v in summary.per_instance_ips),
        "stability_pct": summary.stability_pct,
        **{f"latency_ms_{k}": lat.get(k) for k in ("mean", "p50", "p90", "p95", "p99", "max", "min")},
    }
    parts.telemetry = [(tl.source, telemetry_fields([tl], summary.window_start_ns, summary.window_end_ns))
                       for tl in outcome.timelines]
    if idle_power_w is not None:
        parts.idle = IdleBaseline(idle_power_w, gpu_board_ok=idle_applies({"power_scope": "gpu-board"}, samplers))
    else:
        parts.idle_absent = idle_absent(profile)
    parts.samplers = tuple(profile.telemetry.samplers)  # the empty_reasons step names them
    parts.verdict.telemetry_faults = telemetry_faults(outcome.timelines)
    parts.load = load_fields(cfg, outcome.instances, summary)
    # power calibration (power.calibration / calibration_file): derived from the assembled power columns
    parts.calibrate = functools.partial(_calibrated, power_calibration(profile))
    if cfg.slo_ms is not None:  # met / missed / unmeasured (too few inferences for a p99 is never a miss)
        parts.slo = lambda status, reason: slo_fields(cfg, outcome.instances, summary, status, reason)
    if cfg.kernel_profile_steps > 0:
        parts.kernels = kernel_fields(outcome.kernels, outcome.kernels_note)
    clock.add("results", time.monotonic() - results_t0)
    accuracy_t0 = time.monotonic()
    if acc_in is not None and outcome.accuracy_outputs:
        parts.accuracy, parts.verdict.accuracy_notes = accuracy_part(spec, models, acc_in, outcome.accuracy_outputs,
                                                                     cfg.seed)
    if labelled is not None and outcome.accuracy_outputs:
        try:
            parts.labelled.update(labelled.score(outcome.accuracy_outputs, spec.output_name))
        except ValueError as exc:
            parts.verdict.labels_note = f"accuracy vs labels not scored: {exc}"
        parts.verdict.accuracy_notes += labelled.notes()  # skipped images, empty class folders, no reserve
    clock.add("accuracy", time.monotonic() - accuracy_t0)
    with clock("write"):
        _write_files(row_dir, cfg, outcome, artifact, prepared, labelled, clock)
    return _with_setup(parts, clock)


def _write_files(row_dir: Path, cfg: RunConfig, outcome: Any, artifact: Any, prepared: Any, labelled: Any,
                 clock: PhaseClock) -> None:
    """The row's files; row.json's phases are the clock's so far (its own write lands in the row's setup_s)."""
    write_row_files(row_dir, cfg, outcome, artifact, prepared.info, phases=clock.record())
    if labelled is not None:
        write_json_atomic(row_dir / "accuracy_subset.json", labelled.record)


def _with_setup(parts: RowParts, clock: PhaseClock) -> RowParts:
    parts.setup["setup_s"] = clock.record()["setup"]
    return parts


def _calibrated(calibration: tuple[PowerCalibration | None, str], row: Any) -> dict[str, Any]:
    """The calibrated power columns of an assembled row (results.row calls it after the energy columns)."""
    return calibrated_fields(row, *calibration)


def power_calibration(profile: Profile, board: str | None = None) -> tuple[PowerCalibration | None, str]:
    """(the profile's power calibration for this board, or None and why when a file has none for it)."""
    power = profile.power
    if power.get("calibration"):
        return parse_calibration(power["calibration"], profile.source, "power.calibration",
                                 f"profile {profile.name}"), ""
    if power.get("calibration_file"):
        boards = read_calibration_file(power["calibration_file"])
        board = board_name() if board is None else board
        cal = for_board(boards, board)
        return cal, "" if cal else f"none: {power['calibration_file']} has no entry for board {board or '(unreadable)'!r}"
    return None, ""


def _weights_cell(spec: ModelSpec, artifact: Any) -> str:
    """`weights` column: name and sha256 (edgebench.models.weights), e.g. 'torchvision:ResNet50_Weights.IMAGENET1K_V2
    sha256:11ad3fa6...'; external ONNX rows say from-onnx."""

    return resolve_weights(spec).label if spec.source != "onnx" else str(artifact.weights)


def accuracy_fields(spec: ModelSpec, models: ModelCache, feeds: dict[str, np.ndarray],
                    outputs: dict[str, np.ndarray], seed: int, reason: str) -> dict[str, Any]:
    """accuracy_part's columns with its notes joined onto `reason` (as "reason"): the accuracy of a row whose
    reason so far is `reason`."""
    fields, notes = accuracy_part(spec, models, feeds, outputs, seed)
    if notes:
        fields = {**fields, "reason": "; ".join(r for r in (reason, *notes) if r)}
    return fields


def accuracy_part(spec: ModelSpec, models: ModelCache, feeds: dict[str, np.ndarray],
                  outputs: dict[str, np.ndarray], seed: int) -> tuple[dict[str, Any], list[str]]:
    """Per-output accuracy vs the FP32 reference, and notes for the reason. The measurement is already done: any
    failure here (e.g. the reference runtime rejecting the inputs) is a note and never costs the row."""

    try:
        reference = models.references(spec, feeds, seed)
        num_classes = spec.num_classes if spec.source != "onnx" else None  # an external file states no classes
        agreements = compare_outputs(_by_name(outputs, reference), reference, num_classes)
    except Exception as exc:  # noqa: BLE001 - ORT raises its own types (InvalidArgument, Fail, ...)
        text = " ".join(str(exc).split())[:300]
        return {}, [f"accuracy not compared: {type(exc).__name__}: {text}"]
    skipped = [a.text() for a in agreements if a.note]
    return row_fields(agreements), (["accuracy not compared for " + "; ".join(skipped)] if skipped else [])


def _by_name(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The backend's outputs keyed like the reference's: by name; a backend that names its outputs differently
    (the null backend's 'output') is matched by position when the counts agree."""
    if set(reference) <= set(outputs) or len(outputs) != len(reference):
        return outputs
    return dict(zip(reference, outputs.values(), strict=True))


def prepared_input_shapes(prepared: Any, batch: int) -> str:
    """'input_ids:int64[8x128];attention_mask:int64[8x128]': what every inference was fed."""

    return describe_inputs(prepared.input_set, batch)


def batch_note(spec: ModelSpec, batch: int) -> str | None:
    """Says so when the model's graph fixes the batch (the sweep's batches then do not apply)."""
    fixed = spec.fixed_batch
    notes = [] if fixed is None else [f"the model's graph fixes the batch at {fixed}; it runs at batch {batch} only"]
    unbatched = [d.name for d in spec.input_set if d.batch_axis is None]
    if unbatched:
        notes.append(f"no batch axis (fed as is): {', '.join(unbatched)}")
    return "; ".join(notes) or None
