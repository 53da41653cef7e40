"""The TensorRT backend's logic on a CPU: engine keys and the stale/foreign rebuild decision, supports()
reasons, precision strategy per TensorRT version, build plans, parsing real inspector JSON and builder logs,
calibration batches from the recorded set, DLA detection from sysfs trees, the registry entry.
Nothing here calls TensorRT (tests/test_trt_real.py does, where TensorRT exists)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import repo_paths

from edgebench.backends import trt_calibration as C
from edgebench.backends import trt_logic as L
from edgebench.backends import trt_reports as R
from edgebench.backends.trt_engine_cache import (
    ENGINE_FORMAT,
    EngineCache,
    EngineKey,
    calibration_cache_path,
    decide,
    timing_cache_path,
)
from edgebench.config.run_config import RunConfig
from edgebench.errors import BackendError, ModelError
from edgebench.models.inputs import InputDesc
from edgebench.models.model_artifact import ModelArtifact

FIXTURES = repo_paths.FIXTURES / "trt"

ORIN = L.TrtEnv(trt_version="10.3.0.30", has_fp16_flag=True, has_int8_flag=True, has_strongly_typed=True,
                has_entropy_calibrator=True, jetson_model="NVIDIA Jetson AGX Orin Developer Kit", dla_cores=2)
XAVIER_86 = L.TrtEnv(trt_version="8.6.2.3", has_fp16_flag=True, has_int8_flag=True, has_strongly_typed=False,
                     has_entropy_calibrator=True, jetson_model="NVIDIA Jetson AGX Xavier", dla_cores=2)
TRT11 = L.TrtEnv(trt_version="11.0.0.1", has_fp16_flag=False, has_int8_flag=False, has_strongly_typed=True,
                 has_entropy_calibrator=False, jetson_model=None, dla_cores=None)
NANO = replace(ORIN, jetson_model="NVIDIA Jetson Orin Nano Developer Kit", dla_cores=0)
MISSING = L.TrtEnv(trt_version=None, missing_reason=L.INSTALL_HINT + " (No module named 'tensorrt')")


def cfg(precision: str = "fp16", placements: tuple[str, ...] = ("gpu",), batch: int = 4, **options: object) -> RunConfig:
    return RunConfig(model="resnet50", backend="trt", precision=precision, batch=batch, placements=placements,
                     options=tuple(sorted(options.items())))


def artifact(precision: str = "fp16", **sidecar: object) -> ModelArtifact:
    side = {"source_fp32": {"path": "/cache/fp32/resnet50.onnx", "sha256": "f" * 64}, **sidecar}
    return ModelArtifact(model="resnet50", precision=precision, onnx_path=f"/cache/{precision}/resnet50.onnx",
                         sha256=precision[0] * 64, inputs=(InputDesc("input", shape=(3, 224, 224)),),
                         sidecar=side)


def key(**changes: object) -> EngineKey:
    base = EngineKey(onnx_sha256="a" * 64, precision="fp16", strategy="fp16-builder-flag", input_name="input",
                     min_shape=(4, 3, 224, 224), opt_shape=(4, 3, 224, 224), max_shape=(4, 3, 224, 224),
                     device_type="gpu", dla_core=None, gpu_fallback=False, trt_version="10.3.0.30",
                     device_name="Orin", compute_capability="8.7", workspace_mib=1024,
                     builder_options=(("set_flags", "FP16"),))
    return replace(base, **changes)


# --------------------------------------------------------------------------- engine cache

def test_slot_ignores_the_build_environment_but_digest_does_not() -> None:
    a, b = key(), key(trt_version="8.6.2.3", device_name="Xavier", compute_capability="7.2")
    assert a.slot() == b.slot() and a.digest() != b.digest()
    for other in (key(precision="int8"), key(opt_shape=(8, 3, 224, 224)), key(dla_core=1, device_type="dla"),
                  key(gpu_fallback=True), key(workspace_mib=2048), key(builder_options=(("set_flags", "FP16,INT8"),))):
        assert other.slot() != a.slot()


def test_stored_engine_is_a_hit_and_records_key_and_sha(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path)
    assert cache.lookup(key()).decision == decide(key(), False, None, None, None)
    assert cache.lookup(key()).decision.reason == "build: no cached engine"
    stored = cache.store(key(), b"engine-bytes", {"facts": {"build_s": 1.5}})
    found = cache.lookup(key())
    assert found.decision.load and found.decision.reason.startswith("hit")
    assert found.path == stored.path and found.path.read_bytes() == b"engine-bytes"
    assert found.sidecar["key"]["precision"] == "fp16" and found.sidecar["facts"] == {"build_s": 1.5}
    assert found.sidecar["format"] == ENGINE_FORMAT


@pytest.mark.parametrize("changes, words", [
    ({"trt_version": "8.6.2.3"}, ["foreign", "trt_version: cached '10.3.0.30', wanted '8.6.2.3'"]),
    ({"device_name": "NVIDIA Jetson AGX Xavier", "compute_capability": "7.2"},
     ["foreign", "compute_capability: cached '8.7', wanted '7.2'", "device_name"]),
])
def test_engine_from_another_tensorrt_or_device_is_rebuilt_with_the_reason(tmp_path: Path, changes: dict,
                                                                         words: list[str]) -> None:
    cache = EngineCache(tmp_path)
    cache.store(key(), b"built-on-orin-trt10", {})
    found = cache.lookup(key(**changes))
    assert not found.decision.load
    for word in words:
        assert word in found.decision.reason


def test_sidecar_with_a_different_key_field_is_stale(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path)
    stored = cache.store(key(), b"x", {})
    side_path = stored.path.with_name(stored.path.name + ".json")
    side = json.loads(side_path.read_text())
    side["key"]["strategy"] = "fp16-strongly-typed"  # e.g. written by an older edgebench
    side_path.write_text(json.dumps(side))
    decision = cache.lookup(key()).decision
    assert not decision.load
    assert "stale engine" in decision.reason and "strategy: cached 'fp16-strongly-typed'" in decision.reason


@pytest.mark.parametrize("damage, words", [
    ("bytes", "do not match the sidecar's sha256"),
    ("delete-sidecar", "no sidecar"),
    ("corrupt-sidecar", "sidecar unreadable"),
    ("list-sidecar", "sidecar unreadable (top level is list"),
    ("old-format", "sidecar format 0"),
    ("delete-engine", "no engine file"),
])
def test_damaged_cache_entries_are_rebuilt_never_loaded(tmp_path: Path, damage: str, words: str) -> None:
    cache = EngineCache(tmp_path)
    stored = cache.store(key(), b"good", {})
    side = stored.path.with_name(stored.path.name + ".json")
    if damage == "bytes":
        stored.path.write_bytes(b"evil")
    elif damage == "delete-sidecar":
        side.unlink()
    elif damage == "corrupt-sidecar":
        side.write_text("{not json")
    elif damage == "list-sidecar":
        side.write_text("[]")
    elif damage == "old-format":
        side.write_text(json.dumps({**json.loads(side.read_text()), "format": 0}))
    elif damage == "delete-engine":
        stored.path.unlink()
    decision = cache.lookup(key()).decision
    assert not decision.load
    assert words in decision.reason


def test_rebuild_replaces_the_foreign_engine_in_the_same_slot(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path)
    old = cache.store(key(trt_version="8.6.2.3"), b"old", {})
    new = cache.store(key(), b"new", {})
    assert old.path == new.path
    assert cache.lookup(key()).decision.load
    assert not cache.lookup(key(trt_version="8.6.2.3")).decision.load


def test_timing_and_calibration_cache_paths(tmp_path: Path) -> None:
    t = timing_cache_path(tmp_path, "10.3.0.30", "Orin", "8.7")
    assert t == timing_cache_path(tmp_path, "10.3.0.30", "Orin", "8.7")
    assert t.name == "orin-sm87-trt10-3-0-30.cache"
    assert t != timing_cache_path(tmp_path, "8.6.2.3", "Orin", "8.7")
    assert t != timing_cache_path(tmp_path, "10.3.0.30", "Xavier", "7.2")
    c = calibration_cache_path(tmp_path, "a" * 64, "10.3", 8, "d" * 64)
    assert c.name == "calibration.cache"
    others = {calibration_cache_path(tmp_path, "b" * 64, "10.3", 8, "d" * 64),
              calibration_cache_path(tmp_path, "a" * 64, "8.6", 8, "d" * 64),
              calibration_cache_path(tmp_path, "a" * 64, "10.3", 4, "d" * 64),
              calibration_cache_path(tmp_path, "a" * 64, "10.3", 8, "e" * 64)}
    assert c not in others and len(others) == 4


# --------------------------------------------------------------------------- supports()

def test_missing_tensorrt_gives_the_jetpack_hint() -> None:
    reason = L.supports_reason(cfg("fp16"), MISSING, cuda_devices=1)
    assert reason is not None and reason.startswith("TensorRT not installed (it comes with JetPack: python3-libnvinfer)")


def test_detect_env_here_reports_tensorrt_missing_and_no_jetson(tmp_path: Path) -> None:
    env = L.detect_env(tmp_path)  # an empty root: not a Jetson; this CI venv has no TensorRT
    try:
        import tensorrt

        have = hasattr(tensorrt, "Builder")
    except ImportError:
        have = False
    if have:
        pytest.skip("TensorRT is installed here; the missing-TensorRT path is not observable")
    assert env.trt_version is None and env.missing_reason and env.missing_reason.startswith(L.INSTALL_HINT)
    assert env.jetson_model is None and env.dla_cores is None


def test_type_stubs_alone_do_not_count_as_tensorrt() -> None:
    stubs_namespace = SimpleNamespace()  # what `import tensorrt` gives when only tensorrt-stubs is installed
    facts = L.trt_features(stubs_namespace)
    assert facts["trt_version"] is None and facts["missing_reason"].startswith(L.INSTALL_HINT)
    real = SimpleNamespace(Builder=object, __version__="10.3.0.30",
                           BuilderFlag=SimpleNamespace(FP16=1, INT8=2),
                           NetworkDefinitionCreationFlag=SimpleNamespace(STRONGLY_TYPED=1),
                           IInt8EntropyCalibrator2=object)
    facts = L.trt_features(real)
    assert facts == {"trt_version": "10.3.0.30", "missing_reason": None, "has_fp16_flag": True,
                     "has_int8_flag": True, "has_strongly_typed": True, "has_entropy_calibrator": True}
    trt11 = SimpleNamespace(Builder=object, __version__="11.0", BuilderFlag=SimpleNamespace(),
                            NetworkDefinitionCreationFlag=SimpleNamespace(STRONGLY_TYPED=1))
    f11 = L.trt_features(trt11)
    assert not f11["has_fp16_flag"] and not f11["has_entropy_calibrator"] and f11["has_strongly_typed"]


@pytest.mark.parametrize("run, env, expected", [
    (cfg("fp16"), ORIN, None),
    (cfg("int8", ("gpu", "dla0", "dla1"), gpu_fallback=True), ORIN, None),
    (cfg("fp32", ("gpu", "dla0")), ORIN, "DLA is FP16/INT8 only: fp32 cannot run on dla0"),
    (cfg("tf32", ("dla1",)), ORIN, "DLA is FP16/INT8 only"),
    (cfg("fp32", ("dla0",)), MISSING, "DLA is FP16/INT8 only"),  # config reasons come before the machine's
    (cfg("fp16", ("dla0",), cuda_graph=True), ORIN, "cuda_graph is GPU only"),
    (cfg("fp16", ("dla0",)), NANO, "placement dla0: this device (NVIDIA Jetson Orin Nano Developer Kit) has no DLA"),
    (cfg("fp16", ("dla1",)), replace(ORIN, dla_cores=1), "has 1 DLA core(s)"),
    (cfg("fp16", ("dla0",)), replace(ORIN, jetson_model=None, dla_cores=None), "this is not a Jetson"),
    (cfg("fp16", ("gpu",)), replace(ORIN, jetson_model=None, dla_cores=None), "needs a CUDA GPU"),
    (cfg("bf16"), ORIN, "trt builds fp32, tf32, fp16, int8 engines"),
    (cfg("fp16", ("cpu",)), ORIN, "placement 'cpu' is not a TensorRT target"),
    (cfg("fp16", fast=True), ORIN, "unknown option(s) fast"),
    (cfg("int8", int8_calibration="minmax"), ORIN, "int8_calibration='minmax' must be one of auto, explicit, entropy"),
    (cfg("fp16", workspace_mib=0), ORIN, "workspace_mib=0 must be a positive integer"),
    (cfg("int8", int8_calibration="entropy"), ORIN, None),
    (cfg("int8", int8_calibration="entropy"), TRT11, "is gone in TensorRT 11.0.0.1"),
    # explicit Q/DQ INT8 cannot target a DLA below TensorRT 10; auto (the default) takes entropy calibration there
    (cfg("int8", ("dla0",), int8_calibration="explicit"), XAVIER_86,
     "int8_calibration: explicit (the Q/DQ ONNX) cannot build for dla0 on TensorRT 8.6.2.3"),
    (cfg("int8", ("gpu", "dla0")), XAVIER_86, None),
    (cfg("int8", ("dla0",), int8_calibration="explicit"), ORIN, None),
    (cfg("int8", ("gpu",), int8_calibration="explicit"), XAVIER_86, None),
    # TensorRT without DLA: 10.8+ and 11.0-11.4.0; 11.4.1+ on AGX Orin only
    (cfg("fp16", ("dla0",)), replace(TRT11, jetson_model=ORIN.jetson_model, dla_cores=2),
     "placement dla0: TensorRT 11.0.0.1 has no DLA support on Jetson"),
    (cfg("fp16", ("dla0",)), replace(ORIN, trt_version="10.13.0.35"), "10.7 was the last 10.x with DLA"),
    (cfg("fp16", ("dla0",)), replace(TRT11, trt_version="11.4.1", jetson_model=ORIN.jetson_model, dla_cores=2),
     None),
    (cfg("fp16", ("dla0",)), replace(TRT11, trt_version="11.4.1", jetson_model="NVIDIA Jetson Orin NX", dla_cores=2),
     "supports DLA on Jetson AGX Orin only"),
    (cfg("fp16", ("gpu",)), replace(TRT11, jetson_model=ORIN.jetson_model, dla_cores=2), None),
])
def test_supports_reasons(run: RunConfig, env: L.TrtEnv, expected: str | None) -> None:
    cuda_devices = 0  # a Jetson's iGPU is not listed in /proc/driver/nvidia/gpus; the Jetson model counts
    reason = L.supports_reason(run, env, cuda_devices)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason, reason


def test_backend_supports_uses_its_env_and_the_registry_knows_trt() -> None:
    from edgebench.backends.base import Env
    from edgebench.backends.registry import BACKEND_NAMES, get_backend
    from edgebench.backends.trt import TrtBackend

    assert "trt" in BACKEND_NAMES
    backend = get_backend("trt")
    assert isinstance(backend, TrtBackend) and backend.name == "trt"
    env = Env(cpu_count=2, machine="aarch64")
    assert TrtBackend(env=ORIN).supports(cfg("fp16", ("dla0",)), env) is None
    assert "no DLA" in (TrtBackend(env=NANO).supports(cfg("fp16", ("dla0",)), env) or "")


# --------------------------------------------------------------------------- precision strategy and plans

@pytest.mark.parametrize("precision, env, target, calib, name, onnx, flags, typed", [
    ("fp32", ORIN, L.Target("gpu"), "explicit", "fp32-ieee", "fp32", (), False),
    ("tf32", ORIN, L.Target("gpu"), "explicit", "tf32", "fp32", ("TF32",), False),
    ("fp16", XAVIER_86, L.Target("gpu"), "explicit", "fp16-builder-flag", "fp32", ("FP16",), False),
    ("fp16", ORIN, L.Target("dla", 0), "explicit", "fp16-builder-flag", "fp32", ("FP16",), False),
    ("fp16", TRT11, L.Target("gpu"), "explicit", "fp16-strongly-typed", "artifact", (), True),
    ("fp16", replace(TRT11, has_fp16_flag=True), L.Target("gpu"), "explicit", "fp16-strongly-typed", "artifact", (),
     True),  # TensorRT >= 11: strongly typed even if an FP16 attribute lingers
    ("int8", ORIN, L.Target("gpu"), "explicit", "int8-explicit-qdq", "artifact", ("INT8",), False),
    ("int8", ORIN, L.Target("dla", 1), "explicit", "int8-explicit-qdq", "artifact", ("INT8", "FP16"), False),
    ("int8", XAVIER_86, L.Target("gpu"), "entropy", "int8-entropy", "fp32", ("INT8",), False),
    ("int8", XAVIER_86, L.Target("gpu"), "auto", "int8-explicit-qdq", "artifact", ("INT8",), False),
    ("int8", XAVIER_86, L.Target("dla", 0), "auto", "int8-entropy", "fp32", ("INT8", "FP16"), False),
    ("int8", ORIN, L.Target("dla", 0), "auto", "int8-explicit-qdq", "artifact", ("INT8", "FP16"), False),
    ("int8", TRT11, L.Target("gpu"), "explicit", "int8-explicit-qdq-strongly-typed", "artifact", (), True),
])
def test_precision_strategy_per_tensorrt_version(precision: str, env: L.TrtEnv, target: L.Target, calib: str,
                                                 name: str, onnx: str, flags: tuple, typed: bool) -> None:
    s = L.precision_strategy(precision, env, target, calib)
    assert (s.name, s.onnx, s.set_flags, s.strongly_typed) == (name, onnx, flags, typed)
    assert s.calibrate == (name == "int8-entropy")
    assert s.clear_flags == (("TF32",) if precision == "fp32" else ())


def test_strategies_that_this_tensorrt_cannot_do_raise() -> None:
    with pytest.raises(BackendError, match="no implicit INT8 calibration"):
        L.precision_strategy("int8", TRT11, L.Target("gpu"), "entropy")
    with pytest.raises(BackendError, match="neither BuilderFlag.FP16 nor strongly typed"):
        L.precision_strategy("fp16", replace(XAVIER_86, has_fp16_flag=False), L.Target("gpu"), "explicit")
    with pytest.raises(BackendError, match="explicit quantization on DLA needs TensorRT 10"):
        L.precision_strategy("int8", XAVIER_86, L.Target("dla", 1), "explicit")


def test_build_plan_for_dla_with_fallback_and_static_batch() -> None:
    opts = L.check_options({"gpu_fallback": True})
    plan = L.build_plan(cfg("int8", ("dla1",), batch=16), artifact("int8"), L.Target("dla", 1), ORIN, opts)
    assert plan.min_shape == plan.opt_shape == plan.max_shape == (16, 3, 224, 224)
    assert plan.set_flags == ("INT8", "FP16", "GPU_FALLBACK")
    assert plan.onnx_path == "/cache/int8/resnet50.onnx" and plan.onnx_sha256 == "i" * 64
    assert plan.workspace_bytes == 1024 << 20 and plan.gpu_fallback
    gpu = L.build_plan(cfg("int8", ("gpu",), batch=16), artifact("int8"), L.Target("gpu"), ORIN, opts)
    assert gpu.set_flags == ("INT8",) and not gpu.gpu_fallback  # the option means nothing on the GPU


def test_fp16_builder_flag_builds_from_the_fp32_source_and_keys_differ() -> None:
    opts = L.check_options({})
    plan = L.build_plan(cfg("fp16"), artifact("fp16"), L.Target("gpu"), ORIN, opts)
    assert plan.onnx_path == "/cache/fp32/resnet50.onnx" and plan.onnx_sha256 == "f" * 64
    typed = L.build_plan(cfg("fp16"), artifact("fp16"), L.Target("gpu"), TRT11, opts)
    assert typed.onnx_path == "/cache/fp16/resnet50.onnx"
    k_orin = L.engine_key(plan, "10.3.0.30", "Orin", "8.7")
    assert k_orin.builder_options == (("clear_flags", ""), ("profiling_verbosity", "DETAILED"),
                                      ("set_flags", "FP16"), ("strongly_typed", False))
    assert k_orin.slot() != L.engine_key(typed, "10.3.0.30", "Orin", "8.7").slot()
    ws = L.build_plan(cfg("fp16"), artifact("fp16"), L.Target("gpu"), ORIN, L.check_options({"workspace_mib": 256}))
    assert L.engine_key(ws, "10.3.0.30", "Orin", "8.7").slot() != k_orin.slot()
    no_source = ModelArtifact(model="m", precision="fp16", onnx_path="/x.onnx", sha256="x", inputs=(InputDesc("input", shape=(3, 8, 8)),))
    with pytest.raises(BackendError, match="names no source_fp32"):
        L.build_plan(cfg("fp16"), no_source, L.Target("gpu"), ORIN, opts)


def write_onnx(path: Path, batch: int | str) -> str:
    """A one-node ONNX (Relu) whose input 'input' has batch axis `batch` (an int: fixed; a str: dynamic)."""
    import onnx
    from onnx import TensorProto, helper

    shape = [batch, 3, 224, 224]
    graph = helper.make_graph([helper.make_node("Relu", ["input"], ["out"])], "g",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(graph), str(path))
    return str(path)


def fp32_source(tmp_path: Path, batch: int | str, **sidecar: object) -> ModelArtifact:
    src = write_onnx(tmp_path / f"fp32-{batch}.onnx", batch)
    return replace(artifact("int8", **sidecar), sidecar={"source_fp32": {"path": src, "sha256": "f" * 64}, **sidecar})


def test_entropy_plan_needs_and_keys_the_calibration_record(tmp_path: Path) -> None:
    opts = L.check_options({"int8_calibration": "entropy"})
    record = {"source": "synthetic", "seed": 0, "count": 5, "sha256": "c" * 64}
    plan = L.build_plan(cfg("int8"), fp32_source(tmp_path, "N", calibration=record), L.Target("gpu"), ORIN, opts)
    assert plan.calibration_batch == 5 and plan.calibration_sha256 == "c" * 64  # min(8, recorded samples)
    assert ("calibration_sha256", "c" * 64) in plan.builder_options()
    with pytest.raises(BackendError, match="needs the recorded calibration set"):
        L.build_plan(cfg("int8"), artifact("int8"), L.Target("gpu"), ORIN, opts)


def test_calibration_batch_is_the_fixed_batch_of_the_onnx(tmp_path: Path) -> None:
    """A fixed-batch ONNX cannot take min(8, count) samples at a time: the calibration profile uses its batch."""
    opts = L.check_options({"int8_calibration": "entropy"})
    record = {"source": "synthetic", "seed": 0, "count": 32, "sha256": "c" * 64}
    fixed = L.build_plan(cfg("int8", batch=2), fp32_source(tmp_path, 2, calibration=record), L.Target("gpu"),
                         ORIN, opts)
    dynamic = L.build_plan(cfg("int8", batch=2), fp32_source(tmp_path, "N", calibration=record), L.Target("gpu"),
                           ORIN, opts)
    assert (fixed.calibration_batch, dynamic.calibration_batch) == (2, L.CALIBRATION_BATCH)
    assert L.engine_key(fixed, "10.3", "Orin", "8.7").slot() != L.engine_key(dynamic, "10.3", "Orin", "8.7").slot()
    assert L.onnx_fixed_batch(write_onnx(tmp_path / "b16.onnx", 16), "input") == 16
    with pytest.raises(BackendError, match="fewer than the ONNX's fixed batch of 16"):
        L.calibration_batch_size(16, 10)
    with pytest.raises(BackendError, match="no input 'x' to calibrate"):
        L.onnx_fixed_batch(write_onnx(tmp_path / "b1.onnx", 1), "x")
    with pytest.raises(BackendError, match="cannot read the ONNX"):
        L.onnx_fixed_batch(str(tmp_path / "missing.onnx"), "input")


def test_int8_on_a_dla_below_tensorrt_10_defaults_to_entropy_with_a_note(tmp_path: Path) -> None:
    record = {"source": "synthetic", "seed": 0, "count": 16, "sha256": "c" * 64}
    model = fp32_source(tmp_path, "N", calibration=record)
    opts = L.check_options({})
    assert opts["int8_calibration"] == "auto"
    dla = L.build_plan(cfg("int8", ("gpu", "dla0")), model, L.Target("dla", 0), XAVIER_86, opts)
    gpu = L.build_plan(cfg("int8", ("gpu", "dla0")), model, L.Target("gpu"), XAVIER_86, opts)
    assert dla.strategy.name == "int8-entropy" and dla.calibration_batch == 8
    assert any("entropy calibration (auto: TensorRT 8.6.2.3 has no explicit Q/DQ INT8 on DLA)" in n for n in dla.notes)
    assert gpu.strategy.name == "int8-explicit-qdq" and gpu.onnx_path == model.onnx_path


def test_parse_placement_and_version() -> None:
    assert L.parse_placement("gpu") == L.parse_placement("cuda:0") == L.Target("gpu")
    assert L.parse_placement("dla") == L.Target("dla", 0) and L.parse_placement("dla1").label == "dla1"
    assert L.parse_placement("cuda:1") is None and L.parse_placement("cpu") is None
    assert L.parse_version("10.3.0.30") == (10, 3, 0, 30) and L.parse_version("8.6.2.post1") == (8, 6, 2)
    assert R.numpy_dtype("HALF") == "float16" and R.numpy_dtype("FLOAT") == "float32"
    with pytest.raises(BackendError, match="BF16 has no numpy equivalent"):
        R.numpy_dtype("BF16")


# --------------------------------------------------------------------------- what TensorRT reports back

@pytest.mark.parametrize("fixture, tensor_tactics, dtypes", [
    # counts checked by hand against the files: A100 fp32 uses TF32 xmma kernels (TensorRT's default) except
    # one scudnn conv and a pooling kernel; the QAT engine's int8x4 icudnn (dp4a) and simt conv are not MMA
    ("inspector_resnet_fp32_a100.json", (20, 22), {"FP32": 32}),
    ("inspector_resnet_fp16_a100.json", (21, 22), {"FP16": 35, "FP32": 1}),
    ("inspector_mobilenet_qat_int8_sm75.json", (34, 36), {"FP16": 15, "FP32": 5, "Int8": 53}),
])
def test_inspector_json_gives_tensor_core_and_precision_evidence(fixture: str, tensor_tactics: tuple,
                                                                  dtypes: dict) -> None:
    text = (FIXTURES / fixture).read_text()
    layers = R.parse_inspector_json(text)
    assert len(layers) == len(json.loads(text)["Layers"])
    ev = R.engine_evidence(layers)
    assert (ev["tensor_core_tactics"], ev["tactics"]) == tensor_tactics
    assert ev["output_dtypes"] == dtypes
    assert ev["tensor_core_evidence"].startswith(f"engine: {tensor_tactics[0]}/{tensor_tactics[1]} named tactics")


def test_inspector_names_only_layout_and_garbage() -> None:
    layers = R.parse_inspector_json('{"Layers": ["conv1 + relu1", "fc"], "Bindings": ["input", "output"]}')
    assert [x.name for x in layers] == ["conv1 + relu1", "fc"] and all(x.tactic is None for x in layers)
    assert "no tactic names" in R.engine_evidence(layers)["tensor_core_evidence"]
    with pytest.raises(BackendError, match="unreadable"):
        R.parse_inspector_json("{")
    with pytest.raises(BackendError, match="no 'Layers' list"):
        R.parse_inspector_json('{"Bindings": []}')


def test_format_dtype() -> None:
    assert R.format_dtype("Thirty-two wide channel vectorized row major Int8 format") == "Int8"
    assert R.format_dtype("Row major linear FP32") == "FP32"
    assert R.format_dtype("Channel major FP16 format where channel % 8 == 0") == "FP16"
    assert R.format_dtype("something else") is None


def test_build_log_dla_and_gpu_fallback_layers() -> None:
    vgg = R.parse_build_log((FIXTURES / "buildlog_trtexec_vgg19_dla_fallback.txt").read_text().splitlines())
    assert vgg is not None
    assert vgg.dla == ("{ForeignNode[conv1_1...pool5]}", "{ForeignNode[relu6...fc8]}")
    assert vgg.gpu == ("SHUFFLE: shuffle_between_pool5_and_fc6", "CONVOLUTION: fc6", "SOFTMAX: prob")
    cudla = R.parse_build_log((FIXTURES / "buildlog_sample_cudla.txt").read_text().splitlines())
    assert cudla == R.LayerPlacement(dla=("{ForeignNode[(Unnamed Layer* 0) [ElementWise]]}",), gpu=())
    assert R.parse_build_log(["[I] [TRT] Total Activation Memory: 1 MiB"]) is None


def test_placement_fields_only_for_dla_engines() -> None:
    opts = L.check_options({"gpu_fallback": True})
    dla_plan = L.build_plan(cfg("fp16", ("dla0",)), artifact(), L.Target("dla", 0), ORIN, opts)
    gpu_plan = L.build_plan(cfg("fp16"), artifact(), L.Target("gpu"), ORIN, opts)
    placed = R.LayerPlacement(dla=("{ForeignNode[a...b]}",), gpu=("SOFTMAX: prob",))
    assert R.placement_fields(dla_plan, placed) == {"dla_layers": ["{ForeignNode[a...b]}"],
                                                    "gpu_fallback_layers": ["SOFTMAX: prob"]}
    assert R.placement_fields(gpu_plan, placed)["gpu_fallback_layers"] is None
    assert "listed no DLA/GPU layer placement" in R.placement_fields(dla_plan, None)["placement_note"]


def test_engine_of_another_orin_module_is_rebuilt_not_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Orin module's CUDA device is named "Orin" (sm 8.7): the board model must tell an AGX Orin engine
    from an Orin Nano one. TensorRT and CUDA are stood in for (prepare_engine's own logic is under test)."""
    from edgebench.backends import cuda_buffers
    from edgebench.backends import trt as trt_mod

    builds: list[str] = []

    def fake_build(plan: L.BuildPlan, timing_cache: Path, calibrator: object) -> dict:
        builds.append(timing_cache.name)
        return {"engine": b"engine", "inspector_json": '{"Layers": []}', "log": [], "build_s": 1.0}

    monkeypatch.setattr(cuda_buffers, "open_runtime",
                        lambda: SimpleNamespace(name="fake", device_identity=lambda: ("Orin", "8.7")))
    monkeypatch.setattr(trt_mod, "build_engine", fake_build)
    plan = L.build_plan(cfg("fp16"), artifact(), L.Target("gpu"), ORIN, L.check_options({}))
    agx, nano = "NVIDIA Jetson AGX Orin Developer Kit", "NVIDIA Jetson Orin Nano Developer Kit"
    _, first, _ = trt_mod.prepare_engine(plan, artifact(), tmp_path, "10.3.0.30", board=agx)
    _, again, _ = trt_mod.prepare_engine(plan, artifact(), tmp_path, "10.3.0.30", board=agx)
    _, other, _ = trt_mod.prepare_engine(plan, artifact(), tmp_path, "10.3.0.30", board=nano)
    assert (first["cache"], again["cache"], other["cache"]) == ("built", "hit", "built")
    assert "foreign engine" in other["cache_reason"] and "Orin Nano" in other["cache_reason"]
    assert len(builds) == 2 and builds[0] != builds[1]  # one timing cache per board too


