"""Profiles, model specs and run configurations: typed, validated, immutable.

A profile is a YAML file under profiles/ (or any path); it may `extends:` another
profile, whose values it overrides key by key (mappings merge, lists replace).
A model spec is a YAML file under models/. Every error names the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import ConfigError, EdgebenchError
from edgebench.inputs import InputDesc

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PROFILES_DIR = PROJECT_ROOT / "profiles"
MODELS_DIR = PROJECT_ROOT / "models"

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "amp", "int8")
MODES = ("process", "streams")
GPU_SHARING = ("time-slicing", "mps")  # how a row's GPU instances share the GPU (mps: edgebench runs the daemon)
MODEL_SOURCES = ("torchvision", "builtin", "onnx")
DTYPES = ("float32", "float16", "int64", "int32", "bool")  # = edgebench.inputs.INPUT_DTYPES


# --------------------------------------------------------------------------- schema

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
        "barrier_timeout_s": Field("float", 120.0, minimum=1.0),
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
        "gpu_sharing": Field("str", "time-slicing", choices=GPU_SHARING,
                             doc="mps: run the row's GPU instances under a CUDA MPS daemon that edgebench "
                                 "starts and stops (nvidia-cuda-mps-control); GPU settings are never changed"),
        "kernel_profile_steps": Field("int", 0, minimum=0,
                                      doc="GPU: profile this many inferences of instance 0 outside the window "
                                          "to get tensor_core_time_pct (0 = off)"),
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
    "inputs": Field("list[map]", None, doc="several inputs: [{name, dtype, shape (per sample), vocab, role}], "
                                           "in the order the model's forward() takes them"),
    "outputs": Field("list[str]", None, doc="names of the model's outputs, in forward() order (default: [output_name])"),
    "config": Field("map|none", None, doc="keyword arguments of the model constructor (random init from a config)"),
    "vocab": Field("int|none", None, minimum=1, doc="vocabulary size: token-id inputs are drawn from [0, vocab)"),
    "shapes": Field("str|none", None, doc="source onnx: shapes of symbolic axes, trtexec form 'name:1x3x320x320'"),
    "data": Field("str|none", None, doc=".npz (one array per input name) or folder of them: accuracy + calibration"),
    "input_dtype": Field("str", "float32", choices=DTYPES),
    "output_name": Field("str", "output"),
    "num_classes": Field("int", 1000, minimum=1),
    "dynamic_batch": Field("bool", True),
    "opset": Field("int", 17, minimum=7),
    "parity_atol": Field("float", 1e-3, minimum=0.0),
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
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


def _check_value(source: str, name: str, spec: Field, value: Any) -> Any:
    if value is None and spec.default is None and spec.kind.startswith("list"):
        return None  # an optional list left out
    if spec.kind == "float" and _type_ok("float", value) and not math.isfinite(value):
        raise ConfigError(source, name, f"{value!r} is not a finite number")
    if not _type_ok(spec.kind, value):
        raise ConfigError(source, name, f"expected {spec.kind}, got {type(value).__name__} {value!r}")
    if spec.kind.startswith("list") and value is not None and len(value) == 0:
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


class _Problems:
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


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "", f"not valid YAML: {exc}".replace("\n", " ")) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", f"top level must be a mapping, got {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- profiles

@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    device: str
    source: str  # file it came from (and its parents)
    sweep: Mapping[str, Any]
    run: Mapping[str, Any]
    telemetry: Mapping[str, Any]
    calibration: Mapping[str, Any]
    power: Mapping[str, Any] = field(default_factory=dict)
    accuracy: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "device": self.device,
            "source": self.source,
            "sweep": dict(self.sweep),
            "run": dict(self.run),
            "telemetry": dict(self.telemetry),
            "calibration": dict(self.calibration),
            "power": dict(self.power),
            "accuracy": dict(self.accuracy),
        }

    def with_overrides(self, section: str, **values: Any) -> Profile:
        """A copy with some values of one section replaced (validated like the file)."""
        current = dict(getattr(self, section))
        for key, value in values.items():
            if value is None:
                continue
            spec = PROFILE_SCHEMA[section].get(key)
            if spec is None:
                raise ConfigError("command line", f"{section}.{key}", "unknown option")
            current[key] = _check_value("command line", f"{section}.{key}", spec, value)
        data = self.to_dict()
        data[section] = current
        prof = Profile(**data)
        _check_profile_semantics(prof)
        return prof


def profile_path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    candidate = PROFILES_DIR / f"{name_or_path}.yaml"
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
    raise ConfigError(str(name_or_path), "", f"unknown profile (known: {known})")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _raw_profile(path: Path, seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], str]:
    if path.resolve() in seen:
        chain = " -> ".join(str(p) for p in (*seen, path))
        raise ConfigError(str(path), "extends", f"circular extends: {chain}")
    data = _read_yaml(path)  # its keys are checked with its values, after the merge (profile_from_dict)
    parent = data.get("extends")
    if parent is None:
        return data, str(path)
    if not isinstance(parent, str):
        raise ConfigError(str(path), "extends", f"expected a profile name, got {parent!r}")
    try:
        parent_path = profile_path(parent)
    except ConfigError as exc:
        raise ConfigError(str(path), "extends", exc.problem) from None
    parent_data, parent_source = _raw_profile(parent_path, (*seen, path.resolve()))
    parent_data = {k: v for k, v in parent_data.items() if k != "name"}  # a name is never inherited
    merged = _merge(parent_data, {k: v for k, v in data.items() if k != "extends"})
    return merged, f"{path} (extends {parent_source})"


def _check_keys(source: str, data: dict[str, Any], problems: _Problems | None = None) -> None:
    """Unknown keys, each one a problem (all collected in `problems`; raised at once without one)."""
    own = problems or _Problems(source)
    for key, value in data.items():
        if key in PROFILE_SCHEMA[""]:
            continue
        if key not in PROFILE_SCHEMA:
            own.errors.append(ConfigError(source, key, f"unknown key (known: "
                                          f"{', '.join(sorted(set(PROFILE_SCHEMA) - {''} | set(PROFILE_SCHEMA[''])))})"))
            continue
        if not isinstance(value, dict):
            own.errors.append(ConfigError(source, key, f"expected a mapping, got {type(value).__name__}"))
            continue
        for sub in value:
            if sub not in PROFILE_SCHEMA[key]:
                own.errors.append(ConfigError(source, f"{key}.{sub}",
                                              f"unknown key (known: {', '.join(sorted(PROFILE_SCHEMA[key]))})"))
    if problems is None:
        own.raise_all()


def load_profile(name_or_path: str) -> Profile:
    path = profile_path(name_or_path)
    data, source = _raw_profile(path)
    return profile_from_dict(data, source, default_name=path.stem)


def profile_from_dict(data: dict[str, Any], source: str, default_name: str = "custom") -> Profile:
    """A validated Profile; every problem of `data` is reported in one ConfigError, not only the first."""
    problems = _Problems(source)
    _check_keys(source, data, problems)
    top: dict[str, Any] = {}
    for key, spec in PROFILE_SCHEMA[""].items():
        if key == "extends":
            continue
        value = data.get(key, default_name if key == "name" else spec.default)
        top[key] = problems.check(_check_value, source, key, spec, value)
    sections: dict[str, dict[str, Any]] = {}
    for section, fields in PROFILE_SCHEMA.items():
        if section == "":
            continue
        given = data.get(section, {}) or {}
        if not isinstance(given, dict):  # already a problem from _check_keys
            given = {}
        values = {}
        for key, spec in fields.items():
            value = problems.check(_check_value, source, f"{section}.{key}", spec, given.get(key, spec.default))
            values[key] = spec.default if value is None and spec.default is not None else value
        sections[section] = values
    top = {k: (default_name if k == "name" else PROFILE_SCHEMA[""][k].default) if v is None else v
           for k, v in top.items()}
    prof = Profile(source=source, **top, **sections)
    failed = {e.field for e in problems.errors}
    if "run.duration_s" in failed:  # its default would make the max_duration_s comparison meaningless
        failed.add("run.max_duration_s")
    for exc in _semantic_problems(prof):  # also when values were wrong: every problem at once
        if exc.field not in failed:
            problems.errors.append(exc)
    problems.raise_all()
    return prof


def _check_profile_semantics(prof: Profile) -> None:
    problems = _Problems(prof.source)
    problems.errors.extend(_semantic_problems(prof))
    problems.raise_all()


def _semantic_problems(prof: Profile) -> list[ConfigError]:
    src = prof.source
    problems = _Problems(src)
    for p in prof.sweep["precisions"]:
        if p not in PRECISIONS:
            problems.errors.append(ConfigError(src, "sweep.precisions", f"{p!r} is not one of {', '.join(PRECISIONS)}"))
    for m in prof.sweep["modes"]:
        if m not in MODES:
            problems.errors.append(ConfigError(src, "sweep.modes", f"{m!r} is not one of {', '.join(MODES)}"))
    if prof.run["max_duration_s"] < prof.run["duration_s"]:
        problems.errors.append(ConfigError(
            src, "run.max_duration_s",
            f"{prof.run['max_duration_s']} is shorter than run.duration_s {prof.run['duration_s']}",
        ))
    if prof.run.get("slo_ms") is not None and prof.run.get("rate_hz") is None:
        problems.errors.append(ConfigError(src, "run.slo_ms", "needs run.rate_hz (the arrival rate of each stream)"))
    for model, text in (prof.sweep.get("shapes") or {}).items():
        from edgebench.inputs import parse_shapes

        if not isinstance(text, str):
            problems.errors.append(ConfigError(src, f"sweep.shapes.{model}", f"expected a shape text like "
                                                                            f"'input:1x3x224x224', got {text!r}"))
            continue
        try:
            parse_shapes(text, f"sweep.shapes.{model}")
        except EdgebenchError as exc:
            problems.errors.append(ConfigError(src, f"sweep.shapes.{model}", str(exc)))
    tpi = prof.run["threads_per_instance"]
    if tpi != "auto" and tpi < 1:
        problems.errors.append(ConfigError(src, "run.threads_per_instance", f"{tpi} must be >= 1 or 'auto'"))
    from edgebench.telemetry.names import SAMPLER_NAMES  # names only: no sampler module is imported

    for name in prof.telemetry["samplers"]:
        if name not in SAMPLER_NAMES:
            problems.errors.append(ConfigError(src, "telemetry.samplers", f"unknown sampler {name!r} "
                                               f"(known: {', '.join(SAMPLER_NAMES)})"))
    return problems.errors


def list_profiles() -> list[tuple[str, str]]:
    out = []
    for path in sorted(PROFILES_DIR.glob("*.yaml")):
        try:
            out.append((path.stem, load_profile(str(path)).description))
        except ConfigError as exc:
            out.append((path.stem, f"BROKEN: {exc}"))
    return out


# --------------------------------------------------------------------------- models

@dataclass(frozen=True)
class ModelSpec:
    name: str
    source: str
    input_shape: tuple[int, ...]
    description: str = ""
    arch: str = ""
    weights: str | None = None
    onnx_path: str | None = None
    input_name: str = "input"
    input_dtype: str = "float32"
    output_name: str = "output"
    num_classes: int = 1000
    dynamic_batch: bool = True
    opset: int = 17
    parity_atol: float = 1e-3
    preprocess: Mapping[str, Any] | None = None
    spec_file: str = ""
    # several inputs/outputs (edgebench.inputs); empty = the one input/output of the fields above
    inputs: tuple[InputDesc, ...] = ()
    outputs: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    vocab: int | None = None
    shapes: str | None = None
    data: str | None = None
    graph_batch: int | None = None  # external ONNX: the batch its graph fixes (None: dynamic or 1)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["input_shape"] = list(self.input_shape)
        d["inputs"] = [i.to_dict() for i in self.inputs]
        d["outputs"] = list(self.outputs)
        d["config"] = dict(self.config)
        for key in (*NEW_SPEC_KEYS, "graph_batch"):  # absent when unused, so one-input specs keep their export cache keys
            if not d[key]:
                del d[key]
        return d

    @property
    def input_set(self) -> tuple[InputDesc, ...]:
        """Every input, in forward() order (one built from input_name/shape/dtype when `inputs` is empty)."""
        if self.inputs:
            return self.inputs
        from edgebench.inputs import role_for

        shape = tuple(self.input_shape)
        role = role_for(self.input_name, self.input_dtype, shape)
        return (InputDesc(self.input_name, self.input_dtype, shape, role, self.vocab if role == "tokens" else None,
                          (0,) if self.dynamic_batch else ()),)

    @property
    def output_names(self) -> tuple[str, ...]:
        return self.outputs or (self.output_name,)

    @property
    def fixed_batch(self) -> int | None:
        """The batch the model's graph fixes (None: dynamic, the sweep decides). Exported specs with
        dynamic_batch: false are exported at batch 1."""
        return None if self.dynamic_batch else int(self.graph_batch or 1)

    @property
    def weights_label(self) -> str:
        """What the row says about weights: 'random-init' or the weights file name."""
        if self.source == "onnx":
            return "from-onnx"
        if self.weights and self.weights.startswith("torchvision:"):
            return self.weights
        if self.weights and Path(self.weights).exists():
            return Path(self.weights).name
        return "random-init"


NEW_SPEC_KEYS = ("inputs", "outputs", "config", "vocab", "shapes", "data")
OPTIONAL_SPEC_KEYS = ("weights", "onnx_path", "preprocess", *NEW_SPEC_KEYS)


def model_spec_from_dict(data: dict[str, Any], source: str) -> ModelSpec:
    for key in data:
        if key not in MODEL_SCHEMA:
            raise ConfigError(source, key, f"unknown key (known: {', '.join(sorted(MODEL_SCHEMA))})")
    values: dict[str, Any] = {}
    for key, spec in MODEL_SCHEMA.items():
        optional = key in OPTIONAL_SPEC_KEYS or (key == "input_shape" and (data.get("inputs") or
                                                                            data.get("source") == "onnx"))
        if key not in data and spec.default is None and not optional:
            raise ConfigError(source, key, "is required")
        values[key] = _check_value(source, key, spec, data.get(key, spec.default))
    if values["source"] in ("torchvision", "builtin") and not values["arch"]:
        raise ConfigError(source, "arch", f"is required for source {values['source']}")
    if values["source"] == "onnx" and not values["onnx_path"]:
        raise ConfigError(source, "onnx_path", "is required for source onnx")
    if values["shapes"] is not None:
        from edgebench.inputs import parse_shapes

        try:
            parse_shapes(values["shapes"], "shapes")
        except EdgebenchError as exc:
            raise ConfigError(source, "shapes", str(exc)) from None
    values["inputs"] = _spec_inputs(source, values)
    if values["inputs"]:
        first = values["inputs"][0]
        values.update(input_name=first.name, input_shape=first.shape, input_dtype=first.dtype)
    values["input_shape"] = tuple(values["input_shape"] or ())
    values["outputs"] = tuple(values["outputs"] or ())
    values["config"] = dict(values["config"] or {})
    return ModelSpec(spec_file=source, **values)


INPUT_KEYS = ("name", "dtype", "shape", "vocab", "role")


def _spec_inputs(source: str, values: dict[str, Any]) -> tuple[InputDesc, ...]:
    """The `inputs:` list of a model spec, validated (errors name inputs[i].field)."""
    from edgebench.inputs import INPUT_DTYPES, ROLES, role_for

    out: list[InputDesc] = []
    for i, item in enumerate(values["inputs"] or []):
        where = f"inputs[{i}]"
        unknown = sorted(set(item) - set(INPUT_KEYS))
        if unknown:
            raise ConfigError(source, f"{where}.{unknown[0]}", f"unknown key (known: {', '.join(INPUT_KEYS)})")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(source, f"{where}.name", "is required (the input's name in the graph)")
        if name in {d.name for d in out}:
            raise ConfigError(source, f"{where}.name", f"input '{name}' is listed twice")
        dtype = item.get("dtype", "float32")
        if dtype not in INPUT_DTYPES:
            raise ConfigError(source, f"{where}.dtype", f"{dtype!r} is not one of {', '.join(INPUT_DTYPES)}")
        shape = item.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            raise ConfigError(source, f"{where}.shape", f"input '{name}': expected a list of ints (per sample), "
                                                        f"got {shape!r}")
        if any(d < 1 for d in shape):
            raise ConfigError(source, f"{where}.shape", f"input '{name}': every dim must be >= 1, got {shape}")
        role = item.get("role") or role_for(name, dtype, tuple(shape))
        if role not in ROLES:
            raise ConfigError(source, f"{where}.role", f"input '{name}': {role!r} is not one of {', '.join(ROLES)}")
        vocab = item.get("vocab", values.get("vocab") if role == "tokens" else None)
        if vocab is not None and (not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < 1):
            raise ConfigError(source, f"{where}.vocab", f"input '{name}': {vocab!r} must be an int >= 1")
        if role == "tokens" and vocab is None:
            raise ConfigError(source, f"{where}.vocab", f"input '{name}' is {dtype} token ids: give vocab "
                                                        "(here or at the top of the spec)")
        out.append(InputDesc(name, dtype, tuple(shape), role, vocab, (0,) if values["dynamic_batch"] else ()))
    return tuple(out)


def load_model_spec(name: str) -> ModelSpec:
    path = MODELS_DIR / f"{name}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in MODELS_DIR.glob("*.yaml")))
        raise ConfigError(f"models/{name}.yaml", "", f"unknown model {name!r} (known: {known})")
    data = _read_yaml(path)
    spec = model_spec_from_dict(data, str(path))
    if spec.name != name:
        raise ConfigError(str(path), "name", f"{spec.name!r} does not match the file name {name!r}")
    return spec


def list_models() -> list[str]:
    return sorted(p.stem for p in MODELS_DIR.glob("*.yaml"))


# --------------------------------------------------------------------------- run configs

@dataclass(frozen=True)
class RunConfig:
    """One row of a sweep: everything that decides what is measured."""

    model: str
    backend: str
    precision: str
    batch: int
    placements: tuple[str, ...]  # one per instance, e.g. ("cpu", "cpu") or ("gpu", "dla0")
    mode: str = "process"
    threads_per_instance: int = 1
    warmup_s: float = 1.0
    duration_s: float = 5.0
    max_duration_s: float = 60.0
    min_inferences: int = 662
    sub_windows: int = 5
    stability_tolerance_pct: float = 15.0
    load_timeout_s: float = 300.0
    barrier_timeout_s: float = 120.0
    collect_timeout_s: float = 60.0
    seed: int = 0
    accuracy_samples: int = 16
    repeat: int = 0  # index among run.repeats identical measurements
    kernel_profile_steps: int = 0
    options: tuple[tuple[str, Any], ...] = field(default_factory=tuple)  # backend options, sorted
    power_mode: str | None = None  # Jetson nvpmodel mode (name or id as written in power.modes); None = unchanged
    rate_hz: float | None = None  # open loop: arrivals per second per instance (stream); None = closed loop
    gpu_sharing: str = "time-slicing"  # "mps": the row's instances run under an edgebench-started MPS daemon
    slo_ms: float | None = None  # a probe of an SLO search: the row says whether its p99 stayed under this

    def __post_init__(self) -> None:
        if self.batch < 1:
            raise ConfigError("run config", "batch", f"{self.batch} must be >= 1")
        if not self.placements:
            raise ConfigError("run config", "instances", "must be >= 1")
        if self.mode not in MODES:
            raise ConfigError("run config", "mode", f"{self.mode!r} is not one of {', '.join(MODES)}")
        if self.precision not in PRECISIONS:
            raise ConfigError("run config", "precision", f"{self.precision!r} is not one of {', '.join(PRECISIONS)}")
        if self.max_duration_s < self.duration_s:
            raise ConfigError("run config", "max_duration_s", "is shorter than duration_s")
        if self.rate_hz is not None and not self.rate_hz > 0:
            raise ConfigError("run config", "rate_hz", f"{self.rate_hz} must be > 0 (or null for a closed loop)")
        if self.slo_ms is not None and (self.rate_hz is None or not self.slo_ms > 0):
            raise ConfigError("run config", "slo_ms", "needs rate_hz and must be > 0")
        if self.gpu_sharing not in GPU_SHARING:
            raise ConfigError("run config", "gpu_sharing", f"{self.gpu_sharing!r} is not one of {', '.join(GPU_SHARING)}")

    @property
    def instances(self) -> int:
        return len(self.placements)

    @property
    def placement(self) -> str:
        """Row label: placements joined with '+', e.g. 'cpu+cpu', 'gpu+dla0'."""
        return "+".join(self.placements)

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["placements"] = list(self.placements)
        d["options"] = dict(self.options)
        return d

    def config_hash(self) -> str:
        """Stable identity of what is measured (used by --resume)."""
        d = self.to_dict()
        if d.get("power_mode") is None:  # rows without a power mode keep the hashes they had before it existed
            d.pop("power_mode", None)
        if d.get("rate_hz") is None:  # likewise closed-loop rows and time-slicing rows
            d.pop("rate_hz", None)
        if d.get("gpu_sharing") == "time-slicing":
            d.pop("gpu_sharing", None)
        if d.get("slo_ms") is None:
            d.pop("slo_ms", None)
        payload = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def label(self) -> str:
        opts = "".join(f"/{k}={v}" for k, v in self.options)
        rep = f"/r{self.repeat}" if self.repeat else ""
        pm = f"/pm={self.power_mode}" if self.power_mode is not None else ""
        load = f"/rate={self.rate_hz:g}" if self.rate_hz is not None else ""
        load += f"/slo={self.slo_ms:g}ms" if self.slo_ms is not None else ""
        load += "/mps" if self.gpu_sharing == "mps" else ""
        return (f"{self.model}/{self.backend}/{self.precision}/b{self.batch}/{self.placement}/{self.mode}"
                f"{opts}{pm}{load}{rep}")

    @property
    def scenario(self) -> str:
        """closed-loop (each instance issues its next inference when the last is done), fixed-rate (each
        instance is an open-loop stream), or slo-search (a fixed-rate probe of a search under slo_ms)."""
        if self.rate_hz is None:
            return "closed-loop"
        return "fixed-rate" if self.slo_ms is None else "slo-search"

    @property
    def uses_gpu(self) -> bool:
        """Some placement is a CUDA GPU ('cuda', 'gpu', 'cuda:N')."""
        return any(p in ("cuda", "gpu") or p.startswith("cuda:") for p in self.placements)
