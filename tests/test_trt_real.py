"""The trt backend for real: build, cache, run and compare with ONNX Runtime CPU. Runs wherever TensorRT
(and cuda-python or a CUDA torch) exists — a Jetson, or an x86 GPU box with TensorRT; skipped elsewhere.

Tolerances against the FP32 ONNX on ONNX Runtime CPU (same inputs):
  fp32 (TF32 cleared): max |diff| <= 1e-3 * max(1, max |ref|), cosine >= 0.99999
  fp16:                cosine >= 0.999, top-1 agreement >= 90 %
  int8 (explicit QDQ / entropy calibration on synthetic data): cosine >= 0.95
Random-init weights and synthetic calibration data make INT8 the loosest; these bounds are what TensorRT
should meet, chosen before any run (none has run yet: no machine here has TensorRT).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebench.backends import trt_logic

pytestmark = pytest.mark.tensorrt


def _tensorrt_reason() -> str | None:
    try:
        import tensorrt
    except ImportError as exc:
        return f"{trt_logic.INSTALL_HINT} ({exc.msg})"
    except Exception as exc:  # noqa: BLE001 - a broken install is also "cannot run here"
        return f"tensorrt failed to import: {type(exc).__name__}: {exc}"
    return trt_logic.trt_features(tensorrt)["missing_reason"]


_REASON = _tensorrt_reason()
if _REASON is not None:
    pytest.skip(f"TensorRT tests: {_REASON}", allow_module_level=True)

from edgebench.accuracy import compare, reference_outputs  # noqa: E402
from edgebench.artifacts import Artifacts  # noqa: E402
from edgebench.backends.base import Placement, make_input  # noqa: E402
from edgebench.backends.trt import TrtBackend  # noqa: E402
from edgebench.config import RunConfig, load_model_spec  # noqa: E402
from edgebench.sweep import ModelCache  # noqa: E402

ENV = trt_logic.detect_env()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> ModelCache:
    pytest.importorskip("torch", reason="exporting the test models needs torch "
                                        "(on a Jetson: NVIDIA's JetPack torch wheel)")
    pytest.importorskip("onnxruntime", reason="the reference outputs and INT8 QDQ artifacts need onnxruntime")
    cache = Artifacts(tmp_path_factory.mktemp("trt-cache"))
    return ModelCache(artifacts=cache, calibration={"source": "synthetic", "samples": 16, "seed": 0})


def run_once(models: ModelCache, model: str, precision: str, placement: str = "gpu", batch: int = 4,
             **options: object) -> tuple[np.ndarray, np.ndarray, dict]:
    spec = load_model_spec(model)
    cfg = RunConfig(model=model, backend="trt", precision=precision, batch=batch, placements=(placement,),
                    options=tuple(sorted(options.items())))
    backend = TrtBackend()
    from edgebench.backends.base import Env

    reason = backend.supports(cfg, Env.detect())
    if reason is not None:
        pytest.skip(f"{cfg.label()}: {reason}")
    prepared = backend.prepare(cfg, models.variant(spec, precision), models.artifacts)
    x = make_input((batch, *spec.input_shape), "float32", seed=7)
    session = backend.open(prepared, Placement(device=placement, instance=0))
    try:
        session.feed({spec.input_name: x})
        session.infer()
        out = next(iter(session.outputs().values()))
        session.infer()  # a second run on the same inputs gives the same outputs
        again = next(iter(session.outputs().values()))
        assert np.array_equal(out, again)
    finally:
        session.close()
    ref = reference_outputs(str(models.fp32(spec).path), spec.input_name, x)
    return out, ref, prepared.info


def check(precision: str, out: np.ndarray, ref: np.ndarray) -> None:
    agreement = compare(out.reshape(ref.shape), ref)
    if precision == "fp32":
        assert agreement.max_abs_err <= 1e-3 * max(1.0, float(np.abs(ref).max())), agreement
        assert agreement.cosine_min >= 0.99999, agreement
    elif precision == "fp16":
        assert agreement.cosine_min >= 0.999 and agreement.top1_agreement_pct >= 90.0, agreement
    else:
        assert agreement.cosine_min >= 0.95, agreement


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_tiny_cnn_matches_onnxruntime(models: ModelCache, precision: str) -> None:
    out, ref, info = run_once(models, "tiny_cnn", precision)
    check(precision, out, ref)
    engine = info["engines"]["gpu"]
    assert engine["strategy"].startswith({"fp32": "fp32", "fp16": "fp16", "int8": "int8"}[precision])
    assert info["row_fields"]["engine_cache"].startswith("gpu: ")


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_resnet18_matches_onnxruntime(models: ModelCache, precision: str) -> None:
    out, ref, info = run_once(models, "resnet18", precision, batch=2)
    check(precision, out, ref)
    evidence = info["engines"]["gpu"]["evidence"]
    assert evidence["layers"] > 0
    if precision in ("fp16", "int8"):
        assert evidence["tensor_core_tactics"] > 0, evidence  # Volta/Ampere/Orin GPUs run these on tensor cores


def test_second_prepare_is_a_cache_hit(models: ModelCache) -> None:
    run_once(models, "tiny_cnn", "fp16", batch=2)
    _, _, info = run_once(models, "tiny_cnn", "fp16", batch=2)
    assert info["row_fields"]["engine_cache"] == "gpu: hit: cached engine matches every key field"
    assert info["row_fields"]["engine_build_s"] is None


def test_entropy_calibration_and_its_cache(models: ModelCache) -> None:
    out, ref, info = run_once(models, "tiny_cnn", "int8", int8_calibration="entropy")
    check("int8", out, ref)
    assert info["engines"]["gpu"]["strategy"] == "int8-entropy"
    tables = list(Path(models.artifacts.root, "trt_calibration").glob("*/calibration.cache"))
    assert tables and tables[0].stat().st_size > 0


def test_cuda_graph_replay_gives_the_same_outputs(models: ModelCache) -> None:
    plain, _, _ = run_once(models, "tiny_cnn", "fp16", batch=2)
    graph, _, _ = run_once(models, "tiny_cnn", "fp16", batch=2, cuda_graph=True)
    assert np.array_equal(plain, graph)


@pytest.mark.jetson
def test_dla_count_matches_tensorrt() -> None:
    if ENV.jetson_model is None:
        pytest.skip("not a Jetson: no DLA to count")
    import tensorrt as trt

    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    assert trt_logic.count_dla_cores("/") == builder.num_DLA_cores


@pytest.mark.jetson
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_dla_engine_runs_and_reports_fallbacks(models: ModelCache, precision: str) -> None:
    if not ENV.dla_cores:
        pytest.skip(f"this device ({ENV.jetson_model or 'not a Jetson'}) has no DLA")
    out, ref, info = run_once(models, "tiny_cnn", precision, placement="dla0", gpu_fallback=True)
    check(precision, out, ref)
    engine = info["engines"]["dla0"]
    assert engine["dla_layers"], engine  # the builder log listed what runs on the DLA
    assert info["row_fields"]["dla_fallback_layers"] == f"dla0: {len(engine['gpu_fallback_layers'])}"
