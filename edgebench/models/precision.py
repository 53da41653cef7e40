"""FP32 ONNX -> the ONNX file a precision runs from: fp32 as is, fp16 converted, int8 QDQ calibrated.

- fp32: the exported file itself.
- tf32 / bf16 / amp: not ONNX variants. They are runtime modes of GPU backends (TF32 math in cuDNN/TensorRT,
  torch autocast, TensorRT BF16 builder flag), which take the FP32 file and set the mode themselves. So this
  returns the FP32 file, labelled with the requested precision.
- fp16: onnxruntime.transformers.float16.convert_float_to_float16(keep_io_types=True): weights and math in
  float16, inputs/outputs stay float32 (Cast nodes at the edges), so every backend feeds the same input.
- int8: onnxruntime.quantization.quantize_static, QDQ format, per-channel symmetric INT8 weights, symmetric
  INT8 activations (the explicit-quantization form TensorRT consumes), MinMax-calibrated on
  calibration_batches() cut by the model's shape plan (calibration_chunks); quant_pre_process runs first when it
  succeeds. Graphs older than opset 13 are upgraded (onnx version converter) or quantised per-tensor; nodes of
  an unknown domain stay float; the sidecar's int8_notes say which, and the file must load in ORT. On x86 hosts
  without VNNI the weights use 7 bits (reduce_range): ONNX Runtime's int8 CPU kernels there saturate otherwise
  (edgebench.models.int8_host).
Each variant is cached by the FP32 file's sha256, the settings and (int8) the calibration record.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.config.shapes import parse_shapes
from edgebench.errors import ModelError
from edgebench.models.artifacts import Artifact, Artifacts
from edgebench.models.calibration import calibration_batches, calibration_feeds, labelled_source
from edgebench.models.export import inspect_onnx, installed_version
from edgebench.models.in_child import run_in_child
from edgebench.models.inputs import (
    GraphInput,
    load_data,
    parse_batch_axes,
    parse_values,
    parse_vocab,
    resolve,
    sample_count,
    vocab_from,
    with_values,
)
from edgebench.models.int8_host import int8_reduce_range
from edgebench.models.missing_inputs import MissingInputs
from edgebench.models.model_artifact import ModelArtifact
from edgebench.models.precision_steps import FP16_SETTINGS, INT8_SETTINGS, build_fp16, build_int8
from edgebench.models.proposal import propose
from edgebench.models.spec import ModelSpec

if TYPE_CHECKING:  # pragma: no cover

    from edgebench.models.spec import ModelSpec

RUNTIME_MODE_PRECISIONS = ("tf32", "bf16", "amp")  # served from the FP32 file


def precision_artifact(
    spec: ModelSpec, fp32: Artifact, precision: str, cache: Artifacts, calibration: Mapping[str, Any]
) -> ModelArtifact:
    """The ModelArtifact for `precision`, built from the FP32 export `fp32` (cached)."""
    if precision == "fp32" or precision in RUNTIME_MODE_PRECISIONS:
        sidecar = dict(fp32.sidecar)
        if precision != "fp32":
            sidecar["precision_note"] = (
                f"{precision} is a runtime mode of the backend, not an ONNX variant: the FP32 file is used"
            )
        return _model_artifact(spec, precision, fp32, sidecar)
    if precision == "fp16":
        return _model_artifact(spec, "fp16", _fp16(spec, fp32, cache), None)
    if precision == "int8":
        return _model_artifact(spec, "int8", _int8(spec, fp32, cache, calibration), None)
    raise ModelError(f"{spec.name}: unknown precision {precision!r}")


def _model_artifact(spec: ModelSpec, precision: str, art: Artifact, sidecar: dict[str, Any] | None) -> ModelArtifact:
    return ModelArtifact(
        model=spec.name,
        precision=precision,
        onnx_path=str(art.path),
        sha256=art.sha256,
        inputs=spec.inputs,
        weights=spec.weights_label,
        sidecar=dict(art.sidecar if sidecar is None else sidecar),
        output_names=spec.output_names,
    )


# --------------------------------------------------------------------------- fp16

def _fp16(spec: ModelSpec, fp32: Artifact, cache: Artifacts) -> Artifact:
    inputs = {"fp32_sha256": fp32.sha256, "settings": FP16_SETTINGS, "onnxruntime": installed_version("onnxruntime"),
              "onnx": installed_version("onnx")}

    def build(tmp: Path) -> dict[str, Any]:  # in a process of its own (models/in_child.py)
        return run_in_child(spec.name, "fp16 conversion", build_fp16, spec, str(fp32.path), fp32.sha256, str(tmp))

    return cache.get_or_build(kind="fp16", inputs=inputs, filename=f"{spec.name}.fp16.onnx", build=build)


# --------------------------------------------------------------------------- int8

def _int8(spec: ModelSpec, fp32: Artifact, cache: Artifacts, calibration: Mapping[str, Any]) -> Artifact:
    source = str(calibration.get("source", "synthetic"))
    samples = int(calibration.get("samples", 32))
    labelled = labelled_source(spec, calibration)
    if labelled is not None:  # calibration.source: labelled (one image input)
        batch, record = calibration_batches(source, spec.first_input.shape, samples, int(calibration.get("seed", 0)),
                                            labelled=labelled)
        data = {spec.first_input.name: batch}
    else:
        if source == "synthetic" and spec.data:  # the model's own real data (model spec `data:` / run --data):
            source = spec.data
            samples = min(samples, sample_count(load_data(source, spec.inputs), spec.inputs))
        data, record = calibration_feeds(source, spec.inputs, samples, int(calibration.get("seed", 0)))
    reduce_range, reduce_range_reason = int8_reduce_range()
    settings = {**INT8_SETTINGS, "reduce_range": reduce_range}
    inputs = {"fp32_sha256": fp32.sha256, "settings": settings, "calibration": record,
              "onnxruntime": installed_version("onnxruntime"), "onnx": installed_version("onnx")}

    def build(tmp: Path) -> dict[str, Any]:  # in a process of its own (models/in_child.py): calibration's memory
        return run_in_child(spec.name, "int8 quantization", build_int8, spec, str(fp32.path), fp32.sha256,
                            str(tmp), data, settings, record, reduce_range_reason)

    return cache.get_or_build(kind="int8", inputs=inputs, filename=f"{spec.name}.int8.onnx", build=build)


# --------------------------------------------------------------------------- external ONNX

def onnx_spec(path: str, name: str | None = None, *, shapes: str | dict[str, tuple[int, ...]] | None = None,
              vocab: str | int | dict[str, int] | None = None, data: str | None = None,
              shapes_source: str = "--shapes", batch_axis: str | Mapping[str, Any] | None = None,
              axes_source: str = "--batch-axis", values: str | Mapping[str, Any] | None = None,
              values_source: str = "--value") -> ModelSpec:
    """A ModelSpec (source "onnx") for an external ONNX file, so it goes through the same precision pipeline.

    Every input is resolved from the graph (edgebench.models.inputs.resolve): symbolic axes besides the batch need
    `shapes` (trtexec form), token-id inputs need `vocab`, or a fixed value in `values` ('sr:16000'; a scalar
    integer input with neither takes its value from `data` when that holds it). dynamic_batch is False when the
    graph fixes the batch (then graph_batch says which); errors name the input and axis."""

    info = inspect_onnx(path)
    shape_map = parse_shapes(shapes, shapes_source) if isinstance(shapes, (str, type(None))) else dict(shapes)
    vocab_map = parse_vocab(vocab)
    axes = parse_batch_axes(batch_axis, axes_source)
    fixed = parse_values(values, values_source)
    try:
        plan = resolve(info.inputs, shapes=shape_map, vocab=vocab_map, source=str(path), shapes_source=shapes_source,
                       vocab_from_data=bool(data), batch_axis=axes, axes_source=axes_source, values=fixed,
                       values_source=values_source)
    except MissingInputs as exc:  # everything missing in one refusal, with the options that would run it
        raise propose(path, list(info.inputs), exc, shapes=shape_map, batch_axis=axes, values=fixed,
                      vocab=vocab_map) from None
    inputs = plan.inputs
    if data and any(d.role == "tokens" and d.vocab is None and d.value is None for d in inputs):
        real = load_data(data, inputs)
        # a scalar integer (a sample rate) with no vocabulary or value: the data's value, in every feed (timing too)
        scalars = {d.name: real[d.name].item() for d in inputs
                   if d.role == "tokens" and d.vocab is None and d.value is None and not d.shape and d.batch_axis is None}
        inputs = vocab_from(with_values(inputs, scalars, str(path), data), real, f"{data}")
        fixed = {**fixed, **scalars}
    num_classes = _output_classes(path)
    return ModelSpec(
        name=name or Path(path).stem,
        source="onnx",
        description=f"external ONNX {path}",
        onnx_path=str(path),
        output_name=info.output_names[0] if info.output_names else "output",
        num_classes=num_classes if num_classes is not None else 1000,
        dynamic_batch=plan.fixed_batch is None,
        opset=info.opset,
        spec_file=str(path),
        inputs=inputs,
        outputs=tuple(info.output_names),
        vocab=vocab_map.get("*"),
        shapes=",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shape_map.items()) or None,
        data=data,
        graph_batch=plan.fixed_batch,
        batch_axis=axes or None,
        values=fixed or None,
    )


def _output_classes(path: str) -> int | None:
    """C of the first output shaped [N, C] (a class-score vector), else None."""
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    for out in proto.graph.output:
        dims = out.type.tensor_type.shape.dim
        if len(dims) == 2 and dims[-1].HasField("dim_value") and dims[-1].dim_value > 0:
            return int(dims[-1].dim_value)
    return None


def resolved_spec(spec: ModelSpec, shapes: str | None = None, shapes_source: str = "shapes",
                  values: Mapping[str, Any] | None = None, values_source: str = "sweep.values") -> ModelSpec:
    """The spec with its input set resolved against `shapes` (trtexec form; else the spec's own `shapes`) and its
    fixed input values (the spec's `values:`, then `values`: the sweep's / --value, applied to the inputs the model
    has; a name it lacks is left for the caller to check across the sweep's models).

    source onnx: inputs, dtypes, outputs and the fixed batch come from the file's graph, unless the spec lists
    `inputs:` (its single-input keys never overrode the graph). Exported models (torchvision/builtin) fix every axis but the batch, so
    shapes given for them are only checked against the spec (unknown input, rank, contradicting dim)."""
    import dataclasses


    values = dict(values or {})
    if spec.source == "onnx":
        if spec.inputs and not shapes:
            return _with_sweep_values(spec, values, values_source)
        names = {g.name for g in inspect_onnx(str(spec.onnx_path)).inputs} if values else set()
        own = {k: v for k, v in values.items() if k in names}
        got = onnx_spec(str(spec.onnx_path), spec.name, shapes=shapes or spec.shapes, vocab=spec.vocab,
                        data=spec.data, shapes_source=shapes_source if shapes else f"{spec.spec_file}: shapes",
                        batch_axis=spec.batch_axis, axes_source=f"{spec.spec_file}: batch_axis",
                        values={**(spec.values or {}), **own},
                        values_source=values_source if own else f"{spec.spec_file}: values")
        return dataclasses.replace(
            got, description=spec.description or got.description, spec_file=spec.spec_file or got.spec_file,
            parity_atol=spec.parity_atol, weights=spec.weights,
            num_classes=spec.num_classes if spec.spec_file.endswith((".yaml", ".yml")) else got.num_classes)
    if shapes:
        graph = [GraphInput(d.name, d.dtype, d.full_shape("batch" if spec.dynamic_batch else 1))  # type: ignore[arg-type]
                 for d in spec.inputs]
        resolve(graph, shapes=parse_shapes(shapes, shapes_source), vocab={d.name: d.vocab or 1 for d in spec.inputs},
                source=f"model {spec.name}", shapes_source=shapes_source,
                batch_axis={d.name: d.batch_axis for d in spec.inputs})
    return _with_sweep_values(spec, values, values_source)


def _with_sweep_values(spec: ModelSpec, values: Mapping[str, Any], source: str) -> ModelSpec:
    """`values` set on the inputs of `spec` that it has (recorded in spec.values, so the export/cache keys differ)."""
    import dataclasses

    own = {k: v for k, v in values.items() if k in {d.name for d in spec.inputs}}
    if not own:
        return spec
    return dataclasses.replace(spec, inputs=with_values(spec.inputs, own, f"model {spec.name}", source),
                               values={**(spec.values or {}), **own})
