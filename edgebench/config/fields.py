"""The keys a model spec may hold: type, default, limits and doc of each field, and the check of one value
against its field (models/spec.py reads it). A profile's keys are typed models in sections.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgebench.config.sections import GPU_SHARING, MODES, PRECISIONS  # noqa: F401 - their home moved
from edgebench.errors import ConfigError

MODEL_SOURCES = ("torchvision", "builtin", "onnx")
DTYPES = ("float32", "float16", "int64", "int32", "bool")  # = edgebench.models.inputs.INPUT_DTYPES


@dataclass(frozen=True)
class Field:
    kind: str  # "str", "int", "float", "bool", "list[str]", "list[int]", "list[list[str]]", "map", "int|auto", "str|none",
    # "int|none", "map|none"
    default: Any = None
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    doc: str = ""


MODEL_SCHEMA: dict[str, Field] = {
    "name": Field("str"),
    "description": Field("str", ""),
    "source": Field("str", choices=MODEL_SOURCES),
    "arch": Field("str", "", doc="torchvision constructor or builtin model name"),
    "weights": Field("str|none", None, doc="torchvision:<enum member> (e.g. torchvision:IMAGENET1K_V2) or a local "
                                           ".pth state_dict; random init when absent"),
    "preprocess": Field("map|none", None, doc="image preprocessing for labelled data: resize, crop, mean, std, "
                                              "interpolation (torchvision weights bring their own)"),
    "onnx_path": Field("str|none", None, doc="for source: onnx"),
    "input_name": Field("str", "input"),
    "input_shape": Field("list[int]", minimum=1, doc="per-sample shape, without the batch axis (one-input models)"),
    "inputs": Field("list[map]", None, doc="several inputs: [{name, dtype, shape (per sample), vocab, role, batch_axis}], "
                                           "in the order the model's forward() takes them"),
    "outputs": Field("list[str]", None, doc="names of the model's outputs, in forward() order (default: [output_name])"),
    "config": Field("map|none", None, doc="keyword arguments of the model constructor (random init from a config)"),
    "vocab": Field("int|none", None, minimum=1, doc="vocabulary size: token-id inputs are drawn from [0, vocab)"),
    "shapes": Field("str|none", None, doc="source onnx: shapes of symbolic axes, trtexec form 'name:1x3x320x320'"),
    "batch_axis": Field("map|none", None, doc="source onnx: batch axis per input name (an int, or none: no batch "
                                              "axis, fed as is at every batch); default: found from the graph"),
    "data": Field("str|none", None, doc=".npz (one array per input name) or folder of them: accuracy + calibration"),
    "input_dtype": Field("str", "float32", choices=DTYPES),
    "output_name": Field("str", "output"),
    "num_classes": Field("int", 1000, minimum=1),
    "dynamic_batch": Field("bool", True),
    "opset": Field("int", 17, minimum=7),
    "parity_atol": Field("float", 1e-3, minimum=0.0),
}


def type_ok(kind: str, value: Any) -> bool:
    """Whether `value` has the schema kind `kind` (e.g. 'list[int]', 'float|none')."""
    if kind == "str":
        return isinstance(value, str)
    if kind == "str|list[str]":
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if kind == "str|none":
        return value is None or isinstance(value, str)
    if kind == "float|none":
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "int|none":
        return value is None or (isinstance(value, int) and not isinstance(value, bool))
    if kind == "map|none":
        return value is None or isinstance(value, Mapping)
    if kind == "int|auto":
        return value == "auto" or (isinstance(value, int) and not isinstance(value, bool))
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "map":
        return isinstance(value, Mapping)
    if kind == "map|none":
        return value is None or isinstance(value, Mapping)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "list[int]":
        return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if kind == "list[str|int]":
        return value is None or (isinstance(value, list) and all(
            isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) for v in value))
    if kind == "list[map]":
        return value is None or (isinstance(value, list) and all(isinstance(v, Mapping) for v in value))
    if kind == "list[list[str]]":
        return value is None or (
            isinstance(value, list)
            and all(isinstance(s, list) and s and all(isinstance(v, str) for v in s) for s in value)
        )
    raise AssertionError(f"unknown schema kind {kind}")


def check_value(source: str, name: str, spec: Field, value: Any) -> Any:
    """The value as the field holds it (floats as float), or a ConfigError naming source and field."""
    if value is None and spec.default is None and spec.kind.startswith("list"):
        return None  # an optional list left out
    if spec.kind == "float" and type_ok("float", value) and not math.isfinite(value):
        raise ConfigError(source, name, f"{value!r} is not a finite number")
    if not type_ok(spec.kind, value):
        raise ConfigError(source, name, f"expected {spec.kind}, got {type(value).__name__} {value!r}")
    if isinstance(value, list) and len(value) == 0:
        raise ConfigError(source, name, "must not be empty")
    items = value if isinstance(value, list) else [value]
    for item in items:
        if spec.choices is not None and item not in spec.choices:
            raise ConfigError(source, name, f"{item!r} is not one of {', '.join(map(str, spec.choices))}")
        if spec.minimum is not None and isinstance(item, (int, float)) and item < spec.minimum:
            raise ConfigError(source, name, f"{item!r} is below the minimum {spec.minimum}")
    if spec.kind in ("float", "float|none") and value is not None:
        return float(value)
    return value
