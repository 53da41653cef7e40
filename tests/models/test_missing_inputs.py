"""Issue 37, "any ONNX in one go": everything an input set lacks is said in one refusal, with options that ran once
on ONNX Runtime CPU (silero_vad.onnx needed four runs: the shapes, then the batch axis of `state`, then the value of
`sr`); an image whose width is dynamic (ddddocr's [1, 1, 64, W]) is never called a state."""

from __future__ import annotations

import shlex

import odd_models
import pytest

from edgebench.errors import InputError
from edgebench.models.inputs import GraphInput, resolve
from edgebench.models.missing_inputs import MissingInputs, image_layout, looks_like_state
from edgebench.models.proposal import command_line

pytest.importorskip("onnx", reason="the test graphs are written with onnx.helper")

SILERO = [GraphInput("input", "float32", (None, None)), GraphInput("state", "float32", (2, None, 128)),
          GraphInput("sr", "int64", ())]
DDDDOCR = [GraphInput("input1", "float32", (1, 1, 64, "image_width"))]


@pytest.mark.parametrize(("dims", "layout", "state_axis"), [
    ((1, 1, 64, "image_width"), "NCHW", None),  # ddddocr: an image, not a state
    (("batch", 3, None, None), "NCHW", None),
    ((1, None, None, 3), "NHWC", None),
    ((2, None, 128), None, 1),  # silero's state [layers, batch, hidden]
    ((4, 2, None, 64), None, 2),  # a state whose batch is axis 2
    ((2, 128, None), None, None),  # the dynamic axis last: a sequence, not a batch between fixed axes
    ((1, 1, 64, 64), "NCHW", None),
    (("batch", 64), None, None),
])
def test_images_and_states_are_told_apart(dims, layout, state_axis):
    assert image_layout(dims) == layout
    assert looks_like_state(dims) == state_axis


def test_silero_signature_is_one_refusal_naming_all_three_inputs():
    with pytest.raises(MissingInputs) as err:
        resolve(SILERO, source="silero_vad.onnx")
    text = str(err.value)
    assert text.startswith("silero_vad.onnx: 3 inputs need more before it can run: (1) input 'input' axis 1 ")
    assert "(2) input 'state' axis 1 is dynamic" in text and "--batch-axis state:1" in text
    assert "(3) input 'sr' is a scalar int64" in text and "--value sr:V" in text
    assert [m.name for m in err.value.missing] == ["input", "state", "sr"]
    assert err.value.missing[1].state_axis == 1 and err.value.missing[2].needs == "value"


def test_an_image_with_a_dynamic_width_is_not_called_a_state():
    with pytest.raises(MissingInputs) as err:
        resolve(DDDDOCR, source="common.onnx")
    text = str(err.value)
    assert "state" not in text and "--batch-axis" not in text
    assert "input 'input1' axis 3 ('image_width') is dynamic" in text and "an image, NCHW with 1 channel" in text
    assert "--shapes input1:1x1x64xN" in text


def test_a_spec_file_is_told_its_own_field_for_the_batch_axis():
    with pytest.raises(MissingInputs, match=r"say so with vad.yaml: batch_axis: \{state: 1\}"):
        resolve(SILERO, values={"sr": 16000}, axes_source="vad.yaml: batch_axis")


def test_given_options_that_contradict_the_graph_still_fail_at_once():
    """A wrong option is not 'missing': it is refused on its own, naming the option."""
    with pytest.raises(InputError, match="--shapes: input 'input' has rank 2") as err:
        resolve(SILERO, shapes={"input": (512,)})
    assert not isinstance(err.value, MissingInputs)


