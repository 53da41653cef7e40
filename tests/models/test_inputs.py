"""The input plan: trtexec shape texts, resolution against graph inputs, valid synthetic data, real .npz data."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.config.shapes import parse_shapes
from edgebench.errors import InputError
from edgebench.models.inputs import (
    GraphInput,
    InputDesc,
    batches_of,
    load_data,
    make_input,
    parse_vocab,
    resolve,
    synthetic,
)

BERT = [GraphInput("input_ids", "int64", ("batch", "seq")), GraphInput("attention_mask", "int64", ("batch", "seq"))]
IMAGE_HW = [GraphInput("pixels", "float32", ("N", 3, "height", "width"))]


# ------------------------------------------------------------------ parsing

def test_parse_shapes_reads_trtexec_form() -> None:
    assert parse_shapes("input_ids:8x128, attention_mask:8x128") == {"input_ids": (8, 128), "attention_mask": (8, 128)}
    assert parse_shapes("ns:in:put:1X3x224x224") == {"ns:in:put": (1, 3, 224, 224)}  # last ':' splits
    assert parse_shapes(None) == {} and parse_shapes("") == {}


@pytest.mark.parametrize(("text", "words"), [
    ("x:0x3", ["'x'", "dim 0", ">= 1"]),
    ("x:-1x3", ["'x'", "dim -1", ">= 1"]),
    ("x:8xy", ["'x'", "not dims"]),
    ("8x128", ["NAME:DIMS"]),
    ("x:1,x:2", ["'x'", "twice"]),
])
def test_parse_shapes_errors_name_the_input(text: str, words: list[str]) -> None:
    with pytest.raises(InputError) as err:
        parse_shapes(text)
    msg = str(err.value)
    assert msg.startswith("--shapes: ") and "\n" not in msg
    for w in words:
        assert w in msg


def test_shapes_that_cannot_be_allocated_are_refused_with_the_size() -> None:
    from edgebench.config.shapes import allocation_problem, memory_bytes

    with pytest.raises(InputError) as err:
        parse_shapes("x:1x3x99999999999x99999999999")
    msg = str(err.value)
    assert msg.startswith("--shapes: input 'x': 1x3x99999999999x99999999999 cannot be allocated: 3e+22 values")
    assert "\n" not in msg and "memory" in msg
    # the bound is the machine's memory at 1 byte per value: just above it refused, at it accepted
    assert allocation_problem((2, 1000), memory=1999) is not None
    assert allocation_problem((2, 1000), memory=2000) is None
    assert allocation_problem((2**40, 2**40), memory=None) == (
        f"{2.0**80:.3g} values, at least 1.05e+06 EiB even at 1 byte each: more than a 64-bit size can hold")
    mem = memory_bytes()
    assert mem is None or mem > 2**20  # a real figure from the OS (any machine running this has > 1 MiB)
    assert parse_shapes("x:1x3x224x224") == {"x": (1, 3, 224, 224)}


def test_parse_vocab_forms() -> None:
    assert parse_vocab("30522") == {"*": 30522}
    assert parse_vocab("input_ids:30522,token_type_ids:2") == {"input_ids": 30522, "token_type_ids": 2}
    assert parse_vocab(7) == {"*": 7} and parse_vocab(None) == {}
    with pytest.raises(InputError, match="'input_ids'.*>= 1"):
        parse_vocab("input_ids:0")


# ------------------------------------------------------------------ resolution

def test_resolve_two_int64_inputs_with_shapes_and_vocab() -> None:
    plan = resolve(BERT, shapes={"input_ids": (8, 128), "attention_mask": (8, 128)}, vocab={"*": 30522})
    ids, mask = plan.inputs
    assert (ids.shape, ids.role, ids.vocab, ids.dtype) == ((128,), "tokens", 30522, "int64")
    assert (mask.shape, mask.role, mask.vocab) == ((128,), "mask", None)
    assert plan.fixed_batch is None and plan.shapes_batch == 8
    assert ids.dynamic_axes == (0, 1)
    assert plan.labels(2) == "input_ids:int64[2x128];attention_mask:int64[2x128]"


def test_resolve_symbolic_hw_needs_shapes_naming_input_and_axis() -> None:
    with pytest.raises(InputError) as err:
        resolve(IMAGE_HW, source="m.onnx")
    msg = str(err.value)
    assert "input 'pixels' axis 2 ('height') is dynamic" in msg and "--shapes pixels:Nx3xNxN" in msg
    plan = resolve(IMAGE_HW, shapes={"pixels": (1, 3, 64, 48)})
    assert plan.inputs[0].shape == (3, 64, 48) and plan.inputs[0].role == "image"


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"shapes": {"pixel": (1, 3, 8, 8)}}, ["no input named 'pixel'", "inputs: pixels"]),
    ({"shapes": {"pixels": (1, 3, 8)}}, ["'pixels'", "rank 4", "rank 3"]),
    ({"shapes": {"pixels": (1, 4, 8, 8)}}, ["'pixels' axis 1 is 3 in the graph", "says 4"]),
])
def test_resolve_bad_shapes_are_one_line_naming_the_input(kwargs: dict, words: list[str]) -> None:
    with pytest.raises(InputError) as err:
        resolve(IMAGE_HW, **kwargs)
    assert "\n" not in str(err.value)
    for w in words:
        assert w in str(err.value)


def test_resolve_int_input_without_vocabulary_and_bad_dtypes() -> None:
    with pytest.raises(InputError, match="input 'input_ids' is int64 token ids and no vocabulary size is known"):
        resolve(BERT, shapes={"input_ids": (1, 16), "attention_mask": (1, 16)})
    with pytest.raises(InputError, match="--vocab: m has no input named 'ids'"):
        resolve(BERT, vocab={"ids": 5}, source="m")
    with pytest.raises(InputError, match="input 'x' is float64"):
        resolve([GraphInput("x", "float64", ("b", 4))])
    with pytest.raises(InputError, match=r"no input has a batch axis \(x\); give one with --batch-axis"):
        resolve([GraphInput("x", "float32", ())])  # a scalar alone: nothing to batch


def test_resolve_fixed_batch_and_disagreeing_batches() -> None:
    plan = resolve([GraphInput("x", "float32", (1, 4)), GraphInput("flag", "bool", (1, 4))])
    assert plan.fixed_batch == 1 and plan.inputs[1].role == "mask" and plan.inputs[0].dynamic_axes == ()
    with pytest.raises(InputError, match=r"fixed batch of 1 in the graph \(axis 0 of \[1, 4\]\), the shape given has 8"):
        resolve([GraphInput("x", "float32", (1, 4))], shapes={"x": (8, 4)})
    # a second input fixed at another batch is per-model (no batch axis), unless the user says otherwise
    plan = resolve([GraphInput("a", "float32", (1, 4)), GraphInput("b", "float32", (2, 4))])
    assert plan.fixed_batch == 1 and [d.batch_axis for d in plan.inputs] == [0, None]
    assert plan.inputs[1].full_shape(1) == (2, 4) and "input 'b' [2, 4] has no batch axis" in plan.notes[1]
    with pytest.raises(InputError, match="inputs fix different batches on their batch axes: 'a' 1, 'b' 2"):
        resolve([GraphInput("a", "float32", (1, 4)), GraphInput("b", "float32", (2, 4))], batch_axis={"b": 0})


# ------------------------------------------------------------------ data

def test_synthetic_data_is_valid_per_dtype_and_seeded() -> None:
    inputs = (InputDesc("input_ids", "int64", (16,), "tokens", 50), InputDesc("attention_mask", "int64", (16,), "mask"),
              InputDesc("flags", "bool", (3,), "mask"), InputDesc("feat", "float16", (4,), "float"),
              InputDesc("ids32", "int32", (5,), "tokens", 3))
    feeds = synthetic(inputs, 64, seed=3)
    ids = feeds["input_ids"]
    assert ids.dtype == np.int64 and ids.shape == (64, 16) and ids.min() >= 0 and ids.max() < 50
    assert len(np.unique(ids)) > 25  # spread over the vocabulary, not a constant
    assert feeds["attention_mask"].dtype == np.int64 and (feeds["attention_mask"] == 1).all()
    assert feeds["flags"].dtype == np.bool_ and feeds["flags"].all()
    assert feeds["feat"].dtype == np.float16 and feeds["ids32"].dtype == np.int32 and feeds["ids32"].max() < 3
    again = synthetic(inputs, 64, seed=3)
    assert all(np.array_equal(feeds[k], again[k]) for k in feeds)
    assert not np.array_equal(ids, synthetic(inputs, 64, seed=4)["input_ids"])


def test_one_float_input_gets_exactly_make_input() -> None:
    """Results of one-input models stay comparable with rows measured before several inputs existed."""
    (x,) = synthetic((InputDesc("input", "float32", (3, 8, 8), "image"),), 2, seed=5).values()
    assert np.array_equal(x, make_input((2, 3, 8, 8), "float32", 5))


def test_load_data_from_npz_file_and_folder(tmp_path) -> None:
    inputs = (InputDesc("input_ids", "int64", (4,), "tokens", 9), InputDesc("attention_mask", "int64", (4,), "mask"))
    np.savez(tmp_path / "a.npz", input_ids=np.arange(12).reshape(3, 4), attention_mask=np.ones((3, 4), np.int32))
    np.savez(tmp_path / "b.npz", input_ids=np.arange(4), attention_mask=np.ones(4, bool))  # one sample
    single = load_data(tmp_path / "a.npz", inputs)
    assert single["input_ids"].shape == (3, 4) and single["attention_mask"].dtype == np.int64
    both = load_data(tmp_path, inputs, samples=4)
    assert both["input_ids"].shape == (4, 4) and np.array_equal(both["input_ids"][3], np.arange(4))
    with pytest.raises(InputError, match="holds 4 samples, 5 needed"):
        load_data(tmp_path, inputs, samples=5)


@pytest.mark.parametrize(("arrays", "words"), [
    ({"input_ids": np.zeros((2, 4), np.int64)}, ["no array for input 'attention_mask'"]),
    ({"input_ids": np.zeros((2, 5), np.int64), "attention_mask": np.ones((2, 4), np.int64)}, ["'input_ids'", "[2, 5]"]),
    ({"input_ids": np.zeros((2, 4)), "attention_mask": np.ones((2, 4))}, ["'input_ids' is int64", "float64"]),
])
def test_load_data_errors_name_file_and_input(tmp_path, arrays: dict, words: list[str]) -> None:
    inputs = (InputDesc("input_ids", "int64", (4,), "tokens", 9), InputDesc("attention_mask", "int64", (4,), "mask"))
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(InputError) as err:
        load_data(tmp_path / "bad.npz", inputs)
    assert str(err.value).startswith(str(tmp_path / "bad.npz"))
    for w in words:
        assert w in str(err.value)


def test_batches_of_pads_by_repeating_the_last_sample() -> None:
    data = {"a": np.arange(5)[:, None], "b": np.arange(5)[:, None] * 10}
    chunks = batches_of(data, 2)
    assert [c["a"].ravel().tolist() for c in chunks] == [[0, 1], [2, 3], [4, 4]]
    assert chunks[2]["b"].ravel().tolist() == [40, 40]
    assert len(batches_of(data, 2, pad=False)) == 2
