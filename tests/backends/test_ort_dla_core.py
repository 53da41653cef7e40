"""ORT's TensorRT EP and the DLA core: what ORT's provider options say is checked, the rest is stated
unverified in the row (ORT is reported to ignore trt_dla_core=1 and run on DLA0)."""

from __future__ import annotations

from edgebench.backends.ort import OrtBackend
from edgebench.backends.ort_dla import core_mismatch, dla_core_check, reported_core
from edgebench.config.run_config import RunConfig
from edgebench.models.artifacts import Artifacts
from edgebench.models.inputs import InputDesc
from edgebench.models.model_artifact import ModelArtifact


def test_provider_options_as_ort_returns_them_are_read():
    # InferenceSession.get_provider_options(): provider -> {option: str}
    opts = {"TensorrtExecutionProvider": {"device_id": "0", "trt_dla_enable": "1", "trt_dla_core": "1"},
            "CUDAExecutionProvider": {"device_id": "0"}}
    assert reported_core(opts) == (True, 1)
    assert reported_core({"CUDAExecutionProvider": {}}) == (None, None)


def test_a_core_ort_reports_differently_is_a_stated_mismatch():
    ep = "TensorrtExecutionProvider"
    assert core_mismatch("dla1", {ep: {"trt_dla_enable": "1", "trt_dla_core": "1"}}) is None
    assert core_mismatch("dla1", {ep: {"trt_dla_enable": "1", "trt_dla_core": "0"}}) == \
        "placement dla1: ORT's TensorRT EP reports trt_dla_core=0, not 1: it would run on DLA0"
    assert "trt_dla_enable=0 (DLA off)" in core_mismatch("dla0", {ep: {"trt_dla_enable": "0"}})
    assert core_mismatch("dla1", {}) is None  # ORT silent: nothing to contradict (the row says unverified)
    assert core_mismatch("cuda:0", {ep: {"trt_dla_core": "1"}}) is None


def test_dla_rows_through_the_ep_say_the_core_used_is_unverified(tmp_path):
    cfg = RunConfig(model="tiny_cnn", backend="ort", precision="fp16", batch=1, placements=("dla0", "dla1"),
                    options=(("ort_provider", "tensorrt"),))
    art = ModelArtifact(model="tiny_cnn", precision="fp16", onnx_path="x.onnx", sha256="0" * 64, inputs=(InputDesc("input", shape=(3, 32, 32)),))
    prepared = OrtBackend().prepare(cfg, art, Artifacts(tmp_path))
    check = prepared.info["row_fields"]["dla_core_check"]
    assert check.startswith("dla0: trt_dla_core=0 requested") and "; dla1: trt_dla_core=1 requested" in check
    assert check.endswith("not reported by ORT: unverified")
    gpu = RunConfig(model="tiny_cnn", backend="ort", precision="fp16", batch=1, placements=("cuda:0",),
                    options=(("ort_provider", "tensorrt"),))
    assert "row_fields" not in OrtBackend().prepare(gpu, art, Artifacts(tmp_path)).info
    assert dla_core_check(["cuda:0", "cpu"]) is None
