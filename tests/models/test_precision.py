"""Calibration data sources and the precision variants (fp32 / runtime modes / fp16 / int8 QDQ) in ORT CPU."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from edgebench.errors import ModelError
from edgebench.models.artifacts import Artifacts, sha256_file
from edgebench.models.calibration import IMAGENET_MEAN, IMAGENET_STD, calibration_batches
from edgebench.models.inputs import make_input
from edgebench.models.spec import load_model_spec

SYNTHETIC = {"source": "synthetic", "samples": 16, "seed": 0}


def _ort_run(path, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime", reason="running the variants needs onnxruntime")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x})[0]


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# ------------------------------------------------------------------ calibration data

def test_synthetic_calibration_is_deterministic_per_seed():
    a, rec_a = calibration_batches("synthetic", (3, 8, 8), 6, seed=1)
    b, rec_b = calibration_batches("synthetic", (3, 8, 8), 6, seed=1)
    c, rec_c = calibration_batches("synthetic", (3, 8, 8), 6, seed=2)
    assert a.shape == (6, 3, 8, 8) and a.dtype == np.float32
    assert np.array_equal(a, b) and rec_a == rec_b
    assert rec_a["sha256"] != rec_c["sha256"] and not np.array_equal(a, c)
    assert (rec_a["source"], rec_a["count"], rec_a["seed"]) == ("synthetic", 6, 1)
    assert abs(float(a.std()) - 1.0) < 0.2


def test_npy_folder_calibration_mixes_single_samples_and_batches(tmp_path):
    rng = np.random.default_rng(0)
    one = rng.standard_normal((3, 4, 4)).astype(np.float32)
    batch = rng.standard_normal((4, 3, 4, 4)).astype(np.float64)  # converted to float32
    np.save(tmp_path / "a.npy", one)
    np.save(tmp_path / "b.npy", batch)
    (tmp_path / "README.txt").write_text("ignored")
    data, rec = calibration_batches(str(tmp_path), (3, 4, 4), 5, seed=0)
    assert data.shape == (5, 3, 4, 4) and data.dtype == np.float32
    np.testing.assert_array_equal(data[0], one)
    np.testing.assert_array_equal(data[1:], batch.astype(np.float32))
    assert rec["files"] == ["a.npy", "b.npy"] and rec["count"] == 5 and rec["source"] == str(tmp_path)
    _, rec3 = calibration_batches(str(tmp_path), (3, 4, 4), 1, seed=0)
    assert rec3["files"] == ["a.npy"] and rec3["sha256"] != rec["sha256"]


def test_image_folder_calibration_resizes_and_normalizes(tmp_path):
    pil = pytest.importorskip("PIL.Image", reason="image calibration needs Pillow")
    pil.new("RGB", (50, 40), (255, 255, 255)).save(tmp_path / "white.png")
    pil.new("RGB", (20, 30), (0, 0, 0)).save(tmp_path / "black.jpg")
    data, rec = calibration_batches(str(tmp_path), (3, 16, 24), 2, seed=0)
    assert data.shape == (2, 3, 16, 24) and rec["files"] == ["black.jpg", "white.png"]
    mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
    np.testing.assert_allclose(data[0].mean(axis=(1, 2)), (0 - mean) / std, atol=0.05)
    np.testing.assert_allclose(data[1].mean(axis=(1, 2)), (1 - mean) / std, atol=1e-5)


def test_bad_calibration_sources_name_the_folder_or_file(tmp_path):
    missing = tmp_path / "no_such_dir"
    with pytest.raises(ModelError, match=f"{missing}: calibration source"):
        calibration_batches(str(missing), (3, 4, 4), 2, seed=0)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match=f"{empty}: no .npy or image"):
        calibration_batches(str(empty), (3, 4, 4), 2, seed=0)
    few = tmp_path / "few"
    few.mkdir()
    np.save(few / "x.npy", np.zeros((3, 4, 4), np.float32))
    with pytest.raises(ModelError, match=f"{few}: holds 1 calibration samples, 4 requested"):
        calibration_batches(str(few), (3, 4, 4), 4, seed=0)
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    np.save(wrong / "y.npy", np.zeros((3, 5, 5), np.float32))
    with pytest.raises(ModelError, match=r"y\.npy: array shape \(3, 5, 5\) is neither \(3, 4, 4\)"):
        calibration_batches(str(wrong), (3, 4, 4), 1, seed=0)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "z.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(ModelError, match=r"z\.npy: not a readable \.npy array"):
        calibration_batches(str(broken), (3, 4, 4), 1, seed=0)


# ------------------------------------------------------------------ precision variants

pytest.importorskip("onnx", reason="precision variants need onnx")


def test_fp32_and_runtime_modes_use_the_exported_file(tiny_onnx, artifact_cache):
    from edgebench.models.precision import precision_artifact

    spec = load_model_spec("tiny_cnn")
    fp32 = precision_artifact(spec, tiny_onnx, "fp32", artifact_cache, SYNTHETIC)
    assert fp32.onnx_path == str(tiny_onnx.path) and fp32.sha256 == tiny_onnx.sha256
    assert (fp32.model, fp32.precision, fp32.first_input.name, fp32.first_input.shape) == ("tiny_cnn", "fp32", "input", (3, 32, 32))
    assert fp32.weights == "random-init" and fp32.sidecar["parity"]["passed"] is True
    for mode in ("tf32", "bf16", "amp"):
        art = precision_artifact(spec, tiny_onnx, mode, artifact_cache, SYNTHETIC)
        assert art.precision == mode and art.onnx_path == str(tiny_onnx.path)
        assert "runtime mode" in art.sidecar["precision_note"]
    with pytest.raises(ModelError, match="tiny_cnn: unknown precision 'int4'"):
        precision_artifact(spec, tiny_onnx, "int4", artifact_cache, SYNTHETIC)


def test_fp16_variant_has_half_weights_float_io_and_runs_on_ort_cpu(tiny_onnx, artifact_cache):
    import onnx

    from edgebench.models.precision import precision_artifact

    spec = load_model_spec("tiny_cnn")
    art = precision_artifact(spec, tiny_onnx, "fp16", artifact_cache, SYNTHETIC)
    proto = onnx.load(art.onnx_path)
    onnx.checker.check_model(proto)  # also proves the nodes are topologically sorted
    init_types = {onnx.TensorProto.DataType.Name(t.data_type) for t in proto.graph.initializer}
    assert init_types == {"FLOAT16"}
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert proto.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert art.precision == "fp16" and art.sha256 == sha256_file(art.onnx_path)
    assert art.sidecar["source_fp32"]["sha256"] == tiny_onnx.sha256

    x = make_input((8, 3, 32, 32), "float32", 5)
    ref, got = _ort_run(tiny_onnx.path, x), _ort_run(art.onnx_path, x)
    assert got.dtype == np.float32 and got.shape == (8, 10)
    assert 0 < np.abs(got - ref).max() < 1e-2  # really computed in half precision, and close
    assert (got.argmax(1) == ref.argmax(1)).all()
    assert precision_artifact(spec, tiny_onnx, "fp16", artifact_cache, SYNTHETIC).sidecar["sha256"] == art.sha256


def test_int8_variant_is_symmetric_qdq_and_runs_on_ort_cpu(tiny_onnx, artifact_cache):
    import onnx
    from onnx import numpy_helper

    from edgebench.models.precision import precision_artifact

    spec = load_model_spec("tiny_cnn")
    art = precision_artifact(spec, tiny_onnx, "int8", artifact_cache, SYNTHETIC)
    proto = onnx.load(art.onnx_path)
    onnx.checker.check_model(proto)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("QuantizeLinear") >= 3 and ops.count("DequantizeLinear") >= 5
    zero_points = [numpy_helper.to_array(t) for t in proto.graph.initializer if t.name.endswith("zero_point")]
    assert zero_points and all(z.dtype == np.int8 and not z.any() for z in zero_points)  # symmetric int8
    int8_weights = [t for t in proto.graph.initializer if t.data_type == onnx.TensorProto.INT8 and t.dims]
    assert any(len(t.dims) == 4 for t in int8_weights)  # conv weights stored as int8
    assert not any(t.data_type == onnx.TensorProto.INT32 for t in proto.graph.initializer)  # float bias

    _, expected = calibration_batches("synthetic", (3, 32, 32), 16, 0)
    assert art.sidecar["calibration"] == expected
    assert art.sidecar["settings"]["extra_options"]["ActivationSymmetric"] is True
    assert art.sidecar["qdq_nodes"]["QuantizeLinear"] == ops.count("QuantizeLinear")

    x = make_input((16, 3, 32, 32), "float32", 9)
    ref, got = _ort_run(tiny_onnx.path, x), _ort_run(art.onnx_path, x)
    assert got.shape == (16, 10) and np.isfinite(got).all()
    assert not np.array_equal(got, ref)
    assert _cosine(got, ref).min() > 0.9


def test_int8_cache_key_follows_the_calibration(tiny_onnx, artifact_cache):
    from edgebench.models.precision import precision_artifact

    spec = load_model_spec("tiny_cnn")
    first = precision_artifact(spec, tiny_onnx, "int8", artifact_cache, {**SYNTHETIC, "samples": 8})
    mtime = os.stat(first.onnx_path).st_mtime_ns
    same = precision_artifact(spec, tiny_onnx, "int8", artifact_cache, {**SYNTHETIC, "samples": 8})
    assert same.onnx_path == first.onnx_path and same.sidecar["sha256"] == first.sha256
    assert os.stat(same.onnx_path).st_mtime_ns == mtime
    reseeded = precision_artifact(spec, tiny_onnx, "int8", artifact_cache, {**SYNTHETIC, "samples": 8, "seed": 1})
    assert reseeded.onnx_path != first.onnx_path
    assert reseeded.sidecar["calibration"]["sha256"] != first.sidecar["calibration"]["sha256"]


def test_int8_from_npy_folder_calibration(tmp_path, tiny_onnx, artifact_cache):
    from edgebench.models.precision import precision_artifact

    for i in range(3):
        np.save(tmp_path / f"s{i}.npy", make_input((2, 3, 32, 32), "float32", 100 + i))
    cal = {"source": str(tmp_path), "samples": 6, "seed": 0}
    art = precision_artifact(load_model_spec("tiny_cnn"), tiny_onnx, "int8", artifact_cache, cal)
    assert art.sidecar["calibration"]["files"] == ["s0.npy", "s1.npy", "s2.npy"]
    assert art.sidecar["calibration"]["count"] == 6
    assert _ort_run(art.onnx_path, make_input((2, 3, 32, 32), "float32", 0)).shape == (2, 10)


# ------------------------------------------------------------------ external ONNX through the same pipeline

def test_onnx_spec_from_external_file(tmp_path, tiny_onnx):
    from edgebench.models.precision import onnx_spec

    src = tmp_path / "mine.onnx"
    src.write_bytes(tiny_onnx.path.read_bytes())
    spec = onnx_spec(str(src))
    assert (spec.name, spec.source, spec.onnx_path) == ("mine", "onnx", str(src))
    assert spec.first_input.shape == (3, 32, 32) and spec.num_classes == 10 and spec.dynamic_batch
    assert (spec.first_input.name, spec.output_name, spec.opset) == ("input", "output", 17)
    assert spec.weights_label == "from-onnx"
    assert onnx_spec(str(src), name="renamed").name == "renamed"
    bad = tmp_path / "bad.onnx"
    bad.write_text("nope")
    with pytest.raises(ModelError, match=f"{bad}: not a valid ONNX model"):
        onnx_spec(str(bad))


def test_external_fixed_batch_onnx_gets_int8_with_batch_sized_calibration(tmp_path):
    pytest.importorskip("torch", reason="making the fixed-batch model needs torch")
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import onnx_spec, precision_artifact

    cache = Artifacts(tmp_path / "cache")
    fixed = export_onnx(dataclasses.replace(load_model_spec("tiny_cnn"), dynamic_batch=False), cache)
    spec = onnx_spec(str(fixed.path), name="fixed")
    assert spec.dynamic_batch is False
    fp32 = export_onnx(spec, cache)
    art = precision_artifact(spec, fp32, "int8", cache, {"source": "synthetic", "samples": 4, "seed": 0})
    assert art.model == "fixed" and art.weights == "from-onnx"
    out = _ort_run(art.onnx_path, make_input((1, 3, 32, 32), "float32", 0))
    ref = _ort_run(fp32.path, make_input((1, 3, 32, 32), "float32", 0))
    assert out.shape == (1, 10) and _cosine(out, ref).min() > 0.9


def test_int8_reduce_range_follows_the_host_and_keys_the_cache(tiny_onnx, tmp_path, monkeypatch):
    """7-bit weights on hosts whose ORT int8 kernels saturate, 8-bit elsewhere; both recorded and cached apart."""
    import onnx
    from onnx import numpy_helper

    from edgebench.models import precision

    spec = load_model_spec("tiny_cnn")
    x = make_input((16, 3, 32, 32), "float32", 9)
    ref = _ort_run(tiny_onnx.path, x)
    cache = Artifacts(tmp_path / "cache")  # empty, so each variant is built here with the forced decision
    arts = {}
    for reduce in (True, False):
        monkeypatch.setattr(precision, "int8_reduce_range", lambda r=reduce: (r, f"forced {r}"))
        art = precision.precision_artifact(spec, tiny_onnx, "int8", cache, SYNTHETIC)
        assert art.sidecar["settings"]["reduce_range"] is reduce
        assert art.sidecar["reduce_range_reason"] == f"forced {reduce}"
        weights = [numpy_helper.to_array(t) for t in onnx.load(art.onnx_path).graph.initializer
                   if t.data_type == onnx.TensorProto.INT8 and len(t.dims) >= 2]
        assert weights and max(int(np.abs(w.astype(np.int32)).max()) for w in weights) == (64 if reduce else 127)
        arts[reduce] = art
    assert arts[True].onnx_path != arts[False].onnx_path
    # the key is the decision, not the host's wording: another host that also reduces reuses the file
    monkeypatch.setattr(precision, "int8_reduce_range", lambda: (True, "another x86 host without VNNI"))
    again = precision.precision_artifact(spec, tiny_onnx, "int8", cache, SYNTHETIC)
    assert again.onnx_path == arts[True].onnx_path and again.sidecar["reduce_range_reason"] == "forced True"
    # the 7-bit file runs close to fp32 on every CPU, the saturating u8s8 kernels included
    assert _cosine(_ort_run(arts[True].onnx_path, x), ref).min() > 0.99


def test_int8_pre_process_skipped_by_a_bare_assert_says_where(tiny_onnx, tmp_path, monkeypatch):
    """A library's bare `assert` skips quant_pre_process; the sidecar says where it was raised, not
    'skipped: AssertionError: ' (issue 37)."""
    from onnxruntime.quantization import shape_inference

    from edgebench.models import in_child
    from edgebench.models.precision import precision_artifact

    def bare_assert(*_args, **_kwargs):  # a bare `assert` in the library (pytest would rewrite one written here)
        raise AssertionError

    monkeypatch.setattr(shape_inference, "quant_pre_process", bare_assert)
    monkeypatch.setattr(in_child, "IN_CHILD", False)  # the fault is injected here, not in a quantization process
    art = precision_artifact(load_model_spec("tiny_cnn"), tiny_onnx, "int8", Artifacts(tmp_path), SYNTHETIC)
    pre = art.sidecar["pre_process"]
    assert pre.startswith("skipped: AssertionError: no message, raised at tests/models/test_precision.py:"), pre
    assert pre.endswith("in bare_assert: raise AssertionError")


def test_fp16_and_int8_builds_run_in_a_process_of_their_own(tiny_onnx, tmp_path):
    """The fp16 conversion and the int8 quantization with its calibration run in a spawned process (issue 37: what
    ONNX Runtime's quantizer allocates never stays in the harness): the harness does not import onnxruntime for
    them, the artifacts are as before, and the cache key's versions are the ones the builds record."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from edgebench.models.artifacts import Artifact, Artifacts
        from edgebench.models.precision import precision_artifact
        from edgebench.models.spec import load_model_spec
        spec = load_model_spec("tiny_cnn")
        cache = Artifacts(Path({str(tmp_path / 'cache')!r}))  # empty: both are built now
        fp32 = Artifact(Path({str(tiny_onnx.path)!r}), {{"sha256": {tiny_onnx.sha256!r}}}, True)
        for p in ("fp16", "int8"):
            art = precision_artifact(spec, fp32, p, cache, {{"source": "synthetic", "samples": 8}})
            print(p, art.precision, art.sidecar["versions"]["onnxruntime"], Path(art.onnx_path).is_file())
        print("imported", "onnxruntime" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr[-3000:]
    import onnxruntime

    lines = out.stdout.split("\n")
    assert f"fp16 fp16 {onnxruntime.__version__} True" in lines and f"int8 int8 {onnxruntime.__version__} True" in lines
    assert "imported False" in lines, out.stdout