def test_one_tensorrt_logger_per_process_and_build_logs_captured_per_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """trt_logger against a stand-in for tensorrt's ILogger surface. TensorRT keeps the first logger a process
    gives it (later builders/runtimes log to that one), so edgebench makes exactly one and captures each build's
    INFO+ lines from it (the DLA/GPU layer listing parse_build_log reads is INFO); VERBOSE is dropped."""
    import enum
    import sys
    import types

    from edgebench.backends import trt as trt_mod

    class ILogger:
        Severity = enum.Enum("Severity", "INTERNAL_ERROR ERROR WARNING INFO VERBOSE")

        def __init__(self) -> None:
            pass

    monkeypatch.setitem(sys.modules, "tensorrt", types.SimpleNamespace(ILogger=ILogger))
    monkeypatch.setattr(trt_mod, "_LOGGER", None)
    logger = trt_mod.trt_logger()
    assert trt_mod.trt_logger() is logger  # builders, runtimes and sessions all get this one
    sev = ILogger.Severity
    logger.log(sev.INFO, "before any build")  # type: ignore[arg-type]
    with trt_mod.capture_build_log() as first:
        for severity, msg in ((sev.VERBOSE, "Tactic: 0x1 Time: 0.1"), (sev.INFO, "[DlaLayer] {ForeignNode[a...b]}"),
                              (sev.WARNING, "w"), (sev.ERROR, "e")):
            logger.log(severity, msg)  # type: ignore[arg-type]
    logger.log(sev.INFO, "between builds")  # type: ignore[arg-type]
    with trt_mod.capture_build_log() as second:
        trt_mod.trt_logger().log(sev.INFO, "[GpuLayer] SOFTMAX: prob")  # type: ignore[arg-type]
    assert first == ["[DlaLayer] {ForeignNode[a...b]}", "w", "e"]
    assert second == ["[GpuLayer] SOFTMAX: prob"]  # the second build's log is not lost to the first's list
    assert logger.sink is None  # type: ignore[attr-defined]


