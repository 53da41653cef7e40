"""Issue 20, the shape plan: a batch axis per input (found from the graph, set per input, none for scalars and
per-model state), and everything that feeds a model laid out by it: synthetic data, --data, calibration chunks,
accuracy chunks and their outputs joined back, TensorRT optimisation profiles."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.backends.trt_profile import optimisation_profile
from edgebench.errors import BackendError, InputError
from edgebench.models.inputs import (
    GraphInput,
    batches_of,
    concat_outputs,
    head,
    load_data,
    parse_batch_axes,
    resolve,
    sample_count,
    synthetic,
)

GRU = [GraphInput("x", "float32", ("batch", 5, 8)), GraphInput("state", "float32", (2, "batch", 16))]
VAD = [GraphInput("audio", "float32", ("batch", 32)), GraphInput("sr", "int64", ())]


def test_the_shared_batch_symbol_puts_a_states_batch_on_axis_1():
    plan = resolve(GRU)
    x, state = plan.inputs
    assert (x.batch_axis, state.batch_axis) == (0, 1) and plan.fixed_batch is None
    assert state.shape == (2, 16) and state.full_shape(4) == (2, 4, 16) and x.full_shape(4) == (4, 5, 8)
    assert plan.labels(3) == "x:float32[3x5x8];state:float32[2x3x16]"


def test_a_scalar_has_no_batch_axis_and_is_fed_as_a_scalar():
    plan = resolve(VAD, vocab={"sr": 16001})
    sr = plan.inputs[1]
    assert sr.batch_axis is None and sr.shape == () and sr.full_shape(8) == ()
    feeds = synthetic(plan.inputs, 8, seed=0)
    assert feeds["audio"].shape == (8, 32) and feeds["sr"].shape == () and feeds["sr"].dtype == np.int64
    assert 0 <= int(feeds["sr"]) < 16001
    with pytest.raises(InputError, match=r"input 'sr' is a scalar int64 .* --value sr:V .* --vocab sr:N"):
        resolve(VAD)


def test_batch_axis_is_settable_per_input_and_bad_values_are_one_line():
    assert parse_batch_axes("state:1, sr:none") == {"state": 1, "sr": None}
    assert parse_batch_axes({"state": 1, "sr": None}) == {"state": 1, "sr": None}
    plan = resolve([GraphInput("x", "float32", ("n", 8)), GraphInput("h", "float32", (3, "n", 8))],
                   batch_axis={"h": None}, shapes={"h": (3, 2, 8)})  # per-model: its 'n' comes from --shapes
    assert plan.inputs[1].batch_axis is None and plan.inputs[1].full_shape(7) == (3, 2, 8)
    with pytest.raises(InputError, match=r"input 'h' axis 1 \('c'\) is dynamic and no shape gives it"):
        resolve([GraphInput("x", "float32", ("b", 8)), GraphInput("h", "float32", (3, "c", 8))],
                batch_axis={"h": None})
    for text, words in (("state:x", "batch axis 'x' is not an integer or 'none'"),
                        ("state:-1", "batch axis -1 must be >= 0"), ("state", "is not NAME:AXIS")):
        with pytest.raises(InputError, match=words):
            parse_batch_axes(text)
    with pytest.raises(InputError, match=r"--batch-axis: input 'state' has rank 3 \[2, batch, 16\]; batch axis 3"):
        resolve(GRU, batch_axis={"state": 3})
    with pytest.raises(InputError, match="--batch-axis: model has no input named 'h0'"):
        resolve(GRU, batch_axis={"h0": 1})


def test_a_shapes_batch_that_contradicts_a_fixed_graph_dim_is_refused():
    """Issue 20: state [2, 1, 16] (batch fixed at 1 on axis 1) with --shapes state:2x4x16 was accepted and
    failed at run time; now every fixed dim (the batch axis included) is checked before anything runs."""
    fixed = [GraphInput("x", "float32", (1, 5, 8)), GraphInput("state", "float32", (2, 1, 16))]
    with pytest.raises(InputError, match="input 'state' axis 1 is 1 in the graph, the shape given says 4"):
        resolve(fixed, shapes={"state": (2, 4, 16)})
    with pytest.raises(InputError, match=r"input 'state' has a fixed batch of 1 in the graph \(axis 1 of \[2, 1, 16\]\)"):
        resolve(fixed, shapes={"state": (2, 4, 16)}, batch_axis={"state": 1})
    plan = resolve(fixed, batch_axis={"state": 1})
    assert plan.fixed_batch == 1 and plan.inputs[1].full_shape(1) == (2, 1, 16)
    # the symbolic form: the --shapes batch is read on the state's batch axis
    assert resolve(GRU, shapes={"state": (2, 3, 16)}).shapes_batch == 3


def test_minus_one_and_zero_batch_dims_are_dynamic_for_inspect_onnx_and_resolve(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from edgebench.models.export import inspect_onnx
    from edgebench.models.inputs import graph_inputs

    for dim in (-1, 0):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [dim, 4])
        model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 17)])
        path = tmp_path / f"dim{dim}.onnx"
        onnx.save(model, path)
        info = inspect_onnx(path)
        assert info.batch is None and info.dynamic_batch, dim
        plan = resolve(graph_inputs(path))
        assert plan.fixed_batch is None and plan.inputs[0].batch_axis == 0


def test_data_files_chunks_and_outputs_follow_each_inputs_batch_axis(tmp_path):
    plan = resolve([*GRU, GraphInput("sr", "int64", ())], vocab={"sr": 9})
    rng = np.random.default_rng(0)
    x, state = rng.standard_normal((5, 5, 8)), rng.standard_normal((2, 5, 16))
    np.savez(tmp_path / "a.npz", x=x, state=state, sr=np.array(8))
    np.savez(tmp_path / "b.npz", x=x[0], state=state[:, 0], sr=np.array(3))  # one sample; sr: the first file's
    data = load_data(tmp_path, plan.inputs)
    assert data["x"].shape == (6, 5, 8) and data["state"].shape == (2, 6, 16) and int(data["sr"]) == 8
    assert np.array_equal(data["state"][:, 5], state[:, 0].astype(np.float32))
    assert sample_count(data, plan.inputs) == 6 and head(data, 4, plan.inputs)["state"].shape == (2, 4, 16)
    chunks = batches_of(data, 4, inputs=plan.inputs)
    assert [c["state"].shape for c in chunks] == [(2, 4, 16), (2, 4, 16)] and chunks[1]["x"].shape == (4, 5, 8)
    assert np.array_equal(chunks[1]["state"][:, 3], data["state"][:, 5])  # padded with the last sample
    assert all(c["sr"].shape == () for c in chunks)
    assert len(batches_of(data, 4, pad=False, inputs=plan.inputs)) == 1
    # outputs shaped like the state: joined on axis 1, samples first, padding trimmed
    outs = {"state_out": [c["state"] * 2 for c in chunks]}
    joined = concat_outputs(outs, 4, 6, {"state_out": 1})
    assert joined["state_out"].shape == (6, 2, 16)
    assert np.allclose(joined["state_out"][5], data["state"][:, 5] * 2)
    with pytest.raises(InputError, match=r"input 'sr' has no batch axis; its array must have shape \[\]"):
        np.savez(tmp_path / "c.npz", x=x, state=state, sr=np.array([8, 8]))
        load_data(tmp_path / "c.npz", plan.inputs)
    with pytest.raises(InputError, match=r"input 'state' array has shape \[5, 2, 16\], expected \[2, N, 16\]"):
        np.savez(tmp_path / "d.npz", x=x, state=state.transpose(1, 0, 2), sr=np.array(8))
        load_data(tmp_path / "d.npz", plan.inputs)


def test_calibration_chunks_use_the_plan_not_the_first_inputs_axis_0():
    """Issue 20: calibration read the batch off the first input's axis 0: a second input fixed at batch 1 got
    chunks of 8 (ORT 'Got: 8 Expected: 1'); a state's layers axis (2) was read as its batch."""
    from edgebench.errors import ModelError
    from edgebench.models.precision_steps import CALIBRATION_BATCH, calibration_chunks
    from edgebench.models.spec import ModelSpec

    plan = resolve(GRU)
    spec = ModelSpec("gru", "onnx", inputs=plan.inputs)
    data = synthetic(plan.inputs, 20, seed=0)
    chunks = calibration_chunks(spec, data)
    assert [c["state"].shape for c in chunks] == [(2, CALIBRATION_BATCH, 16)] * 3
    fixed = resolve([GraphInput("a", "float32", ("n", 4)), GraphInput("b", "float32", (1, 4))])
    spec1 = ModelSpec("m", "onnx", inputs=fixed.inputs, dynamic_batch=False, graph_batch=fixed.fixed_batch)
    assert fixed.fixed_batch == 1
    assert {c["a"].shape for c in calibration_chunks(spec1, synthetic(fixed.inputs, 5, 0))} == {(1, 4)}
    two = resolve([GraphInput("a", "float32", (4, 2)), GraphInput("b", "float32", (2, 2))], batch_axis={"b": None})
    spec4 = ModelSpec("m4", "onnx", inputs=two.inputs, dynamic_batch=False, graph_batch=4)
    with pytest.raises(ModelError, match="fixes the batch at 4, calibration has 3 samples.*--calibration-samples"):
        calibration_chunks(spec4, synthetic(two.inputs, 3, 0))


