"""Issue 20 end to end: ONNX files shaped like the ones nobody here exported (tests/odd_models.py: a GRU with its
state as an input, a scalar int64 sample rate, an opset-11 conv net, a -1 batch, a custom-domain node, two inputs
with different fixed batches), each through fp32 and int8 by `edgebench run --onnx` on ONNX Runtime CPU: real
processes, real results.csv, the row's status, shapes, notes and accuracy asserted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import odd_models
import pytest
from cli_runs import cli_env, one_row, run
from repo_paths import REPO

pytest.importorskip("onnxruntime", reason="running ONNX models needs onnxruntime")
pytest.importorskip("onnx", reason="the test graphs are written with onnx.helper")


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return cli_env(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """smoke with a short window and a tolerance no loaded CI box misses: these rows are about inputs and int8."""
    path = tmp_path_factory.mktemp("profiles") / "odd.yaml"
    path.write_text(f"name: odd\nextends: {REPO / 'profiles' / 'smoke.yaml'}\n"
                    "run: {warmup_s: 0.1, duration_s: 0.3, min_inferences: 5, stability_tolerance_pct: 10000, "
                    "accuracy_samples: 8}\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("odd")
    paths = {"opset11": odd_models.conv_net(out / "opset11.onnx", opset=11),
             "minus1": odd_models.conv_net(out / "minus1.onnx", batch=-1),
             "custom": odd_models.conv_net(out / "custom.onnx", custom_domain=True),
             "vad": odd_models.scalar_sample_rate(out / "vad.onnx"),
             "two": odd_models.two_fixed_batches(out / "two.onnx"),
             "voice": odd_models.voice_activity(out / "voice_activity.onnx"),
             "no_qdq": odd_models.nothing_to_quantize(out / "no_qdq.onnx"),
             "silero": odd_models.silero_like(out / "silero_like.onnx"),
             "ocr_old": odd_models.ocr_line_quantized(out / "common_old.onnx")}
    try:
        import torch  # noqa: F401
    except ImportError:
        return paths
    paths["gru"] = odd_models.gru_with_state(out / "gru.onnx")
    return paths


def ok_row(env: dict, profile: Path, out: Path, *args: str, fp32_exact: bool) -> dict:
    done = run(env, *args, "--device", str(profile), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    row = one_row(out)
    assert row["status"] == "ok", row["reason"]
    assert float(row["throughput_ips"]) > 0 and int(row["accuracy_samples"]) == 8
    cos = float(row["accuracy_cosine_min"])
    if fp32_exact:  # the fp32 row runs the reference's own file: any difference is a feeding/joining bug
        assert cos > 0.999999 and float(row["accuracy_max_abs_err"]) < 1e-4, row["accuracy_per_output"]
    else:
        assert 0.9 < cos <= 1.0, row["accuracy_per_output"]
    return row


def precisions():
    return pytest.mark.parametrize("precision", ["fp32", "int8"])


@precisions()
def test_gru_with_state_input_runs_every_batch_with_the_state_batch_on_axis_1(env, profile, files, tmp_path,
                                                                              precision):
    if "gru" not in files:
        pytest.skip("exporting the GRU needs torch")
    row = ok_row(env, profile, tmp_path, "--onnx", str(files["gru"]), "--batch", "2", "--precision", precision,
                 fp32_exact=precision == "fp32")
    assert row["input_shapes"] == "x:float32[2x5x8];state:float32[2x2x16]" and row["batch_note"] == ""
    assert row["accuracy_outputs"] == "logits;state_out"
    if precision == "int8":
        assert row["calibration_source"].startswith("synthetic (32 samples")


def test_gru_int8_calibrates_on_real_state_data(env, profile, files, tmp_path):
    """Stateful inputs: --data holds x [N, 5, 8] and the state [2, N, 16] (batch on its axis 1); calibration and
    accuracy both read it, and the console table says samples/s (not img/s)."""
    if "gru" not in files:
        pytest.skip("exporting the GRU needs torch")
    rng = np.random.default_rng(5)
    data = tmp_path / "speech.npz"
    np.savez(data, x=rng.standard_normal((12, 5, 8)).astype(np.float32),
             state=(0.1 * rng.standard_normal((2, 12, 16))).astype(np.float32))
    done = run(env, "--onnx", str(files["gru"]), "--data", str(data), "--precision", "int8", "--batch", "4",
               "--device", str(profile), "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    row = one_row(tmp_path / "runs")
    assert row["status"] == "ok", row["reason"]
    assert row["calibration_source"].startswith(f"{data} (12 samples") and row["accuracy_samples"] == "8"
    assert "samples/s" in done.stdout and "img/s" not in done.stdout
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((12, 5, 8), np.float32), state=np.zeros((12, 2, 16), np.float32))
    done = run(env, "--onnx", str(files["gru"]), "--data", str(bad), "--out", str(tmp_path / "bad-runs"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "input 'state' array has shape [12, 2, 16], expected [2, N, 16]" in done.stderr


@precisions()
def test_scalar_sample_rate_is_fed_as_a_scalar_at_every_batch(env, profile, files, tmp_path, precision):
    data = tmp_path / "audio.npz"
    np.savez(data, audio=np.random.default_rng(1).standard_normal((10, 32)).astype(np.float32),
             sr=np.array(16000, np.int64))
    row = ok_row(env, profile, tmp_path / "runs", "--onnx", str(files["vad"]), "--data", str(data), "--batch", "3",
                 "--precision", precision, fp32_exact=precision == "fp32")
    assert row["input_shapes"] == "audio:float32[3x32];sr:int64[]=16000"  # the data's sr, in timing feeds too
    assert row["batch_note"] == "no batch axis (fed as is): sr"


@precisions()
def test_opset_11_conv_net_int8_says_it_was_upgraded(env, profile, files, tmp_path, precision):
    row = ok_row(env, profile, tmp_path, "--onnx", str(files["opset11"]), "--batch", "2", "--precision", precision,
                 fp32_exact=precision == "fp32")
    if precision == "int8":
        assert row["calibration_source"].endswith("; opset 11 upgraded to 13 (onnx version converter) for "
                                                  "per-channel Q/DQ")
    else:
        assert row["calibration_source"] == ""


@precisions()
@pytest.mark.parametrize("model", ["minus1", "custom"])
def test_minus_one_batch_and_custom_domain_run_fp32_and_int8(env, profile, files, tmp_path, model, precision):
    row = ok_row(env, profile, tmp_path, "--onnx", str(files[model]), "--batch", "3", "--precision", precision,
                 fp32_exact=precision == "fp32")
    assert row["input_shapes"] == "pixels:float32[3x3x12x12]" and row["batch"] == "3"


@precisions()
def test_two_inputs_with_different_fixed_batches(env, profile, files, tmp_path, precision):
    row = ok_row(env, profile, tmp_path, "--onnx", str(files["two"]), "--precision", precision,
                 fp32_exact=precision == "fp32")
    assert row["input_shapes"] == "a:float32[1x16];b:float32[4x16]" and row["batch"] == "1"
    assert row["batch_note"] == ("the model's graph fixes the batch at 1; it runs at batch 1 only; "
                                 "no batch axis (fed as is): b")


@pytest.mark.parametrize(("args", "words"), [
    (["--shapes", "a:2x16"], "input 'a' has a fixed batch of 1 in the graph (axis 0 of [1, 16]), the shape given has 2"),
    (["--shapes", "b:2x16"], "input 'b' axis 0 is 4 in the graph, the shape given says 2"),
    (["--batch-axis", "b:0"], "inputs fix different batches on their batch axes: 'a' 1, 'b' 4"),
    (["--batch-axis", "c:0"], "--batch-axis: ", ),
    (["--batch-axis", "b:one"], "input 'b': batch axis 'one' is not an integer or 'none'"),
])
def test_contradicting_shapes_and_bad_batch_axes_are_refused_before_anything_runs(env, files, tmp_path, args, words):
    done = run(env, "--onnx", str(files["two"]), *args, "--out", str(tmp_path / "runs"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr
    assert not (tmp_path / "runs").exists()


def test_batch_axis_option_makes_a_fixed_state_per_model(env, profile, files, tmp_path):
    """--batch-axis NAME:none on a graph whose symbolic batch would otherwise reach the input: the input keeps the
    shape --shapes gives at every batch."""
    if "gru" not in files:
        pytest.skip("exporting the GRU needs torch")
    done = run(env, "--onnx", str(files["gru"]), "--batch-axis", "state:none", "--shapes", "state:2x2x16",
               "--batch", "2", "--device", str(profile), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    row = one_row(tmp_path)
    assert row["status"] == "ok" and row["input_shapes"] == "x:float32[2x5x8];state:float32[2x2x16]"
    assert row["batch_note"] == "no batch axis (fed as is): state"


# ------------------------------------------------------------------ issue 28: fixed values, int8 that quantized nothing

@precisions()
def test_voice_activity_runs_its_16khz_path_with_value_sr_16000(env, profile, files, tmp_path, precision):
    """input [B, 64], state [2, B, 16], scalar int64 sr selecting the branch: with --value sr:16000 every feed
    (timing, int8 calibration, accuracy and its FP32 reference) takes the 16 kHz path; any other sr fails in ORT.
    The probability output [B, 1] has no cosine (one value per sample); stateN has."""
    row = ok_row(env, profile, tmp_path, "--onnx", str(files["voice"]), "--value", "sr:16000", "--batch", "2",
                 "--precision", precision, fp32_exact=precision == "fp32")
    assert row["input_shapes"] == "input:float32[2x64];state:float32[2x2x16];sr:int64[]=16000"
    assert row["batch_note"] == "no batch axis (fed as is): sr" and row["precision"] == precision
    assert row["accuracy_outputs"] == "output;stateN"
    per_output = row["accuracy_per_output"]
    assert per_output.startswith("output: max_abs=") and "(no cosine: one value per sample" in per_output
    assert "stateN: cos_min=" in per_output
    if precision == "int8":
        assert row["calibration_source"].startswith("synthetic (32 samples")
        assert float(row["accuracy_max_abs_err"]) > 0  # the head was quantized: not the fp32 graph


def test_voice_activity_without_a_value_is_refused_in_one_line_and_random_sr_fails(env, profile, files, tmp_path):
    done = run(env, "--onnx", str(files["voice"]), "--out", str(tmp_path / "runs"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "input 'sr' is a scalar int64" in line and "--value sr:V" in line and "--vocab sr:N" in line
    assert not (tmp_path / "runs").exists()
    done = run(env, "--onnx", str(files["voice"]), "--vocab", "sr:16001", "--device", str(profile),
               "--out", str(tmp_path / "random"))
    row = one_row(tmp_path / "random")  # sr drawn at random: the 8 kHz path, which a 64-sample chunk breaks
    assert row["status"] == "failed" and "Reshape" in row["reason"]
    assert ("; scalar input 'sr' was drawn at random from [0, 16001): if it selects a path (a sample rate), fix it "
            "with --value sr:V" in row["reason"])


def test_int8_that_quantized_nothing_is_skipped_with_why(env, profile, files, tmp_path):
    """Sin/Div/Tanh: ONNX Runtime's QDQ quantizer has nothing to quantize; the 'int8' file is the fp32 graph (its
    sidecar counts 0 Q/DQ nodes) and the row says so instead of a silent int8 label."""
    import json

    done = run(env, "--onnx", str(files["no_qdq"]), "--precision", "int8", "--batch", "2", "--device", str(profile),
               "--out", str(tmp_path))
    assert "Traceback" not in done.stderr
    row = one_row(tmp_path)
    assert row["status"] == "skipped" and row["throughput_ips"] == ""
    assert row["reason"].startswith("nothing quantized (0 Q/DQ nodes): ") and "ops: Sin, Div, Tanh" in row["reason"]
    assert "measure fp32" in row["reason"]
    cache = Path(env["EDGEBENCH_CACHE"])
    sidecars = [json.loads(p.read_text()) for p in cache.rglob("*.json") if "no_qdq" in p.read_text()]
    assert {"QuantizeLinear": 0, "DequantizeLinear": 0} in [s.get("qdq_nodes") for s in sidecars]


# ------------------------------------------------------------------ issue 37: one refusal, a file already quantized

def test_silero_signature_is_refused_once_with_a_command_line_that_runs(env, profile, files, tmp_path):
    """input [?, ?], state [2, ?, 16], sr []: one refusal names all three, and the command line it ends with (the
    user's own options kept) runs as it is: ok, the 16 kHz branch, the state's batch on axis 1."""
    import shlex

    done = run(env, "--onnx", str(files["silero"]), "--device", str(profile), "--out", str(tmp_path / "runs"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "3 inputs need more before it can run" in line
    for words in ("input 'input' axis 1 is dynamic", "input 'state' axis 1", "input 'sr' is a scalar int64"):
        assert words in line
    head, _, command = line.partition("with these it ran (one inference on ONNX Runtime CPU): ")
    argv = shlex.split(command)
    assert argv[:2] == ["edgebench", "run"] and argv[-6:] == ["--shapes", "input:1x512", "--batch-axis", "state:1",
                                                              "--value", "sr:16000"]
    assert not (tmp_path / "runs").exists()
    done = run(env, *argv[2:])
    assert done.returncode == 0, done.stdout + done.stderr
    row = one_row(tmp_path / "runs")
    assert row["status"] == "ok", row["reason"]
    assert row["input_shapes"] == "input:float32[1x512];state:float32[2x1x16];sr:int64[]=16000"


def test_an_ocr_line_is_offered_a_width_not_a_batch_axis(env, files, tmp_path):
    done = run(env, "--onnx", str(files["ocr_old"]), "--out", str(tmp_path / "runs"))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "state" not in line and "--batch-axis" not in line and "(an image, NCHW with 1 channel: its width)" in line
    assert line.endswith(f"--onnx {files['ocr_old']} --out {tmp_path / 'runs'} --shapes input1:1x1x64x256")


@precisions()
def test_a_file_already_quantized_runs_as_given_in_fp32_and_int8_says_why_not(env, profile, files, tmp_path,
                                                                              precision):
    done = run(env, "--onnx", str(files["ocr_old"]), "--shapes", "input1:1x1x64x32", "--precision", precision,
               "--device", str(profile), "--out", str(tmp_path))
    assert "Traceback" not in done.stderr
    row = one_row(tmp_path)
    ops = "2 DynamicQuantizeLinear, 1 ConvInteger, 1 DynamicQuantizeLSTM, 1 MatMulInteger"
    if precision == "fp32":
        assert done.returncode == 0 and row["status"] == "ok", row["reason"]
        assert f"the file is already quantized ({ops}): fp32 here means the file as given" in row["reason"]
        assert "fp32 here means the file as given" in done.stdout  # the console's row line
    else:
        assert row["status"] == "skipped" and row["throughput_ips"] == ""
        assert row["reason"].startswith(f"the file is already quantized ({ops}): edgebench's int8 calibrates")
        assert not list((Path(env["EDGEBENCH_CACHE"])).rglob("common_old.int8.onnx"))  # never quantized twice
