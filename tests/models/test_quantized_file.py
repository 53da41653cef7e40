"""Issue 37: a file already quantized (ddddocr's common_old.onnx: ConvInteger, MatMulInteger, DynamicQuantizeLSTM) is
recognised; fp32 rows say they measure the file as given and int8 says why it cannot quantize it again."""

from __future__ import annotations

import numpy as np
import odd_models
import pytest

from edgebench.models.quantized_file import int8_refusal, note, ops_text, quantized_ops

pytest.importorskip("onnx", reason="the test graphs are written with onnx.helper")


def test_a_dynamically_quantized_file_is_counted_op_by_op(tmp_path):
    pytest.importorskip("onnxruntime")
    ops = quantized_ops(odd_models.ocr_line_quantized(tmp_path / "common_old.onnx"))
    assert ops == {"DynamicQuantizeLinear": 2, "ConvInteger": 1, "DynamicQuantizeLSTM": 1, "MatMulInteger": 1}
    assert note(ops, "fp32") == ("the file is already quantized (2 DynamicQuantizeLinear, 1 ConvInteger, "
                                 "1 DynamicQuantizeLSTM, 1 MatMulInteger): fp32 here means the file as given")
    assert "fp16 converts only its float parts" in note(ops, "fp16")
    refusal = int8_refusal(ops)
    assert refusal is not None and refusal.startswith("the file is already quantized (2 DynamicQuantizeLinear")
    assert "--precision fp32" in refusal and "float original" in refusal


def test_a_float_file_and_a_non_onnx_file_say_nothing(tmp_path):
    assert quantized_ops(odd_models.ocr_line(tmp_path / "common.onnx")) == {}
    engine = tmp_path / "model.engine"
    engine.write_bytes(b"\x00not onnx")
    assert quantized_ops(engine) == {}
    assert note({}, "fp32") == "" and int8_refusal({}) is None


def test_static_qdq_and_qlinear_ops_in_subgraphs_count(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    scale = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, np.uint8), "z")
    inner = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                               helper.make_node("QLinearSigmoid", ["q", "s", "z", "s", "z"], ["qs"],
                                                domain="com.microsoft"),
                               helper.make_node("DequantizeLinear", ["qs", "s", "z"], ["y"])],
                              "then", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["y2"])], "else", [],
                              [helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 4])])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["out"], then_branch=inner, else_branch=other)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
                               helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])], [scale, zero])
    path = odd_models._save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                                     helper.make_opsetid("com.microsoft", 1)]),
                            tmp_path / "qdq.onnx")
    assert quantized_ops(path) == {"QuantizeLinear": 1, "QLinearSigmoid": 1, "DequantizeLinear": 1}


def test_the_note_names_the_most_frequent_ops_and_counts_the_rest():
    ops = {"QLinearConv": 40, "QuantizeLinear": 9, "DequantizeLinear": 9, "QLinearAdd": 5, "QLinearMatMul": 2,
           "QLinearGlobalAveragePool": 1}
    assert ops_text(ops) == ("40 QLinearConv, 9 QuantizeLinear, 9 DequantizeLinear, 5 QLinearAdd and 2 more op "
                             "types")
