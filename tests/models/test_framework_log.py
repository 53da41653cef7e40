"""ONNX Runtime's own warnings while an artifact is built are lines for its sidecar, not console output (issue 37);
errors and edgebench's own records still reach the console. The CLI's console is tests/e2e/test_any_onnx.py."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from edgebench.models.framework_log import framework_log, summary


class Sink(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())


def test_python_warnings_become_lines_and_errors_still_reach_the_console():
    root = logging.getLogger()
    sink = Sink()
    saved = root.handlers[:]
    root.handlers = [sink]  # a console handler, as basicConfig (or ORT's first logging.warning()) leaves one
    try:
        with framework_log() as lines:
            line = sys._getframe().f_lineno + 1
            logging.warning("Please consider to run pre-processing before quantization.")  # as ORT's quantizer does
            logging.getLogger("onnxruntime.quantization.preprocess").warning("Expected bias '%s'", "b1")
            logging.getLogger("edgebench").warning("our own note")
            logging.error("a real error")
        after = root.handlers[:]
    finally:
        root.handlers = saved
    assert after == [sink]
    assert lines == [f"test_framework_log.py:{line} warning: Please consider to run pre-processing before quantization.",
                     "onnxruntime.quantization.preprocess warning: Expected bias 'b1'"]
    assert sink.texts == ["our own note", "a real error"]


def test_logging_warning_installs_no_console_handler_inside_the_block():
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = []
    try:
        with framework_log() as lines:
            logging.warning("noise")  # with no handler, logging.warning() would call basicConfig (stderr)
        assert root.handlers == [] and len(lines) == 1
    finally:
        root.handlers = saved


def test_ort_cpp_warnings_of_default_sessions_become_lines(tmp_path, capfd):
    ort = pytest.importorskip("onnxruntime")
    if not hasattr(ort, "set_default_logger_callback"):
        pytest.skip(f"onnxruntime {ort.__version__} has no logger callback (its warnings are dropped instead)")
    path = _verify_output_sizes_model(tmp_path)
    with framework_log() as lines:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for _ in range(2):
            session.run(None, {"x": np.ones((2, 4), np.float32)})
    assert "VerifyOutputSizes" not in capfd.readouterr().err
    (line,) = summary(lines)
    assert line.startswith("onnxruntime [W] ") and "VerifyOutputSizes" in line and line.endswith(" (x2)")


def test_summary_counts_repeats_and_stops_at_fifty():
    assert summary(["a", "b", "a"]) == ["a (x2)", "b"]
    many = summary([str(i) for i in range(60)])
    assert len(many) == 51 and many[-1] == "... 10 more"


def test_nested_blocks_share_one_route_and_the_outer_keeps_it_after_the_inner_closes(tmp_path, capfd):
    """The innermost open block gets ORT's warnings; when it closes, the outer block still takes them (capturing()
    stays true, so a session made then may log warnings without reaching stderr); after both, nothing is taken."""
    ort = pytest.importorskip("onnxruntime")
    if not hasattr(ort, "set_default_logger_callback"):
        pytest.skip(f"onnxruntime {ort.__version__} has no logger callback")
    from edgebench.models.framework_log import capturing

    path = _verify_output_sizes_model(tmp_path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert not capturing()
    with framework_log() as outer:
        assert capturing()
        with framework_log(onnxruntime=False) as inner:  # a block that does not route ORT still gets its lines
            session.run(None, {"x": np.ones((2, 4), np.float32)})
        assert capturing()
        session.run(None, {"x": np.ones((2, 4), np.float32)})
    assert not capturing()
    assert len(inner) == 1 and "VerifyOutputSizes" in inner[0]
    assert len(outer) == 1 and "VerifyOutputSizes" in outer[0]
    assert "VerifyOutputSizes" not in capfd.readouterr().err


def test_an_exception_in_the_block_still_restores_the_handlers_and_the_route():
    from edgebench.models.framework_log import capturing

    root = logging.getLogger()
    before = root.handlers[:]
    with pytest.raises(RuntimeError, match="boom"), framework_log():
        raise RuntimeError("boom")
    assert root.handlers == before and not capturing()


def _verify_output_sizes_model(tmp_path):
    """m.onnx: a Relu whose output is declared 3 wide; fed 4 wide, ONNX Runtime warns VerifyOutputSizes each run."""
    pytest.importorskip("onnx", reason="the test graph is written with onnx.helper")
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "width"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])  # declared 3 wide, fed 4: VerifyOutputSizes
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    return tmp_path / "m.onnx"
