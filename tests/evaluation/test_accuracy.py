"""Accuracy against the FP32 reference: metrics on known arrays."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.evaluation.accuracy import accuracy_inputs, compare


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


# ------------------------------------------------------------------ several named outputs

def test_every_output_is_compared_top1_only_for_class_scores():
    from edgebench.evaluation.accuracy import compare_outputs, row_fields

    rng = np.random.default_rng(1)
    ref = {"boxes": rng.standard_normal((4, 6, 4)).astype(np.float32),
           "scores": rng.standard_normal((4, 5)).astype(np.float32),
           "objectness": rng.standard_normal((4, 6)).astype(np.float32)}
    got = {k: v.copy() for k, v in ref.items()}
    got["boxes"][0, 0, 0] += 0.5
    got["scores"][2] = -got["scores"][2]  # flips sample 2's class, cosine -1
    agreements = compare_outputs(got, ref, num_classes=5)
    by = {a.name: a for a in agreements}
    assert by["boxes"].max_abs_err == pytest.approx(0.5) and by["boxes"].top1_agreement_pct is None
    assert by["scores"].top1_agreement_pct == 75.0 and by["scores"].cosine_min == pytest.approx(-1.0)
    assert by["objectness"].top1_agreement_pct is None  # [N, 6] is not a [N, num_classes] score vector
    fields = row_fields(agreements)
    assert fields["accuracy_outputs"] == "boxes;scores;objectness"
    assert fields["accuracy_cosine_min"] == pytest.approx(-1.0) and fields["accuracy_max_abs_err"] >= 0.5
    assert fields["accuracy_top1_agreement_pct"] == 75.0
    assert "scores: cos_min=-1.000000" in fields["accuracy_per_output"] and "top1=75%" in fields["accuracy_per_output"]


def test_missing_or_reshaped_outputs_are_noted_not_raised():
    from edgebench.evaluation.accuracy import compare_outputs, row_fields

    ref = {"a": np.ones((2, 3), np.float32), "b": np.ones((2, 3), np.float32)}
    agreements = compare_outputs({"a": np.ones((2, 4), np.float32)}, ref)
    assert [a.note for a in agreements] == ["shape [2, 4] differs from the FP32 reference [2, 3]",
                                            "not returned by the backend"]
    assert row_fields(agreements)["accuracy_outputs"] is None


def test_reference_runs_a_fixed_batch_1_graph_in_chunks(tmp_path):
    """Issue 9: the FP32 reference fed every accuracy sample as one batch, which a graph fixed at batch 1 rejects."""
    import onnx
    from onnx import TensorProto, helper

    from edgebench.evaluation.accuracy import reference_outputs, reference_outputs_all

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    m = helper.make_tensor_value_info("m", TensorProto.INT64, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["x", "mf"], ["y"]),
             helper.make_node("Neg", ["x"], ["z"])]
    model = helper.make_model(helper.make_graph(nodes, "fixed", [x, m], [y, z]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "fixed1.onnx"
    onnx.save(model, path)
    xs = np.arange(20, dtype=np.float32).reshape(5, 4)
    out = reference_outputs_all(str(path), {"x": xs, "m": np.full((5, 4), 2, np.int64)})
    assert list(out) == ["y", "z"] and out["y"].shape == (5, 4)
    np.testing.assert_array_equal(out["y"], xs * 2)
    np.testing.assert_array_equal(out["z"], -xs)
    with pytest.raises(Exception, match="m"):  # the one-input form on a two-input graph still fails loudly
        reference_outputs(str(path), "x", xs)


def test_per_anchor_vector_beside_per_anchor_tensor_is_not_a_class_score():
    from edgebench.evaluation.accuracy import compare_outputs

    ref = {"boxes": np.ones((2, 6, 4), np.float32), "objectness": np.eye(2, 6, dtype=np.float32),
           "logits": np.eye(2, 3, dtype=np.float32)}
    by = {a.name: a for a in compare_outputs(ref, ref)}
    assert by["objectness"].top1_agreement_pct is None and by["logits"].top1_agreement_pct == 100.0


def test_a_near_zero_fp32_reference_is_flagged_not_scored():
    """Issue 20: a detector on noise outputs ~0; a cosine against ~0 means nothing and was reported as if it did."""
    import numpy as np

    from edgebench.evaluation.accuracy import NEAR_ZERO_REF, compare_outputs, row_fields

    ref = {"heat": np.full((4, 6), NEAR_ZERO_REF / 10, np.float32), "logits": np.eye(4, 6, dtype=np.float32)}
    got = {"heat": -ref["heat"], "logits": ref["logits"] * 2}
    heat, logits = compare_outputs(got, ref)
    assert heat.cosine_min is None and "FP32 reference is ~0" in heat.note and "no cosine" in heat.note
    assert logits.cosine_min == pytest.approx(1.0)
    fields = row_fields([heat, logits])
    assert fields["accuracy_outputs"] == "logits" and fields["accuracy_cosine_min"] == pytest.approx(1.0)
    # a sample that is ~0 is left out of the cosine; the others still count
    mixed = np.stack([np.zeros(6, np.float32), np.arange(6, dtype=np.float32)])
    (one,) = compare_outputs({"y": np.stack([np.ones(6, np.float32), -np.arange(6, dtype=np.float32)])}, {"y": mixed})
    assert one.samples == 1 and one.cosine_min == pytest.approx(-1.0)


def test_one_value_per_sample_gets_no_cosine_but_keeps_max_abs_and_relative_error():
    """Issue 28: a speech probability [N, 1] had a cosine of 1.0 (same sign) or 0.0 (int8 gave 0): a cosine of one
    number is only its sign. It is left empty with the reason; max abs and relative error stay."""
    from edgebench.evaluation.accuracy import compare_outputs, cosine_empty_reason, row_fields

    ref = {"output": np.array([[0.02], [0.5], [0.9], [0.3]], np.float32)}
    got = {"output": np.array([[0.0], [0.45], [0.9], [0.3]], np.float32)}  # sample 0: int8 gave exactly 0
    (prob,) = compare_outputs(got, ref)
    assert prob.cosine_min is None and prob.note == "" and prob.samples == 4
    assert prob.max_abs_err == pytest.approx(0.05) and prob.rel_err == pytest.approx(0.05 / 0.9)
    fields = row_fields([prob])
    assert fields["accuracy_cosine_min"] is None and fields["accuracy_max_abs_err"] == pytest.approx(0.05)
    assert fields["accuracy_outputs"] == "output"
    assert fields["accuracy_per_output"] == ("output: max_abs=0.05 rel_err=0.0556 (no cosine: one value per sample, "
                                             "whose cosine is only its sign)")
    reason = cosine_empty_reason(fields)
    assert reason.startswith("accuracy_cosine_min: no output compared with FP32 has a cosine (output: one value")
    # beside an output that has a cosine, the column is that output's and nothing is empty
    state = np.random.default_rng(0).standard_normal((4, 2, 8)).astype(np.float32)
    both = row_fields(compare_outputs({**got, "stateN": state}, {**ref, "stateN": state}))
    assert both["accuracy_cosine_min"] == pytest.approx(1.0) and both["accuracy_max_abs_err"] == pytest.approx(0.05)
    assert cosine_empty_reason(both) is None and cosine_empty_reason({}) is None


def test_the_empty_reasons_step_names_the_missing_cosine():
    from edgebench.pipeline.row_steps import RowFacts, empty_reasons_columns
    from edgebench.results.row import Row

    def row_with(cosine: float | None) -> Row:
        row = Row()
        row.put("outcome", {"status": "ok", "reason": ""})
        row.put("accuracy", {"accuracy_max_abs_err": 0.01, "accuracy_cosine_min": cosine, "accuracy_outputs": "output"})
        return row

    reasons = empty_reasons_columns(RowFacts(), row_with(None))["empty_reasons"]
    assert "accuracy_cosine_min: no output compared with FP32 has a cosine (output: " in reasons
    assert "accuracy_cosine_min" not in (empty_reasons_columns(RowFacts(), row_with(0.99))["empty_reasons"] or "")
