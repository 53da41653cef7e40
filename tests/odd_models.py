"""Tiny ONNX files shaped like the models nobody here exported (issue 20), built in the tests: a GRU with an
explicit state input [layers, batch, hidden], a scalar int64 input (a sample rate), an opset-11 conv net, a batch
dim written as -1, a custom-domain node, two inputs with different fixed batches, a small conv classifier. Each
builder writes one file and returns its path; the graphs are small enough that fp32 and int8 rows take seconds on a
CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

GRU_LAYERS, GRU_HIDDEN, GRU_SEQ, GRU_FEATURES = 2, 16, 5, 8


def _save(model, path: Path, ir_version: int = 8) -> Path:  # noqa: ANN001 - onnx.ModelProto
    import onnx

    model.ir_version = ir_version
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def gru_with_state(path: Path) -> Path:
    """torch GRU (2 layers) + Linear, exported with its state as an input: x [batch, 5, 8], state [2, batch, 16]
    -> logits [batch, 4], state_out [2, batch, 16] (the batch is axis 1 of the state)."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = torch.nn.GRU(GRU_FEATURES, GRU_HIDDEN, num_layers=GRU_LAYERS, batch_first=True)
            self.fc = torch.nn.Linear(GRU_HIDDEN, 4)

        def forward(self, x, state):  # noqa: ANN001, ANN202
            y, hn = self.gru(x, state)
            return self.fc(y[:, -1]), hn

    torch.manual_seed(0)
    net = Net().eval()
    x, h = torch.randn(1, GRU_SEQ, GRU_FEATURES), torch.zeros(GRU_LAYERS, 1, GRU_HIDDEN)
    torch.onnx.export(net, (x, h), str(path), input_names=["x", "state"], output_names=["logits", "state_out"],
                      dynamic_axes={"x": {0: "batch"}, "state": {1: "batch"}, "logits": {0: "batch"},
                                    "state_out": {1: "batch"}}, opset_version=17, dynamo=False)
    return path


def _conv_weights(rng: np.random.Generator) -> list:
    from onnx import numpy_helper

    return [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w1"),
            numpy_helper.from_array(rng.standard_normal((6, 4, 3, 3)).astype(np.float32) * 0.3, "w2"),
            numpy_helper.from_array(rng.standard_normal((6, 5)).astype(np.float32), "fc"),
            numpy_helper.from_array(np.zeros(5, np.float32), "fcb")]


def conv_net(path: Path, *, opset: int = 17, batch: int | str = "batch", custom_domain: bool = False) -> Path:
    """pixels [batch, 3, 12, 12] -> Conv-Relu-Conv-GlobalAveragePool-Flatten-Gemm -> logits [batch, 5].
    opset: the default-domain opset (11: per-channel Q/DQ is not allowed there). batch -1: the dim written as -1.
    custom_domain: the Relu becomes a `my.custom` Swish node (a model-local function ORT inlines)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(1)
    x = helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [batch, 3, 12, 12])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 5])
    act = (helper.make_node("Swish", ["c1"], ["a1"], domain="my.custom", name="swish") if custom_domain
           else helper.make_node("Relu", ["c1"], ["a1"]))
    nodes = [helper.make_node("Conv", ["pixels", "w1"], ["c1"], pads=[1, 1, 1, 1]), act,
             helper.make_node("Conv", ["a1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"])]
    opsets = [helper.make_opsetid("", opset)]
    functions = []
    if custom_domain:
        opsets.append(helper.make_opsetid("my.custom", 1))
        functions.append(helper.make_function(
            "my.custom", "Swish", ["X"], ["Y"],
            [helper.make_node("Sigmoid", ["X"], ["S"]), helper.make_node("Mul", ["X", "S"], ["Y"])],
            [helper.make_opsetid("", opset)]))
    model = helper.make_model(helper.make_graph(nodes, "conv_net", [x], [y], _conv_weights(rng)),
                              opset_imports=opsets, functions=functions)
    return _save(model, path, ir_version=6 if opset < 13 else 8)


def conv_classifier(path: Path, *, batch: int | str = "batch", hw: tuple[int | str, int | str] = ("height", "width"),
                    unused: str | None = None) -> Path:
    """pixels [batch, 3, *hw] -> Conv-Relu-GlobalAveragePool-Flatten-Gemm -> logits [batch, 10]. unused: the name of
    an extra initializer no node reads (ORT's CPU provider warns that it removes it, at every session it builds)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w"),
             numpy_helper.from_array(rng.standard_normal((8, 10)).astype(np.float32), "fc"),
             numpy_helper.from_array(np.zeros(10, np.float32), "b")]
    if unused is not None:
        inits.append(numpy_helper.from_array(np.ones(4, np.float32), unused))
    x = helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [batch, 3, *hw])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])
    nodes = [helper.make_node("Conv", ["pixels", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "b"], ["logits"])]
    model = helper.make_model(helper.make_graph(nodes, "classifier", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    return _save(model, path)


def scalar_sample_rate(path: Path) -> Path:
    """audio [batch, 32] float and sr [] int64 (a sample rate, a scalar): score [batch, 3] = MatMul(audio * sr /
    16000, w): the scalar is fed as is at every batch."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal((32, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array(16000.0, np.float32), "ref_sr")]
    nodes = [helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT),
             helper.make_node("Div", ["srf", "ref_sr"], ["scale"]),
             helper.make_node("Mul", ["audio", "scale"], ["scaled"]),
             helper.make_node("MatMul", ["scaled", "w"], ["score"])]
    graph = helper.make_graph(nodes, "vad", [
        helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", 32]),
        helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["batch", 3])], inits)
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def two_fixed_batches(path: Path) -> Path:
    """a [1, 16] and b [4, 16] (a per-model table of 4 rows): out [1, 8] = MatMul(a + ReduceMean(b, axis 0), w)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([0], np.int64), "axes")]
    nodes = [helper.make_node("ReduceMean", ["b", "axes"], ["bm"], keepdims=1),
             helper.make_node("Add", ["a", "bm"], ["s"]), helper.make_node("MatMul", ["s", "w"], ["out"])]
    graph = helper.make_graph(nodes, "two_batches", [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 16]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8])], inits)
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


