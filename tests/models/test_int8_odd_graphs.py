"""Issue 20, int8 on graphs nobody here exported: old opsets (per-channel Q/DQ needs opset 13), custom-domain
nodes, a -1 batch, a GRU's state input, two inputs with different fixed batches. Real onnx, real ORT quantizer,
real ORT sessions on the int8 files; the failure paths say precisely why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import odd_models
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime", reason="int8 QDQ needs onnxruntime's quantizer")


def _int8(path: Path, cache_dir: Path, **kw):  # noqa: ANN202
    from edgebench.models.artifacts import Artifacts
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import onnx_spec, precision_artifact

    spec = onnx_spec(str(path), **kw)
    cache = Artifacts(cache_dir)
    fp32 = export_onnx(spec, cache)
    return spec, fp32, precision_artifact(spec, fp32, "int8", cache, {"source": "synthetic", "samples": 16})


def _run(path: str, feeds: dict) -> list:
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_opset_11_is_upgraded_to_13_and_runs_per_channel(tmp_path):
    src = odd_models.conv_net(tmp_path / "op11.onnx", opset=11)
    _, fp32, art = _int8(src, tmp_path / "cache")
    assert art.sidecar["settings"]["per_channel"] is True
    assert art.sidecar["int8_notes"] == ["opset 11 upgraded to 13 (onnx version converter) for per-channel Q/DQ"]
    proto = onnx.load(art.onnx_path)
    opset = next(i.version for i in proto.opset_import if i.domain in ("", "ai.onnx"))
    dq = [n for n in proto.graph.node if n.op_type == "DequantizeLinear"]
    assert opset >= 13 and any(a.name == "axis" for n in dq for a in n.attribute)  # per-channel weights
    x = {"pixels": np.random.default_rng(0).standard_normal((2, 3, 12, 12)).astype(np.float32)}
    ref, got = _run(str(fp32.path), x)[0], _run(art.onnx_path, x)[0]
    cos = float(np.sum(ref * got) / (np.linalg.norm(ref) * np.linalg.norm(got)))
    assert cos > 0.98


def test_opset_11_falls_back_to_per_tensor_when_the_converter_fails(tmp_path, monkeypatch):
    from onnx import version_converter

    from edgebench.models import in_child

    def refuse(*_a, **_k):  # noqa: ANN202
        raise RuntimeError("no adapter for Conv 11 -> 13\nsecond line")

    monkeypatch.setattr(version_converter, "convert_version", refuse)
    monkeypatch.setattr(in_child, "IN_CHILD", False)  # the fault is injected here, not in a quantization process
    src = odd_models.conv_net(tmp_path / "op11.onnx", opset=11)
    _, _, art = _int8(src, tmp_path / "cache")
    assert art.sidecar["settings"]["per_channel"] is False
    (note,) = art.sidecar["int8_notes"]
    assert note == ("opset 11 < 13: per-tensor weights (the version converter could not upgrade it: "
                    "RuntimeError: no adapter for Conv 11 -> 13)")
    proto = onnx.load(art.onnx_path)
    assert next(i.version for i in proto.opset_import if i.domain in ("", "ai.onnx")) == 11
    assert _run(art.onnx_path, {"pixels": np.ones((1, 3, 12, 12), np.float32)})[0].shape == (1, 5)


def test_custom_domain_nodes_stay_float(tmp_path):
    """The quantizer is told to leave a node of an unknown domain alone (nodes_to_exclude): it stays a my.custom
    node (the function ORT inlines), the convs around it are quantised, and ORT runs the int8 file close to fp32."""
    from edgebench.models.inputs import graph_inputs, resolve, synthetic
    from edgebench.models.int8_graph import custom_domain_nodes
    from edgebench.models.precision_steps import _quantize
    from edgebench.models.spec import ModelSpec

    src = odd_models.conv_net(tmp_path / "custom.onnx", custom_domain=True)
    kept = custom_domain_nodes(src, tmp_path / "named.onnx")
    assert kept.names == ("swish",) and kept.note == "1 node(s) of domain my.custom left in float (Swish)"
    plan = resolve(graph_inputs(src))
    spec = ModelSpec("custom", "onnx", inputs=plan.inputs)
    out = tmp_path / "custom.int8.onnx"
    _quantize(spec, src, out, synthetic(plan.inputs, 16, 0), exclude=kept.names)
    proto = onnx.load(str(out))
    (swish,) = [n for n in proto.graph.node if n.domain == "my.custom"]
    assert swish.op_type == "Swish" and [f.name for f in proto.functions] == ["Swish"]
    assert sum(n.op_type == "QuantizeLinear" for n in proto.graph.node) >= 2  # the convs around it are quantised
    x = {"pixels": np.random.default_rng(0).standard_normal((2, 3, 12, 12)).astype(np.float32)}
    ref, got = _run(str(src), x)[0], _run(str(out), x)[0]
    assert float(np.sum(ref * got) / (np.linalg.norm(ref) * np.linalg.norm(got))) > 0.98


def test_a_quantizer_keyerror_is_a_reason_naming_the_tensor_not_a_traceback(tmp_path, monkeypatch):
    import onnxruntime.quantization as quantization

    from edgebench.errors import ModelError
    from edgebench.models.inputs import graph_inputs, resolve, synthetic
    from edgebench.models.precision_steps import _quantize
    from edgebench.models.spec import ModelSpec

    def key_error(*_a, **_k):  # noqa: ANN202 - what ORT raised on a real custom-domain file
        raise KeyError("140_scale")

    monkeypatch.setattr(quantization, "quantize_static", key_error)
    src = odd_models.conv_net(tmp_path / "c.onnx")
    plan = resolve(graph_inputs(src))
    with pytest.raises(ModelError) as err:
        _quantize(ModelSpec("c", "onnx", inputs=plan.inputs), src, tmp_path / "o.onnx",
                  synthetic(plan.inputs, 8, 0))
    assert str(err.value) == ("c: int8 quantization found no calibration range for tensor '140' (quantizer KeyError "
                              "'140_scale'); the node producing it could not be calibrated")


@pytest.mark.parametrize("builder", ["minus_one", "gru", "two_fixed"])
def test_int8_builds_and_runs_on_odd_batch_axes(tmp_path, builder):
    """-1 batch (was: a fixed batch of -1, no calibration batches, 'No data is collected'); a GRU state with the
    batch on axis 1; two inputs with different fixed batches (was: calibration batches of 8, 'Expected: 1')."""
    pytest.importorskip("torch", reason="the GRU is exported by torch")
    src = {"minus_one": lambda: odd_models.conv_net(tmp_path / "m1.onnx", batch=-1),
           "gru": lambda: odd_models.gru_with_state(tmp_path / "gru.onnx"),
           "two_fixed": lambda: odd_models.two_fixed_batches(tmp_path / "two.onnx")}[builder]()
    spec, _, art = _int8(src, tmp_path / "cache")
    record = art.sidecar["calibration"]
    assert record["count"] == 16
    shapes = {name: tuple(v["shape"]) for name, v in record["inputs"].items()} if "inputs" in record else {}
    if builder == "gru":
        assert shapes == {"x": (16, 5, 8), "state": (2, 16, 16)}
    if builder == "two_fixed":
        assert shapes == {"a": (16, 16), "b": (4, 16)} and spec.fixed_batch == 1
    from edgebench.models.inputs import synthetic

    feeds = synthetic(spec.inputs, spec.fixed_batch or 3, 1)
    outs = _run(art.onnx_path, feeds)
    assert all(np.isfinite(o).all() for o in outs)
    assert art.sidecar["qdq_nodes"]["QuantizeLinear"] > 0
