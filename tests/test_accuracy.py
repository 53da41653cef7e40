"""Accuracy against the FP32 reference: metrics on known arrays."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.accuracy import accuracy_inputs, compare


def test_identical_outputs_agree_fully():
    ref = np.random.default_rng(0).standard_normal((8, 10)).astype(np.float32)
    a = compare(ref.copy(), ref)
    assert a.top1_agreement_pct == 100.0 and a.max_abs_err == 0.0 and a.cosine_min == pytest.approx(1.0)


def test_known_disagreement_is_measured():
    ref = np.zeros((4, 3), dtype=np.float32)
    ref[:, 0] = 1.0  # every sample: class 0
    out = ref.copy()
    out[1] = [0.0, 2.0, 0.0]  # sample 1 flips to class 1 (orthogonal: cosine 0)
    out[2, 0] = 1.5  # sample 2 keeps class 0, error 0.5
    a = compare(out, ref)
    assert a.top1_agreement_pct == 75.0
    assert a.max_abs_err == pytest.approx(2.0)
    assert a.cosine_min == pytest.approx(0.0, abs=1e-9)
    assert a.samples == 4


def test_shape_mismatch_is_an_error_and_inputs_are_seeded():
    with pytest.raises(ValueError, match="differs from the FP32 reference"):
        compare(np.zeros((2, 10)), np.zeros((2, 11)))
    x = accuracy_inputs((3, 4, 4), 5, seed=1)
    assert x.shape == (5, 3, 4, 4) and x.dtype == np.float32
    assert np.array_equal(x, accuracy_inputs((3, 4, 4), 5, seed=1))
    assert not np.array_equal(x, accuracy_inputs((3, 4, 4), 5, seed=2))
