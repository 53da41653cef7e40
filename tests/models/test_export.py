"""Model specs, torch -> ONNX export (checker, dynamic batch, parity, cache), ONNX inspection and its errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from edgebench.errors import ModelError
from edgebench.models import in_child
from edgebench.models.artifacts import Artifacts, sha256_file
from edgebench.models.inputs import make_input
from edgebench.models.spec import list_models, load_model_spec

torch = pytest.importorskip("torch", reason="export tests need torch (pip install 'edgebench[export]')")
onnx = pytest.importorskip("onnx", reason="export tests need onnx")
ort = pytest.importorskip("onnxruntime", reason="export tests need onnxruntime")

from edgebench.models import export  # noqa: E402
from edgebench.models.builtin import build_builtin  # noqa: E402
from edgebench.models.export import (  # noqa: E402
    build_torch_model,
    export_onnx,
    inspect_onnx,
    load_external_onnx,
)

TORCHVISION_MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0")


def _ort_run(path: Path | str, x: np.ndarray, input_name: str = "input") -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {input_name: x})[0]


@pytest.fixture(scope="module")
def fixed_batch_onnx(artifact_cache: Artifacts):
    """tiny_cnn exported with a fixed batch of 1."""
    spec = dataclasses.replace(load_model_spec("tiny_cnn"), dynamic_batch=False)
    return export_onnx(spec, artifact_cache, seed=0)


# ------------------------------------------------------------------ model specs

def test_every_model_yaml_loads_and_names_a_real_constructor():
    import torchvision

    names = list_models()
    assert set(TORCHVISION_MODELS) | {"tiny_cnn"} <= set(names)
    for name in names:
        spec = load_model_spec(name)
        assert spec.name == name
        assert spec.description and "\n" not in spec.description
        if spec.source == "torchvision":
            assert callable(getattr(torchvision.models, spec.arch)), spec.arch
        if spec.source == "torchvision" and not spec.config:  # test-size variants (vit_tiny) set a config
            assert spec.first_input.shape == (3, 224, 224) and spec.num_classes == 1000
            assert spec.opset == 17 and spec.dynamic_batch
            assert (spec.first_input.name, spec.output_name) == ("input", "output")
    tiny = load_model_spec("tiny_cnn")
    assert (tiny.source, tiny.arch, tiny.first_input.shape, tiny.num_classes) == ("builtin", "tiny_cnn", (3, 32, 32), 10)


def test_builtin_init_is_deterministic_per_seed():
    def weights(seed: int) -> np.ndarray:
        torch.manual_seed(seed)
        model = build_builtin("tiny_cnn", 10)
        return torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()

    assert np.array_equal(weights(3), weights(3))
    assert not np.array_equal(weights(3), weights(4))
    torch.manual_seed(0)
    out = build_builtin("tiny_cnn", 7).eval()(torch.zeros(2, 3, 32, 32))
    assert tuple(out.shape) == (2, 7)


def test_unknown_architectures_raise_model_error():
    with pytest.raises(ModelError, match="no_such_net"):
        build_builtin("no_such_net", 10)
    spec = dataclasses.replace(load_model_spec("resnet18"), arch="no_such_net")
    with pytest.raises(ModelError, match="no_such_net"):
        build_torch_model(spec)


def test_random_init_gives_unit_scale_logits():
    """BatchNorm re-estimation keeps random-init logits far from zero (FP16 would flush ~1e-15 to 0)."""
    spec = load_model_spec("tiny_cnn")
    model = build_torch_model(spec, seed=0)
    assert not model.training
    with torch.no_grad():
        out = model(torch.from_numpy(make_input((4, 3, 32, 32), "float32", 1)))
    assert 1e-2 < float(out.abs().max()) < 1e3


# ------------------------------------------------------------------ export

def test_tiny_export_is_checked_self_contained_and_dynamic(tiny_onnx):
    proto = onnx.load(str(tiny_onnx.path))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [("", 17)]
    assert all(not t.external_data for t in proto.graph.initializer)
    assert sorted(p.name for p in tiny_onnx.path.parent.iterdir()) == ["tiny_cnn.onnx", "tiny_cnn.onnx.json"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"

    x = make_input((5, 3, 32, 32), "float32", 7)
    out5 = _ort_run(tiny_onnx.path, x)
    out1 = _ort_run(tiny_onnx.path, x[:1])
    assert out5.shape == (5, 10) and out1.shape == (1, 10)
    np.testing.assert_allclose(out1[0], out5[0], rtol=1e-5, atol=1e-6)


def test_tiny_export_sidecar_records_parity_and_provenance(tiny_onnx):
    sc = tiny_onnx.sidecar
    assert sc["parity"]["passed"] is True
    assert sc["parity"]["atol"] == 1e-3
    assert 0.0 <= sc["parity"]["max_abs_err"] < 1e-3
    assert sc["parity"]["batch"] == 2
    assert sc["versions"]["torch"] == torch.__version__ and sc["versions"]["onnx"] == onnx.__version__
    assert sc["opset"] == 17 and sc["exporter"] == "torchscript"
    assert sc["weights"] == "random-init" and sc["weights_sha256"] is None
    assert sc["input"] == {"name": "input", "shape": ["batch", 3, 32, 32], "dtype": "float32"}
    assert sc["output"] == {"name": "output", "shape": ["batch", 10]}
    assert sc["spec"]["name"] == "tiny_cnn" and sc["export_s"] >= 0
    assert sc["sha256"] == sha256_file(tiny_onnx.path)


def test_export_matches_an_independently_built_torch_model(tiny_onnx):
    spec = load_model_spec("tiny_cnn")
    x = make_input((3, 3, 32, 32), "float32", 11)
    with torch.no_grad():
        ref = build_torch_model(spec, seed=0)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(_ort_run(tiny_onnx.path, x), ref, atol=spec.parity_atol, rtol=0)


def test_rerun_reuses_the_cache_and_seed_changes_the_model(tiny_onnx, artifact_cache):
    mtime = tiny_onnx.path.stat().st_mtime_ns
    again = export_onnx(load_model_spec("tiny_cnn"), artifact_cache, seed=0)
    assert again.reused is True
    assert again.path == tiny_onnx.path and again.sha256 == tiny_onnx.sha256
    assert again.path.stat().st_mtime_ns == mtime

    other = export_onnx(load_model_spec("tiny_cnn"), artifact_cache, seed=1)
    assert other.reused is False
    assert other.path != tiny_onnx.path and other.sha256 != tiny_onnx.sha256


def test_dynamo_exporter_for_opset_18(tmp_path):
    spec = dataclasses.replace(load_model_spec("tiny_cnn"), opset=18)
    art = export_onnx(spec, Artifacts(tmp_path), seed=0)
    assert art.sidecar["exporter"] == "dynamo" and art.sidecar["opset"] == 18
    assert inspect_onnx(art.path).dynamic_batch
    assert art.sidecar["parity"]["max_abs_err"] < spec.parity_atol
    assert _ort_run(art.path, make_input((3, 3, 32, 32), "float32", 0)).shape == (3, 10)


def test_parity_failure_raises_and_caches_nothing(tmp_path, monkeypatch):
    """An exporter that writes the wrong model (here: another seed's weights) is caught by parity."""
    real = export._run_exporter

    def wrong_model(spec, model, example, exporter, out):
        real(spec, build_torch_model(spec, seed=99), example, exporter, out)

    monkeypatch.setattr(export, "_run_exporter", wrong_model)
    monkeypatch.setattr(in_child, "IN_CHILD", False)  # the fault is injected here, not in an export process
    with pytest.raises(ModelError, match=r"tiny_cnn: ONNX output differs from torch .*parity_atol 0.001"):
        export_onnx(load_model_spec("tiny_cnn"), Artifacts(tmp_path), seed=0)
    assert not list(tmp_path.rglob("*.onnx")) and not list(tmp_path.rglob("*.json"))


def test_weights_file_is_loaded_and_recorded(tmp_path):
    spec0 = load_model_spec("tiny_cnn")
    source = build_torch_model(spec0, seed=5)
    weights = tmp_path / "tiny.pth"
    torch.save(source.state_dict(), weights)
    spec = dataclasses.replace(spec0, weights=str(weights))
    art = export_onnx(spec, Artifacts(tmp_path / "cache"), seed=0)
    assert art.sidecar["weights"] == "tiny.pth"
    assert art.sidecar["weights_sha256"] == sha256_file(weights)
    x = make_input((2, 3, 32, 32), "float32", 3)
    with torch.no_grad():
        ref = source(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(_ort_run(art.path, x), ref, atol=1e-4, rtol=0)


def test_bad_weights_files_name_the_file(tmp_path):
    garbage = tmp_path / "garbage.pth"
    garbage.write_text("not a checkpoint")
    with pytest.raises(ModelError, match="garbage.pth: cannot load weights"):
        build_torch_model(dataclasses.replace(load_model_spec("tiny_cnn"), weights=str(garbage)))
    wrong = tmp_path / "five_classes.pth"
    torch.save(build_builtin("tiny_cnn", 5).state_dict(), wrong)
    with pytest.raises(ModelError, match="five_classes.pth: weights do not fit the model"):
        build_torch_model(dataclasses.replace(load_model_spec("tiny_cnn"), weights=str(wrong)))


# ------------------------------------------------------------------ inspection and its errors

def test_inspect_onnx_reads_the_input(tiny_onnx, fixed_batch_onnx):
    info = inspect_onnx(tiny_onnx.path)
    assert info.first_input.name == "input" and info.sample_dims == (3, 32, 32)
    assert info.batch == "batch" and info.dynamic_batch
    assert info.first_input.dtype == "float32" and info.output_names == ("output",) and info.opset == 17
    fixed = inspect_onnx(fixed_batch_onnx.path)
    assert fixed.batch == 1 and not fixed.dynamic_batch and fixed.sample_dims == (3, 32, 32)


def _bad_files(tmp_path: Path, real: Path) -> dict[str, Path]:
    data = real.read_bytes()
    files = {
        "truncated": tmp_path / "truncated.onnx",
        "corrupt": tmp_path / "corrupt.onnx",
        "text": tmp_path / "notes.txt",
        "empty": tmp_path / "empty.onnx",
    }
    files["truncated"].write_bytes(data[: len(data) // 2])
    files["corrupt"].write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    files["text"].write_text("name: resnet18\nthis is a YAML file, not a model\n")
    files["empty"].write_bytes(b"")
    return files


@pytest.mark.parametrize("kind", ["truncated", "corrupt", "text", "empty"])
def test_invalid_onnx_files_raise_model_error_with_path(tmp_path, tiny_onnx, kind):
    path = _bad_files(tmp_path, tiny_onnx.path)[kind]
    with pytest.raises(ModelError) as err:
        load_external_onnx(path, expected_shape=(3, 32, 32), batch=1)
    assert str(err.value).startswith(f"{path}: not a valid ONNX model (")
    assert "\n" not in str(err.value)


def test_missing_onnx_file(tmp_path):
    with pytest.raises(ModelError, match=r"missing\.onnx: no such ONNX file"):
        inspect_onnx(tmp_path / "missing.onnx")


def test_shape_mismatch_names_path_input_and_both_shapes(tiny_onnx):
    with pytest.raises(ModelError) as err:
        load_external_onnx(tiny_onnx.path, expected_shape=(3, 224, 224), batch=None)
    msg = str(err.value)
    assert str(tiny_onnx.path) in msg and "'input'" in msg
    assert "[3, 32, 32]" in msg and "[3, 224, 224]" in msg
    assert load_external_onnx(tiny_onnx.path, expected_shape=(3, 32, 32), batch=64).batch == "batch"


def test_fixed_batch_contradicting_requested_batch(fixed_batch_onnx):
    path = fixed_batch_onnx.path
    assert load_external_onnx(path, expected_shape=(3, 32, 32), batch=1).batch == 1
    with pytest.raises(ModelError) as err:
        load_external_onnx(path, expected_shape=(3, 32, 32), batch=4)
    msg = str(err.value)
    assert str(path) in msg and "'input'" in msg
    assert "fixed batch of 1" in msg and "[1, 3, 32, 32]" in msg and "[4, 3, 32, 32]" in msg


def test_external_onnx_is_copied_into_the_cache(tmp_path, tiny_onnx):
    from edgebench.models.precision import onnx_spec

    src = tmp_path / "external.onnx"
    src.write_bytes(tiny_onnx.path.read_bytes())
    spec = onnx_spec(str(src))
    cache = Artifacts(tmp_path / "cache")
    art = export_onnx(spec, cache)
    assert art.path != src and art.path.is_relative_to(tmp_path / "cache")
    assert art.sidecar["source_sha256"] == sha256_file(src) and art.sidecar["parity"]["passed"] is None
    x = make_input((2, 3, 32, 32), "float32", 0)
    np.testing.assert_array_equal(_ort_run(art.path, x), _ort_run(src, x))
    assert export_onnx(spec, cache).reused is True


# ------------------------------------------------------------------ real torchvision model

@pytest.mark.slow
def test_resnet18_export_parity_and_int8(tmp_path):
    from edgebench.models.precision import precision_artifact

    spec = load_model_spec("resnet18")
    cache = Artifacts(tmp_path)
    fp32 = export_onnx(spec, cache, seed=0)
    assert fp32.sidecar["parity"]["passed"] and fp32.sidecar["parity"]["max_abs_err"] < spec.parity_atol
    assert inspect_onnx(fp32.path).sample_dims == (3, 224, 224)

    int8 = precision_artifact(spec, fp32, "int8", cache, {"source": "synthetic", "samples": 16, "seed": 0})
    ops = [n.op_type for n in onnx.load(int8.onnx_path).graph.node]
    assert ops.count("QuantizeLinear") >= 20 and ops.count("DequantizeLinear") >= 40
    x = make_input((4, 3, 224, 224), "float32", 1)
    ref, got = _ort_run(fp32.path, x), _ort_run(int8.onnx_path, x)
    assert got.shape == (4, 1000) and np.isfinite(got).all()
    cos = (ref * got).sum(1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
    assert cos.min() > 0.95, cos


# ------------------------------------------------------------------ model names stay inside models/ and the cache

@pytest.mark.parametrize("name", ["../../somewhere/x", "../models/tiny_cnn", "/etc/passwd", ".hidden", "a/b", "x y"])
def test_export_refuses_model_names_that_leave_the_model_folder(tmp_path, name):
    import subprocess
    import sys

    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    (tmp_path / "somewhere").mkdir()
    (tmp_path / "somewhere" / "x.yaml").write_text("name: x\nsource: builtin\narch: tiny_cnn\ninput_shape: [3, 8, 8]\n")
    cache = tmp_path / "cache"
    proc = subprocess.run([sys.executable, "-m", "edgebench", "--cache", str(cache), "export", "--model", name],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"edgebench: error: model {name!r}: not a model name: letters, digits and _ . + - only, "
                           "no '/' or '..' (a name is models/<name>.yaml; an ONNX file elsewhere is --onnx PATH)\n")
    assert not cache.exists()  # nothing created, inside the cache or outside it
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "somewhere", "x.yaml"]


def test_artifact_cache_paths_never_leave_the_cache(tmp_path):
    from edgebench.errors import EdgebenchError

    cache = Artifacts(tmp_path)
    assert cache.path_for("onnx", {"a": 1}, "m.onnx").parent.parent == tmp_path / "onnx"
    for kind, filename in (("onnx", "../../x.onnx"), ("..", "m.onnx"), ("onnx", "/etc/x"), ("onnx", "..")):
        with pytest.raises(EdgebenchError, match="is not a plain file name; refused"):
            cache.path_for(kind, {"a": 1}, filename)


# ------------------------------------------------------------------ a cached model costs the harness no framework

CACHED_EXPORT = """
import sys
from edgebench.models.artifacts import Artifacts
from edgebench.models.export import export_onnx
from edgebench.models.spec import load_model_spec
art = export_onnx(load_model_spec("tiny_cnn"), Artifacts(sys.argv[1]))
print(art.path, "torch" in sys.modules, "onnx" in sys.modules)
"""


def test_the_harness_imports_neither_torch_nor_onnx_to_export_or_to_find_an_export(tmp_path):
    """Issue 37: torch alone put ~0.5 GB in the harness process of every sweep. The export runs in a process of its
    own, and the cache key names the exporter's versions read from the installed files: a first process exports, a
    second finds the same file in the cache, and neither imports torch or onnx."""
    import subprocess
    import sys

    from repo_paths import REPO

    def run() -> list[str]:
        done = subprocess.run([sys.executable, "-c", CACHED_EXPORT, str(tmp_path / "cache")], capture_output=True,
                              text=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    first, second = run(), run()
    assert first[1:] == ["False", "False"]  # built, in the export process
    assert second == [first[0], "False", "False"]  # the same cached file, no framework imported


def test_an_export_process_that_dies_is_a_model_error_naming_how(tmp_path, monkeypatch):
    """The export process killed (here: SIGKILL from inside, as the kernel's OOM killer would): the harness gets a
    ModelError naming the model and the signal, not a hang or an EOFError."""
    monkeypatch.setattr(export, "_build_export", _killed_export)
    with pytest.raises(ModelError, match=r"tiny_cnn: the export process died with SIGKILL before it finished"):
        export_onnx(load_model_spec("tiny_cnn"), Artifacts(tmp_path), seed=0)


def _killed_export(*_args: object) -> dict:
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)
    return {}


def test_installed_version_reads_what_importing_would_say():
    assert export.installed_version("torch") == torch.__version__  # the local tag too ('+cpu', '+cu130')
    assert export.installed_version("onnx") == onnx.__version__
    import onnxruntime  # its version is a literal in its __init__.py (onnxruntime-gpu's metadata has another name)

    assert export.installed_version("onnxruntime") == onnxruntime.__version__
    assert export.installed_version("no_such_package_here") is None
