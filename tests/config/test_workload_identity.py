"""issue 54, item 5, on the configuration side: everything that changes what runs and that the sweep's axes do not
say (an external ONNX's content and resolved inputs, given shapes, fixed values, data, weights, data set,
non-default int8 calibration, the inputs' seed) is in RunConfig.workload: in config_hash (so --resume never takes a
row of one input size for another's) and in the row's workload column. A model spec run as it is keeps the hash its
rows had before the workload existed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from edgebench.backends.base import Env
from edgebench.config.profile import load_profile
from edgebench.config.run_config import RunConfig
from edgebench.pipeline.plan import expand
from edgebench.pipeline.workload import content_digest, model_workload, shapes_text, with_precision
from edgebench.results.row import identity


def _profile(**sweep: object):
    return load_profile("smoke").with_section("sweep", models=["tiny_cnn"], precisions=["fp32", "int8"],
                                              batches=[1], instances=[1], **sweep)


def test_a_spec_run_as_it_is_has_no_workload_and_keeps_its_hash():
    planned = expand(_profile(), Env.detect())
    assert planned and all(p.cfg.workload == () for p in planned)
    cfg = RunConfig(model="tiny_cnn", backend="ort", precision="fp32", batch=1, placements=("cpu",))
    assert cfg.config_hash() == "f3e1e731aa868ed0"  # unchanged since before the typed config
    assert cfg.workload_cell == "seed=0"  # never empty: an empty cell means a row written before the column


def test_given_shapes_weights_data_set_and_calibration_are_each_part_of_the_identity(tmp_path: Path):
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"weights one")
    prof = _profile(shapes={"tiny_cnn": "input:1x3x40x40"})
    prof = prof.with_section("accuracy", weights=str(weights), dataset="/data/val", labels="/data/val.txt")
    got = dict(model_workload(prof, "tiny_cnn"))
    assert got == {"shapes": "input:1x3x40x40", "weights": f"w.pt sha256:{content_digest(weights)}",
                   "dataset": "/data/val", "labels": "/data/val.txt"}
    base = model_workload(prof, "tiny_cnn")
    assert with_precision(base, prof, "int8") == base  # default calibration: nothing to add
    cal = prof.with_section("calibration", samples=64)
    assert dict(with_precision(base, cal, "int8"))["calibration"] == "synthetic, 64 samples, seed 0"
    assert with_precision(base, cal, "fp32") == base  # only int8 rows are calibrated
    weights.write_bytes(b"weights two")  # another file under the same name is another configuration
    assert dict(model_workload(prof.with_section("accuracy", weights=str(weights)), "tiny_cnn"))["weights"] != \
        got["weights"]


def test_two_input_sizes_plan_two_hashes_and_two_workload_cells():
    small = expand(_profile(shapes={"tiny_cnn": "input:1x3x32x32"}), Env.detect())
    large = expand(_profile(shapes={"tiny_cnn": "input:1x3x64x64"}), Env.detect())
    plain = expand(_profile(), Env.detect())
    for a, b, c in zip(small, large, plain, strict=True):
        assert len({a.cfg.config_hash(), b.cfg.config_hash(), c.cfg.config_hash()}) == 3
        assert identity(a.cfg, "r", 0)["workload"] == "shapes=input:1x3x32x32; seed=0"
        assert identity(b.cfg, "r", 0)["workload"] == "shapes=input:1x3x64x64; seed=0"
    assert shapes_text("b:1x8, a:1x3x224x224") == "a:1x3x224x224,b:1x8"  # one order, one text


def test_fixed_values_and_the_seed_are_in_the_cell():
    cfg = RunConfig(model="m", backend="ort", precision="fp32", batch=1, placements=("cpu",),
                    input_values=(("sr", 16000),), seed=3, workload=(("data", "00ff"),))
    assert cfg.workload_cell == "data=00ff; values=sr:16000; seed=3"
    assert dataclasses.replace(cfg, seed=4).config_hash() != cfg.config_hash()


def test_an_external_onnx_is_identified_by_its_content_and_resolved_inputs(tmp_path: Path):
    pytest.importorskip("onnx", reason="building the test ONNX files needs onnx")
    pytest.importorskip("onnxruntime", reason="resolving an external ONNX's inputs reads it with onnxruntime")
    from odd_models import conv_classifier

    from edgebench.models.precision import onnx_spec

    path = conv_classifier(tmp_path / "cls.onnx")
    prof = _profile()
    small = model_workload(prof, "cls", onnx_spec(str(path), shapes="pixels:1x3x16x16"))
    large = model_workload(prof, "cls", onnx_spec(str(path), shapes="pixels:1x3x48x48"))
    assert dict(small) == {"onnx": content_digest(path), "inputs": "pixels:float32[Nx3x16x16]"}
    assert dict(large)["inputs"] == "pixels:float32[Nx3x48x48]"
    (tmp_path / "other").mkdir()
    other = conv_classifier(tmp_path / "other" / "cls.onnx", unused="spare")
    assert dict(model_workload(prof, "cls", onnx_spec(str(other), shapes="pixels:1x3x16x16")))["onnx"] != \
        content_digest(path)  # same name, another file
    data = tmp_path / "real.npz"
    np.savez(data, pixels=np.zeros((2, 3, 16, 16), np.float32))
    with_data = model_workload(prof, "cls", onnx_spec(str(path), shapes="pixels:1x3x16x16", data=str(data)))
    assert dict(with_data)["data"] == content_digest(data)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.npz").write_bytes(data.read_bytes())
    before = content_digest(folder)
    (folder / "b.npz").write_bytes(data.read_bytes())
    assert content_digest(folder) != before  # a file more is other data
    assert content_digest(tmp_path / "nope.npz") == f"missing: {tmp_path / 'nope.npz'}"