def test_silero_like_file_gets_the_options_that_ran(tmp_path):
    """The proposal is tried: 512 samples with sr 16000 (the constant the graph compares sr with) runs; with sr given
    as 8000 the 512 candidate fails in ORT and 256 is proposed instead."""
    pytest.importorskip("onnxruntime")
    from edgebench.models.precision import onnx_spec

    path = odd_models.silero_like(tmp_path / "silero_like.onnx")
    with pytest.raises(MissingInputs) as err:
        onnx_spec(str(path))
    assert err.value.proposal == {"--shapes": "input:1x512", "--batch-axis": "state:1", "--value": "sr:16000"}
    assert err.value.tried == "with these it ran (one inference on ONNX Runtime CPU)"
    assert str(err.value).endswith("with these it ran (one inference on ONNX Runtime CPU): --shapes input:1x512 "
                                   "--batch-axis state:1 --value sr:16000")
    with pytest.raises(MissingInputs) as err:
        onnx_spec(str(path), values="sr:8000")
    assert err.value.proposal["--shapes"] == "input:1x256" and err.value.proposal["--value"] == "sr:8000"
    spec = onnx_spec(str(path), shapes="input:1x256", batch_axis="state:1", values="sr:8000")
    assert [d.label(1) for d in spec.inputs] == ["input:float32[1x256]", "state:float32[2x1x16]", "sr:int64[]=8000"]


def test_ocr_line_file_gets_a_width_and_no_batch_axis(tmp_path):
    pytest.importorskip("onnxruntime")
    from edgebench.models.precision import onnx_spec

    path = odd_models.ocr_line(tmp_path / "common.onnx")
    with pytest.raises(MissingInputs) as err:
        onnx_spec(str(path))
    assert err.value.proposal == {"--shapes": "input1:1x1x64x256"}
    assert "ran (one inference" in err.value.tried


def test_a_proposal_that_never_runs_says_so(tmp_path):
    """With only lengths no branch takes (100, 200) to try, none runs: the refusal says so, with ORT's last error,
    and proposes the first."""
    pytest.importorskip("onnxruntime")
    from edgebench.models import proposal
    from edgebench.models.precision import onnx_spec

    path = odd_models.silero_like(tmp_path / "silero_like.onnx")
    saved = proposal.OTHER_LENGTHS
    proposal.OTHER_LENGTHS = (100, 200)
    try:
        with pytest.raises(MissingInputs) as err:
            onnx_spec(str(path), values="sr:16000")
    finally:
        proposal.OTHER_LENGTHS = saved
    assert err.value.tried.startswith("none of 2 of 2 proposal(s) ran on ONNX Runtime CPU (last: ")
    assert "Reshape" in err.value.tried and err.value.proposal["--shapes"] == "input:1x100"


@pytest.mark.parametrize(("argv", "expected"), [
    (["run", "--onnx", "m.onnx"], "edgebench run --onnx m.onnx --shapes input:1x512 --value sr:16000"),
    (["run", "--onnx", "my model.onnx", "--shapes", "input:1x512", "--precision", "int8"],
     "edgebench run --onnx 'my model.onnx' --precision int8 --shapes input:1x512 --value sr:16000"),
    (["run", "--onnx", "m.onnx", "--value=sr:8000", "--batch", "2"],
     "edgebench run --onnx m.onnx --batch 2 --shapes input:1x512 --value sr:16000"),
])
def test_the_command_line_keeps_the_users_options_and_replaces_the_proposed_ones(argv, expected):
    line = command_line(argv, {"--shapes": "input:1x512", "--value": "sr:16000"})
    assert line == expected
    assert shlex.split(line)[0] == "edgebench"


def test_a_file_with_its_weights_in_an_external_data_file_gets_the_table_s_rows_from_any_folder(tmp_path,
                                                                                                  monkeypatch):
    """Token ids [b, s] into a Gather over a 1000 x 8 table saved as external data, refused from another folder:
    the proposal reads the table's rows from its dims (never its data, which lies beside the model, not in the
    current folder), so the refusal proposes --vocab ids:1000 instead of failing with a traceback."""
    pytest.importorskip("onnxruntime")
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from edgebench.models.precision import onnx_spec

    table = numpy_helper.from_array(np.random.default_rng(0).standard_normal((1000, 8)).astype(np.float32), "W")
    graph = helper.make_graph([helper.make_node("Gather", ["W", "ids"], ["emb"])], "g",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, ["b", "s"])],
                              [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["b", "s", 8])], [table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (tmp_path / "m").mkdir()
    onnx.save(model, str(tmp_path / "m" / "x.onnx"), save_as_external_data=True, location="x.data",
              size_threshold=0)
    monkeypatch.chdir(tmp_path)  # the model's folder is m/, not this one
    with pytest.raises(MissingInputs) as err:
        onnx_spec("m/x.onnx")
    assert err.value.proposal.get("--vocab") == "ids:1000", str(err.value)