def test_calibrator_buffer_and_stream_are_freed_after_the_build_even_when_it_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare_engine owns the calibrator's device buffer + stream (StagingBuffer) and frees both once the build
    is over, built or failed. CUDA and the TensorRT calls are stood in for; the ownership logic is under test."""
    from edgebench.backends import cuda_buffers
    from edgebench.backends import trt as trt_mod

    calls: list[tuple] = []

    class Runtime:
        name = "fake"

        def malloc(self, nbytes: int) -> int:
            calls.append(("malloc", nbytes))
            return 0x1000

        def free(self, ptr: int) -> None:
            calls.append(("free", ptr))

        def stream_create(self) -> str:
            calls.append(("stream_create",))
            return "s1"

        def stream_destroy(self, stream: str) -> None:
            calls.append(("stream_destroy", stream))

        def htod_async(self, ptr: int, host: np.ndarray, stream: str) -> None:
            calls.append(("htod", ptr, host.nbytes, stream))

        def synchronize(self, stream: str) -> None:
            calls.append(("sync", stream))

        def device_identity(self) -> tuple[str, str]:
            return "Orin", "8.7"

    runtime = Runtime()
    monkeypatch.setattr(cuda_buffers, "open_runtime", lambda: runtime)

    def fake_make_calibrator(plan, model, root, cuda):  # type: ignore[no-untyped-def]
        staging = cuda_buffers.StagingBuffer(cuda, 8 * 3 * 224 * 224 * 4)
        return object(), staging

    outcome = {"fail": True}

    def fake_build(plan: L.BuildPlan, timing_cache: Path, calibrator: object) -> dict:
        assert calls[-1] == ("stream_create",) and calibrator is not None  # the buffer lives during the build
        if outcome["fail"]:
            raise BackendError("TensorRT build failed")
        return {"engine": b"engine", "inspector_json": '{"Layers": []}', "log": [], "build_s": 1.0}

    monkeypatch.setattr(trt_mod, "make_calibrator", fake_make_calibrator)
    monkeypatch.setattr(trt_mod, "build_engine", fake_build)
    record = {"source": "synthetic", "seed": 0, "count": 16, "sha256": "c" * 64}
    model = fp32_source(tmp_path, "N", calibration=record)
    plan = L.build_plan(cfg("int8"), model, L.Target("gpu"), ORIN, L.check_options({"int8_calibration": "entropy"}))
    with pytest.raises(BackendError, match="build failed"):
        trt_mod.prepare_engine(plan, model, tmp_path, "10.3.0.30")
    assert calls[-2:] == [("free", 0x1000), ("stream_destroy", "s1")]
    calls.clear()
    outcome["fail"] = False
    _, facts, _ = trt_mod.prepare_engine(plan, model, tmp_path, "10.3.0.30")
    assert facts["cache"] == "built" and calls[-2:] == [("free", 0x1000), ("stream_destroy", "s1")]


def test_staging_buffer_uploads_then_frees_once() -> None:
    from edgebench.backends.cuda_buffers import StagingBuffer

    log: list[str] = []
    cuda = SimpleNamespace(malloc=lambda n: log.append(f"malloc {n}") or 7, free=lambda p: log.append(f"free {p}"),
                           stream_create=lambda: log.append("stream") or "s",
                           stream_destroy=lambda s: log.append(f"destroy {s}"),
                           htod_async=lambda p, h, s: log.append(f"htod {p} {h.nbytes}"),
                           synchronize=lambda s: log.append(f"sync {s}"))
    buf = StagingBuffer(cuda, 64)  # type: ignore[arg-type]
    assert buf.upload(np.zeros(16, np.float32)) == 7
    with pytest.raises(BackendError, match="holds 64 bytes, got 128"):
        buf.upload(np.zeros(32, np.float32))
    buf.close()
    buf.close()
    assert log == ["malloc 64", "stream", "htod 7 64", "sync s", "free 7", "destroy s"]
    with pytest.raises(BackendError, match="used after close"):
        buf.upload(np.zeros(4, np.float32))


def test_row_fields_from_engine_facts_fit_the_results_schema() -> None:
    from edgebench.backends.trt import engine_row_info
    from edgebench.results.schema import COLUMN_NAMES

    facts = {
        "gpu": {"cache": "hit", "cache_reason": "hit: cached engine matches every key field", "build_s": 40.0,
                "gpu_fallback_layers": None, "evidence": {"tensor_core_evidence": "engine: 3/4 named tactics"}},
        "dla0": {"cache": "built", "cache_reason": "rebuild: foreign engine", "build_s": 95.5,
                 "gpu_fallback_layers": ["SOFTMAX: prob", "SHUFFLE: s"], "evidence": None},
    }
    row = engine_row_info(facts)["row_fields"]
    assert set(row) <= set(COLUMN_NAMES)
    assert row["dla_fallback_layers"] == "dla0: 2 GPU layers [SOFTMAX: prob, SHUFFLE: s]"
    assert row["engine_build_s"] == 95.5  # only the engine built now; the cache hit cost nothing
    assert row["engine_cache"] == "dla0: rebuild: foreign engine; gpu: hit: cached engine matches every key field"
    assert row["tensor_core_evidence"] == "gpu engine: 3/4 named tactics"
    hits = engine_row_info({"gpu": {**facts["gpu"]}})["row_fields"]
    assert hits["engine_build_s"] is None and hits["dla_fallback_layers"] is None


def test_fallback_list_is_capped_in_the_row_but_counts_every_layer() -> None:
    from edgebench.backends.trt import FALLBACK_NAMES_MAX, fallback_text

    layers = [f"L{i}" for i in range(FALLBACK_NAMES_MAX + 3)]
    text = fallback_text("dla1", layers)
    assert text.startswith(f"dla1: {FALLBACK_NAMES_MAX + 3} GPU layers [L0, L1,") and text.endswith(", ... (+3)]")
    assert f"L{FALLBACK_NAMES_MAX}" not in text
    assert fallback_text("dla0", []) == "dla0: 0 GPU layers"


def test_fallback_column_counts_gpu_layers_and_dla_subgraphs_apart() -> None:
    """The builder log lists DLA subgraphs ({ForeignNode[first...last]}, one per loadable) but single GPU layers
    with a type prefix: the row says which is which instead of adding them up as 'layers'."""
    from edgebench.backends.trt import engine_row_info

    vgg = R.parse_build_log((FIXTURES / "buildlog_trtexec_vgg19_dla_fallback.txt").read_text().splitlines())
    assert vgg is not None
    plan = L.build_plan(cfg("fp16", ("dla0",)), artifact(), L.Target("dla", 0), ORIN,
                        L.check_options({"gpu_fallback": True}))
    facts = {**R.placement_fields(plan, vgg), "cache": "built", "cache_reason": "built", "build_s": 1.0}
    row = engine_row_info({"dla0": facts})["row_fields"]
    assert row["dla_fallback_layers"] == ("dla0: 3 GPU layers [SHUFFLE: shuffle_between_pool5_and_fc6, "
                                          "CONVOLUTION: fc6, SOFTMAX: prob]; 2 DLA subgraphs")
    assert [R.gpu_layer_type(x) for x in vgg.gpu] == ["SHUFFLE", "CONVOLUTION", "SOFTMAX"]
    assert R.gpu_layer_type("{ForeignNode[a...b]}") is None
    one = engine_row_info({"dla1": {**facts, "gpu_fallback_layers": ["REFORMAT: in_copy", "SOFTMAX: prob"],
                                    "dla_layers": ["{ForeignNode[a...b]}"]}})["row_fields"]
    assert one["dla_fallback_layers"] == ("dla1: 2 GPU layers (1 of them REFORMAT) [REFORMAT: in_copy, SOFTMAX: prob]; "
                                          "1 DLA subgraph")


def test_cuda_graph_is_instantiated_with_the_call_cuda_11_and_12_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda-python 11.x's cudaGraphInstantiate takes (graph, bufferSize) and returns 4 values; 12.x's takes
    (graph, flags) and returns 2. cudaGraphInstantiateWithFlags(graph, flags) -> (err, exec) is the same in both
    (CUDA 11.4+, so JetPack 5). A stand-in with the 11.x surface: capture_graph must work against it."""
    from edgebench.backends import cuda_buffers

    calls: list[tuple] = []
    ok = SimpleNamespace(value=0, name="cudaSuccess")

    class Cudart11:
        cudaStreamCaptureMode = SimpleNamespace(cudaStreamCaptureModeThreadLocal=1)

        def cudaStreamBeginCapture(self, stream, mode):  # type: ignore[no-untyped-def]
            calls.append(("begin", stream, mode))
            return (ok,)

        def cudaStreamEndCapture(self, stream):  # type: ignore[no-untyped-def]
            return (ok, "graph")

        def cudaGraphInstantiate(self, graph, buffer_size):  # type: ignore[no-untyped-def]
            calls.append(("instantiate", graph, buffer_size))
            return (ok, "exec", None, b"")  # CUDA 11: exec, error node, log buffer

        def cudaGraphInstantiateWithFlags(self, graph, flags):  # type: ignore[no-untyped-def]
            calls.append(("with_flags", graph, flags))
            return (ok, "exec")

        def cudaGraphLaunch(self, graph_exec, stream):  # type: ignore[no-untyped-def]
            calls.append(("launch", graph_exec, stream))
            return (ok,)

    monkeypatch.setattr(cuda_buffers, "import_cudart", Cudart11)
    rt = cuda_buffers.CudartRuntime()
    graph = rt.capture_graph("s", lambda: calls.append(("enqueue",)))
    rt.launch_graph(graph, "s")
    assert calls == [("begin", "s", 1), ("enqueue",), ("with_flags", "graph", 0), ("launch", "exec", "s")]


