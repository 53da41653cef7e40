"""A model spec's single-input keys (input_name, input_shape, input_dtype) load as its one `inputs` entry."""

from __future__ import annotations

import pytest

from edgebench.errors import ConfigError
from edgebench.models.inputs import InputDesc
from edgebench.models.spec import ModelSpec, load_model_spec, model_spec_from_dict

BASE = {"name": "m", "source": "builtin", "arch": "tiny_cnn"}


def test_single_input_keys_load_as_the_one_entry_an_inputs_list_would_give():
    legacy = model_spec_from_dict({**BASE, "input_name": "images", "input_shape": [3, 8, 8]}, "m.yaml")
    listed = model_spec_from_dict({**BASE, "inputs": [{"name": "images", "shape": [3, 8, 8]}]}, "m.yaml")
    assert legacy.inputs == listed.inputs == (InputDesc("images", "float32", (3, 8, 8), "image", None, (0,), 0),)
    assert legacy.first_input.name == "images"
    assert not hasattr(legacy, "input_shape") and not hasattr(legacy, "input_name")
    fixed = model_spec_from_dict({**BASE, "input_shape": [16], "input_dtype": "int64", "vocab": 7,
                                  "dynamic_batch": False}, "m.yaml")
    assert fixed.inputs == (InputDesc("input", "int64", (16,), "tokens", 7, (), 0),)


def test_single_input_errors_name_the_key_the_user_wrote():
    with pytest.raises(ConfigError, match=r"m.yaml: field 'vocab'.*int64 token ids: give vocab"):
        model_spec_from_dict({**BASE, "input_shape": [16], "input_dtype": "int64"}, "m.yaml")
    with pytest.raises(ConfigError, match=r"'input_shape': is required"):
        model_spec_from_dict(BASE, "m.yaml")


def test_source_onnx_single_input_keys_leave_the_inputs_to_the_graph():
    spec = model_spec_from_dict({"name": "x", "source": "onnx", "onnx_path": "x.onnx", "input_shape": [5, 5]},
                                "x.yaml")
    assert spec.inputs == ()  # resolved_spec reads them from the graph, as it always did


def test_to_dict_writes_one_input_as_the_single_input_keys_so_export_cache_keys_stay():
    d = load_model_spec("tiny_cnn").to_dict()
    assert (d["input_name"], d["input_shape"], d["input_dtype"]) == ("input", [3, 32, 32], "float32")
    assert "inputs" not in d
    bert = load_model_spec("bert_tiny").to_dict()
    assert bert["input_name"] == "input_ids" and [i["name"] for i in bert["inputs"]] == ["input_ids", "attention_mask"]
    # one input that says more than the single keys can (no batch axis): listed
    odd = ModelSpec("o", "builtin", inputs=(InputDesc("x", shape=(4,), batch_axis=None, dynamic_axes=()),))
    assert [i["name"] for i in odd.to_dict()["inputs"]] == ["x"]
