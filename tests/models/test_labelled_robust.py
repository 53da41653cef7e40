"""Issue 20, labelled accuracy on real folders: a data set smaller than the int8 calibration reserve still scores
fp32 rows, one unreadable image is skipped and counted (accuracy_skipped), errors name --calibration-samples,
an empty class folder is reported. Real PNG files, the real preprocessing."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.errors import ModelError
from edgebench.models.inputs import InputDesc
from edgebench.models.labelled import evaluation_set, load_labelled
from edgebench.models.spec import ModelSpec

pytest.importorskip("PIL", reason="the labelled images are PNG files (pip install pillow)")

SPEC = ModelSpec(name="tiny", source="builtin", arch="tiny_cnn", inputs=(InputDesc("input", shape=(3, 8, 8)),),
                 num_classes=3)


def _set(root: Path, classes: dict[str, int]) -> Path:
    from PIL import Image

    for name, count in classes.items():
        (root / name).mkdir(parents=True)
        for i in range(count):
            Image.new("RGB", (8, 8), (40 * i, 0, 0)).save(root / name / f"{i}.png")
    return root


def test_fp32_scores_a_set_smaller_than_the_int8_reserve_and_int8_says_which_flag(tmp_path):
    from edgebench.models.calibration import calibration_batches

    root = _set(tmp_path / "set", {"0": 2, "1": 2})  # 4 images, 32 reserved for calibration by default
    calibration = {"source": "labelled", "samples": 32, "seed": 0}
    ev = evaluation_set(SPEC, {"dataset": str(root)}, calibration, samples=10)
    assert len(ev.labels) == 4 and ev.record["calibration_reserved"] == 0
    (note,) = ev.notes()
    assert "4 images, too few to reserve 32 for int8 calibration" in note and "--calibration-samples" in note
    labelled = {"dataset": str(root), "labels": None, "preprocess": ev.record["preprocess"]}
    with pytest.raises(ModelError, match=r"4 labelled images, 32 asked for calibration \(int8: --calibration-samples"):
        calibration_batches("labelled", (3, 8, 8), 32, 0, labelled=labelled)
    with pytest.raises(ModelError, match=r"leave none to evaluate after 4 .*lower --calibration-samples"):
        calibration_batches("labelled", (3, 8, 8), 4, 0, labelled=labelled)  # every image: none left to evaluate
    data, record = calibration_batches("labelled", (3, 8, 8), 2, 0, labelled=labelled)
    assert data.shape == (2, 3, 8, 8) and record["count"] == 2


def test_an_unreadable_image_is_skipped_and_counted(tmp_path):
    root = _set(tmp_path / "set", {"0": 3, "1": 3})
    (root / "1" / "broken.png").write_bytes(b"not a png")
    ev = evaluation_set(SPEC, {"dataset": str(root)}, {}, samples=100)
    assert len(ev.labels) == 6 and ev.inputs.shape == (6, 3, 8, 8)
    assert ev.row_fields()["accuracy_skipped"] == 1 and ev.record["skipped"][0].startswith("1/broken.png: ")
    from edgebench.results.schema import type_problem  # the row's assembly checks every part's types

    assert {k: type_problem(k, v) for k, v in ev.row_fields().items()} == dict.fromkeys(ev.row_fields())
    assert "1/broken.png" not in ev.record["files"] and len(ev.record["files"]) == 6
    assert any(n.startswith("labelled accuracy: 1 unreadable image(s) skipped (1/broken.png") for n in ev.notes())
    for p in root.rglob("*.png"):  # every image unreadable: an error naming one, not an empty score
        p.write_bytes(b"junk")
    with pytest.raises(ModelError, match=r"none of 7 labelled images could be read \(0/0.png: "):
        evaluation_set(SPEC, {"dataset": str(root)}, {}, samples=100)


def test_an_empty_class_folder_is_reported_and_keeps_its_index(tmp_path):
    root = _set(tmp_path / "set", {"0": 2, "1": 0, "2": 2})
    ds = load_labelled(root)
    assert ds.empty_classes == ("1",) and sorted(set(ds.labels)) == [0, 2]
    ev = evaluation_set(SPEC, {"dataset": str(root)}, {}, samples=10)
    assert ev.record["empty_classes"] == ["1"]
    assert "labelled data set: empty class folder(s) 1 (no images; they keep their class index)" in ev.notes()