# --------------------------------------------------------------------------- calibration batches

def test_calibration_feed_batches_the_recorded_set(tmp_path: Path) -> None:
    from edgebench.models.calibration import calibration_batches

    data, record = calibration_batches("synthetic", (3, 8, 8), 20, seed=3)
    again = C.recorded_calibration(record, (3, 8, 8))
    assert np.array_equal(again, data)
    feed = C.CalibrationFeed(again, 8, tmp_path / "calib" / "calibration.cache")
    served = []
    while (b := feed.next_batch()) is not None:
        served.append(b)
    assert [b.shape for b in served] == [(8, 3, 8, 8), (8, 3, 8, 8)]  # 20 samples: 2 full batches, 4 left out
    assert np.array_equal(served[0], data[:8]) and np.array_equal(served[1], data[8:16])
    assert all(b.flags["C_CONTIGUOUS"] and b.dtype == np.float32 for b in served)
    assert feed.next_batch() is None
    assert feed.read_cache() is None
    feed.write_cache(memoryview(b"TRT-8601-EntropyCalibration2\ninput: 3c010a14\n").tobytes())
    assert feed.read_cache() == b"TRT-8601-EntropyCalibration2\ninput: 3c010a14\n"


def test_calibration_data_must_match_its_record() -> None:
    from edgebench.models.calibration import calibration_batches

    _, record = calibration_batches("synthetic", (3, 8, 8), 4, seed=0)
    with pytest.raises(ModelError, match="changed since it was recorded"):
        C.recorded_calibration({**record, "seed": 1, "sha256": record["sha256"]}, (3, 8, 8))
    with pytest.raises(ModelError, match="fewer than one batch of 8"):
        C.calibration_chunks(np.zeros((5, 3), dtype=np.float32), 8)


