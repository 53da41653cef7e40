"""ORT backend: option validation and the TensorRT execution provider's selection (CPU tier)."""

from __future__ import annotations

import dataclasses

import pytest

from edgebench.backends.base import Env
from edgebench.backends.ort import OrtBackend, libnvinfer_missing_reason, trt_provider_options
from edgebench.config import RunConfig

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
    from edgebench.backends.base import ModelArtifact

    art = ModelArtifact(model="tiny_cnn", precision="fp32", onnx_path=str(tiny_onnx.path), sha256="x",
                        input_name="input", input_shape=(3, 32, 32))
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
