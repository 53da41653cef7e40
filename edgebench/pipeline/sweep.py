"""Run a planned sweep: for each config, artifacts -> prepare -> instances -> one result row.

One row is appended (and fsynced) as soon as it is known; a config that fails becomes a
`failed` row with its reason and the sweep goes on. Per-row details (latencies, telemetry,
artifact sidecars) go to runs/<run-id>/rows/<index>-<config_hash>/.

Size: the row is still assembled here (backend fields, runner metrics, telemetry, faults); moving that
into a results stage that owns the row is issue 14's larger step, not a split for size.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import gzip
import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.errors import EdgebenchError
from edgebench.models.artifacts import Artifacts, write_json_atomic
from edgebench.models.spec import ModelSpec, load_model_spec
from edgebench.pipeline.plan import PlannedRun

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.models.model_artifact import ModelArtifact
    from edgebench.results.store import ResultsStore
    from edgebench.runner.orchestrator import RunOutcome

log = logging.getLogger("edgebench")


REFERENCE_CHUNK = 256  # samples per FP32-reference batch


def new_run_id(device: str) -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S") + f"-{device}"


@dataclass
class ModelCache:
    """Per-sweep memo of exported models, precision artifacts and FP32 reference outputs."""

    artifacts: Artifacts
    calibration: dict[str, Any]
    onnx_specs: dict[str, ModelSpec] = field(default_factory=dict)  # external ONNX by label
    accuracy: dict[str, Any] = field(default_factory=dict)  # profile section accuracy: dataset, labels, weights
    _labelled: dict[tuple[str, int], Any] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)  # profile sweep.shapes: model -> trtexec shape text
    _fp32: dict[str, Any] = field(default_factory=dict)
    _variants: dict[tuple[str, str], ModelArtifact] = field(default_factory=dict)
    _refs: dict[tuple[str, int, int], Any] = field(default_factory=dict)
    _specs: dict[str, ModelSpec] = field(default_factory=dict)

    def spec(self, model: str) -> ModelSpec:
        """The model's spec with its input set resolved (shapes from the profile's sweep.shapes or the spec)."""
        if model not in self._specs:
            from edgebench.models.precision import resolved_spec

            base = self.onnx_specs[model] if model in self.onnx_specs else load_model_spec(model)
            shapes = self.shapes.get(model) if model not in self.onnx_specs else None
            self._specs[model] = resolved_spec(base, shapes, f"sweep.shapes.{model}")
        spec = self._specs[model]
        if self.accuracy.get("weights") and spec.source != "onnx":  # --weights / accuracy.weights
            spec = dataclasses.replace(spec, weights=self.accuracy["weights"])
        return spec

    def labelled(self, spec: ModelSpec, samples: int) -> Any:
        """The evaluation subset of accuracy.dataset for this model (None without a data set)."""
        if not self.accuracy.get("dataset") or samples <= 0:
            return None
        key = (spec.name, samples)
        if key not in self._labelled:
            from edgebench.models.labelled import evaluation_set

            self._labelled[key] = evaluation_set(spec, self.accuracy, self.calibration, samples)
        return self._labelled[key]

    def fp32(self, spec: ModelSpec) -> Any:
        if spec.name not in self._fp32:
            from edgebench.models.export import export_onnx  # handles external ONNX (source: onnx) too

            self._fp32[spec.name] = export_onnx(spec, self.artifacts)
        return self._fp32[spec.name]

    def variant(self, spec: ModelSpec, precision: str) -> ModelArtifact:
        key = (spec.name, precision)
        if key not in self._variants:
            from edgebench.models.precision import precision_artifact

            calibration = {**self.calibration, "dataset": self.accuracy.get("dataset"),
                           "labels": self.accuracy.get("labels")}
            art = precision_artifact(spec, self.fp32(spec), precision, self.artifacts, calibration)
            # the weights this sweep uses (a --weights override included), for backends that rebuild the model
            self._variants[key] = dataclasses.replace(art, sidecar={**art.sidecar, "weights_spec": spec.weights})
        return self._variants[key]

    def reference(self, spec: ModelSpec, inputs: np.ndarray, seed: int) -> np.ndarray:
        """The first output of the FP32 model on one input's array (the one-input form)."""
        return next(iter(self.references(spec, {spec.input_name: inputs}, seed).values()))

    def references(self, spec: ModelSpec, feeds: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
        """Every output of the FP32 model on `feeds`, ORT CPU, in chunks of at most REFERENCE_CHUNK samples (a
        labelled set of thousands of 224x224 images in one batch needs tens of GB) or of the graph's fixed batch."""
        key = (spec.name, int(len(next(iter(feeds.values())))), seed)
        if key not in self._refs:
            from edgebench.evaluation.accuracy import reference_outputs_all

            self._refs[key] = reference_outputs_all(str(self.fp32(spec).path), feeds, max_batch=REFERENCE_CHUNK)
        return self._refs[key]


def calibration_label(sidecar: dict[str, Any]) -> str | None:
    """'synthetic (32 samples, seed 0, sha256 0123abcd...)' from an int8 artifact's sidecar record."""
    rec = sidecar.get("calibration") if isinstance(sidecar, dict) else None
    if not isinstance(rec, dict):
        return None
    sha = str(rec.get("sha256") or "")[:16]
    return (f"{rec.get('source', '?')} ({rec.get('count', '?')} samples, seed {rec.get('seed', '?')}"
            + (f", sha256 {sha}" if sha else "") + ")")


def idle_applies(row: dict[str, Any], samplers: list[Any]) -> bool:
    """The idle baseline was measured on NVML GPU 0 only: a GPU-board row on other/several GPUs gets no
    dynamic energy (subtracting one GPU's idle power from two GPUs' power would be wrong)."""
    if row.get("power_scope") != "gpu-board":
        return True
    return all(list(getattr(s, "devices", [0])) == [0] for s in samplers if getattr(s, "name", "") == "nvml")


def base_row(cfg: RunConfig, run_id: str, index: int) -> dict[str, Any]:
    from edgebench import __version__

    return {
        "edgebench_version": __version__,
        "run_id": run_id,
        "row_index": index,
        "config_hash": cfg.config_hash(),
        "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": cfg.model,
        "backend": cfg.backend,
        "precision": cfg.precision,
        "batch": cfg.batch,
        "instances": cfg.instances,
        "mode": cfg.mode,
        "placement": cfg.placement,
        "threads_per_instance": cfg.threads_per_instance,
        "power_mode": cfg.power_mode,
        "scenario": cfg.scenario,
        "gpu_sharing": cfg.gpu_sharing if cfg.uses_gpu else None,
    }


# row column <- (first channel present, in this order) per sampler: nvml names, then jtop / tegrastats names
GPU_ROW_CHANNELS: tuple[tuple[str, str, Callable[[Any, str], Any]], ...] = (
    ("gpu_util_pct_mean", "gpu_util_pct", lambda w, c: w.mean(c)),    # nvml, jtop
    ("gpu_util_pct_mean", "gpu_load_pct", lambda w, c: w.mean(c)),    # tegrastats GR3D
    ("gpu_temp_c_max", "temperature_c", lambda w, c: w.max(c)),       # nvml
    ("gpu_temp_c_max", "temp_gpu_c", lambda w, c: w.max(c)),          # jtop / tegrastats zone "gpu"
    ("gpu_sm_clock_mhz_mean", "sm_clock_mhz", lambda w, c: w.mean(c)),  # nvml
    ("gpu_sm_clock_mhz_mean", "gpu_freq_mhz", lambda w, c: w.mean(c)),  # jtop
)


def telemetry_fields(timelines: list[Any], start_ns: int, end_ns: int) -> dict[str, Any]:
    """Row fields from every sampler's timeline over the window; earlier samplers in the profile's
    list win where two provide the same field (dgpu lists nvml before host: GPU power fills the row)."""
    from edgebench.telemetry.registry import power_summary

    fields: dict[str, Any] = {}
    for tl in timelines:
        for key, value in power_summary(tl, start_ns, end_ns).items():
            if fields.get(key) is None:
                fields[key] = value
        win = tl.window(start_ns, end_ns)
        for key, channel, agg in GPU_ROW_CHANNELS:
            if channel in tl.channels and fields.get(key) is None:
                fields[key] = agg(win, channel)
        if "throttle_reasons" in tl.channels:
            from edgebench.telemetry.nvml import throttle_summary

            throttled, reasons = throttle_summary(tl, start_ns, end_ns)
            fields["throttled"] = throttled
            fields["throttle_reasons"] = ";".join(reasons) or None
        if tl.source == "jetson_throttle":  # Jetson: NVML has no clock-event reasons there; sysfs evidence instead
            from edgebench.telemetry.jetson_throttle import throttle_summary as jetson_throttle_summary

            throttled, reasons = jetson_throttle_summary(tl, start_ns, end_ns)
            fields["throttled"] = bool(fields.get("throttled")) or throttled
            fields["throttle_reasons"] = ";".join(r for r in (fields.get("throttle_reasons"), *reasons) if r) or None
    if len(timelines) > 1:
        fields["telemetry_source"] = "+".join(tl.source for tl in timelines)
    return fields


TELEMETRY_FAULT_PREFIX = "telemetry: "  # a sampler note starting so (e.g. jtop lost connection) makes the row invalid


def telemetry_faults(timelines: list[Any]) -> list[str]:
    """Sampler notes that say the telemetry of this row cannot be trusted (each names cause and fix)."""
    return [n for tl in timelines for n in tl.notes if n.startswith(TELEMETRY_FAULT_PREFIX)]


def kernel_fields(kernels: list[tuple[str, float]] | None, note: str) -> dict[str, Any]:
    """tensor_core_time_pct and a short evidence string (the top kernels by time) for the row."""
    if not kernels:
        return {"tensor_core_evidence": note or "kernel profile: no GPU kernels recorded"}
    from edgebench.evaluation.tensorcores import kernel_summary

    summary = kernel_summary(kernels, top=3)
    top = "; ".join(f"{k['name'][:60]} {k['time_us']:.0f}us{' TC' if k['tensor_core'] else ''}"
                    for k in summary["top_kernels"])  # type: ignore[union-attr]
    return {"tensor_core_time_pct": summary["tensor_core_time_pct"],
            "tensor_core_evidence": f"{summary['tensor_core_kernels']}/{summary['distinct_kernels']} kernels on "
                                    f"tensor cores; top: {top}"}


def idle_baseline(profile: Profile) -> tuple[float | None, str]:
    """Mean power with nothing running, over telemetry.idle_baseline_s, from the profile's samplers.
    (None, why) when the baseline is off or no sampler measures power here."""
    import time

    from edgebench.telemetry.registry import make_sampler

    seconds = profile.telemetry["idle_baseline_s"]
    if seconds <= 0:
        return None, "idle baseline off (telemetry.idle_baseline_s = 0)"
    samplers = [make_sampler(name, profile.telemetry["interval_s"]) for name in profile.telemetry["samplers"]]
    for s in samplers:
        s.start()
    t0 = time.monotonic_ns()
    time.sleep(seconds)
    t1 = time.monotonic_ns()
    fields = telemetry_fields([s.stop() for s in samplers], t0, t1)
    if fields.get("power_w_mean") is None:
        return None, f"no power measurable for an idle baseline ({fields.get('energy_source')})"
    return fields["power_w_mean"], f"idle {fields['power_w_mean']:.3f} W over {seconds:g} s ({fields['energy_source']})"


def execute(cfg: RunConfig, profile: Profile, models: ModelCache, row_dir: Path,
            idle_power_w: float | None = None) -> dict[str, Any]:
    """Measure one config; returns the row fields beyond base_row. Raises EdgebenchError on bad input."""
    from edgebench.backends.registry import get_backend
    from edgebench.evaluation.accuracy import accuracy_feeds
    from edgebench.runner.metrics import judge, summarize
    from edgebench.runner.orchestrator import run_instances
    from edgebench.telemetry.registry import make_sampler

    spec = models.spec(cfg.model)
    artifact = models.variant(spec, cfg.precision)
    backend = get_backend(cfg.backend)
    prepared = backend.prepare(cfg, artifact, models.artifacts)
    row: dict[str, Any] = {
        "weights": _weights_cell(spec, artifact),
        "onnx_sha256": artifact.sha256,
        "provider": prepared.info.get("provider", ""),
        "artifact_dir": str(row_dir.relative_to(row_dir.parent.parent)),
        "options": ";".join(f"{k}={v}" for k, v in cfg.options),
        "accuracy_samples": cfg.accuracy_samples or None,
        "warmup_s": cfg.warmup_s,
        "calibration_source": calibration_label(artifact.sidecar) if cfg.precision == "int8" else None,
        "input_shapes": prepared_input_shapes(prepared, cfg.batch),
        "batch_note": batch_note(spec, cfg.batch),
    }
    # backend-specific row columns (trt: dla_fallback_layers, engine_build_s, engine_cache, engine evidence);
    # a kernel profile, when run, replaces the engine's tensor_core_evidence below
    row.update(prepared.info.get("row_fields", {}))
    acc_in = None
    labelled = models.labelled(spec, cfg.accuracy_samples)  # real images + labels when accuracy.dataset is set
    if labelled is not None:
        acc_in = {spec.input_name: labelled.inputs}
        row.update(accuracy_samples=len(labelled.labels), **labelled.row_fields())
    elif cfg.accuracy_samples > 0:
        acc_in = accuracy_feeds(prepared.input_set, cfg.accuracy_samples, cfg.seed, spec.data)
        row["accuracy_samples"] = len(next(iter(acc_in.values())))  # real data may hold fewer
    interval = profile.telemetry["interval_s"]
    # placements: nvml samples every GPU the row's instances use (power/energy summed over them)
    samplers = [make_sampler(name, interval, placements=cfg.placements) for name in profile.telemetry["samplers"]]
    from edgebench.runner.mps import gpu_sharing

    with gpu_sharing(cfg, row_dir) as sharing:  # mps: a daemon for this row's instances, stopped after them
        outcome = run_instances(cfg, prepared, samplers=samplers, accuracy_inputs=acc_in, child_env=sharing.env)
    _write_row_files(row_dir, cfg, outcome, artifact, prepared.info)
    if labelled is not None:
        write_json_atomic(row_dir / "accuracy_subset.json", labelled.record)
    if outcome.status != "ok":
        row.update(status="failed", reason="; ".join([outcome.reason, *sharing.notes]))
        if cfg.slo_ms is not None:
            row.update(slo_ms=cfg.slo_ms, slo_met=False)
        return row

    summary = summarize(outcome.instances, cfg.batch, cfg.sub_windows)
    status, reason = judge(summary, cfg)
    lat = summary.latency_ms
    row.update(
        status=status,
        reason=reason,
        throughput_ips=summary.throughput_ips,
        window_s=summary.window_s,
        inferences=summary.inferences,
        samples=summary.samples,
        per_instance_ips=";".join(f"{v:.6g}" for v in summary.per_instance_ips),
        stability_pct=summary.stability_pct,
        latency_ms_mean=lat.get("mean"),
        latency_ms_p50=lat.get("p50"),
        latency_ms_p90=lat.get("p90"),
        latency_ms_p95=lat.get("p95"),
        latency_ms_p99=lat.get("p99"),
        latency_ms_max=lat.get("max"),
        latency_ms_min=lat.get("min"),
    )
    row.update(telemetry_fields(outcome.timelines, summary.window_start_ns, summary.window_end_ns))
    if row.get("energy_j") is not None and summary.samples:
        row["energy_per_inference_mj"] = row["energy_j"] * 1000.0 / summary.samples
        if idle_power_w is not None and row.get("power_w_mean") is not None and idle_applies(row, samplers):
            row["power_w_idle"] = idle_power_w
            dynamic_j = (row["power_w_mean"] - idle_power_w) * summary.window_s
            row["energy_per_inference_dynamic_mj"] = dynamic_j * 1000.0 / summary.samples
    if faults := telemetry_faults(outcome.timelines):
        row["status"] = "invalid"
        row["reason"] = "; ".join(r for r in (row["reason"], *faults) if r)
    if row.get("throttled"):
        row["status"] = "invalid"
        row["reason"] = "; ".join(r for r in (row["reason"], f"device throttled: {row['throttle_reasons']}") if r)
    if sharing.notes:
        row["reason"] = "; ".join(r for r in (row["reason"], *sharing.notes) if r)
    from edgebench.runner.load import load_fields, slo_met

    row.update(load_fields(cfg, outcome.instances, summary))
    if cfg.slo_ms is not None:
        row["slo_met"] = slo_met(row.get("latency_ms_p99"), cfg.slo_ms, row["status"])
    if cfg.kernel_profile_steps > 0:
        row.update(kernel_fields(outcome.kernels, outcome.kernels_note))
    if cfg.backend == "trt" and prepared.options.get("layer_profile"):  # after the window: rows/<i>/layers.csv
        row["reason"] = "; ".join(r for r in (row["reason"], layer_profile_note(prepared, row_dir)) if r)
    if acc_in is not None and outcome.accuracy_outputs:
        row.update(accuracy_fields(spec, models, acc_in, outcome.accuracy_outputs, cfg.seed, row["reason"]))
    if labelled is not None and outcome.accuracy_outputs:
        try:
            row.update(labelled.score(outcome.accuracy_outputs, spec.output_name))
        except ValueError as exc:
            row["reason"] = "; ".join(r for r in (row["reason"], f"accuracy vs labels not scored: {exc}") if r)
    return row


def layer_profile_note(prepared: Any, row_dir: Path) -> str:
    """Profile every engine of a trt row layer by layer into row_dir/layers.csv; '' when it worked, else
    why not (the row keeps its status: the profile is extra evidence, outside the measured window)."""
    from edgebench.backends.trt_layers import profile_prepared, write_layers_csv

    try:
        write_layers_csv(profile_prepared(prepared, int(prepared.options["layer_profile"])), row_dir / "layers.csv")
    except Exception as exc:  # noqa: BLE001 - a failed profile must not lose the measured row
        return f"layer profile not written: {type(exc).__name__}: {exc}"
    return ""


def _weights_cell(spec: ModelSpec, artifact: Any) -> str:
    """`weights` column: name and sha256 (edgebench.models.weights), e.g. 'torchvision:ResNet50_Weights.IMAGENET1K_V2
    sha256:11ad3fa6...'; external ONNX rows say from-onnx."""
    from edgebench.models.weights import resolve_weights

    return resolve_weights(spec).label if spec.source != "onnx" else str(artifact.weights)


def accuracy_fields(spec: ModelSpec, models: ModelCache, feeds: dict[str, np.ndarray],
                    outputs: dict[str, np.ndarray], seed: int, reason: str) -> dict[str, Any]:
    """Per-output accuracy vs the FP32 reference. The measurement is already done: any failure here (e.g. the
    reference runtime rejecting the inputs) is stated in the reason and never costs the row."""
    from edgebench.evaluation.accuracy import compare_outputs, row_fields

    try:
        reference = models.references(spec, feeds, seed)
        num_classes = spec.num_classes if spec.source != "onnx" else None  # an external file states no classes
        agreements = compare_outputs(_by_name(outputs, reference), reference, num_classes)
    except Exception as exc:  # noqa: BLE001 - ORT raises its own types (InvalidArgument, Fail, ...)
        text = " ".join(str(exc).split())[:300]
        return {"reason": "; ".join(r for r in (reason, f"accuracy not compared: {type(exc).__name__}: {text}") if r)}
    fields = row_fields(agreements)
    skipped = [a.text() for a in agreements if a.note]
    if skipped:
        fields["reason"] = "; ".join(r for r in (reason, "accuracy not compared for " + "; ".join(skipped)) if r)
    return fields


def _by_name(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The backend's outputs keyed like the reference's: by name; a backend that names its outputs differently
    (the null backend's 'output') is matched by position when the counts agree."""
    if set(reference) <= set(outputs) or len(outputs) != len(reference):
        return outputs
    return dict(zip(reference, outputs.values(), strict=True))


def prepared_input_shapes(prepared: Any, batch: int) -> str:
    """'input_ids:int64[8x128];attention_mask:int64[8x128]': what every inference was fed."""
    from edgebench.models.inputs import describe_inputs

    return describe_inputs(prepared.input_set, batch)


def batch_note(spec: ModelSpec, batch: int) -> str | None:
    """Says so when the model's graph fixes the batch (the sweep's batches then do not apply)."""
    fixed = spec.fixed_batch
    if fixed is None:
        return None
    return f"the model's graph fixes the batch at {fixed}; it runs at batch {batch} only"


def _write_row_files(row_dir: Path, cfg: RunConfig, outcome: RunOutcome, artifact: Any, info: dict) -> None:
    row_dir.mkdir(parents=True, exist_ok=True)
    with gzip.open(row_dir / "latencies.csv.gz", "wt", newline="") as fh:
        w = csv.writer(fh)
        open_loop = any(inst.issued_ns is not None for inst in outcome.instances)
        # fixed-rate rows: start_ns is the scheduled arrival, issued_ns when the inference really began
        w.writerow(["instance", "placement", "start_ns", "end_ns", *(["issued_ns"] if open_loop else [])])
        for inst in outcome.instances:
            if open_loop and inst.issued_ns is not None:
                for s, e, i in zip(inst.start_ns.tolist(), inst.end_ns.tolist(), inst.issued_ns.tolist()):
                    w.writerow([inst.instance, inst.placement, s, e, i])
                continue
            for s, e in zip(inst.start_ns.tolist(), inst.end_ns.tolist()):
                w.writerow([inst.instance, inst.placement, s, e])
    for tl in outcome.timelines:
        tl.to_csv(row_dir / f"telemetry_{tl.source}.csv")
    write_json_atomic(row_dir / "row.json", {
        "config": cfg.to_dict(),
        "status": outcome.status,
        "reason": outcome.reason,
        "measure_start_ns": outcome.measure_start_ns,
        "measure_end_ns": outcome.measure_end_ns,
        "phase_s": outcome.phase_s,
        "instances": [{"instance": i.instance, "placement": i.placement, "pid": i.pid,
                       "inferences": int(len(i.start_ns)), "error": i.error} for i in outcome.instances],
        "telemetry": [{"source": t.source, "interval_s": t.interval_s, "notes": t.notes,
                       "channels": {n: c.unit for n, c in t.channels.items()}} for t in outcome.timelines],
        "artifact": {"path": artifact.onnx_path, "sha256": artifact.sha256, "sidecar": artifact.sidecar},
        "prepared": info,
    })


def run_sweep(
    planned: list[PlannedRun],
    profile: Profile,
    run_dir: Path,
    store: ResultsStore,
    models: ModelCache,
    on_row: Callable[[int, int, dict[str, Any]], None] | None = None,
    idle_power_w: float | None = None,
    on_start: Callable[[int, int, RunConfig], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every planned config not already done in `store`; returns the rows written now.

    Rows with a `power_mode` switch the Jetson's nvpmodel mode before they run (once per group) and the
    original mode and clocks are restored when the sweep ends, however it ends (edgebench.device.power_modes)."""
    from edgebench.device.power_modes import power_mode_session

    done = store.done_hashes()
    todo = [p.cfg.power_mode for p in planned if p.skip_reason is None and p.cfg.config_hash() not in done]
    with power_mode_session(todo, profile.power, profile.source) as power:
        return _run_rows(planned, profile, run_dir, store, models, on_row, idle_power_w, on_start, power)


def _run_rows(planned: list[PlannedRun], profile: Profile, run_dir: Path, store: ResultsStore, models: ModelCache,
              on_row: Callable[[int, int, dict[str, Any]], None] | None, idle_power_w: float | None,
              on_start: Callable[[int, int, RunConfig], None] | None, power: Any) -> list[dict[str, Any]]:
    done = store.done_hashes()
    next_index = len(store.rows())
    written: list[dict[str, Any]] = []
    for i, p in enumerate(planned):
        cfg = p.cfg
        if cfg.config_hash() in done:
            if on_row:
                on_row(i, len(planned), {"status": "resumed", "model": cfg.model, "label": cfg.label()})
            continue
        row = base_row(cfg, run_dir.name, next_index)
        if p.skip_reason is not None:
            row.update(status="skipped", reason=p.skip_reason)
        else:
            row_dir = run_dir / "rows" / f"{next_index:04d}-{cfg.config_hash()}"
            if on_start:
                on_start(i, len(planned), cfg)
            try:
                if (effective := power.switch(cfg.power_mode)) is not None:
                    row["power_mode"] = effective.name  # as nvpmodel -q reports it after the switch
                row.update(execute(cfg, profile, models, row_dir, idle_power_w))
            except EdgebenchError as exc:
                row.update(status="failed", reason=str(exc))
            except Exception as exc:  # an internal bug must not cost the sweep its other rows
                row_dir.mkdir(parents=True, exist_ok=True)
                (row_dir / "error.txt").write_text(traceback.format_exc())
                row.update(status="failed", reason=f"internal error {type(exc).__name__}: {exc} "
                                                   f"(traceback in {row_dir / 'error.txt'})")
        store.append(row)
        written.append(row)
        next_index += 1
        if on_row:
            on_row(i, len(planned), row)
    return written
