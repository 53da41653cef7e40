"""Weights (torchvision enums through torchvision's loader and torch's hub cache, offline), labelled data sets
(class folders, labels files, subsets) and top-k scoring. No download: the cached checkpoint is a real
state_dict written where torchvision's loader looks for it."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from edgebench.errors import ConfigError, ModelError
from edgebench.models.inputs import InputDesc
from edgebench.models.labelled import Preprocess, load_labelled, score, topk_pct
from edgebench.models.spec import ModelSpec

np = pytest.importorskip("numpy")


def _squeezenet_spec(weights: str | None) -> ModelSpec:
    return ModelSpec(name="sq", source="torchvision", arch="squeezenet1_1",
                     inputs=(InputDesc("input", shape=(3, 224, 224)),),
                     num_classes=1000, weights=weights, spec_file="sq.yaml")


@pytest.fixture
def torch_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    monkeypatch.setenv("EDGEBENCH_OFFLINE", "1")
    return tmp_path / "torch-home"


def test_torchvision_weights_load_from_torchs_cache_offline(torch_home):
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    from edgebench.models.export import build_torch_model
    from edgebench.models.weights import checkpoint_path, preprocess_for, resolve_weights

    enum = torchvision.models.SqueezeNet1_1_Weights.IMAGENET1K_V1
    path = checkpoint_path(enum)
    assert path == torch_home / "hub" / "checkpoints" / os.path.basename(enum.url)
    torch.manual_seed(7)
    state = torchvision.models.squeezenet1_1(weights=None).state_dict()
    path.parent.mkdir(parents=True)
    torch.save(state, path)

    resolved = resolve_weights(_squeezenet_spec("torchvision:IMAGENET1K_V1"))
    assert resolved.kind == "torchvision" and resolved.path == path
    from edgebench.models.artifacts import sha256_file

    assert resolved.label.startswith(f"torchvision:SqueezeNet1_1_Weights.IMAGENET1K_V1 sha256:{sha256_file(path)[:16]}")
    assert "hash differs" in resolved.label  # our stand-in file is not the one torchvision publishes
    # the same weights by their full name and by the DEFAULT alias
    assert resolve_weights(_squeezenet_spec("torchvision:SqueezeNet1_1_Weights.DEFAULT")).path == path

    model = build_torch_model(_squeezenet_spec("torchvision:IMAGENET1K_V1"))
    got = model.state_dict()
    assert all(torch.equal(got[k], state[k]) for k in state)
    assert not model.training

    pre = preprocess_for(_squeezenet_spec("torchvision:IMAGENET1K_V1"))
    t = enum.transforms()
    assert (pre.resize, pre.crop, pre.mean, pre.std) == (t.resize_size[0], t.crop_size[0], tuple(t.mean), tuple(t.std))


def test_torchvision_weights_offline_without_cache_say_what_to_download_and_where(torch_home):
    torchvision = pytest.importorskip("torchvision")
    from edgebench.models.weights import resolve_weights

    with pytest.raises(ModelError) as err:
        resolve_weights(_squeezenet_spec("torchvision:IMAGENET1K_V1"))
    text = str(err.value)
    enum = torchvision.models.SqueezeNet1_1_Weights.IMAGENET1K_V1
    assert "\n" not in text
    assert enum.url in text
    assert str(torch_home / "hub" / "checkpoints" / os.path.basename(enum.url)) in text


def test_unknown_torchvision_weights_name_the_field_and_the_choices():
    pytest.importorskip("torchvision")
    from edgebench.models.weights import resolve_weights

    with pytest.raises(ConfigError, match=r"sq.yaml.*weights.*IMAGENET1K_V9.*known: IMAGENET1K_V1"):
        resolve_weights(_squeezenet_spec("torchvision:IMAGENET1K_V9"))
    builtin = ModelSpec(name="t", source="builtin", arch="tiny_cnn", inputs=(InputDesc("input", shape=(3, 32, 32)),),
                        weights="torchvision:IMAGENET1K_V1", spec_file="t.yaml")
    with pytest.raises(ConfigError, match="need source: torchvision"):
        resolve_weights(builtin)


def test_cli_offline_without_cache_fails_the_row_with_the_download_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "EDGEBENCH_CACHE": str(tmp_path / "cache"),
           "TORCH_HOME": str(tmp_path / "torch-home"), "EDGEBENCH_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "edgebench", "run", "--model", "resnet50", "--weights",
                           "torchvision:IMAGENET1K_V2", "--duration", "0.2", "--out", str(tmp_path / "runs")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    with open(run_dir / "results.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["status"] == "failed"
    assert "https://download.pytorch.org/models/resnet50-11ad3fa6.pth" in row["reason"]
    assert str(tmp_path / "torch-home" / "hub" / "checkpoints" / "resnet50-11ad3fa6.pth") in row["reason"]
    assert "Traceback" not in proc.stderr


def test_preprocess_matches_torchvisions_image_classification(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    from PIL import Image
    from torchvision.transforms._presets import ImageClassification

    rng = np.random.default_rng(0)
    path = tmp_path / "img.png"
    Image.fromarray(rng.integers(0, 256, (61, 97, 3), dtype=np.uint8)).save(path)  # not square, odd sizes
    ref = ImageClassification(crop_size=40, resize_size=48)
    with Image.open(path) as img:
        expected = ref(img.convert("RGB")).numpy()
    pre = Preprocess.checked("m.yaml", (3, 40, 40), resize=48, crop=40)
    got = pre.load(path)
    assert got.shape == expected.shape == (3, 40, 40)
    assert np.max(np.abs(got - expected)) < 1e-5
    assert torch.is_tensor(ref(Image.open(path).convert("RGB")))
    with pytest.raises(ConfigError, match="preprocess.crop"):
        Preprocess.checked("m.yaml", (3, 40, 40), resize=48, crop=32)


def _folder(tmp_path: Path, names: list[str], per_class: int = 3) -> Path:
    from PIL import Image

    root = tmp_path / "set"
    for name in names:
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            Image.new("RGB", (4, 4), (i, 0, 0)).save(root / name / f"{i}.png")
    return root


def test_class_folders_numeric_names_are_the_index_others_sort(tmp_path):
    ds = load_labelled(_folder(tmp_path, ["2", "10"]))
    assert {f.split("/")[0]: lb for f, lb in zip(ds.files, ds.labels)} == {"2": 2, "10": 10}
    ds = load_labelled(_folder(tmp_path / "b", ["n02", "n01"]))
    assert {f.split("/")[0]: lb for f, lb in zip(ds.files, ds.labels)} == {"n01": 0, "n02": 1}


def test_labels_file_and_its_errors_name_the_line(tmp_path):
    from PIL import Image

    for name in ("a.png", "b.png"):
        Image.new("L", (4, 4)).save(tmp_path / name)
    labels = tmp_path / "labels.txt"
    labels.write_text("# image label\na.png 3\nb.png,7\n")
    ds = load_labelled(tmp_path, labels)
    assert list(zip(ds.files, ds.labels)) == [("a.png", 3), ("b.png", 7)]
    labels.write_text("a.png 3\nb.png seven\n")
    with pytest.raises(ConfigError, match=r"labels.txt.*line 2.*'b.png seven'"):
        load_labelled(tmp_path, labels)
    labels.write_text("c.png 1\n")
    with pytest.raises(ConfigError, match=r"labels.txt.*line 1.*'c.png' is not in"):
        load_labelled(tmp_path, labels)


def test_split_is_disjoint_and_evaluation_does_not_move_with_calibration(tmp_path):
    ds = load_labelled(_folder(tmp_path, [str(i) for i in range(5)], per_class=8))  # 40 images
    ev, cal = ds.split(20, 10, seed=3)
    assert len(ev) == 20 and len(cal) == 10 and not set(ev) & set(cal)
    ev2, cal2 = ds.split(20, 4, seed=3)
    assert ev2 == ev and set(cal2) <= set(cal)
    ev3, _ = ds.split(100, 10, seed=3)  # more asked than left: all but the calibration images
    assert len(ev3) == 30 and not set(ev3) & set(cal)
    assert ds.split(20, 10, seed=4)[0] != ev
    with pytest.raises(ModelError, match="41 asked for calibration"):
        ds.split(1, 41, seed=0)


def test_topk_counts_hits_and_nan_is_wrong():
    logits = np.array([[0.1, 0.9, 0.0, 0.0, 0.0, 0.0],
                       [0.9, 0.1, 0.0, 0.0, 0.0, 0.0],
                       [-1.0, 0.0, 0.0, 0.0, 0.0, 1.0],
                       [np.nan, 1.0, 0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    labels = np.array([1, 1, 0, 1])
    assert topk_pct(logits, labels, 1) == 25.0  # sample 0 only; the NaN row's argmax would hit but is wrong
    assert topk_pct(logits, labels, 5) == 50.0  # samples 0 and 1 (sample 2: label 0 is the smallest of 6)
    assert topk_pct(logits[:, :4], labels, 5) is None
    assert score(logits, labels) == {"accuracy_top1_pct": 25.0, "accuracy_top5_pct": 50.0}
    with pytest.raises(ValueError, match="label 9"):
        score(logits, np.array([1, 1, 0, 9]))


def test_tensorrt_calibrator_data_recreates_the_labelled_calibration_subset(tmp_path):
    """The int8 sidecar's record is what the TensorRT entropy calibrator re-reads (trt_calibration.recorded_calibration):
    it must give back the same labelled images, byte for byte, and refuse a changed data set."""
    from edgebench.backends.trt_calibration import recorded_calibration
    from edgebench.models.calibration import calibration_batches

    root = _folder(tmp_path, [str(i) for i in range(3)], per_class=5)
    labelled = {"dataset": str(root), "labels": None,
                "preprocess": Preprocess.checked("m.yaml", (3, 4, 4)).to_dict()}
    data, record = calibration_batches("labelled", (3, 4, 4), 6, seed=1, labelled=labelled)
    assert data.shape == (6, 3, 4, 4) and record["count"] == 6 and len(record["files"]) == 6
    ds = load_labelled(root)
    _, calib = ds.split(0, 6, seed=1)
    assert record["files"] == [ds.files[i] for i in calib]
    again = recorded_calibration(record, (3, 4, 4))
    assert np.array_equal(again, data)
    from PIL import Image

    Image.new("RGB", (4, 4), (255, 255, 255)).save(root / record["files"][0])  # a calibration image changes
    with pytest.raises(ModelError, match="changed since it was recorded"):
        recorded_calibration(record, (3, 4, 4))
    with pytest.raises(ModelError, match="no labelled data set"):
        calibration_batches("labelled", (3, 4, 4), 2, seed=0, labelled=None)
