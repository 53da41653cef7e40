"""Issue 28: `edgebench bench --value NAME:V` over a sweep: every model with that input gets the constant (in its
configs' hash and label, and in the run folder's profile.yaml as sweep.values), a name no model has is one line."""

from __future__ import annotations

import shutil

import odd_models
import pytest
import yaml
from repo_paths import REPO

import edgebench.models.spec as spec_module
from edgebench.cli import main


@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    """models/ with tiny_cnn and a source-onnx voice-activity spec (its sr has no value of its own)."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(REPO / "models" / "tiny_cnn.yaml", folder / "tiny_cnn.yaml")
    onnx = odd_models.voice_activity(tmp_path / "voice_activity.onnx")
    (folder / "vad.yaml").write_text(yaml.safe_dump({"name": "vad", "source": "onnx", "onnx_path": str(onnx)}))
    monkeypatch.setattr(spec_module, "MODELS_DIR", folder)
    return folder


def test_bench_value_reaches_the_models_that_have_the_input(models_dir, tmp_path, capsys):
    assert main(["bench", "--models", "tiny_cnn,vad", "--value", "sr:16000", "--dry-run", "--out", str(tmp_path)]) == 0
    plan = capsys.readouterr().out
    lines = [line for line in plan.splitlines() if "  ort " in line]
    assert any(line.split()[1] == "vad" and line.endswith("sr=16000") for line in lines), plan
    assert all("sr=" not in line for line in lines if line.split()[1] == "tiny_cnn"), plan


def test_bench_without_a_value_for_a_scalar_is_one_line_and_a_stray_name_is_refused(models_dir, tmp_path, capsys):
    assert main(["bench", "--models", "vad", "--dry-run", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "input 'sr' is a scalar int64" in err[0] and "--value sr:V" in err[0]
    assert main(["bench", "--models", "tiny_cnn", "--value", "sr:16000", "--dry-run", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "edgebench: error: --value: no model of the sweep has an input named 'sr' (models: tiny_cnn)"
    assert main(["bench", "--models", "vad", "--value", "sr:fast", "--dry-run", "--out", str(tmp_path)]) == 2
    assert "input 'sr': value 'fast' is not a number" in capsys.readouterr().err