VAD_SAMPLES, VAD_HIDDEN = 64, 16  # audio samples per chunk; GRU hidden size (the state is [2, batch, 16])


def voice_activity(path: Path) -> Path:
    """Shaped like a voice-activity model from a PyPI wheel: input [batch, 64] audio, state [2, batch, 16] and a
    scalar int64 sr (8000 or 16000) that selects the branch: If(sr == 16000) runs a bidirectional GRU over 4 frames
    of 16 samples, else the 8 kHz path over 4 frames of 8, which takes 32-sample chunks: a 64-sample chunk with any
    sr but 16000 fails in ONNX Runtime (Reshape), as the real model's wrong-rate path does. Outputs: output
    [batch, 1] (a speech probability, one value per sample) and stateN [2, batch, 16]. The head (ReduceMean, MatMul,
    Sigmoid) sits outside the If, so int8 quantizes it; the GRUs inside the branches stay float."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    h = VAD_HIDDEN

    def branch(name: str, frames: int, width: int) -> object:
        w = numpy_helper.from_array((0.3 * rng.standard_normal((2, 3 * h, width))).astype(np.float32), f"{name}_w")
        r = numpy_helper.from_array((0.3 * rng.standard_normal((2, 3 * h, h))).astype(np.float32), f"{name}_r")
        b = numpy_helper.from_array((0.1 * rng.standard_normal((2, 6 * h))).astype(np.float32), f"{name}_b")
        shape = numpy_helper.from_array(np.array([0, frames, width], np.int64), f"{name}_shape")
        nodes = [helper.make_node("Reshape", ["input", f"{name}_shape"], [f"{name}_frames"]),
                 helper.make_node("Transpose", [f"{name}_frames"], [f"{name}_x"], perm=[1, 0, 2]),
                 helper.make_node("GRU", [f"{name}_x", f"{name}_w", f"{name}_r", f"{name}_b", "", "state"],
                                  ["", f"{name}_h"], hidden_size=h, direction="bidirectional")]
        out = helper.make_tensor_value_info(f"{name}_h", TensorProto.FLOAT, [2, None, h])
        return helper.make_graph(nodes, name, [], [out], [w, r, b, shape])

    inits = [numpy_helper.from_array(np.array(16000, np.int64), "sr_16k"),
             numpy_helper.from_array((0.5 * rng.standard_normal((h, 1))).astype(np.float32), "head_w")]
    nodes = [helper.make_node("Equal", ["sr", "sr_16k"], ["is_16k"]),
             helper.make_node("If", ["is_16k"], ["hidden"], then_branch=branch("khz16", 4, 16),
                              else_branch=branch("khz8", 4, 8)),
             helper.make_node("Identity", ["hidden"], ["stateN"]),
             helper.make_node("ReduceMean", ["hidden"], ["feats"], axes=[0], keepdims=0),
             helper.make_node("MatMul", ["feats", "head_w"], ["logit"]),
             helper.make_node("Sigmoid", ["logit"], ["output"])]
    graph = helper.make_graph(nodes, "voice_activity", [
        helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", VAD_SAMPLES]),
        helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", h]),
        helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1]),
         helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, "batch", h])], inits)
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def nothing_to_quantize(path: Path) -> Path:
    """x [batch, 8] -> Sin -> Div by 2 -> Tanh -> y [batch, 8]: no op ONNX Runtime's QDQ quantizer quantizes, so its
    int8 file has 0 QuantizeLinear and 0 DequantizeLinear nodes."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Sin", ["x"], ["s"]), helper.make_node("Div", ["s", "two"], ["d"]),
             helper.make_node("Tanh", ["d"], ["y"])]
    graph = helper.make_graph(nodes, "no_qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
                              [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


SILERO_HIDDEN = 16  # silero's state is [2, batch, 128]; 16 keeps the file small


def silero_like(path: Path) -> Path:
    """The input signature of silero_vad.onnx (v5, from the silero-vad wheel): input [?, ?] float and state
    [2, ?, 16] float with unnamed dims, sr [] int64. Equal(sr, Constant 16000) picks the branch, as the real file's
    If does: the 16 kHz one reshapes the input to 32 frames of 16 samples (a 512-sample chunk), the other to 32
    of 8 (256): any other chunk fails in ONNX Runtime (Reshape), as the real file's STFT padding does for one too
    short. Outputs: output [?, 1] (a speech probability) and stateN [2, ?, 16]."""
    from onnx import TensorProto, helper, numpy_helper

    def branch(name: str, width: int) -> object:
        shape = numpy_helper.from_array(np.array([0, 32, width], np.int64), f"{name}_shape")
        nodes = [helper.make_node("Reshape", ["input", f"{name}_shape"], [f"{name}_frames"]),
                 helper.make_node("ReduceMean", [f"{name}_frames"], [f"{name}_mean"], axes=[1, 2], keepdims=0),
                 helper.make_node("Unsqueeze", [f"{name}_mean", "one_axis"], [f"{name}_out"])]
        out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [None, 1])
        return helper.make_graph(nodes, name, [], [out], [shape])

    sr_16k = helper.make_tensor("sr_16k", TensorProto.INT64, [], [16000])
    nodes = [helper.make_node("Constant", [], ["sr_const"], value=sr_16k),
             helper.make_node("Equal", ["sr", "sr_const"], ["is_16k"]),
             helper.make_node("If", ["is_16k"], ["logit"], then_branch=branch("khz16", 16),
                              else_branch=branch("khz8", 8)),
             helper.make_node("Sigmoid", ["logit"], ["output"]),
             helper.make_node("Tanh", ["state"], ["stateN"])]
    graph = helper.make_graph(nodes, "silero_like", [
        helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, None]),
        helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, None, SILERO_HIDDEN]),
        helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [None, 1]),
         helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, None, SILERO_HIDDEN])],
        [numpy_helper.from_array(np.array([1], np.int64), "one_axis")])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _ocr_graph(name: str, height: int) -> object:
    """input1 [1, 1, H, image_width] -> Conv 1->4 (3x3) -> Relu -> ReduceMean over the height -> Transpose ->
    LSTM (hidden 8) over the width -> MatMul -> logits [image_width, 1, 5]: a text-line recogniser in miniature."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array((0.3 * rng.standard_normal((4, 1, 3, 3))).astype(np.float32), "conv_w"),
             numpy_helper.from_array((0.3 * rng.standard_normal((1, 32, 4))).astype(np.float32), "lstm_w"),
             numpy_helper.from_array((0.3 * rng.standard_normal((1, 32, 8))).astype(np.float32), "lstm_r"),
             numpy_helper.from_array((0.3 * rng.standard_normal((8, 5))).astype(np.float32), "fc_w"),
             numpy_helper.from_array(np.array([1], np.int64), "squeeze_axis")]
    nodes = [helper.make_node("Conv", ["input1", "conv_w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ReduceMean", ["r"], ["m"], axes=[2], keepdims=0),  # [1, 4, W]
             helper.make_node("Transpose", ["m"], ["seq"], perm=[2, 0, 1]),  # [W, 1, 4]
             helper.make_node("LSTM", ["seq", "lstm_w", "lstm_r"], ["y"], hidden_size=8),  # [W, 1, 1, 8]
             helper.make_node("Squeeze", ["y", "squeeze_axis"], ["ys"]),  # [W, 1, 8]
             helper.make_node("MatMul", ["ys", "fc_w"], ["logits"])]
    return helper.make_graph(nodes, name, [
        helper.make_tensor_value_info("input1", TensorProto.FLOAT, [1, 1, height, "image_width"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["image_width", 1, 5])], inits)


def ocr_line(path: Path) -> Path:
    """The input signature of ddddocr's common.onnx: one image input1 [1, 1, 64, image_width] (a grey text line:
    batch and height fixed, the width dynamic), a float graph."""
    from onnx import helper

    return _save(helper.make_model(_ocr_graph("ocr_line", 64), opset_imports=[helper.make_opsetid("", 17)]), path)


def ocr_line_quantized(path: Path) -> Path:
    """ddddocr's common_old.onnx in miniature: ocr_line quantized by ONNX Runtime's quantize_dynamic, so it holds
    DynamicQuantizeLinear, ConvInteger, DynamicQuantizeLSTM and MatMulInteger, the ops the real file has."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    float_file = ocr_line(path.with_name(path.stem + "_float.onnx"))
    quantize_dynamic(str(float_file), str(path), weight_type=QuantType.QUInt8)
    return path