# --------------------------------------------------------------------------- Jetson / DLA detection

@pytest.mark.parametrize("tree, model, cores", [
    ("sysfs_xavier", "NVIDIA Jetson Xavier NX Developer Kit", 2),
    ("sysfs_nano", "NVIDIA Jetson Orin Nano Developer Kit", 0),
    ("sysfs_l4t35", "NVIDIA Jetson AGX Orin Developer Kit", 2),
])
def test_dla_cores_and_board_from_device_tree(tree: str, model: str, cores: int) -> None:
    root = FIXTURES / tree
    assert L.jetson_model(root) == model
    assert L.count_dla_cores(root) == cores


@pytest.mark.parametrize("root, cores", [
    (FIXTURES / "sysfs_xavier", 2),  # /sys/bus/platform/devices/<addr>.nvdlaN
    (FIXTURES / "sysfs_l4t35", 2),  # /dev/nvhost-nvdlaN
    (FIXTURES / "sysfs_nano", 0),
    (FIXTURES.parent / "jetson_root" / "orin_agx_jp6", 2),  # L4T R36: .../bus@0/<addr>.host1x/<addr>.nvdlaN
    (FIXTURES.parent / "jetson_root" / "xavier_nx_jp512", 2),
    (FIXTURES.parent / "jetson_root" / "nano_jp461", 0),
])
def test_trt_backend_and_system_json_count_the_same_dla_cores(root: Path, cores: int) -> None:
    """One rule: the count that gates DLA rows is the one doctor / system.json report, on every layout."""
    from edgebench.device.jetson import dla_count

    assert L.count_dla_cores(root) == cores
    assert dla_count(root)["count"] == cores


