"""ORT backend: option validation and the TensorRT execution provider's selection (CPU tier)."""

from __future__ import annotations

import dataclasses

import pytest

from edgebench.backends.base import Env
from edgebench.backends.ort import OrtBackend, libnvinfer_missing_reason, trt_provider_options
from edgebench.config.run_config import RunConfig
from edgebench.models.inputs import InputDesc

CPU_ENV = Env(cpu_count=2, machine="x86_64", ort_version="1.31", ort_providers=("CPUExecutionProvider",))
GPU_TRT_ENV = dataclasses.replace(
    CPU_ENV, cuda_devices=1,
    ort_providers=("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"))


def _cfg(placements=("cuda:0",), precision="fp32", **options):
    return RunConfig(model="tiny_cnn", backend="ort", precision=precision, batch=1, placements=placements,
                     options=tuple(sorted(options.items())))


def test_unknown_options_and_provider_values_are_refused():
    assert "only the option ort_provider (got cuda_graph)" in OrtBackend().supports(_cfg(cuda_graph=True), GPU_TRT_ENV)
    assert "ort_provider='openvino'" in OrtBackend().supports(_cfg(ort_provider="openvino"), GPU_TRT_ENV)


def test_tensorrt_ep_missing_from_the_build_is_the_reason():
    reason = OrtBackend().supports(_cfg(ort_provider="tensorrt"), CPU_ENV)
    assert reason is not None and reason.startswith("TensorrtExecutionProvider is not in this onnxruntime build")


def test_listed_tensorrt_ep_still_needs_libnvinfer():
    # onnxruntime-gpu lists the TensorRT EP on every machine; this one has no TensorRT library.
    missing = libnvinfer_missing_reason()
    if missing is None:
        pytest.skip("libnvinfer loads on this machine, so the missing-library reason cannot be shown here")
    assert OrtBackend().supports(_cfg(ort_provider="tensorrt"), GPU_TRT_ENV) == missing
    assert "libnvinfer.so.10" in missing and "JetPack" in missing


def test_library_probe_accepts_a_loadable_library():
    assert libnvinfer_missing_reason(("libdoes-not-exist.so.1", "libc.so.6")) is None
    assert "libdoes-not-exist.so.1" in libnvinfer_missing_reason(("libdoes-not-exist.so.1",))


def test_tensorrt_placements_and_gpu_count():
    assert "placement 'cpu' has no TensorRT target" in OrtBackend().supports(
        _cfg(("cpu",), ort_provider="tensorrt"), GPU_TRT_ENV)
    assert "has 1 CUDA device(s)" in OrtBackend().supports(_cfg(("cuda:1",), ort_provider="tensorrt"), GPU_TRT_ENV)


@pytest.mark.parametrize("device, precision, expect", [
    ("cuda:0", "fp32", {"device_id": 0, "trt_fp16_enable": False, "trt_int8_enable": False}),
    ("cuda:1", "fp16", {"device_id": 1, "trt_fp16_enable": True, "trt_int8_enable": False}),
    ("dla1", "int8", {"trt_dla_enable": True, "trt_dla_core": 1, "trt_int8_enable": True, "trt_fp16_enable": False}),
])
def test_provider_options_follow_the_artifact_precision_and_placement(device, precision, expect):
    name, opts = trt_provider_options(device, precision, "/cache/ort-trt")
    assert name == "TensorrtExecutionProvider"
    assert {k: opts[k] for k in expect} == expect
    assert opts["trt_engine_cache_path"] == "/cache/ort-trt" and opts["trt_engine_cache_enable"] is True
    assert trt_provider_options("cpu", precision, "/x") is None


def test_prepare_puts_the_engine_cache_under_the_artifact_cache(artifact_cache, tiny_onnx):
    from edgebench.models.model_artifact import ModelArtifact

    art = ModelArtifact(model="tiny_cnn", precision="fp32", onnx_path=str(tiny_onnx.path), sha256="x",
                        inputs=(InputDesc("input", shape=(3, 32, 32)),))
    prepared = OrtBackend().prepare(_cfg(ort_provider="tensorrt"), art, artifact_cache)
    assert prepared.options["trt_cache_dir"] == str(artifact_cache.root / "ort-trt")
    assert prepared.info["provider"] == "TensorrtExecutionProvider"
    assert OrtBackend().prepare(_cfg(), art, artifact_cache).info["provider"] == "CUDAExecutionProvider"


def test_tf32_is_a_cuda_math_mode_of_the_fp32_file():
    cuda_env = dataclasses.replace(CPU_ENV, cuda_devices=1, ort_providers=("CUDAExecutionProvider", "CPUExecutionProvider"))
    assert OrtBackend().supports(_cfg(("cuda:0",), precision="tf32"), cuda_env) is None
    assert "CUDA math mode" in OrtBackend().supports(_cfg(("cpu",), precision="tf32"), cuda_env)
    assert "TensorRT allows TF32 by default" in OrtBackend().supports(
        _cfg(("cuda:0",), precision="tf32", ort_provider="tensorrt"), GPU_TRT_ENV)
    assert "runtime mode of the torch/TensorRT backends" in OrtBackend().supports(_cfg(precision="amp"), cuda_env)


