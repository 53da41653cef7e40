"""What TensorRT reports back, read as plain data (tested on a CPU against real captured text):
the engine inspector's JSON (tactic/kernel names -> tensor-core evidence, layer output data types), the
builder's "Layers Running on DLA/GPU" log (DLA fallbacks), and I/O tensor types as numpy dtypes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgebench.errors import BackendError
from edgebench.evaluation.tensorcores import classify_kernel

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.trt_logic import BuildPlan

_NUMPY_DTYPES = {"FLOAT": "float32", "HALF": "float16", "INT8": "int8", "INT32": "int32", "INT64": "int64",
                 "BOOL": "bool", "UINT8": "uint8"}


def numpy_dtype(trt_dtype_name: str) -> str:
    """numpy dtype name for a tensorrt.DataType member name (DataType.HALF.name == 'HALF' -> 'float16')."""
    try:
        return _NUMPY_DTYPES[trt_dtype_name]
    except KeyError:
        raise BackendError(f"TensorRT I/O tensor of type {trt_dtype_name} has no numpy equivalent here "
                           f"(supported: {', '.join(_NUMPY_DTYPES)})") from None


@dataclass(frozen=True)
class EngineLayer:
    name: str
    layer_type: str | None = None
    tactic: str | None = None
    output_formats: tuple[str, ...] = ()


def parse_inspector_json(text: str) -> list[EngineLayer]:
    """Layers from IEngineInspector.get_engine_information(LayerInformationFormat.JSON).

    With ProfilingVerbosity.DETAILED each layer is an object (Name, LayerType, Outputs[].Format/Datatype,
    TacticName for library kernels); with LAYER_NAMES_ONLY (the default) it is just the name."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BackendError(f"engine inspector JSON unreadable: {exc}") from None
    layers = data.get("Layers") if isinstance(data, dict) else None
    if not isinstance(layers, list):
        raise BackendError("engine inspector JSON has no 'Layers' list")
    out = []
    for item in layers:
        if isinstance(item, str):
            out.append(EngineLayer(name=item))
            continue
        if not isinstance(item, dict):
            continue
        formats = tuple(str(o.get("Format/Datatype", "")) for o in item.get("Outputs", []) if isinstance(o, dict))
        tactic = item.get("TacticName")
        out.append(EngineLayer(name=str(item.get("Name", "")), layer_type=item.get("LayerType"),
                               tactic=str(tactic) if tactic else None, output_formats=formats))
    return out


_DTYPE = re.compile(r"\b(FP32|FP16|BF16|FP8|Int8|INT8|Int32|INT32|Int64|Bool|Float|Half|UInt8)\b")
_DTYPE_NAMES = {"Float": "FP32", "Half": "FP16", "INT8": "Int8", "INT32": "Int32"}


def format_dtype(fmt: str) -> str | None:
    """'Thirty-two wide channel vectorized row major Int8 format' -> 'Int8'; None when no type is named."""
    m = _DTYPE.search(fmt)
    return None if m is None else _DTYPE_NAMES.get(m.group(1), m.group(1))


def engine_evidence(layers: list[EngineLayer]) -> dict[str, Any]:
    """Tensor-core and precision evidence from the engine's own layer list (no timing: the inspector has
    none, so this counts tactics, it is not a time share)."""

    tactics = [layer.tactic for layer in layers if layer.tactic]
    tensor = [t for t in tactics if classify_kernel(t)[0]]
    dtypes = Counter(d for layer in layers for f in layer.output_formats if (d := format_dtype(f)))
    text = (f"engine: {len(tensor)}/{len(tactics)} named tactics on tensor cores"
            if tactics else "engine: no tactic names (build with ProfilingVerbosity.DETAILED)")
    if dtypes:
        text += "; layer outputs " + ", ".join(f"{k} x{v}" for k, v in sorted(dtypes.items()))
    if tensor:
        text += f"; e.g. {tensor[0][:80]}"
    return {"layers": len(layers), "tactics": len(tactics), "tensor_core_tactics": len(tensor),
            "output_dtypes": dict(sorted(dtypes.items())), "tensor_core_evidence": text}


_SECTION = re.compile(r"Layers [Rr]unning on (DLA|GPU)")
_ENTRY = re.compile(r"\[(Dla|Gpu)Layer\]\s*(.*?)[,\s]*$")


@dataclass(frozen=True)
class LayerPlacement:
    """What the builder put on DLA and what fell back to the GPU (from its INFO log). Not alike: `dla` holds
    DLA subgraphs ('{ForeignNode[first...last]}', one per DLA loadable, each any number of layers), `gpu`
    holds single layers with TensorRT's layer type in front ('SOFTMAX: prob', 'REFORMAT: ...')."""

    dla: tuple[str, ...]
    gpu: tuple[str, ...]


_GPU_TYPE = re.compile(r"([A-Z][A-Z0-9_]*): ")


def gpu_layer_type(entry: str) -> str | None:
    """'SOFTMAX: prob' -> 'SOFTMAX': the type prefix of a '[GpuLayer] TYPE: name' entry; None without one."""
    m = _GPU_TYPE.match(entry)
    return m.group(1) if m else None


def parse_build_log(lines: list[str]) -> LayerPlacement | None:
    """The builder's '---- Layers Running on DLA ----' / 'on GPU' listing (TensorRT 8.x-10.x prints it at
    INFO for engines with a DLA default device); None when the log has no such listing."""
    dla: list[str] = []
    gpu: list[str] = []
    seen = False
    for line in lines:
        if _SECTION.search(line):
            seen = True
            continue
        m = _ENTRY.search(line)
        if m:
            seen = True
            (dla if m.group(1) == "Dla" else gpu).append(m.group(2).strip())
    return LayerPlacement(tuple(dla), tuple(gpu)) if seen else None


def placement_fields(plan: BuildPlan, placement: LayerPlacement | None) -> dict[str, Any]:
    """Sidecar/row facts about DLA placement: the GPU fallback layers of a DLA engine."""
    if plan.target.device_type != "dla":
        return {"dla_layers": None, "gpu_fallback_layers": None}
    if placement is None:
        return {"dla_layers": None, "gpu_fallback_layers": None,
                "placement_note": "the builder log listed no DLA/GPU layer placement"}
    return {"dla_layers": list(placement.dla), "gpu_fallback_layers": list(placement.gpu)}
