"""Issue 37: a cosine of 0.0 from a reference that is 99.7% below 1e-6 (PP-OCRv4 det, int8) is flagged, while a
mostly-zero map with real peaks keeps its cosine, right or wrong, and normal outputs are never flagged."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.evaluation.accuracy import compare_outputs, cosine_empty_reason, row_fields
from edgebench.evaluation.near_zero import near_zero_dominated, output_step

INT8_STEP = 1 / 255  # the scale of a sigmoid output quantized over [0, 1]
SAMPLES, SIDE = 4, 64  # 4096 values per sample; 12 of them (0.3%) live, as in PP-OCRv4 det's map


def quantized(x: np.ndarray, step: float = INT8_STEP) -> np.ndarray:
    """What an int8 QDQ output returns: the nearest multiple of its scale."""
    return (np.round(x / step) * step).astype(np.float32)


def probability_map(peak: float, seed: int = 0, where: int = 0) -> np.ndarray:
    """[N, 1, 64, 64]: 99.7% of values 1e-8 (sigmoid of a large negative logit), 12 per sample at `peak`..peak/2."""
    rng = np.random.default_rng(seed)
    out = np.full((SAMPLES, 1, SIDE, SIDE), 1e-8, np.float32)
    for n in range(SAMPLES):
        flat = out[n].reshape(-1)
        spots = rng.choice(SIDE * SIDE // 2, 12, replace=False) + where * (SIDE * SIDE // 2)
        flat[spots] = rng.uniform(peak / 2, peak, 12)
    return out


def test_the_ppocr_case_near_zero_values_lost_to_the_int8_step_get_no_cosine_and_say_why():
    ref = probability_map(peak=1e-3)  # the "probability" of text in noise: below half a 1/255 step
    got = quantized(ref)
    assert not got.any()  # int8 returns zeros: today's cosine is 0.0
    (heat,) = compare_outputs({"maps": got}, {"maps": ref})
    assert heat.cosine_min is None and heat.samples == SAMPLES
    assert heat.no_cosine.startswith("FP32 dominated by near-zero values (99.71% of them < 1e-06, peak 0.000984)")
    assert "the row's output is all 0" in heat.no_cosine
    assert heat.max_abs_err == pytest.approx(float(ref.max())) and heat.rel_err == pytest.approx(1.0)
    fields = row_fields([heat])
    assert fields["accuracy_cosine_min"] is None and fields["accuracy_max_abs_err"] == pytest.approx(float(ref.max()))
    assert "near-zero values" in cosine_empty_reason(fields)
    # the row's output not all 0 (int8 noise one step high elsewhere): the values are still below its half step
    noisy = got.copy()
    noisy[:, 0, 0, :3] = INT8_STEP
    (heat,) = compare_outputs({"maps": noisy}, {"maps": ref})
    assert heat.cosine_min is None and "below half the row's output step (0.00392)" in heat.no_cosine


def test_a_mostly_zero_map_with_real_peaks_keeps_its_cosine_right_or_wrong():
    ref = probability_map(peak=0.9)
    right = quantized(ref)
    (found,) = compare_outputs({"maps": right}, {"maps": ref})
    assert found.no_cosine == "" and found.cosine_min > 0.999
    wrong = quantized(probability_map(peak=0.9, seed=1, where=1))  # int8 puts its peaks elsewhere: a real drop
    (missed,) = compare_outputs({"maps": wrong}, {"maps": ref})
    assert missed.no_cosine == "" and missed.cosine_min == pytest.approx(0.0, abs=1e-6)
    assert row_fields([missed])["accuracy_cosine_min"] == pytest.approx(0.0, abs=1e-6)
    half = right.copy()
    half[:, :, : SIDE // 4] = 0  # int8 loses the peaks of the top quarter of the map
    (partly,) = compare_outputs({"maps": half}, {"maps": ref})
    assert partly.no_cosine == "" and partly.cosine_min < 0.99
    # a row that returns zeros where FP32 has real peaks: no cosine (zeros have no direction), the loss in full
    (zeros,) = compare_outputs({"maps": np.zeros_like(ref)}, {"maps": ref})
    assert zeros.cosine_min is None and zeros.rel_err == pytest.approx(1.0) and zeros.max_abs_err > 0.85
    assert row_fields([zeros])["accuracy_max_abs_err"] > 0.85


def test_an_fp32_or_fp16_row_of_a_near_zero_map_keeps_its_cosine():
    ref = probability_map(peak=1e-3)
    fp16 = ref.astype(np.float16).astype(np.float32)  # fp16's step near 1e-3 is ~1e-6: it represents them
    (heat,) = compare_outputs({"maps": fp16}, {"maps": ref})
    assert heat.no_cosine == "" and heat.cosine_min > 0.9999


@pytest.mark.parametrize("kind", ["logits", "relu_features", "embedding", "confident_softmax"])
def test_normal_outputs_are_never_flagged_at_int8(kind: str):
    rng = np.random.default_rng(3)
    if kind == "logits":
        ref = rng.standard_normal((8, 1000)).astype(np.float32)
    elif kind == "relu_features":
        ref = np.maximum(rng.standard_normal((8, 64, 14, 14)), 0).astype(np.float32)  # half of it exactly 0
    elif kind == "embedding":
        ref = rng.standard_normal((8, 16, 32)).astype(np.float32) * 1e-3
    else:  # fewer than 1% of 1000 classes above 1e-6: dominated, but the row represents its peak
        ref = np.full((8, 1000), 1e-9, np.float32)
        ref[:, 7] = 0.99
    step = float(np.abs(ref).max()) / 127
    (one,) = compare_outputs({"y": quantized(ref, step)}, {"y": ref})
    assert one.no_cosine == "" and one.cosine_min is not None and one.cosine_min > 0.99


def test_output_step_is_the_finest_level_spacing():
    assert output_step(np.array([0.0, 2 * INT8_STEP, 5 * INT8_STEP])) == pytest.approx(2 * INT8_STEP)
    assert output_step(np.array([3.0, 3.5, 5.0])) == pytest.approx(0.5)
    assert output_step(np.array([0.0, 0.0])) is None and output_step(np.array([0.25])) is None
    assert near_zero_dominated(np.zeros(10), np.ones(10)) is None  # dense: a zero row is a real drop, cosine kept
