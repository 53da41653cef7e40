"""The interleaved overhead measurement: bootstrap interval, ABBA order, and real spawned sides (null, ORT)."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.config.run_config import RunConfig
from edgebench.models.inputs import InputDesc
from edgebench.models.model_artifact import ModelArtifact
from edgebench.runner import worker
from edgebench.runner.interleave import Interleaved, Slice, bootstrap_median_ci, run_interleaved


def test_bootstrap_interval_brackets_the_median_and_narrows_with_more_pairs():
    rng = np.random.default_rng(1)
    few = rng.normal(0.97, 0.05, 8)
    many = rng.normal(0.97, 0.05, 200)
    med, lo, hi = bootstrap_median_ci(few)
    assert med == pytest.approx(float(np.median(few)))
    assert lo <= med <= hi and lo < hi
    _, lo2, hi2 = bootstrap_median_ci(many)
    assert hi2 - lo2 < (hi - lo) / 2
    assert lo2 < 0.97 < hi2  # the true median of the distribution
    assert bootstrap_median_ci([1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        bootstrap_median_ci([])


def test_ratios_pair_each_edgebench_slice_with_its_own_bare_slice():
    res = Interleaved([Slice(0, "bare", 100, 1.0, 2), Slice(0, "edgebench", 99, 1.0, 2),
                       Slice(1, "edgebench", 50, 0.5, 2), Slice(1, "bare", 120, 1.0, 2)])
    assert res.ratios == pytest.approx([0.99, 100 / 120])


def test_preallocated_timestamp_buffers_are_touched_and_used_by_the_timed_loop():
    bufs = worker.allocate_timestamps(64)
    assert [b.dtype for b in bufs] == [np.int64, np.int64] and all(not b.any() for b in bufs)
    stop = bytearray(1)
    counts = memoryview(bytearray(8)).cast("q")
    calls = []

    def infer():
        calls.append(1)
        if len(calls) == 10:
            stop[0] = 1

    starts, ends = worker.measure(infer, memoryview(stop), counts, 0, 0, None, bufs)
    assert len(starts) >= 10 and np.shares_memory(starts, bufs[0]) and np.shares_memory(ends, bufs[1])
    assert np.all(ends >= starts) and counts[0] == len(starts)


def null_prepared(cfg: RunConfig):
    from edgebench.backends.null import NullBackend

    artifact = ModelArtifact(model="null", precision="fp32", onnx_path="unused.onnx", sha256="0" * 64,
                             inputs=(InputDesc("input", shape=(3, 4, 4)),))
    return NullBackend().prepare(cfg, artifact, cache=None)  # type: ignore[arg-type]


def test_null_sides_alternate_in_abba_order_and_both_count_inferences():
    cfg = RunConfig(model="null", backend="null", precision="fp32", batch=4, placements=("cpu",), warmup_s=0.05,
                    accuracy_samples=0)
    seen = []
    res = run_interleaved(cfg, null_prepared(cfg), "null", pairs=3, slice_s=0.1,
                          on_pair=lambda i, b, e: seen.append(i))
    assert [(s.pair, s.side) for s in res.slices] == [(0, "bare"), (0, "edgebench"), (1, "edgebench"), (1, "bare"),
                                                      (2, "bare"), (2, "edgebench")]
    assert seen == [0, 1, 2]
    assert all(s.inferences > 100 and 0.05 < s.span_s < 1.0 for s in res.slices)
    assert len(res.ratios) == 3 and all(r > 0 for r in res.ratios)


def test_ort_sides_run_the_same_model_in_two_processes(tiny_onnx, artifact_cache):
    pytest.importorskip("onnxruntime", reason="the ort backend needs onnxruntime")
    from edgebench.backends.ort import OrtBackend
    from edgebench.models.spec import load_model_spec

    spec = load_model_spec("tiny_cnn")
    artifact = ModelArtifact(model=spec.name, precision="fp32", onnx_path=str(tiny_onnx.path), sha256=tiny_onnx.sha256,
                             inputs=spec.inputs)
    cfg = RunConfig(model=spec.name, backend="ort", precision="fp32", batch=2, placements=("cpu",), warmup_s=0.1,
                    accuracy_samples=0)
    res = run_interleaved(cfg, OrtBackend().prepare(cfg, artifact, artifact_cache), "ort", pairs=2, slice_s=0.2,
                          samplers=["host"])
    assert len(res.side("bare")) == len(res.side("edgebench")) == 2
    assert all(s.inferences > 0 and s.ips > 0 for s in res.slices)


def test_a_side_that_fails_to_load_is_reported_not_hung():
    cfg = RunConfig(model="null", backend="null", precision="fp32", batch=1, placements=("cpu",), warmup_s=0.05,
                    accuracy_samples=0)
    with pytest.raises(RuntimeError, match="framework 'nope'"):
        run_interleaved(cfg, null_prepared(cfg), "nope", pairs=1, slice_s=0.1, load_timeout_s=30)
