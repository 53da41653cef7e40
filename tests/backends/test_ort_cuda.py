"""ONNX Runtime on the CUDA execution provider: device-resident I/O, fp32/fp16/int8 artifacts (GPU tier)."""

from __future__ import annotations

import numpy as np
import pytest


def _cuda_ep_reason() -> str | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return "needs onnxruntime-gpu (onnxruntime is not installed)"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return "needs onnxruntime-gpu with a CUDA GPU (CUDAExecutionProvider not available)"
    return None


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_cuda_ep_reason() is not None, reason=str(_cuda_ep_reason()))]


@pytest.mark.parametrize("precision, cos_min", [("fp32", 0.99999), ("fp16", 0.999), ("int8", 0.9)])
def test_cuda_ep_matches_cpu_fp32(artifact_cache, precision, cos_min):
    from edgebench.backends.base import Placement
    from edgebench.backends.ort import OrtBackend
    from edgebench.config.run_config import RunConfig
    from edgebench.evaluation.accuracy import accuracy_inputs, compare, reference_outputs
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import precision_artifact
    from edgebench.models.spec import load_model_spec

    spec = load_model_spec("tiny_cnn")
    fp32 = export_onnx(spec, artifact_cache)
    art = precision_artifact(spec, fp32, precision, artifact_cache, {"source": "synthetic", "samples": 8, "seed": 0})
    cfg = RunConfig(model="tiny_cnn", backend="ort", precision=precision, batch=8, placements=("cuda:0",))
    prepared = OrtBackend().prepare(cfg, art, artifact_cache)
    session = OrtBackend().open(prepared, Placement("cuda:0", 0, 1))
    x = accuracy_inputs(spec.first_input.shape, 8, seed=0)
    session.feed({spec.first_input.name: x})
    session.infer()
    out = next(iter(session.outputs().values()))
    session.close()
    agreement = compare(out, reference_outputs(str(fp32.path), spec.first_input.name, x))
    assert agreement.cosine_min >= cos_min, agreement


def test_cuda_ep_two_streams_in_one_process(artifact_cache):
    from edgebench.backends.ort import OrtBackend
    from edgebench.config.run_config import RunConfig
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import precision_artifact
    from edgebench.models.spec import load_model_spec
    from edgebench.runner.metrics import summarize
    from edgebench.runner.orchestrator import run_instances

    spec = load_model_spec("tiny_cnn")
    art = precision_artifact(spec, export_onnx(spec, artifact_cache), "fp32", artifact_cache, {})
    cfg = RunConfig(model="tiny_cnn", backend="ort", precision="fp32", batch=4, placements=("cuda:0", "cuda:0"),
                    mode="streams", warmup_s=0.3, duration_s=1.0, max_duration_s=5.0, min_inferences=100,
                    accuracy_samples=0)
    outcome = run_instances(cfg, OrtBackend().prepare(cfg, art, artifact_cache))
    assert outcome.status == "ok", outcome.reason
    s = summarize(outcome.instances, 4, cfg.sub_windows)
    assert all(v > 0 for v in s.per_instance_ips) and s.inferences >= 100
    assert np.all(np.diff(outcome.instances[0].start_ns) > 0)


def test_tensorrt_ep_reason_is_true(artifact_cache):
    """Where supports() says the TensorRT EP cannot run, ORT really does not give it; where it says it
    can, a session really runs on it."""
    import onnxruntime as ort

    from edgebench.backends.base import Env, Placement
    from edgebench.backends.ort import OrtBackend
    from edgebench.config.run_config import RunConfig
    from edgebench.errors import BackendError
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import precision_artifact
    from edgebench.models.spec import load_model_spec

    spec = load_model_spec("tiny_cnn")
    art = precision_artifact(spec, export_onnx(spec, artifact_cache), "fp32", artifact_cache, {})
    cfg = RunConfig(model="tiny_cnn", backend="ort", precision="fp32", batch=2, placements=("cuda:0",),
                    options=(("ort_provider", "tensorrt"),))
    reason = OrtBackend().supports(cfg, Env.detect())
    prepared = OrtBackend().prepare(cfg, art, artifact_cache)
    listed = "TensorrtExecutionProvider" in ort.get_available_providers()
    if reason is None:
        session = OrtBackend().open(prepared, Placement("cuda:0", 0, 1))
        session.feed({spec.first_input.name: np.zeros((2, *spec.first_input.shape), np.float32)})
        session.infer()
        session.close()
    else:
        print(f"TensorRT EP listed by onnxruntime: {listed}; supports(): {reason}")
        with pytest.raises(BackendError, match="TensorrtExecutionProvider was requested but ORT fell back|ONNX Runtime could not load it"):
            OrtBackend().open(prepared, Placement("cuda:0", 0, 1))


@pytest.mark.parametrize("precision, on_tensor_cores", [("fp32", False), ("tf32", True)])
def test_cuda_ep_fp32_is_strict_and_tf32_uses_tensor_cores(tmp_path, precision, on_tensor_cores):
    """ORT's CUDA EP allows TF32 by default; edgebench's fp32 must not (kernel names decide)."""
    pytest.importorskip("torch", reason="the kernel profile uses torch.profiler (CUPTI)")
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from edgebench.backends.base import Placement, Prepared
    from edgebench.backends.ort import OrtBackend
    from edgebench.evaluation.tensorcores import profile_kernels, tensor_core_time_pct
    from edgebench.models.inputs import InputDesc

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 2048])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512, 2048])], [w])
    path = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    prepared = Prepared(backend="ort", model_path=str(path), inputs=(InputDesc("x", shape=(2048,)),),
                        batch=512, precision=precision)
    session = OrtBackend().open(prepared, Placement("cuda:0", 0, 1))
    session.feed({"x": np.ones((512, 2048), np.float32)})
    pct = tensor_core_time_pct(profile_kernels(session.infer, steps=5))
    session.close()
    assert pct is not None
    assert (pct > 50.0) if on_tensor_cores else (pct == 0.0), pct
