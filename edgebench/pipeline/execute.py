"""Measure one RunConfig: artifacts -> prepare -> probe -> instances (+ telemetry) -> accuracy -> the row files; the
facts its row is computed from (pipeline/row_steps.py runs the row steps on them)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.atomic_files import write_json_atomic
from edgebench.backends.registry import get_backend
from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.device.system import board_name
from edgebench.errors import exc_text
from edgebench.evaluation.accuracy import accuracy_feeds, compare_outputs, row_fields
from edgebench.models.inputs import random_scalars_note, sample_count
from edgebench.models.int8_graph import nothing_quantized
from edgebench.models.quantized_file import int8_refusal
from edgebench.models.quantized_file import note as quantized_note
from edgebench.models.spec import ModelSpec
from edgebench.pipeline.disk_full import DISK_FULL_ERRNOS
from edgebench.pipeline.empty_reasons import idle_absent
from edgebench.pipeline.idle import idle_applies
from edgebench.pipeline.main_memory import RowPeak
from edgebench.pipeline.model_cache import ModelCache
from edgebench.pipeline.phases import PhaseClock, announce
from edgebench.pipeline.probe_step import probe_fields, row_probe
from edgebench.pipeline.row_steps import RowFacts
from edgebench.results.row import IdleBaseline
from edgebench.results.row_files import stamps_record, write_row_data, write_row_json
from edgebench.runner import orchestrator  # module-qualified: the jtop sweep test wraps run_instances
from edgebench.runner.backlog import window_trend
from edgebench.runner.metrics import judge, summarize
from edgebench.runner.mps import gpu_sharing
from edgebench.runner.warm_pool import WarmPool
from edgebench.runner.workdirs import run_work_root
from edgebench.telemetry import registry
from edgebench.telemetry.power_calibration import (
    PowerCalibration,
    for_board,
    parse_calibration,
    read_calibration_file,
)
from edgebench.telemetry.row_fields import telemetry_faults

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def execute(cfg: RunConfig, profile: Profile, models: ModelCache, row_dir: Path,
            idle_power_w: float | None = None, pool: WarmPool | None = None,
            since_s: float | None = None) -> RowFacts:
    """Measure one config; returns what its row is computed from (the sweep adds identity and thermal, then
    row_steps.build_row). Raises EdgebenchError on bad input.

    The accuracy outputs, the kernel profile and a trt layer profile come from a probe process (pipeline/probe_step)
    that runs before the instances and is reused across the rows it applies to; every phase's wall time goes to
    row.json "phases" and the row's setup_s. `pool`: warm worker processes (run.workers: warm) the instances run in.
    `since_s` (time.monotonic()): when the sweep finished the previous row's files (or started); the time from then to
    here is the phase "between_rows" (pipeline/phases.py says what it holds), so a sweep's rows add up to its wall
    time."""

    clock = PhaseClock(since_s)
    peak = RowPeak()  # this process's own memory from here to the row's files written (main_rss_mib_max)
    facts = RowFacts(cfg=cfg, profile=profile, row_dir=row_dir, accuracy_samples=cfg.accuracy_samples or None)
    with clock("export"):
        spec = facts.spec = models.spec(cfg.model)
        models.fp32(spec)  # the exported (or given) fp32 ONNX, cached by content hash
        quantized = models.quantized_ops(spec)  # a file given already quantized: int8 cannot quantize it again
    if cfg.precision == "int8" and (refusal := int8_refusal(quantized)) is not None:
        facts.verdict.skip_reason = refusal
        return facts
    if note := quantized_note(quantized, cfg.precision):
        facts.verdict.artifact_notes.append(note)
    with clock("precision"):
        artifact = facts.artifact = models.variant(spec, cfg.precision)
    if cfg.precision == "int8" and cfg.option("int8_calibration") != "entropy":  # (entropy: TensorRT calibrates)
        if (why := nothing_quantized(artifact.sidecar, artifact.onnx_path)) is not None:  # never an fp32 graph labelled int8
            facts.verdict.skip_reason = why
            return facts
    with clock("prepare"):
        backend = get_backend(cfg.backend)
        prepared = facts.prepared = backend.prepare(cfg, artifact, models.artifacts)
    acc_in = None
    clock_inputs = time.monotonic()
    labelled = models.labelled(spec, cfg.accuracy_samples)  # real images + labels when accuracy.dataset is set
    if labelled is not None:
        acc_in = {spec.first_input.name: labelled.inputs}
        facts.accuracy_samples = len(labelled.labels)
        facts.labelled = labelled.row_fields()
    elif cfg.accuracy_samples > 0:
        acc_in = accuracy_feeds(prepared.inputs, cfg.accuracy_samples, cfg.seed, spec.data)
        facts.accuracy_samples = sample_count(acc_in, prepared.inputs)  # real data may hold fewer
    clock.add("accuracy_inputs", time.monotonic() - clock_inputs)
    if pool is not None:  # a new model x backend x ...: its warm workers import their framework during the probe
        with clock("prewarm"):  # starting them (spawn: a fork+exec each); their imports overlap the probe
            orchestrator.prewarm(cfg, prepared, pool)
    root = work_root(row_dir)  # the probe's work folder and the instances' (issue 37: not in a RAM temp folder)
    with clock("probe"):  # never in a measured process; reused across instance counts (and batches, but a profile's)
        probe = facts.probe = row_probe(cfg, prepared, acc_in, models.probes, row_dir, work_root=root)
    facts.verdict.probe_notes = probe_fields(probe, "").get("reason", "")
    interval = profile.telemetry.interval_s
    with clock("samplers"):  # placements: nvml samples every GPU the row's instances use (power/energy summed)
        samplers = [registry.make_sampler(name, interval, placements=cfg.placements)
                    for name in profile.telemetry.samplers]

    with gpu_sharing(cfg, row_dir) as sharing:  # mps: a daemon for this row's instances, stopped after them
        announce("measuring")  # the instances: spawn, load, warm-up, window
        t_runner = time.monotonic()
        outcome = facts.run = orchestrator.run_instances(cfg, prepared, samplers=samplers, child_env=sharing.env,
                                                         probe=probe, pool=pool, work_root=root)
        clock.add_runner(outcome.phase_s, time.monotonic() - t_runner)
    facts.verdict.sharing_notes = [*sharing.notes, *outcome.notes]
    if outcome.status != "ok" and outcome.fault_errno in DISK_FULL_ERRNOS:
        # an instance could not write its timestamp chunks: the disk is full, which no later row escapes; the
        # sweep stops with the disk-full message (run_sweep) instead of failing this row and the next
        record = stamps_record(row_dir, outcome)  # what its chunk files took on the results disk when it filled
        outcome.discard_stamps()
        full = OSError(outcome.fault_errno, f"{os.strerror(outcome.fault_errno)}: {outcome.reason}",
                       root or tempfile.gettempdir())
        full.unfinished_stamps_bytes = record["bytes"] if record["on_results_disk"] else 0  # type: ignore[attr-defined]
        raise full
    if outcome.status != "ok":
        facts.verdict.failure = "; ".join(r for r in (outcome.reason, random_scalars_note(prepared.inputs)) if r)
        return _written(facts, cfg, row_dir, outcome, labelled, clock, peak)
    results_t0 = time.monotonic()

    summary = facts.summary = summarize(outcome.instances, cfg.batch, cfg.sub_windows)
    facts.trend = window_trend(outcome.instances, summary) if cfg.rate_hz is not None else None
    facts.verdict.judged = judge(summary, cfg, facts.trend)
    facts.verdict.telemetry_faults = telemetry_faults(outcome.timelines)
    facts.samplers = tuple(profile.telemetry.samplers)  # the empty_reasons step names them
    if idle_power_w is not None:
        facts.idle = IdleBaseline(idle_power_w, gpu_board_ok=idle_applies({"power_scope": "gpu-board"}, samplers))
    else:
        facts.idle_absent = idle_absent(profile)
    facts.calibration = power_calibration(profile)  # power.calibration / calibration_file, for the calibration step
    clock.add("results", time.monotonic() - results_t0)
    accuracy_t0 = time.monotonic()
    if acc_in is not None and outcome.accuracy_outputs:
        facts.accuracy, facts.verdict.accuracy_notes = accuracy_part(spec, models, acc_in, outcome.accuracy_outputs,
                                                                     cfg.seed)
    if labelled is not None and outcome.accuracy_outputs:
        try:
            facts.labelled.update(labelled.score(outcome.accuracy_outputs, spec.output_name))
        except ValueError as exc:
            facts.verdict.labels_note = f"accuracy vs labels not scored: {exc}"
        facts.verdict.accuracy_notes += labelled.notes()  # skipped images, empty class folders, no reserve
    clock.add("accuracy", time.monotonic() - accuracy_t0)
    return _written(facts, cfg, row_dir, outcome, labelled, clock, peak)


def _written(facts: RowFacts, cfg: RunConfig, row_dir: Path, outcome: Any, labelled: Any,
             clock: PhaseClock, peak: RowPeak) -> RowFacts:
    """The row's files written; row.json's phases (the same record as the row's setup_s) include writing the others;
    row.json's own write (milliseconds) is in the next row's between_rows."""
    with clock("write"):
        write_row_data(row_dir, outcome)
        if labelled is not None:
            write_json_atomic(row_dir / "accuracy_subset.json", labelled.record)
    phases = clock.record()
    write_row_json(row_dir, cfg, outcome, facts.artifact, facts.prepared.info, phases=phases)
    facts.setup_s = phases["setup"]
    facts.main_peak = peak  # read once the row's columns are built (row_steps.harness_columns)
    return facts


def work_root(row_dir: Path) -> str | None:
    """Where the row's timestamp files go (workdirs.run_work_root): the system temp folder, or when that is held in
    RAM, the run folder's hidden work root (row_dir is <run folder>/rows/<index>-<hash>, pipeline/sweep.py)."""
    return run_work_root(row_dir.parent.parent)[0]


def power_calibration(profile: Profile, board: str | None = None) -> tuple[PowerCalibration | None, str]:
    """(the profile's power calibration for this board, or None and why when a file has none for it)."""
    power = profile.power
    if power.calibration:
        return parse_calibration(power.calibration, profile.source, "power.calibration",
                                 f"profile {profile.name}"), ""
    if power.calibration_file:
        boards = read_calibration_file(power.calibration_file)
        board = board_name() if board is None else board
        cal = for_board(boards, board)
        return cal, "" if cal else f"none: {power.calibration_file} has no entry for board {board or '(unreadable)'!r}"
    return None, ""


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
        text = " ".join(exc_text(exc).split())[:300]
        return {}, [f"accuracy not compared: {text}"]
    skipped = [a.text() for a in agreements if a.note]
    return row_fields(agreements), (["accuracy not compared for " + "; ".join(skipped)] if skipped else [])


def _by_name(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The backend's outputs keyed like the reference's: by name; a backend that names its outputs differently
    (the null backend's 'output') is matched by position when the counts agree."""
    if set(reference) <= set(outputs) or len(outputs) != len(reference):
        return outputs
    return dict(zip(reference, outputs.values(), strict=True))
