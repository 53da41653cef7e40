"""Model specs: models/<name>.yaml -> ModelSpec (source, inputs, outputs, shapes, weights), errors naming file + field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from edgebench.config.problems import Problems, problems_of
from edgebench.config.profile import MODELS_DIR, _read_yaml
from edgebench.config.shapes import parse_shapes
from edgebench.config.typed import ValidationError
from edgebench.errors import ConfigError, EdgebenchError, ModelError
from edgebench.models.inputs import (
    INPUT_DTYPES,
    ROLES,
    InputDesc,
    parse_batch_axes,
    parse_values,
    role_for,
    with_values,
)
from edgebench.models.spec_file import ModelSpecFile


@dataclass(frozen=True)
class ModelSpec:
    """A model spec. `inputs` is every input, in forward() order; a YAML's single-input keys (input_name,
    input_shape, input_dtype) become its one entry when the spec loads. Empty only for a source: onnx spec
    not yet resolved against its graph (edgebench.models.precision.resolved_spec)."""

    name: str
    source: str
    description: str = ""
    arch: str = ""
    weights: str | None = None
    onnx_path: str | None = None
    output_name: str = "output"
    num_classes: int = 1000
    dynamic_batch: bool = True
    opset: int = 17
    parity_atol: float = 1e-3
    preprocess: Mapping[str, Any] | None = None
    spec_file: str = ""
    inputs: tuple[InputDesc, ...] = ()  # edgebench.models.inputs
    outputs: tuple[str, ...] = ()  # empty: the one output `output_name`
    config: Mapping[str, Any] = field(default_factory=dict)
    vocab: int | None = None
    shapes: str | None = None
    data: str | None = None
    batch_axis: Mapping[str, Any] | None = None  # source onnx: {input: axis | None}; default: from the graph
    graph_batch: int | None = None  # external ONNX: the batch its graph fixes (None: dynamic or 1)
    values: Mapping[str, Any] | None = None  # fixed input values {name: number}; set on `inputs` when resolved

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (the export cache key). The first input is written as the single-input keys and
        `inputs` only when it says more than they do (several inputs, a role or batch axis of its own), so a
        one-input spec keys its export cache as it did before `inputs` existed."""
        d = asdict(self)
        first = self.inputs[0] if self.inputs else None
        d["input_name"] = first.name if first else "input"
        d["input_shape"] = list(first.shape) if first else []
        d["input_dtype"] = first.dtype if first else "float32"
        said_by_single_keys = first is not None and self.inputs == (self._single_input(first.name, first.dtype,
                                                                                          first.shape),)
        d["inputs"] = [] if said_by_single_keys else [i.to_dict() for i in self.inputs]
        d["outputs"] = list(self.outputs)
        d["config"] = dict(self.config)
        d["batch_axis"] = dict(self.batch_axis) if self.batch_axis else None
        d["values"] = dict(self.values) if self.values else None
        for key in (*NEW_SPEC_KEYS, "graph_batch"):  # absent when unused, so one-input specs keep their export cache keys
            if not d[key]:
                del d[key]
        return d

    def _single_input(self, name: str, dtype: str, shape: tuple[int, ...]) -> InputDesc:
        """The input the single-input keys describe (what `_spec_inputs` makes of a one-entry `inputs:` list)."""
        role = role_for(name, dtype, shape)
        return InputDesc(name, dtype, shape, role, self.vocab if role == "tokens" else None,
                         (0,) if self.dynamic_batch else ())

    @property
    def first_input(self) -> InputDesc:
        """The first input: the one a one-input path means (labelled images, a bare array)."""
        if not self.inputs:
            raise ModelError(f"{self.name}: the spec's inputs are not resolved yet (source onnx: resolved_spec)")
        return self.inputs[0]

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


SPEC_FIELDS = frozenset(f.name for f in fields(ModelSpec))  # a file key ModelSpec lacks is checked, not kept
NEW_SPEC_KEYS = ("inputs", "outputs", "config", "vocab", "shapes", "data", "batch_axis", "values")


def model_spec_from_dict(data: dict[str, Any], source: str) -> ModelSpec:
    """A validated ModelSpec from a spec file's mapping; errors name `source` and the field. Types, limits and
    unknown keys are ModelSpecFile's to check (every such problem at once); what spans keys is checked here."""
    try:
        checked = ModelSpecFile.model_validate(data)
    except ValidationError as exc:
        problems = Problems(source)
        for problem in problems_of(exc, ModelSpecFile, data, lambda dotted: (source, dotted)):
            problems.add(problem)
        problems.raise_all()
        raise  # pragma: no cover - problems_of names at least one
    values = checked.model_dump()
    if values["input_shape"] is None and not values["inputs"] and values["source"] != "onnx":
        raise ConfigError(source, "input_shape", "is required")
    if values["source"] in ("torchvision", "builtin") and not values["arch"]:
        raise ConfigError(source, "arch", f"is required for source {values['source']}")
    if values["source"] == "onnx" and not values["onnx_path"]:
        raise ConfigError(source, "onnx_path", "is required for source onnx")
    if values["shapes"] is not None:
        try:
            parse_shapes(values["shapes"], "shapes")
        except EdgebenchError as exc:
            raise ConfigError(source, "shapes", str(exc)) from None
    if values["batch_axis"] is not None:
        try:
            values["batch_axis"] = parse_batch_axes(values["batch_axis"], "batch_axis")
        except EdgebenchError as exc:
            raise ConfigError(source, "batch_axis", str(exc)) from None
    if values["values"] is not None:
        try:
            values["values"] = parse_values(values["values"], "values")
        except EdgebenchError as exc:
            raise ConfigError(source, "values", str(exc)) from None
    single = not values["inputs"]
    values["inputs"] = _spec_inputs(source, {**values, "inputs": values["inputs"] or _single_input_list(values)},
                                    single)
    if values["values"] and values["inputs"]:  # source onnx: set when its graph's inputs are resolved
        try:
            values["inputs"] = with_values(values["inputs"], values["values"], f"model {values['name']}", "values")
        except EdgebenchError as exc:
            raise ConfigError(source, "values", str(exc)) from None
    for key in SINGLE_INPUT_KEYS:
        del values[key]
    values["outputs"] = tuple(values["outputs"] or ())
    values["config"] = dict(values["config"] or {})
    return ModelSpec(spec_file=source, **{key: value for key, value in values.items() if key in SPEC_FIELDS})


