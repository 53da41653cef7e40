"""Any ONNX a user brings, end to end on the CPU through `edgebench run`: several named inputs (int64 token ids
and masks), several outputs, symbolic H/W given --shapes, a fixed batch of 1; real export, real ONNX Runtime,
real instance processes, real results.csv. Plus the model specs for a transformer, a ViT and a detector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli_env, one_row, run
from odd_models import conv_classifier
from repo_paths import REPO

pytest.importorskip("onnxruntime", reason="running ONNX models needs onnxruntime")


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return cli_env(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """smoke, with a short window, few required inferences and a stability tolerance no loaded 2-core CI box can
    miss: these tests are about inputs and accuracy, so the row must be `ok`, not `invalid` for timing noise."""
    path = tmp_path_factory.mktemp("profiles") / "anyonnx.yaml"
    path.write_text(f"name: anyonnx\nextends: {REPO / 'profiles' / 'smoke.yaml'}\n"
                    "run: {warmup_s: 0.1, duration_s: 0.3, min_inferences: 5, stability_tolerance_pct: 10000, "
                    "accuracy_samples: 8}\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """External ONNX files: bert_tiny and detector_tiny exported by edgebench; symbolic-H,W and fixed-batch-1
    classifiers written with onnx.helper (as a user's own exporter would)."""
    pytest.importorskip("torch", reason="exporting the transformer and the detector needs torch")
    from edgebench.models.artifacts import Artifacts
    from edgebench.models.export import export_onnx
    from edgebench.models.spec import load_model_spec

    out = tmp_path_factory.mktemp("onnx")
    cache = Artifacts(tmp_path_factory.mktemp("export-cache"))
    paths = {}
    for name, label in (("bert_tiny", "bert"), ("detector_tiny", "detector")):
        paths[label] = out / f"{label}.onnx"
        paths[label].write_bytes(export_onnx(load_model_spec(name), cache).path.read_bytes())
    paths["symhw"] = conv_classifier(out / "symhw.onnx", batch="batch")
    paths["fixed1"] = conv_classifier(out / "fixed1.onnx", batch=1)
    return paths


def assert_ok_with_accuracy(out: subprocess.CompletedProcess, runs: Path, outputs: str) -> dict:
    assert out.returncode == 0, out.stdout + out.stderr
    row = one_row(runs)
    assert row["status"] == "ok", row["reason"]
    assert row["accuracy_outputs"] == outputs
    for name in outputs.split(";"):
        assert f"{name}: cos_min=" in row["accuracy_per_output"]
    assert float(row["accuracy_cosine_min"]) > 0.9 and float(row["throughput_ips"]) > 0
    return row


# ------------------------------------------------------------------ the three shapes of model the issue names

@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_two_input_int64_transformer(env, profile, files, tmp_path, precision):
    out = run(env, "--onnx", str(files["bert"]), "--vocab", "1000", "--precision", precision, "--batch", "2",
              "--device", str(profile), "--out", str(tmp_path))
    row = assert_ok_with_accuracy(out, tmp_path, "last_hidden_state;logits")
    assert row["input_shapes"] == "input_ids:int64[2x16];attention_mask:int64[2x16]"
    assert row["accuracy_top1_agreement_pct"] != ""  # logits [N, 2] is a class-score vector ...
    assert "last_hidden_state: cos_min=" in row["accuracy_per_output"]
    assert "top1" not in row["accuracy_per_output"].split(";")[0]  # ... last_hidden_state [N, 16, 32] is not
    if precision == "fp32":
        assert float(row["accuracy_max_abs_err"]) == 0.0


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_multi_output_detector(env, profile, files, tmp_path, precision):
    out = run(env, "--onnx", str(files["detector"]), "--precision", precision, "--batch", "2",
              "--device", str(profile), "--out", str(tmp_path))
    row = assert_ok_with_accuracy(out, tmp_path, "boxes;scores;objectness")
    assert row["input_shapes"] == "images:float32[2x3x32x32]"
    assert row["accuracy_top1_agreement_pct"] == ""  # no output is a per-sample class vector
    if precision == "int8":
        assert 0 < float(row["accuracy_max_abs_err"]) < 1.0


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_symbolic_height_width_given_shapes(env, profile, files, tmp_path, precision):
    out = run(env, "--onnx", str(files["symhw"]), "--shapes", "pixels:4x3x24x40", "--precision", precision,
              "--device", str(profile), "--out", str(tmp_path))
    row = assert_ok_with_accuracy(out, tmp_path, "logits")
    assert row["batch"] == "4"  # no --batch: the batch the --shapes text gave
    assert row["input_shapes"] == "pixels:float32[4x3x24x40]"
    assert float(row["accuracy_top1_agreement_pct"]) >= 50.0 and row["batch_note"] == ""


def test_fixed_batch_1_model_keeps_its_measurement_and_accuracy(env, profile, files, tmp_path):
    """Issue 9: a graph fixed at batch 1 failed after its measurement, in the FP32 reference (all accuracy samples
    as one batch -> ORT InvalidArgument). Now the reference runs in chunks of 1 and the row is kept."""
    out = run(env, "--onnx", str(files["fixed1"]), "--shapes", "pixels:1x3x16x16", "--device", str(profile),
              "--out", str(tmp_path))
    row = assert_ok_with_accuracy(out, tmp_path, "logits")
    assert row["batch"] == "1" and row["accuracy_samples"] == "8"
    assert float(row["accuracy_top1_agreement_pct"]) == 100.0 and float(row["accuracy_max_abs_err"]) == 0.0
    assert "fixes the batch at 1" in row["batch_note"]


def test_accuracy_failure_after_the_window_keeps_the_row(files, tmp_path):
    """Whatever the reference runtime raises, the measured row stays; the reason says accuracy was not compared."""
    from edgebench.models.artifacts import Artifacts
    from edgebench.models.precision import onnx_spec
    from edgebench.pipeline.execute import accuracy_fields
    from edgebench.pipeline.model_cache import ModelCache

    spec = onnx_spec(str(files["fixed1"]), shapes="pixels:1x3x8x8")
    models = ModelCache(Artifacts(tmp_path), {}, onnx_specs={spec.name: spec})
    wrong = {"pixels": np.zeros((2, 3, 8, 8), np.float64)}  # float64: ORT rejects it (InvalidArgument)
    fields = accuracy_fields(spec, models, wrong, {"logits": np.zeros((2, 10))}, 0, "earlier reason")
    assert set(fields) == {"reason"}
    assert fields["reason"].startswith("earlier reason; accuracy not compared: ") and "InvalidArgument" in fields["reason"]


# ------------------------------------------------------------------ bad input: one line naming the input, nothing runs

@pytest.mark.parametrize(("args", "words"), [
    (["--shapes", "pixel:1x3x8x8"], ["no input named 'pixel'", "inputs: pixels"]),
    (["--shapes", "pixels:1x3x8"], ["input 'pixels' has rank 4", "rank 3"]),
    (["--shapes", "pixels:1x3x0x8"], ["input 'pixels'", "dim 0", ">= 1"]),
    (["--shapes", "pixels:1x3x-8x8"], ["input 'pixels'", "dim -8"]),
    (["--shapes", "pixels:1x3x99999999999x99999999999"], ["input 'pixels'", "cannot be allocated", "memory"]),
    ([], ["input 'pixels' axis 2 ('height') is dynamic", "--shapes pixels:"]),
])
def test_bad_shapes_are_one_line_and_nothing_runs(env, files, tmp_path, args, words):
    out = run(env, "--onnx", str(files["symhw"]), *args, "--out", str(tmp_path / "runs"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    for w in words:
        assert w in out.stderr
    assert not (tmp_path / "runs").exists()  # nothing ran, no run folder


def test_int_input_without_vocabulary_is_refused_or_taken_from_data(env, profile, files, tmp_path):
    out = run(env, "--onnx", str(files["bert"]), "--out", str(tmp_path / "runs"))
    assert out.returncode == 2 and "input 'input_ids' is int64 token ids and no vocabulary size" in out.stderr
    assert not (tmp_path / "runs").exists()
    data = tmp_path / "real.npz"  # real token ids: the vocabulary is taken from them (max id + 1)
    rng = np.random.default_rng(0)
    np.savez(data, input_ids=rng.integers(0, 500, (32, 16)), attention_mask=np.ones((32, 16), np.int64))
    out = run(env, "--onnx", str(files["bert"]), "--data", str(data), "--precision", "int8", "--batch", "2",
              "--device", str(profile), "--out", str(tmp_path / "runs"))
    assert_ok_with_accuracy(out, tmp_path / "runs", "last_hidden_state;logits")


# ------------------------------------------------------------------ model specs: transformer, ViT, detector

@pytest.mark.parametrize(("model", "backend", "precision", "outputs"), [
    ("bert_tiny", "ort", "int8", "last_hidden_state;logits"),
    ("bert_tiny", "torch", "fp32", "last_hidden_state;logits"),
    ("vit_tiny", "ort", "fp32", "output"),
    ("detector_tiny", "torch", "fp32", "boxes;scores;objectness"),
])
def test_model_specs_run_on_the_cpu(env, profile, tmp_path, model, backend, precision, outputs):
    pytest.importorskip("torch", reason="model specs are exported from torch")
    out = run(env, "--model", model, "--backend", backend, "--precision", precision, "--batch", "2",
              "--device", str(profile), "--out", str(tmp_path))
    row = assert_ok_with_accuracy(out, tmp_path, outputs)
    if backend == "torch":  # torch runs the spec's module; the reference is the FP32 ONNX of the same weights
        assert float(row["accuracy_max_abs_err"]) < 1e-3


@pytest.mark.parametrize("model", ["vit_tiny", "bert_tiny", "detector_tiny"])
def test_test_size_specs_export_with_parity_and_live_outputs(tmp_path, model):
    """Random init gives outputs worth comparing: not all zero (torchvision's ViT head starts at zeros)."""
    pytest.importorskip("torch", reason="export needs torch")
    from edgebench.models.artifacts import Artifacts
    from edgebench.models.export import export_onnx
    from edgebench.models.spec import load_model_spec

    spec = load_model_spec(model)
    parity = export_onnx(spec, Artifacts(tmp_path)).sidecar["parity"]
    assert parity["passed"] and parity["reference_max_abs"] > 1e-2, parity
    assert set(parity["max_abs_err_per_output"]) == set(spec.output_names)


def test_real_shape_specs_declare_their_inputs():
    from edgebench.models.spec import load_model_spec

    bert = load_model_spec("bert_base")
    assert [(d.name, d.dtype, d.shape, d.role, d.vocab) for d in bert.inputs] == [
        ("input_ids", "int64", (128,), "tokens", 30522), ("attention_mask", "int64", (128,), "mask", None)]
    assert bert.output_names == ("last_hidden_state", "logits") and bert.config["hidden"] == 768
    vit = load_model_spec("vit_b_16")
    assert (vit.arch, vit.first_input.shape, vit.inputs[0].role) == ("vit_b_16", (3, 224, 224), "image")
    ssd = load_model_spec("ssdlite320")
    assert ssd.output_names == ("bbox_regression", "cls_logits") and ssd.inputs[0].name == "images"


def test_int8_quantises_float_paths_only(tmp_path):
    """QDQ calibration feeds both int64 inputs; the token ids and the mask stay int64 graph inputs and no
    QuantizeLinear reads them (the embedding table, a float initializer, is what gets quantised)."""
    pytest.importorskip("torch", reason="exporting bert_tiny needs torch")
    import onnx

    from edgebench.models.artifacts import Artifacts
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import precision_artifact
    from edgebench.models.spec import load_model_spec

    spec = load_model_spec("bert_tiny")
    cache = Artifacts(tmp_path)
    art = precision_artifact(spec, export_onnx(spec, cache), "int8", cache, {"source": "synthetic", "samples": 8,
                                                                              "seed": 0})
    graph = onnx.load(art.onnx_path).graph
    assert {i.name: i.type.tensor_type.elem_type for i in graph.input} == {
        "input_ids": onnx.TensorProto.INT64, "attention_mask": onnx.TensorProto.INT64}
    q_inputs = {n.input[0] for n in graph.node if n.op_type == "QuantizeLinear"}
    assert not q_inputs & {"input_ids", "attention_mask"} and len(q_inputs) > 5
    record = art.sidecar["calibration"]
    assert record["inputs"]["input_ids"]["vocab"] == 1000 and record["inputs"]["attention_mask"]["role"] == "mask"


def test_profile_shapes_are_checked_before_anything_runs(env, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"name: bad\nextends: {REPO / 'profiles' / 'smoke.yaml'}\n"
                   "sweep: {models: [bert_tiny], shapes: {bert_tiny: 'input_ids:1x16,attention_mask:1x32'}}\n")
    out = subprocess.run([sys.executable, "-m", "edgebench", "bench", "--device", str(bad), "--dry-run"],
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "sweep.shapes.bert_tiny" in out.stderr and "'attention_mask' axis 1 is 16" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("model", ["ssdlite320", "vit_b_16", "bert_base"])
def test_real_shape_specs_export_with_parity(tmp_path, model):
    pytest.importorskip("torch", reason="export needs torch")
    from edgebench.models.artifacts import Artifacts
    from edgebench.models.export import export_onnx
    from edgebench.models.spec import load_model_spec

    art = export_onnx(load_model_spec(model), Artifacts(tmp_path))
    parity = art.sidecar["parity"]
    assert parity["passed"] and parity["reference_max_abs"] > 1e-3, parity  # outputs are not vanishing
    assert [o["name"] for o in art.sidecar["outputs"]] == list(load_model_spec(model).output_names)


def test_model_spec_input_errors_name_the_field(tmp_path):
    from edgebench.errors import ConfigError
    from edgebench.models.spec import model_spec_from_dict

    base = {"name": "m", "source": "builtin", "arch": "transformer_encoder",
            "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [16], "vocab": 9},
                       {"name": "attention_mask", "dtype": "int64", "shape": [16]}]}
    spec = model_spec_from_dict(base, "m.yaml")
    assert (spec.first_input.name, spec.first_input.shape, spec.first_input.dtype) == ("input_ids", (16,), "int64")
    for change, field, words in [
        ({"dtype": "int8"}, "inputs[1].dtype", "'int8' is not one of"),
        ({"shape": [0]}, "inputs[1].shape", "every dim must be >= 1"),
        ({"name": "input_ids"}, "inputs[1].name", "listed twice"),
        ({"role": "tokens"}, "inputs[1].vocab", "give vocab"),
    ]:
        bad = {**base, "inputs": [base["inputs"][0], {**base["inputs"][1], **change}]}
        with pytest.raises(ConfigError) as err:
            model_spec_from_dict(bad, "m.yaml")
        assert f"m.yaml: field '{field}'" in str(err.value) and words in str(err.value)


def test_onnx_model_spec_takes_shapes_from_the_spec_or_the_profile(files):
    from edgebench.errors import InputError
    from edgebench.models.precision import resolved_spec
    from edgebench.models.spec import model_spec_from_dict

    spec = model_spec_from_dict({"name": "hw", "source": "onnx", "onnx_path": str(files["symhw"]),
                                 "shapes": "pixels:1x3x48x64"}, "hw.yaml")
    assert resolved_spec(spec).inputs[0].shape == (3, 48, 64)
    assert resolved_spec(spec, "pixels:1x3x20x30", "sweep.shapes.hw").inputs[0].shape == (3, 20, 30)
    wrong = model_spec_from_dict({"name": "hw", "source": "onnx", "onnx_path": str(files["symhw"]),
                                  "shapes": "image:1x3x8x8"}, "hw.yaml")
    with pytest.raises(InputError, match="hw.yaml: shapes: .*no input named 'image'"):
        resolved_spec(wrong)


# ------------------------------------------------------------------ nothing lands in the user's folder (issue 37)

def _fpn_neck(path: Path, *, noisy: bool = False) -> Path:
    """images [batch, 3, height, width] -> a detector neck's pattern: a full-resolution conv added to a stride-2 conv
    upsampled x2. Symbolic shape inference cannot prove ceil(h/2)*2 == h, gives up, and (ORT 1.32) saves
    sym_shape_infer_temp.onnx plus its weights as a <uuid>.data file (each conv's weights > 1 KiB) in the cwd, as
    yolov8n with symbolic H/W does; the quantizer then warns "Please consider to run pre-processing". `noisy`: also
    the full conv's bias from a Constant node (the quantizer warns "Expected bias ... to be an initializer") and the
    output declared 8x8 (ORT's sessions warn VerifyOutputSizes when fed 32x32)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.3, "w1"),
             numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.3, "w2"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "height", "width"])
    y = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 16] + ([8, 8] if noisy else [None, None]))
    bias = [helper.make_node("Constant", [], ["b1"], value=numpy_helper.from_array(np.zeros(16, np.float32)))]
    nodes = [*(bias if noisy else []),
             helper.make_node("Conv", ["images", "w1", *(["b1"] if noisy else [])], ["full"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["images", "w2"], ["half"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Resize", ["half", "", "scales"], ["up"], mode="nearest"),
             helper.make_node("Add", ["full", "up"], ["features"])]
    model = helper.make_model(helper.make_graph(nodes, "neck", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def run_in(folder: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    """`python -m edgebench run ARGS` with `folder` as the current directory."""
    return subprocess.run([sys.executable, "-m", "edgebench", "run", *args], capture_output=True, text=True,
                          env=env, cwd=folder, timeout=600)


def test_int8_from_a_read_only_folder_leaves_it_as_it_was(profile, tmp_path):
    """`edgebench run --onnx m.onnx --precision int8` from the user's folder: ONNX Runtime's pre-processing gives up
    on the graph's shapes and its temp files go to edgebench's own temporary folder, not the cwd (read-only here;
    root can still write there, so its listing is compared too)."""
    model = _fpn_neck(tmp_path / "neck.onnx")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "notes.txt").write_text("the user's own file\n")
    cwd.chmod(0o555)
    try:
        out = run_in(cwd, cli_env(tmp_path / "cache"), "--onnx", str(model), "--shapes", "images:1x3x32x32",
                     "--precision", "int8", "--device", str(profile), "--out", str(tmp_path / "runs"))
        listing = sorted(os.listdir(cwd))
    finally:
        cwd.chmod(0o755)
    assert out.returncode == 0, out.stdout + out.stderr
    assert listing == ["notes.txt"]
    assert one_row(tmp_path / "runs")["status"] == "ok"
    (sidecar,) = (tmp_path / "cache").glob("int8/*/neck.int8.onnx.json")
    pre = json.loads(sidecar.read_text())["pre_process"]  # the step that wrote into the cwd did run, and gave up
    assert pre == "skipped: Exception: Incomplete symbolic shape inference"


NOISE = ("Please consider", "pre-processing", "Expected bias", "VerifyOutputSizes", "WARNING:root")


def test_onnx_runtimes_own_warnings_stay_off_the_console(profile, tmp_path):
    """Quantizing to int8 through ORT: its Python warnings (pre-processing advice, a bias that is no initializer) and
    its C++ warnings (VerifyOutputSizes of the calibration sessions) are in the artifact's sidecar (every row's
    row.json carries it), not on the console (issue 37)."""
    model = _fpn_neck(tmp_path / "noisy.onnx", noisy=True)
    out = run_in(tmp_path, cli_env(tmp_path / "cache"), "--onnx", str(model), "--shapes", "images:1x3x32x32",
                 "--precision", "int8", "--device", str(profile), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stdout + out.stderr
    console = out.stdout + out.stderr
    assert not [word for word in NOISE if word in console], console
    (row_json,) = (tmp_path / "runs").glob("*/rows/*/row.json")
    log = "\n".join(json.loads(row_json.read_text())["artifact"]["sidecar"]["framework_log"])
    assert "Please consider to run pre-processing" in log and "Expected bias 'b1' to be an initializer" in log
    if hasattr(pytest.importorskip("onnxruntime"), "set_default_logger_callback"):  # else dropped, not kept
        assert "VerifyOutputSizes" in log
        # the int8 model itself warns at every run (its declared output shape is wrong): the probe's session, which
        # ran the accuracy inputs before the instances, kept those lines for the row; the instances' went nowhere
        probe_log = "\n".join(json.loads(row_json.read_text())["probe"]["framework_log"])
        assert "VerifyOutputSizes" in probe_log and "for output features" in probe_log, probe_log
