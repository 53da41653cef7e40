"""The command line as a user meets it: help on a bare Python, doctor, profiles, dry runs, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from repo_paths import REPO


def run_cli(*args: str, python: str = sys.executable, env_extra: dict | None = None, cwd: Path | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    return subprocess.run([python, "-m", "edgebench", *args], capture_output=True, text=True, env=env,
                          cwd=cwd or REPO, timeout=timeout)


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A venv with nothing but the standard library: no numpy, yaml, onnxruntime, torch."""
    root = tmp_path_factory.mktemp("bare-venv")
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(root)
    py = str(root / "bin" / "python")
    probe = subprocess.run([py, "-c", "import numpy"], capture_output=True)
    assert probe.returncode != 0, "the bare venv must not see numpy"
    return py


def test_help_and_import_work_on_a_bare_python(bare_python, tmp_path):
    out = run_cli("--help", python=bare_python, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for command in ("bench", "run", "export", "doctor", "profiles"):
        assert command in out.stdout
    out = run_cli("bench", "--help", python=bare_python, cwd=tmp_path)
    assert out.returncode == 0 and "--dry-run" in out.stdout and "--resume" in out.stdout


def test_doctor_on_a_bare_python_says_what_is_missing_and_how(bare_python, tmp_path):
    out = run_cli("doctor", python=bare_python, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "MISSING  onnxruntime" in text and "edgebench[ort]" in text
    assert "MISSING  numpy" in text
    assert "TensorRT comes with JetPack" in text
    assert "ort      unavailable: onnxruntime is not installed" in text
    assert "Traceback" not in out.stderr


def test_doctor_here_reports_the_real_onnxruntime():
    import onnxruntime

    out = run_cli("doctor")
    assert out.returncode == 0, out.stderr
    assert f"onnxruntime {onnxruntime.__version__}, providers: " in out.stdout
    assert "CPUExecutionProvider" in out.stdout
    assert "host" in out.stdout  # host sampler listed


def test_profiles_lists_descriptions():
    out = run_cli("profiles")
    assert out.returncode == 0
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert "host" in lines and "CPU via ONNX Runtime" in lines["host"]
    assert "BROKEN" not in out.stdout


def test_dry_run_prints_plan_with_skip_reasons(tmp_path):
    out = run_cli("bench", "--device", "host", "--dry-run", "--batches", "1,8", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "configurations:" in out.stdout
    skip_lines = [line for line in out.stdout.splitlines() if "SKIP:" in line]
    assert skip_lines and all("fp16" in line and "float16" in line for line in skip_lines)
    assert not any(tmp_path.iterdir()), "a dry run writes nothing"


@pytest.mark.parametrize(
    "args, words",
    [
        (["bench", "--device", "nosuchboard"], "unknown profile"),
        (["bench", "--device", "host", "--precisions", "fp64", "--dry-run"], "'sweep.precisions'"),
        (["bench", "--device", "host", "--models", "vgg99", "--dry-run"], "unknown model 'vgg99'"),
        (["export", "--model", "vgg99"], "unknown model 'vgg99'"),
    ],
)
def test_bad_input_is_one_clear_line(args, words):
    out = run_cli(*args)
    assert out.returncode == 2
    assert words in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0


def test_bad_profile_file_names_file_and_field(tmp_path):
    bad = tmp_path / "board.yaml"
    bad.write_text("extends: base\nsweep:\n  batches: [1, two]\n")
    out = run_cli("bench", "--device", str(bad), "--dry-run")
    assert out.returncode == 2
    assert str(bad) in out.stderr and "'sweep.batches'" in out.stderr


def test_run_with_corrupt_onnx_names_the_file(tmp_path):
    corrupt = tmp_path / "model.onnx"
    corrupt.write_bytes(b"\x08\x07garbage that is not a protobuf" * 10)
    out = run_cli("run", "--onnx", str(corrupt), "--out", str(tmp_path / "runs"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert str(corrupt) in out.stderr and "not a valid ONNX" in out.stderr
    assert "Traceback" not in out.stderr
