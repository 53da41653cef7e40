"""Issue 28, fixed input values: `--value sr:16000` / `values: {sr: 16000}` make an input that constant in every
feed (timing, calibration, accuracy), a scalar integer input with neither value nor vocabulary is refused with
one line offering both, the value is in the row's input_shapes and the config hash; and the error for a state's
dynamic axis offers --batch-axis. Real ONNX Runtime inference on tests/odd_models.voice_activity."""

from __future__ import annotations

import numpy as np
import odd_models
import pytest

from edgebench.config.run_config import RunConfig
from edgebench.errors import ConfigError, InputError
from edgebench.models.calibration import calibration_feeds
from edgebench.models.inputs import GraphInput, load_data, parse_values, resolve, synthetic
from edgebench.models.precision import onnx_spec
from edgebench.models.spec import model_spec_from_dict

VAD = [GraphInput("input", "float32", ("batch", 64)), GraphInput("state", "float32", (2, "batch", 16)),
       GraphInput("sr", "int64", ())]


def test_parse_values_reads_names_and_numbers_and_refuses_the_rest():
    assert parse_values("sr:16000, gain:0.5") == {"sr": 16000, "gain": 0.5}
    assert parse_values({"sr": 8000}) == {"sr": 8000} and parse_values(None) == {}
    assert isinstance(parse_values("sr:16000")["sr"], int)
    for text, words in (("sr", "is not NAME:VALUE"), ("sr:fast", "value 'fast' is not a number"),
                        ("sr:nan", "not a finite number"), (":3", "is not NAME:VALUE")):
        with pytest.raises(InputError, match=words):
            parse_values(text)


def test_a_scalar_int_input_needs_a_value_or_a_vocabulary_and_the_line_offers_both():
    with pytest.raises(InputError) as err:
        resolve(VAD)
    text = str(err.value)
    assert "\n" not in text and "input 'sr' is a scalar int64" in text
    assert "--value sr:V" in text and "--vocab sr:N" in text
    plan = resolve(VAD, values={"sr": 16000})
    sr = plan.inputs[2]
    assert sr.value == 16000 and sr.vocab is None and sr.batch_axis is None
    assert plan.labels(4) == "input:float32[4x64];state:float32[2x4x16];sr:int64[]=16000"


def test_values_are_checked_against_the_inputs_and_their_dtypes():
    with pytest.raises(InputError, match=r"--value: model has no input named 'rate' \(inputs: input, state, sr\)"):
        resolve(VAD, values={"sr": 16000, "rate": 1})
    with pytest.raises(InputError, match="input 'sr' is int64; value 16000.5 is not a whole number"):
        resolve(VAD, values={"sr": 16000.5})
    plan = resolve(VAD, values={"sr": 8000, "input": 0.25})  # a float input may be a constant too
    feeds = synthetic(plan.inputs, 3, seed=0)
    assert feeds["input"].shape == (3, 64) and np.all(feeds["input"] == np.float32(0.25))


def test_every_feed_holds_the_value_synthetic_real_data_and_calibration(tmp_path):
    plan = resolve(VAD, values={"sr": 16000})
    for seed in (0, 1, 2):  # timing (per instance seed) and accuracy seeds alike
        feeds = synthetic(plan.inputs, 5, seed)
        assert feeds["sr"].shape == () and feeds["sr"].dtype == np.int64 and int(feeds["sr"]) == 16000
    rng = np.random.default_rng(0)
    data = tmp_path / "speech.npz"  # no sr array: the value needs none; an sr in a file would not be read
    np.savez(data, input=rng.standard_normal((6, 64)).astype(np.float32), state=np.zeros((2, 6, 16), np.float32))
    real = load_data(data, plan.inputs)
    assert list(real) == ["input", "state", "sr"] and int(real["sr"]) == 16000 and real["state"].shape == (2, 6, 16)
    np.savez(data, input=rng.standard_normal((6, 64)).astype(np.float32), state=np.zeros((2, 6, 16), np.float32),
             sr=np.array(8000))
    assert int(load_data(data, plan.inputs)["sr"]) == 16000
    feeds, record = calibration_feeds("synthetic", plan.inputs, 8, 0)
    assert int(feeds["sr"]) == 16000 and record["inputs"]["sr"]["value"] == 16000
    _, other = calibration_feeds("synthetic", resolve(VAD, values={"sr": 8000}).inputs, 8, 0)
    assert other["sha256"] != record["sha256"]  # another value, another calibration (and int8 cache key)