INPUT_KEYS = ("name", "dtype", "shape", "vocab", "role", "batch_axis")
SINGLE_INPUT_KEYS = ("input_name", "input_shape", "input_dtype")  # a one-input spec's keys, before `inputs:`


def _single_input_list(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The `inputs:` list the single-input keys stand for: one entry, or none for source onnx (whose inputs come
    from its graph when the spec is resolved; these keys never overrode it)."""
    if values["source"] == "onnx":
        return []
    return [{"name": values["input_name"], "dtype": values["input_dtype"], "shape": list(values["input_shape"])}]


def _spec_inputs(source: str, values: dict[str, Any], single: bool = False) -> tuple[InputDesc, ...]:
    """The `inputs:` list of a model spec, validated (errors name inputs[i].field, or the single-input key the
    entry came from when `single`)."""

    out: list[InputDesc] = []
    for i, item in enumerate(values["inputs"] or []):
        where = f"inputs[{i}]"

        def bad(key: str, text: str, where: str = where) -> ConfigError:
            return ConfigError(source, _field(where, key, single), text)

        unknown = sorted(set(item) - set(INPUT_KEYS))
        if unknown:
            raise ConfigError(source, f"{where}.{unknown[0]}", f"unknown key (known: {', '.join(INPUT_KEYS)})")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise bad("name", "is required (the input's name in the graph)")
        if name in {d.name for d in out}:
            raise bad("name", f"input '{name}' is listed twice")
        dtype = item.get("dtype", "float32")
        if dtype not in INPUT_DTYPES:
            raise bad("dtype", f"{dtype!r} is not one of {', '.join(INPUT_DTYPES)}")
        shape = item.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            raise bad("shape", f"input '{name}': expected a list of ints (per sample), got {shape!r}")
        if any(d < 1 for d in shape):
            raise bad("shape", f"input '{name}': every dim must be >= 1, got {shape}")
        role = item.get("role") or role_for(name, dtype, tuple(shape))
        if role not in ROLES:
            raise bad("role", f"input '{name}': {role!r} is not one of {', '.join(ROLES)}")
        vocab = item.get("vocab", values.get("vocab") if role == "tokens" else None)
        if vocab is not None and (not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < 1):
            raise bad("vocab", f"input '{name}': {vocab!r} must be an int >= 1")
        if role == "tokens" and vocab is None and name not in (values.get("values") or {}):
            raise bad("vocab", f"input '{name}' is {dtype} token ids: give vocab (here or at the top of the spec)")
        axis = item.get("batch_axis", 0)
        if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis <= len(shape)):
            raise bad("batch_axis", f"input '{name}': {axis!r} must be an int in 0..{len(shape)} (where the batch "
                                    "goes) or null (none)")
        dynamic = (axis,) if values["dynamic_batch"] and axis is not None else ()
        out.append(InputDesc(name, dtype, tuple(shape), role, vocab, dynamic, axis))
    return tuple(out)


def _field(where: str, key: str, single: bool) -> str:
    """The field an input error names: inputs[i].key, or for an entry made from the single-input keys, the key."""
    return SINGLE_INPUT_FIELDS.get(key, key) if single else f"{where}.{key}"


SINGLE_INPUT_FIELDS = {"name": "input_name", "dtype": "input_dtype", "shape": "input_shape", "role": "input_dtype",
                       "batch_axis": "input_shape"}


MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$")


def check_model_name(name: str) -> str:
    """A model name is a plain file name in models/ (no '/', no '..', no leading '.' or '-'): it becomes
    models/<name>.yaml and folders of the artifact cache, and must stay inside both."""
    if not isinstance(name, str) or not MODEL_NAME_RE.match(name) or ".." in name:
        raise ConfigError(f"model {name!r}", "", "not a model name: letters, digits and _ . + - only, no '/' or "
                                                 "'..' (a name is models/<name>.yaml; an ONNX file elsewhere is "
                                                 "--onnx PATH)")
    return name


def load_model_spec(name: str) -> ModelSpec:
    check_model_name(name)
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
