"""The model spec file as a typed model (edgebench.models.spec_file): one place for each key's type, default, limits
and doc; errors as the profile's (every problem at once, 'did you mean' for a near-miss key)."""

from __future__ import annotations

import pytest

from edgebench.errors import ConfigError
from edgebench.models.inputs import INPUT_DTYPES
from edgebench.models.spec import (
    SINGLE_INPUT_KEYS,
    SPEC_FIELDS,
    ModelSpec,
    list_models,
    load_model_spec,
    model_spec_from_dict,
)
from edgebench.models.spec_file import DTYPES, MODEL_SOURCES, ModelSpecFile

GOOD = {"name": "m", "source": "builtin", "arch": "tiny_cnn", "input_shape": [3, 8, 8]}


def test_every_key_has_a_doc_and_the_dtypes_are_the_ones_inputs_feed():
    undocumented = [name for name, info in ModelSpecFile.model_fields.items() if not info.description]
    assert undocumented == []
    assert DTYPES == INPUT_DTYPES
    assert MODEL_SOURCES == ("torchvision", "builtin", "onnx")


def test_defaults_live_in_the_file_model_and_reach_the_spec():
    spec = model_spec_from_dict(GOOD, "m.yaml")
    defaults = ModelSpecFile.model_fields
    assert spec.opset == defaults["opset"].default == 17
    assert spec.parity_atol == defaults["parity_atol"].default and isinstance(spec.parity_atol, float)
    assert spec.num_classes == defaults["num_classes"].default and spec.dynamic_batch is defaults["dynamic_batch"].default
    assert spec.first_input.name == defaults["input_name"].default
    assert spec.first_input.dtype == defaults["input_dtype"].default


def test_an_int_tolerance_is_held_as_a_float():
    spec = model_spec_from_dict({**GOOD, "parity_atol": 1}, "m.yaml")
    assert spec.parity_atol == 1.0 and isinstance(spec.parity_atol, float)


def test_a_near_miss_key_gets_did_you_mean_and_a_far_one_the_known_keys():
    with pytest.raises(ConfigError, match=r"m.yaml: field 'opst': unknown key \(did you mean opset\?\)"):
        model_spec_from_dict({**GOOD, "opst": 13}, "m.yaml")
    with pytest.raises(ConfigError, match=r"field 'zzz': unknown key \(known: arch, batch_axis, "):
        model_spec_from_dict({**GOOD, "zzz": 1}, "m.yaml")


@pytest.mark.parametrize(("change", "text"), [
    ({"opset": 5}, "field 'opset': 5 is below the minimum 7"),
    ({"opset": "17"}, "field 'opset': expected int, got str '17'"),
    ({"opset": True}, "field 'opset': expected int, got bool True"),
    ({"input_shape": [1, "8"]}, "field 'input_shape': expected list[int], got list [1, '8']"),
    ({"input_shape": [3, 0]}, "field 'input_shape': 0 is below the minimum 1"),
    ({"input_shape": []}, "field 'input_shape': must not be empty"),
    ({"input_dtype": "int8"}, "field 'input_dtype': 'int8' is not one of float32, float16, int64, int32, bool"),
    ({"parity_atol": float("nan")}, "field 'parity_atol': nan is not a finite number"),
    ({"parity_atol": -1}, "field 'parity_atol': -1 is below the minimum 0.0"),
    ({"vocab": "a"}, "field 'vocab': expected int|none, got str 'a'"),
    ({"config": "x"}, "field 'config': expected map|none, got str 'x'"),
    ({"outputs": [1]}, "field 'outputs': expected list[str], got list [1]"),
    ({"inputs": ["a"]}, "field 'inputs': expected list[map], got list ['a']"),
    ({"source": 5}, "field 'source': expected str, got int 5"),
    ({"name": None}, "field 'name': expected str, got NoneType None"),
])
def test_wrong_values_read_as_they_always_did(change, text):
    with pytest.raises(ConfigError) as err:
        model_spec_from_dict({**GOOD, **change}, "m.yaml")
    assert str(err.value) == f"m.yaml: {text}"


def test_missing_keys_are_required_and_every_problem_is_reported_at_once():
    with pytest.raises(ConfigError, match=r"^m.yaml: field 'source': is required$"):
        model_spec_from_dict({k: v for k, v in GOOD.items() if k != "source"}, "m.yaml")
    with pytest.raises(ConfigError) as err:
        model_spec_from_dict({**GOOD, "opset": 1, "num_classes": 0, "colour": "red"}, "m.yaml")
    text = str(err.value)
    assert text.startswith("m.yaml: 3 problems: ")
    assert "field 'opset': 1 is below the minimum 7" in text and "field 'num_classes': 0 is below the minimum 1" in text
    assert "field 'colour': unknown key" in text


def test_constant_values_are_a_known_key_of_numbers_by_input_name():
    assert model_spec_from_dict({**GOOD, "values": {"input": 0.5}}, "m.yaml").inputs[0].value == 0.5
    with pytest.raises(ConfigError, match=r"field 'values': .*no input named 'steps'"):  # a name the model lacks
        model_spec_from_dict({**GOOD, "values": {"input": 0.5, "steps": 3}}, "m.yaml")
    with pytest.raises(ConfigError, match=r"field 'values': expected map\[str, int\|float\]\|none, got dict"):
        model_spec_from_dict({**GOOD, "values": {"input": "x"}}, "m.yaml")


def test_every_shipped_model_spec_loads():
    names = list_models()
    assert len(names) >= 13
    assert all(isinstance(load_model_spec(name), ModelSpec) for name in names)


def test_every_file_key_reaches_the_spec_or_is_turned_into_its_inputs():
    kept_elsewhere = set(SINGLE_INPUT_KEYS)
    assert set(ModelSpecFile.model_fields) - kept_elsewhere <= SPEC_FIELDS
