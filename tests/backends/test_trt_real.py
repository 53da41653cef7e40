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

from edgebench.backends import trt_logic, trt_reports

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

from edgebench.backends.base import Placement  # noqa: E402
from edgebench.backends.trt import TrtBackend  # noqa: E402
from edgebench.config.run_config import RunConfig  # noqa: E402
from edgebench.evaluation.accuracy import compare, reference_outputs  # noqa: E402
from edgebench.models.artifacts import Artifacts  # noqa: E402
from edgebench.models.inputs import make_input  # noqa: E402
from edgebench.models.spec import load_model_spec  # noqa: E402
from edgebench.pipeline.model_cache import ModelCache  # noqa: E402

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
    x = make_input((batch, *spec.first_input.shape), "float32", seed=7)
    session = backend.open(prepared, Placement(device=placement, instance=0))
    try:
        session.feed({spec.first_input.name: x})
        session.infer()
        out = next(iter(session.outputs().values()))
        session.infer()  # a second run on the same inputs gives the same outputs
        again = next(iter(session.outputs().values()))
        assert np.array_equal(out, again)
    finally:
        session.close()
    ref = reference_outputs(str(models.fp32(spec).path), spec.first_input.name, x)
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

    from edgebench.backends.trt import trt_logger

    builder = trt.Builder(trt_logger())
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
    assert all(x.startswith("{ForeignNode[") for x in engine["dla_layers"]), engine  # subgraphs, not layers
    assert all(trt_reports.gpu_layer_type(x) for x in engine["gpu_fallback_layers"]), engine  # 'TYPE: name'
    text = info["row_fields"]["dla_fallback_layers"]
    assert text.startswith(f"dla0: {len(engine['gpu_fallback_layers'])} GPU layer")
    assert text.endswith(f"{len(engine['dla_layers'])} DLA subgraph" + ("" if len(engine["dla_layers"]) == 1 else "s"))
    if precision == "int8" and trt_logic.parse_version(ENV.trt_version or "")[:1] < (10,):
        assert engine["strategy"] == "int8-entropy"  # auto: no explicit Q/DQ INT8 on DLA below TensorRT 10


def test_every_build_in_a_process_gets_its_own_log(models: ModelCache) -> None:
    """One TensorRT logger per process: a second engine built after the first must still have a captured log
    (with a logger per build, TensorRT kept logging to the first one and later logs came back empty)."""
    from edgebench.backends import trt as trt_mod

    spec = load_model_spec("tiny_cnn")
    model = models.variant(spec, "fp16")
    logs = []
    for batch in (1, 2):
        cfg = RunConfig(model="tiny_cnn", backend="trt", precision="fp16", batch=batch, placements=("gpu",))
        plan = trt_logic.build_plan(cfg, model, trt_logic.Target("gpu"), ENV, trt_logic.check_options({}))
        built = trt_mod.build_engine(plan, models.artifacts.root / "timing-test.cache", None)
        logs.append(built["log"])
    assert logs[0] and logs[1], [len(x) for x in logs]
    assert trt_mod.trt_logger() is trt_mod.trt_logger()


def test_entropy_calibration_of_a_fixed_batch_onnx(models: ModelCache, tmp_path: Path) -> None:
    """A fixed-batch ONNX is calibrated at its own batch (the calibration profile cannot take 8 samples)."""
    from dataclasses import replace

    import onnx

    spec = load_model_spec("tiny_cnn")
    int8 = models.variant(spec, "int8")
    src = onnx.load(str(models.fp32(spec).path))
    src.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2  # fix the batch axis at 2
    for out in src.graph.output:
        out.type.tensor_type.shape.dim[0].dim_value = 2
    fixed = tmp_path / "tiny_cnn_b2.onnx"
    onnx.save(src, str(fixed))
    side = {**int8.sidecar, "source_fp32": {"path": str(fixed), "sha256": "b2" * 32}}
    model = replace(int8, sidecar=side)
    cfg = RunConfig(model="tiny_cnn", backend="trt", precision="int8", batch=2, placements=("gpu",),
                    options=(("int8_calibration", "entropy"),))
    prepared = TrtBackend().prepare(cfg, model, models.artifacts)
    assert prepared.info["engines"]["gpu"]["strategy"] == "int8-entropy"
    plan = trt_logic.build_plan(cfg, model, trt_logic.Target("gpu"), ENV, trt_logic.check_options(dict(cfg.options)))
    assert plan.calibration_batch == 2