@pytest.mark.parametrize("ort_version, absent", [
    ("1.14.1", {"trt_timing_cache_enable", "trt_timing_cache_path"}),  # JetPack 5.1 Jetson Zoo era
    ("1.16.3", {"trt_timing_cache_path"}),  # ORT <= 1.16 rejects the key and falls back to the CUDA EP
    ("1.17.0", set()),
    ("1.31.1", set()),
])
def test_tensorrt_ep_options_are_only_those_this_onnxruntime_knows(ort_version, absent):
    from edgebench.backends.ort import TRT_EP_OPTION_SINCE

    _, newest = trt_provider_options("dla0", "fp16", "/c")
    _, opts = trt_provider_options("dla0", "fp16", "/c", ort_version=ort_version)
    assert set(newest) == set(TRT_EP_OPTION_SINCE)  # every key edgebench passes has a known first release
    assert set(newest) - set(opts) == absent
    assert opts["trt_dla_enable"] is True and opts["trt_fp16_enable"] is True and opts["trt_engine_cache_path"] == "/c"


def test_session_passes_the_running_onnxruntimes_keys(monkeypatch, tiny_onnx):
    """OrtSession builds the EP options for the installed onnxruntime: with an ORT that reports 1.16 the
    timing-cache path key is not sent (that ORT would reject it and silently fall back to CUDA)."""
    import onnxruntime

    from edgebench.backends.base import Placement, Prepared
    from edgebench.backends.ort import OrtSession
    from edgebench.errors import BackendError

    seen = {}

    def fake_session(path, sess_options=None, providers=None):
        seen["providers"] = providers
        raise RuntimeError("stop here")

    monkeypatch.setattr(onnxruntime, "__version__", "1.16.3")
    monkeypatch.setattr(onnxruntime, "InferenceSession", fake_session)
    prepared = Prepared(backend="ort", model_path=str(tiny_onnx.path), inputs=(InputDesc("input", shape=(3, 32, 32)),),
                        batch=1, precision="fp16",
                        options={"ort_provider": "tensorrt", "trt_cache_dir": "/c"})
    with pytest.raises(BackendError, match="could not load it: stop here"):
        OrtSession(prepared, Placement(device="cuda:0", instance=0))
    name, opts = seen["providers"][0]
    assert name == "TensorrtExecutionProvider" and "trt_timing_cache_path" not in opts
    assert opts["trt_timing_cache_enable"] is True and opts["trt_fp16_enable"] is True


def test_tensorrt_ep_dla_needs_fp16_or_int8_and_a_real_core(monkeypatch):
    """ORT's TensorRT EP turns DLA on only when trt_fp16_enable or trt_int8_enable is set; fp32 on dla0 would
    run on the GPU. It also quietly uses the GPU without DLA cores and core 0 for a core out of range."""
    from edgebench.backends import ort as ort_mod
    from edgebench.backends import trt_logic

    monkeypatch.setattr(ort_mod, "libnvinfer_missing_reason", lambda: None)
    reason = OrtBackend().supports(_cfg(("dla0",), ort_provider="tensorrt"), GPU_TRT_ENV)
    assert reason is not None and "enables DLA only with fp16 or int8" in reason and "fp32 on dla0" in reason
    monkeypatch.setattr(trt_logic, "jetson_model", lambda root="/": None)
    reason = OrtBackend().supports(_cfg(("dla0",), precision="fp16", ort_provider="tensorrt"), GPU_TRT_ENV)
    assert reason is not None and "has 0 DLA core(s)" in reason
    monkeypatch.setattr(trt_logic, "jetson_model", lambda root="/": "NVIDIA Jetson AGX Orin")
    monkeypatch.setattr(trt_logic, "count_dla_cores", lambda root="/": 2)
    assert OrtBackend().supports(_cfg(("dla0", "dla1"), precision="int8", ort_provider="tensorrt"), GPU_TRT_ENV) is None
    monkeypatch.setattr(trt_logic, "count_dla_cores", lambda root="/": 1)
    assert "placement 'dla1': this machine has 1 DLA core(s)" in OrtBackend().supports(
        _cfg(("dla1",), precision="int8", ort_provider="tensorrt"), GPU_TRT_ENV)


def test_dla_rows_record_that_the_ep_always_falls_back_to_the_gpu(artifact_cache, tiny_onnx):
    from edgebench.models.model_artifact import ModelArtifact

    art = ModelArtifact(model="tiny_cnn", precision="fp16", onnx_path=str(tiny_onnx.path), sha256="x",
                        inputs=(InputDesc("input", shape=(3, 32, 32)),))
    dla = OrtBackend().prepare(_cfg(("dla0",), precision="fp16", ort_provider="tensorrt"), art, artifact_cache)
    assert "always sets GPU fallback" in dla.info["provider"]
    assert dla.info["dla_gpu_fallback"].startswith("always")
    gpu = OrtBackend().prepare(_cfg(("cuda:0",), precision="fp16", ort_provider="tensorrt"), art, artifact_cache)
    assert gpu.info["provider"] == "TensorrtExecutionProvider" and "dla_gpu_fallback" not in gpu.info
