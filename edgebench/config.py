"""Profiles and model specs: loaded from YAML, typed, validated, immutable.

A profile is a YAML file under profiles/ (or any path); it may `extends:` another
profile, whose values it overrides key by key (mappings merge, lists replace).
A model spec is a YAML file under models/. Every error names the file and the field.
The keys and their per-value rules are in config_fields.py; one measured configuration
(`RunConfig`, importable from here too) is in run_config.py.

Size: profiles and model specs share the YAML reading, the schema checks and the all-errors-at-once
reporting; the model spec's named inputs (issue 10) took it past 400 lines. The next cut, if it grows,
is the model-spec half into its own module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edgebench.config_fields import (  # noqa: F401 - DTYPES: imported from config by callers
    DTYPES,
    GPU_SHARING,
    MODEL_SCHEMA,
    MODES,
    PRECISIONS,
    PROFILE_SCHEMA,
    Problems,
    check_value,
)
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.inputs import InputDesc
from edgebench.run_config import RunConfig  # noqa: F401 - one home for the sweep's row type; callers import it here

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PROFILES_DIR = PROJECT_ROOT / "profiles"
MODELS_DIR = PROJECT_ROOT / "models"


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
            current[key] = check_value("command line", f"{section}.{key}", spec, value)
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


def _check_keys(source: str, data: dict[str, Any], problems: Problems | None = None) -> None:
    """Unknown keys, each one a problem (all collected in `problems`; raised at once without one)."""
    own = problems or Problems(source)
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
    problems = Problems(source)
    _check_keys(source, data, problems)
    top: dict[str, Any] = {}
    for key, spec in PROFILE_SCHEMA[""].items():
        if key == "extends":
            continue
        value = data.get(key, default_name if key == "name" else spec.default)
        top[key] = problems.check(check_value, source, key, spec, value)
    sections: dict[str, dict[str, Any]] = {}
    for section, fields in PROFILE_SCHEMA.items():
        if section == "":
            continue
        given = data.get(section, {}) or {}
        if not isinstance(given, dict):  # already a problem from _check_keys
            given = {}
        values = {}
        for key, spec in fields.items():
            value = problems.check(check_value, source, f"{section}.{key}", spec, given.get(key, spec.default))
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
    problems = Problems(prof.source)
    problems.errors.extend(_semantic_problems(prof))
    problems.raise_all()


def _semantic_problems(prof: Profile) -> list[ConfigError]:
    src = prof.source
    problems = Problems(src)
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
        values[key] = check_value(source, key, spec, data.get(key, spec.default))
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