def test_the_voice_model_runs_its_16khz_path_only_with_the_value(tmp_path):
    """Real ONNX Runtime: the 64-sample chunk works on the 16 kHz branch; sr drawn at random takes the 8 kHz one and
    fails. The spec's inputs carry the value, so every feed built from them takes the right branch."""
    ort = pytest.importorskip("onnxruntime")
    path = odd_models.voice_activity(tmp_path / "vad.onnx")
    spec = onnx_spec(str(path), values="sr:16000")
    assert spec.values == {"sr": 16000} and spec.to_dict()["values"] == {"sr": 16000}
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = sess.run(None, synthetic(spec.inputs, 4, seed=0))
    assert out[0].shape == (4, 1) and out[1].shape == (2, 4, 16) and np.all((out[0] > 0) & (out[0] < 1))
    random_sr = onnx_spec(str(path), vocab="sr:16001")
    with pytest.raises(Exception, match="Reshape"):
        sess.run(None, synthetic(random_sr.inputs, 4, seed=0))
    with pytest.raises(InputError, match="--value sr:V"):
        onnx_spec(str(path))


def test_data_holding_the_scalar_makes_it_the_value(tmp_path):
    """--data with sr=16000 and no --value: the data's value is fed everywhere, timing included (before, timing drew
    sr at random from [0, max+1))."""
    path = odd_models.voice_activity(tmp_path / "vad.onnx")
    data = tmp_path / "speech.npz"
    np.savez(data, input=np.zeros((4, 64), np.float32), state=np.zeros((2, 4, 16), np.float32), sr=np.array(16000))
    spec = onnx_spec(str(path), data=str(data))
    assert spec.values == {"sr": 16000} and int(synthetic(spec.inputs, 2, 0)["sr"]) == 16000


def test_values_in_a_model_spec(tmp_path):
    builtin = {"name": "vad_b", "source": "builtin", "arch": "tiny_cnn",
               "inputs": [{"name": "audio", "shape": [64]}, {"name": "sr", "dtype": "int64", "shape": [],
                                                             "batch_axis": None}]}
    spec = model_spec_from_dict({**builtin, "values": {"sr": 16000}}, "vad_b.yaml")
    assert spec.inputs[1].value == 16000 and spec.inputs[1].vocab is None
    with pytest.raises(ConfigError, match=r"vad_b.yaml.*inputs\[1\].vocab"):  # no value: token ids need a vocab
        model_spec_from_dict(builtin, "vad_b.yaml")
    with pytest.raises(ConfigError, match=r"vad_b.yaml.*values.*no input named 'rate'"):
        model_spec_from_dict({**builtin, "values": {"sr": 16000, "rate": 2}}, "vad_b.yaml")
    path = odd_models.voice_activity(tmp_path / "vad.onnx")
    onnx_yaml = {"name": "vad", "source": "onnx", "onnx_path": str(path), "values": {"sr": 16000}}
    from edgebench.models.precision import resolved_spec

    resolved = resolved_spec(model_spec_from_dict(onnx_yaml, "vad.yaml"))
    assert [d.value for d in resolved.inputs] == [None, None, 16000]


def test_two_values_are_two_configs_and_no_value_keeps_the_old_hash():
    base = dict(model="vad", backend="ort", precision="fp32", batch=1, placements=("cpu",))
    plain = RunConfig(**base)
    k16, k8 = RunConfig(**base, input_values=(("sr", 16000),)), RunConfig(**base, input_values=(("sr", 8000),))
    assert len({plain.config_hash(), k16.config_hash(), k8.config_hash()}) == 3
    assert "input_values" not in plain.to_dict() or plain.to_dict()["input_values"] == {}
    assert k16.label().endswith("/sr=16000")
    import hashlib
    import json

    old = {k: v for k, v in plain.to_dict().items()
           if k not in ("input_values", "power_mode", "rate_hz", "slo_ms", "gpu_sharing", "arrival", "slo_horizon_s",
                         "workload")}  # fields added later, left out of the hash at their defaults
    assert plain.config_hash() == hashlib.sha256(json.dumps(old, sort_keys=True, default=str).encode()).hexdigest()[:16]


def test_a_states_dynamic_axis_error_offers_batch_axis():
    """A state [2, ?, 16] with unnamed dims: its fixed axis 0 was taken as the batch, so its dynamic axis 1 has no
    size; the line offers --batch-axis state:1 (a --shapes state:2xNx16 would feed it as is at every batch)."""
    graph = [GraphInput("input", "float32", (None, 64)), GraphInput("state", "float32", (2, None, 16))]
    with pytest.raises(InputError) as err:
        resolve(graph, shapes={"input": (1, 64)})
    text = str(err.value)
    assert "input 'state' axis 1 is dynamic" in text and "--batch-axis state:1" in text and "--shapes state:2xNx16" in text
    plan = resolve(graph, batch_axis={"state": 1})
    assert plan.inputs[1].batch_axis == 1 and plan.inputs[1].full_shape(3) == (2, 3, 16)
    with pytest.raises(InputError) as err:  # a plain dynamic axis (not a state's) is not offered --batch-axis
        resolve([GraphInput("ids", "float32", ("batch", "seq"))])
    assert "--batch-axis" not in str(err.value) and "--shapes ids:NxN" in str(err.value)
