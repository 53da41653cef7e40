"""The keys a profile or model spec may hold: type, default, limits and doc of each field, and the
check of one value against its field.

config.py loads files, merges `extends:` and checks what spans fields (semantics); this module is the
schema it checks against, plain data plus the per-value rules, so the keys can be read in one place.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgebench.errors import ConfigError

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "amp", "int8")
MODES = ("process", "streams")
GPU_SHARING = ("time-slicing", "mps")  # how a row's GPU instances share the GPU (mps: edgebench runs the daemon)
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


# profile schema: section -> field -> Field. Top-level scalars live in section "".
PROFILE_SCHEMA: dict[str, dict[str, Field]] = {
    "": {
        "name": Field("str", doc="profile name"),
        "description": Field("str", "", doc="one line shown by `edgebench profiles`"),
        "extends": Field("str|none", None, doc="profile this one overrides"),
        "device": Field("str", "host", doc="kind of device: host, dgpu, jetson"),
    },
    "sweep": {
        "models": Field("list[str]", ["tiny_cnn"]),
        "precisions": Field("list[str]", ["fp32"]),
        "batches": Field("list[int]", [1], minimum=1),
        "instances": Field("list[int]", [1], minimum=1),
        "modes": Field("list[str]", ["process"]),
        "backends": Field("list[str]", ["ort"]),
        "accelerator": Field("str", "cpu", doc="placement of every instance when `placements` is not given"),
        "placements": Field("list[list[str]]", None, doc="explicit placement sets; each set's length is its instance count"),
        "option_sets": Field("list[map]", None, doc="backend option sets, e.g. [{}, {cuda_graph: true}]; each is a row"),
        "shapes": Field("map|none", None, doc="per model, input shapes in trtexec form for symbolic axes, "
                                              "e.g. {detector: 'images:1x3x320x320'}"),
        "values": Field("map|none", None, doc="fixed input values by input name, {sr: 16000} (--value sr:16000): "
                                              "every model of the sweep with that input is fed the constant"),
    },
    "run": {
        "warmup_s": Field("float", 1.0, minimum=0.0),
        "duration_s": Field("float", 5.0, minimum=0.1, doc="minimum measured window"),
        "max_duration_s": Field("float", 60.0, minimum=0.1, doc="the window never runs longer"),
        "min_inferences": Field("int", 662, minimum=1, doc="window extends until this many inferences (p99 needs 662)"),
        "threads_per_instance": Field("int|auto", "auto", doc="CPU threads per instance; auto = cores // instances"),
        "sub_windows": Field("int", 5, minimum=2, doc="throughput stability is checked across this many sub-windows"),
        "stability_tolerance_pct": Field("float", 15.0, minimum=0.0),
        "load_timeout_s": Field("float", 300.0, minimum=1.0),
        "barrier_timeout_s": Field("float", 120.0, minimum=1.0,
                                   doc="how long a ready instance waits for the start signal (every instance ready)"),
        "collect_timeout_s": Field("float", 60.0, minimum=1.0),
        "seed": Field("int", 0),
        "accuracy_samples": Field("int", 16, minimum=0, doc="fixed inputs compared against FP32 (0 = off)"),
        "repeats": Field("int", 1, minimum=1, doc="measure every config this many times (rows differ in `repeat`)"),
        "rate_hz": Field("float|none", None, minimum=0.001,
                         doc="open loop: each instance is a stream with this fixed arrival rate (inferences/s); "
                             "latency counts queueing (end - scheduled arrival). null = closed loop"),
        "slo_ms": Field("float|none", None, minimum=0.001,
                        doc="with rate_hz: search the most streams whose p99 latency stays under this"),
        "max_streams": Field("int", 64, minimum=1, doc="the SLO search never tries more streams than this"),
        "gpu_sharing": Field("str|list[str]", "time-slicing", choices=GPU_SHARING,
                             doc="mps: run the row's GPU instances under a CUDA MPS daemon that edgebench "
                                 "starts and stops (nvidia-cuda-mps-control); GPU settings are never changed. "
                                 "A list ([time-slicing, mps]) makes it a sweep dimension: every config once "
                                 "per mode (and one SLO search per mode)"),
        "workers": Field("str", "warm", choices=("warm", "fresh"),
                         doc="warm: a row's instance processes are kept for the next rows of the same model, "
                             "backend, precision and options (only batch or instance count changes; the session "
                             "is reopened, the process and its imported framework are reused); fresh: new "
                             "processes for every row. The row's `workers` column says which"),
        "kernel_profile_steps": Field("int", 0, minimum=0,
                                      doc="GPU: profile this many inferences in the row's probe process (never a "
                                          "measured one) to get tensor_core_time_pct (0 = off)"),
    },
    "telemetry": {
        "samplers": Field("list[str]", ["host"]),
        "interval_s": Field("float", 0.1, minimum=0.005),
        "idle_baseline_s": Field("float", 0.0, minimum=0.0),
    },
    "power": {
        "modes": Field("list[str|int]", None, doc="Jetson nvpmodel modes to sweep, by name or id, e.g. [MAXN, 30W]; "
                                                  "null = leave the power mode alone"),
        "allow_changes": Field("bool", False, doc="must be true for power.modes: changing the mode needs root and "
                                                  "affects the whole board (restored at the end)"),
        "settle_s": Field("float", 5.0, minimum=0.0, doc="wait after switching a mode before the next row"),
        "calibration": Field("map|none", None, doc="on-board sensor vs a wall meter: {scale, offset_w, source[, "
                                                   "power_scope]}; rows get power_w_mean_calibrated = power_w_mean * "
                                                   "scale + offset_w (raw columns unchanged)"),
        "calibration_file": Field("str|none", None, doc="YAML with per-board calibrations: {boards: {<board model>: "
                                                        "{scale, offset_w, source}}}; the board comes from the "
                                                        "device tree / DMI"),
    },
    "cooldown": {
        "enabled": Field("bool", False, doc="wait before each row until the GPU/SoC temperature and clock are back "
                                            "near the idle baseline read before the first row (or timeout_s)"),
        "source": Field("str", "auto", choices=("auto", "sysfs", "nvml"),
                        doc="thermal probe: sysfs thermal zones + GPU devfreq (Jetson), nvml (discrete GPU), "
                            "auto = nvml when the sweep uses a CUDA GPU, else sysfs"),
        "sysfs_root": Field("str", "/", doc="root of the sysfs tree the sysfs probe reads (a fixture tree in tests)"),
        "temp_margin_c": Field("float", 3.0, minimum=0.0, doc="settled when within this of the idle temperature"),
        "clock_margin_pct": Field("float", 10.0, minimum=0.0, doc="settled when the clock is within this % of idle"),
        "timeout_s": Field("float", 120.0, minimum=0.0, doc="give up waiting after this; the row says so"),
        "poll_s": Field("float", 1.0, minimum=0.01, doc="seconds between two readings while waiting"),
    },
    "calibration": {
        "source": Field("str", "synthetic", doc="'synthetic', a folder of images / .npy files, or 'labelled': "
                                                "a subset of accuracy.dataset disjoint from the evaluated images"),
        "samples": Field("int", 32, minimum=1),
        "seed": Field("int", 0),
    },
    "accuracy": {
        "dataset": Field("str|none", None, doc="labelled images (class subfolders, or a flat folder + `labels`): "
                                               "rows get accuracy_top1_pct/top5_pct on run.accuracy_samples of them"),
        "labels": Field("str|none", None, doc="labels file '<image> <class index>' per line, for a flat folder"),
        "weights": Field("str|none", None, doc="weights for every model of the sweep, overriding the model specs' "
                                               "(torchvision:IMAGENET1K_V2 or a state_dict file)"),
    },
}

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
    "values": Field("map|none", None, doc="fixed input values, {name: number} (e.g. {sr: 16000}): that input is the "
                                          "constant in every feed (timing, calibration, accuracy)"),
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


class Problems:
    """Collects every ConfigError of one profile so that all of them are reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[ConfigError] = []

    def check(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except ConfigError as exc:
            if str(exc) not in {str(e) for e in self.errors}:
                self.errors.append(exc)
            return None

    def raise_all(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            parts = [f"{e.source}: field '{e.field}': {e.problem}" if e.source != self.source else
                     (f"field '{e.field}': {e.problem}" if e.field else e.problem) for e in self.errors]
            raise ConfigError(self.source, "", f"{len(self.errors)} problems: " + "; ".join(parts))