def test_not_a_jetson(tmp_path: Path) -> None:
    assert L.jetson_model(tmp_path) is None
    (tmp_path / "proc/device-tree").mkdir(parents=True)
    (tmp_path / "proc/device-tree/compatible").write_bytes(b"raspberrypi,4-model-b\0brcm,bcm2711\0")
    assert L.jetson_model(tmp_path) is None


# --------------------------------------------------------------------------- device buffers (no GPU here)

def test_cuda_error_check_and_runtime_choice() -> None:
    from edgebench.backends import cuda_buffers as cb

    assert cb.check((0, 1234), "cudaMalloc") == 1234
    assert cb.check((0,), "cudaFree") is None
    err = SimpleNamespace(value=100, name="cudaErrorNoDevice")
    with pytest.raises(BackendError, match=r"CUDA cudaMalloc failed: cudaErrorNoDevice \(100\)"):
        cb.check((err, 0), "cudaMalloc")

    def no_cuda_python() -> cb.CudaRuntime:
        raise ImportError("No module named 'cuda'", name="cuda")

    def no_gpu_torch() -> cb.CudaRuntime:
        raise BackendError("torch is installed but torch.cuda.is_available() is False")

    with pytest.raises(BackendError) as info:
        cb.open_runtime((("cuda-python", no_cuda_python), ("torch", no_gpu_torch)))
    assert "cuda-python: not installed" in str(info.value) and "torch: torch is installed but" in str(info.value)
    picked = cb.open_runtime((("cuda-python", no_cuda_python), ("fake", lambda: SimpleNamespace(name="fake"))))
    assert picked.name == "fake"  # type: ignore[attr-defined]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["cuda-python", "torch"])
