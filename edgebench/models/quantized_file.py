"""A file that is already quantized (issue 37: ddddocr's common_old.onnx holds 21 ConvInteger, 1 MatMulInteger and a
DynamicQuantizeLSTM): its fp32 row measures the file as given, and int8 cannot quantize it again.

`quantized_ops` counts the ops that only a quantized graph has (integer convolutions and matrix products, dynamic
and static Q/DQ, QLinear* ops, ONNX Runtime's quantized contrib ops, 4-bit weight ops), subgraphs included.
- fp32 (and the runtime modes served from the fp32 file) and fp16 rows carry `note()`: the file computes in
  integers where those ops are, so 'fp32' is the label of the file as given, not of its arithmetic;
- an int8 row is skipped with `int8_refusal()`: edgebench's int8 calibrates a float graph with ONNX Runtime's QDQ
  quantizer, which has no float ranges to calibrate for ops that are already integer (on ddddocr it stopped with
  "no calibration range for tensor '140'"), and a file quantized twice would measure neither model.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

QUANTIZED_OPS = frozenset({
    "ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeLSTM", "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat", "QuantizeLinear", "DequantizeLinear", "QGemm", "QAttention", "QEmbedLayerNormalization",
    "QOrderedMatMul", "QOrderedAttention", "QOrderedLayerNormalization", "QOrderedGelu", "QOrderedLongformerAttention",
    "MatMulNBits", "MatMulBnb4", "GatherBlockQuantized", "DequantizeBFP", "QuantizeBFP",
})
QLINEAR_PREFIX = "QLinear"  # QLinearConv, QLinearMatMul, QLinearAdd, QLinearSigmoid, QLinearConcat, ...
SHOWN = 4  # op types named in a note, most frequent first


def quantized_ops(path: str | Path) -> dict[str, int]:
    """{op type: count} of the quantized ops in the ONNX file (subgraphs included), most frequent first; {} for a
    float graph or a file that is not ONNX (an engine)."""
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - a TensorRT engine, an unreadable file: nothing to say about its ops
        return {}
    counts: Counter[str] = Counter()
    graphs = [proto.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            if node.op_type in QUANTIZED_OPS or node.op_type.startswith(QLINEAR_PREFIX):
                counts[node.op_type] += 1
            graphs.extend(a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH)
    return dict(counts.most_common())


def ops_text(ops: dict[str, int]) -> str:
    """'21 ConvInteger, 22 DynamicQuantizeLinear, ...' (the SHOWN most frequent, then how many more types)."""
    shown = [f"{n} {op}" for op, n in list(ops.items())[:SHOWN]]
    more = len(ops) - SHOWN
    return ", ".join(shown) + (f" and {more} more op type{'s' if more > 1 else ''}" if more > 0 else "")


def note(ops: dict[str, int], precision: str) -> str:
    """What a row that did not quantize says about a file that already is ('' for a float graph)."""
    if not ops:
        return ""
    if precision == "fp16":
        return (f"the file is already quantized ({ops_text(ops)}): fp16 converts only its float parts, the "
                "quantized ops stay integer")
    return f"the file is already quantized ({ops_text(ops)}): {precision} here means the file as given"


def int8_refusal(ops: dict[str, int]) -> str | None:
    """Why int8 cannot be built from a file that is already quantized (None for a float graph)."""
    if not ops:
        return None
    return (f"the file is already quantized ({ops_text(ops)}): edgebench's int8 calibrates and quantizes a float "
            "graph (ONNX Runtime QDQ), and these ops have no float ranges to calibrate; quantizing it again would "
            "measure neither model. Measure it as given with --precision fp32, or give the float original to "
            "--onnx for int8")