def test_tensorrt_profile_spans_the_batch_on_each_inputs_own_axis():
    plan = resolve([*GRU, GraphInput("sr", "int64", ())], vocab={"sr": 9})
    entries = {e.name: e for e in optimisation_profile(plan.inputs, 4, batch_range=(1, 8))}
    assert entries["state"].as_tuple() == ("state", (2, 1, 16), (2, 4, 16), (2, 8, 16))
    assert entries["x"].min == (1, 5, 8) and entries["x"].max == (8, 5, 8)
    assert "sr" not in entries  # a scalar with no dynamic axis needs no profile entry
    fixed = resolve([GraphInput("x", "float32", (1, "seq", 8)), GraphInput("state", "float32", (2, 1, 16))],
                    shapes={"x": (1, 5, 8)}, batch_axis={"state": 1})
    assert [e.name for e in optimisation_profile(fixed.inputs, 1)] == ["x"]  # state: no dynamic axis at all
    with pytest.raises(BackendError, match="input 'x' has a fixed batch axis"):
        optimisation_profile(fixed.inputs, 1, batch_range=(1, 2))


def test_model_specs_set_batch_axes_per_input_and_errors_name_the_field(tmp_path):
    from edgebench.errors import ConfigError
    from edgebench.models.precision import resolved_spec
    from edgebench.models.spec import model_spec_from_dict

    base = {"name": "rnn", "source": "builtin", "arch": "tiny_cnn"}
    spec = model_spec_from_dict({**base, "inputs": [
        {"name": "x", "shape": [5, 8]}, {"name": "state", "shape": [2, 16], "batch_axis": 1},
        {"name": "table", "shape": [4, 16], "batch_axis": None}]}, "rnn.yaml")
    x, state, table = spec.inputs
    assert (x.batch_axis, state.batch_axis, table.batch_axis) == (0, 1, None)
    assert state.full_shape(3) == (2, 3, 16) and table.full_shape(3) == (4, 16) and state.dynamic_axes == (1,)
    with pytest.raises(ConfigError, match=r"rnn.yaml.*inputs\[0\].batch_axis.*'x': 3 must be an int in 0..2"):
        model_spec_from_dict({**base, "inputs": [{"name": "x", "shape": [5, 8], "batch_axis": 3}]}, "rnn.yaml")
    onnx_base = {"name": "vad", "source": "onnx", "onnx_path": "vad.onnx"}
    with pytest.raises(ConfigError, match=r"vad.yaml.*batch_axis.*input 'sr': batch axis 'x' is not an integer"):
        model_spec_from_dict({**onnx_base, "batch_axis": {"sr": "x"}}, "vad.yaml")
    # a source: onnx spec's batch_axis reaches the plan resolved from the graph
    odd_models = pytest.importorskip("odd_models")
    pytest.importorskip("onnx")
    path = odd_models.two_fixed_batches(tmp_path / "two.onnx")
    spec = model_spec_from_dict({"name": "two", "source": "onnx", "onnx_path": str(path),
                                 "batch_axis": {"b": 0}}, "two.yaml")
    with pytest.raises(InputError, match="two.yaml: batch_axis NAME:none"):
        resolved_spec(spec)
    spec = model_spec_from_dict({"name": "two", "source": "onnx", "onnx_path": str(path),
                                 "batch_axis": {"b": "none"}}, "two.yaml")
    assert [d.batch_axis for d in resolved_spec(spec).inputs] == [0, None]