def test_cuda_runtime_roundtrip_and_graph_on_a_gpu(name: str) -> None:
    """The device-buffer layer TrtSession uses, for real: copies, a private stream, a captured graph."""
    import re

    from edgebench.backends import cuda_buffers as cb

    try:
        rt = dict(cb.RUNTIMES)[name]()
    except ImportError as exc:
        pytest.skip(f"{name} is not installed ({exc.msg})")
    except BackendError as exc:
        pytest.skip(f"{name}: {exc}")
    try:
        device, cc = rt.device_identity()
    except BackendError as exc:
        pytest.skip(f"{name}: no usable CUDA device ({exc})")
    assert device and re.fullmatch(r"\d+\.\d+", cc)
    x = np.arange(4096, dtype=np.float32) * 0.5
    zeros = np.zeros_like(x)
    a, b = rt.malloc(x.nbytes), rt.malloc(x.nbytes)
    stream = rt.stream_create()
    assert rt.stream_handle(stream) != 0  # a stream of its own, not the legacy default stream
    rt.htod_async(a, x, stream)
    rt.htod_async(b, zeros, stream)
    rt.synchronize(stream)

    def device_copy() -> None:  # b <- a on `stream`, the kind of work an engine enqueues
        if name == "cuda-python":
            kind = rt.rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice  # type: ignore[attr-defined]
            cb.check(rt.rt.cudaMemcpyAsync(b, a, x.nbytes, kind, stream), "cudaMemcpyAsync(DtoD)")  # type: ignore[attr-defined]
        else:
            rt._blocks[b][: x.nbytes].copy_(rt._blocks[a][: x.nbytes])  # type: ignore[attr-defined]

    graph = rt.capture_graph(stream, device_copy)
    out = np.full_like(x, -1.0)
    rt.dtoh_async(out, b, stream)
    rt.synchronize(stream)
    assert np.array_equal(out, zeros)  # capturing records the copy, it does not run it
    rt.launch_graph(graph, stream)
    rt.synchronize(stream)
    rt.dtoh_async(out, b, stream)
    rt.synchronize(stream)
    assert np.array_equal(out, x)
    rt.destroy_graph(graph)
    rt.free(a)
    rt.free(b)
    rt.stream_destroy(stream)
