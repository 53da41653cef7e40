"""The fp16 conversion and the int8 quantization of an FP32 ONNX file, as run in a process of their own
(models/in_child.py; models/precision.py decides what to build, caches it and keys it): the settings both record,
the calibration cut by the model's shape plan, and the steps. Nothing here runs in the harness process but the
constants (issue 37: what ONNX Runtime's quantizer allocates never stays in the harness)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ModelError, exc_text
from edgebench.models.framework_log import framework_log, summary
from edgebench.models.inputs import batches_of, sample_count
from edgebench.models.int8_graph import check_loads, custom_domain_nodes, opset_for_qdq, working_folder

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.models.spec import ModelSpec

FP16_SETTINGS = {"converter": "onnxruntime.transformers.float16.convert_float_to_float16", "keep_io_types": True}
INT8_SETTINGS: dict[str, Any] = {
    "quantizer": "onnxruntime.quantization.quantize_static",
    "quant_format": "QDQ",
    "per_channel": True,
    "weight_type": "QInt8",
    "activation_type": "QInt8",
    "calibrate_method": "MinMax",
    # Bias stays float: TensorRT's parser rejects the int32 DequantizeLinear ORT makes for biases
    # (onnxruntime issue #17738) and fuses the float bias itself.
    "extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True, "QuantizeBias": False},
}
CALIBRATION_BATCH = 8  # samples per calibration run when the model's batch axis is dynamic

def build_fp16(spec: ModelSpec, fp32_path: str, fp32_sha256: str, tmp_path: str) -> dict[str, Any]:
    import onnx
    import onnxruntime

    try:
        from onnxruntime.transformers.float16 import convert_float_to_float16
        from onnxruntime.transformers.onnx_model import OnnxModel
    except ImportError as exc:
        raise ModelError(f"{spec.name}: fp16 conversion needs onnxruntime.transformers ({exc})") from None
    t0 = time.perf_counter()
    with framework_log() as log_lines:  # the converter's warnings go to the sidecar, not the console
        proto = convert_float_to_float16(onnx.load(fp32_path), keep_io_types=True)
        # The converter appends the input Casts at the end of the node list; ORT sorts graphs itself,
        # the checker and TensorRT's parser need topological order.
        OnnxModel.graph_topological_sort(proto.graph, is_deterministic=True)
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:  # onnx ValidationError
        raise ModelError(f"{spec.name}: fp16 conversion produced an invalid model ({exc})") from None
    onnx.save(proto, tmp_path)
    return {
        "model": spec.name,
        "precision": "fp16",
        "source_fp32": {"path": fp32_path, "sha256": fp32_sha256},
        "settings": FP16_SETTINGS,
        "versions": {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__},
        "weights": spec.weights_label,
        "convert_s": round(time.perf_counter() - t0, 3),
        "framework_log": summary(log_lines),
    }


def build_int8(spec: ModelSpec, fp32_path: str, fp32_sha256: str, tmp_path: str, data: dict[str, np.ndarray],
                settings: dict[str, Any], record: dict[str, Any], reduce_range_reason: str) -> dict[str, Any]:
    import onnx
    import onnxruntime

    t0 = time.perf_counter()
    tmp = Path(tmp_path)
    out = tmp.resolve()  # absolute: the steps run in their own folder (their tools write into the cwd)
    with tempfile.TemporaryDirectory(prefix="edgebench-int8-") as folder, working_folder(Path(folder)), \
            framework_log() as log_lines:  # ONNX Runtime's warnings go to the sidecar, not the console
        work = Path(folder).resolve()
        upgraded, opset_note, per_channel = opset_for_qdq(Path(fp32_path).resolve(), work / "opset13.onnx")
        source, pre = _pre_process(upgraded, work / "pre.onnx")
        kept = custom_domain_nodes(source, work / "named.onnx")
        if kept.path is not None:
            source = kept.path
        _quantize(spec, source, out, data, bool(settings["reduce_range"]), per_channel=per_channel,
                  exclude=kept.names)
        check_loads(spec.name, out)
    quantize_s = time.perf_counter() - t0
    proto = onnx.load(str(tmp))
    ops = [n.op_type for n in proto.graph.node]
    return {
        "model": spec.name,
        "precision": "int8",
        "source_fp32": {"path": fp32_path, "sha256": fp32_sha256},
        "settings": {**settings, "per_channel": per_channel},
        "reduce_range_reason": reduce_range_reason,
        "pre_process": pre,
        "calibration": record,
        "int8_notes": [n for n in (opset_note, kept.note) if n],
        "framework_log": summary(log_lines),
        "qdq_nodes": {"QuantizeLinear": ops.count("QuantizeLinear"),
                      "DequantizeLinear": ops.count("DequantizeLinear")},
        "versions": {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__},
        "weights": spec.weights_label,
        "quantize_s": round(quantize_s, 3),
    }


def _pre_process(src: Path, out: Path) -> tuple[Path, str]:
    """quant_pre_process (symbolic shape inference + ORT graph optimization) when it works, else src."""
    try:
        from onnxruntime.quantization.shape_inference import quant_pre_process

        quant_pre_process(str(src), str(out), skip_symbolic_shape=False)
    except Exception as exc:  # it raises many kinds on graphs it cannot handle
        return src, f"skipped: {exc_text(exc, first_line=True)}"
    return out, "quant_pre_process"


def calibration_chunks(spec: ModelSpec, data: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """The calibration set cut by the model's shape plan: chunks of the graph's fixed batch (a short last one
    dropped), else of CALIBRATION_BATCH (the last one padded); inputs with no batch axis go whole into each."""
    count = sample_count(data, spec.inputs)
    step = spec.fixed_batch
    if step is None:
        return batches_of(data, min(CALIBRATION_BATCH, count), inputs=spec.inputs)
    if count < step:
        raise ModelError(f"{spec.name}: the graph fixes the batch at {step}, calibration has {count} samples; "
                         f"give at least {step} (--calibration-samples, calibration.samples)")
    return batches_of(data, step, pad=False, inputs=spec.inputs)


def _quantize(spec: ModelSpec, src: Path, out: Path, data: dict[str, np.ndarray], reduce_range: bool = False, *,
              per_channel: bool = True, exclude: tuple[str, ...] = ()) -> None:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    batches = calibration_chunks(spec, data)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

    try:
        quantize_static(
            str(src), str(out), Reader(),
            quant_format=QuantFormat.QDQ,
            per_channel=per_channel,
            reduce_range=reduce_range,
            weight_type=QuantType.QInt8,
            activation_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            nodes_to_exclude=list(exclude),
            extra_options=dict(INT8_SETTINGS["extra_options"]),
        )
    except ModelError:
        raise
    except KeyError as exc:  # e.g. KeyError('140_scale'): a tensor the calibration produced no range for
        key = str(exc.args[0]) if exc.args else ""
        tensor = key.rsplit("_", 1)[0] if key.endswith(("_scale", "_zero_point")) else key
        raise ModelError(f"{spec.name}: int8 quantization found no calibration range for tensor '{tensor}' "
                         f"(quantizer KeyError {key!r}); the node producing it could not be calibrated") from None
    except Exception as exc:  # the quantizer raises many kinds
        raise ModelError(f"{spec.name}: int8 quantization failed "
                         f"({exc_text(exc, first_line=True, limit=300)})") from None
