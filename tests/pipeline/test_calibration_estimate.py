"""Issue 37: an int8 row estimated at 7-36 s took 2 min 06 s; the estimate now adds its calibration + quantization,
from the artifact cache's int8 sidecars where they say, else from the stated per-sample x model-size rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from estimate_rows import cfg, earlier_run

from edgebench.commands.progress import describe_estimate
from edgebench.config.profile import load_profile
from edgebench.config.run_config import RunConfig
from edgebench.pipeline.calibration_estimate import (
    DEFAULT_QUANTIZE_S,
    QUANTIZE_FIXED_S,
    S_PER_SAMPLE_MACT,
    S_PER_WEIGHT_MB,
    CalibrationBook,
    activations_m,
)
from edgebench.pipeline.estimate import DEFAULT_SETUP_S, estimate
from edgebench.pipeline.plan import PlannedRun


def cached_int8(cache: Path, model: str, samples: int, quantize_s: float, fp32_bytes: int) -> None:
    """An int8 artifact's sidecar as models/precision.py writes it, beside its fp32 ONNX of `fp32_bytes`."""
    fp32 = cache / "onnx" / f"k-{model}" / f"{model}.onnx"
    fp32.parent.mkdir(parents=True, exist_ok=True)
    fp32.write_bytes(b"\0" * fp32_bytes)
    (fp32.parent / f"{model}.onnx.json").write_text(json.dumps({"kind": "onnx", "model": model}))
    side = cache / "int8" / f"k-{model}-{samples}" / f"{model}.int8.onnx.json"
    side.parent.mkdir(parents=True, exist_ok=True)
    side.write_text(json.dumps({"kind": "int8", "model": model, "quantize_s": quantize_s,
                                "calibration": {"count": samples, "source": "synthetic"},
                                "source_fp32": {"path": str(fp32)}}))


@pytest.fixture()
def profile():
    return load_profile("smoke").with_overrides("calibration", samples=32)


def int8(model: str = "resnet18", **kw) -> RunConfig:
    return cfg(1, precision="int8", model=model, **kw)


def conv_onnx(path: Path, channels: int = 8, side: int = 32) -> float:
    """A Conv + Relu graph [1, 3, side, side] -> [1, channels, side, side]; returns its activations (M values)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.zeros((channels, 3, 3, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, side, side])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, side, side])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return 2 * channels * side * side / 1e6  # c and y


def test_a_first_int8_row_adds_the_rule_when_nothing_was_measured(tmp_path, profile):
    cache = tmp_path / "cache"
    fp32 = cache / "onnx" / "k" / "big.onnx"
    fp32.parent.mkdir(parents=True)
    acts = conv_onnx(fp32, channels=64, side=224)
    assert activations_m(str(fp32)) == pytest.approx(acts)
    (fp32.parent / "big.onnx.json").write_text(json.dumps({"model": "big"}))
    rows = [PlannedRun(int8("big"), None), PlannedRun(int8("big", placements=("cpu", "cpu")), None),
            PlannedRun(int8("never_exported"), None), PlannedRun(cfg(1, model="big"), None)]
    est = estimate(rows, profile, tmp_path / "runs", cache_root=cache)
    big, big2, unknown, fp32_row = est.rows
    rule = QUANTIZE_FIXED_S + 32 * acts * S_PER_SAMPLE_MACT + fp32.stat().st_size / 1e6 * S_PER_WEIGHT_MB
    assert big.calibration.basis == "rule" and big.calibration_s == pytest.approx(rule) and rule > 5
    assert big.setup_s == pytest.approx(DEFAULT_SETUP_S + rule)
    assert big2.calibration is None and big2.setup_s == pytest.approx(DEFAULT_SETUP_S)  # the file is built once
    assert unknown.calibration.basis == "default" and unknown.calibration_s == DEFAULT_QUANTIZE_S
    assert fp32_row.calibration is None
    line = describe_estimate(est).splitlines()[0]
    assert line.endswith("including int8 calibration + quantization about 15 s (big: by the per-sample x "
                         "activations rule; never_exported: no file to size it: a mid-size CNN's)")


def test_the_cache_measured_it_reused_or_scaled(tmp_path, profile):
    cache = tmp_path / "cache"
    cached_int8(cache, "resnet18", 32, 6.6, 46_751_834)  # measured here: 6.6 s for 32 samples of 47 MB
    cached_int8(cache, "rapid", 8, 30.0, 2_000_000)
    book = CalibrationBook(cache)
    assert book.estimate("resnet18", 32).seconds == 0.0 and book.estimate("resnet18", 32).basis == "cached"
    assert book.estimate("rapid", 32).seconds == pytest.approx(120.0)  # 30 s for 8 samples, 32 asked
    assert book.estimate("rapid", 32).basis == "measured"
    onnx_file = tmp_path / "user.onnx"
    acts = conv_onnx(onnx_file)
    own = CalibrationBook(cache, {"user": str(onnx_file)}).estimate("user", 16)
    assert own.basis == "rule"
    assert own.seconds == pytest.approx(QUANTIZE_FIXED_S + 16 * acts * S_PER_SAMPLE_MACT
                                        + onnx_file.stat().st_size / 1e6 * S_PER_WEIGHT_MB)
    est = estimate([PlannedRun(int8("rapid"), None)], profile, tmp_path / "runs", cache_root=cache)
    assert est.rows[0].setup_s == pytest.approx(DEFAULT_SETUP_S + 120.0)
    assert "about 2 min 00 s (rapid: from an earlier build of it)" in describe_estimate(est)


def test_an_earlier_int8_row_of_the_model_already_timed_it(tmp_path, profile):
    runs = tmp_path / "runs"
    earlier_run(runs, "20260101-000000-host", [(int8(), 2.0, 1000, 40.0)])  # its set-up held the build
    est = estimate([PlannedRun(int8(), None)], profile, runs, cache_root=tmp_path / "empty-cache")
    assert est.rows[0].calibration is None and est.rows[0].setup_s == pytest.approx(40.0)
    assert "int8 calibration" not in describe_estimate(est)
