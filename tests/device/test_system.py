"""system.json contents: real values from this machine, and a reason wherever a value is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import psutil
import pytest

import edgebench
from edgebench.device import system
from edgebench.device.system import collect_system_info


def test_keys_and_real_values():
    info = collect_system_info()
    json.dumps(info)  # system.json must be writable as is
    assert info["edgebench_version"] == edgebench.__version__
    assert info["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert info["python"]["executable"] == sys.executable
    assert info["cpu"]["logical_cores"] == os.cpu_count() > 0
    assert info["cpu"]["usable_cores"] == len(os.sched_getaffinity(0))
    assert info["memory"]["total_mib"] == pytest.approx(psutil.virtual_memory().total / 2**20, abs=0.1)
    assert info["kernel"].startswith(os.uname().release)
    assert info["hostname"] == os.uname().nodename
    assert info["collected_utc"].endswith("+00:00")
    import numpy

    assert info["packages"]["numpy"] == numpy.__version__
    assert info["packages"]["psutil"] == psutil.__version__
    assert set(system.PACKAGES) <= set(info["packages"])
    for name, version in info["packages"].items():
        assert (version is None) == (f"packages.{name}" in info["unavailable"]), name
    for key in ("cpu.model", "cpu.governor", "board", "os_release", "git"):
        head, _, sub = key.partition(".")
        value = info[head][sub] if sub else info[head]
        assert (value is None) == (key in info["unavailable"]), key  # missing always says why


def test_cpu_model_matches_proc_cpuinfo():
    info = collect_system_info()
    with open("/proc/cpuinfo") as fh:
        models = {line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")}
    if not models:
        pytest.skip("/proc/cpuinfo has no 'model name' lines on this architecture")
    assert info["cpu"]["model"] in models


def test_ort_providers_are_listed_when_onnxruntime_is_installed():
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed")
    info = collect_system_info()
    assert info["onnxruntime_providers"] == ort.get_available_providers()
    assert "CPUExecutionProvider" in info["onnxruntime_providers"]


def test_missing_things_become_none_with_a_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(system, "PACKAGES", (*system.PACKAGES, "edgebench-no-such-package"))
    monkeypatch.setattr(system, "PROJECT_ROOT", tmp_path)

    def broken() -> str:
        raise PermissionError(13, "Permission denied", "/proc/cpuinfo")

    monkeypatch.setattr(system, "_cpu_model", broken)
    info = collect_system_info(extra={"profile": "cpu-ci", "hostname": "override"})
    assert info["packages"]["edgebench-no-such-package"] is None
    assert info["unavailable"]["packages.edgebench-no-such-package"] == "not installed"
    assert info["cpu"]["model"] is None
    assert info["unavailable"]["cpu.model"] == "/proc/cpuinfo: Permission denied"
    assert info["git"] is None and "not a git checkout" in info["unavailable"]["git"]
    assert info["profile"] == "cpu-ci" and info["hostname"] == "override"  # extra is merged last


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_commit_of_a_real_checkout(monkeypatch, tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                               *args], check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "f.txt").write_text("1")
    monkeypatch.setattr(system, "PROJECT_ROOT", tmp_path)
    assert "without a commit" in collect_system_info()["unavailable"]["git"]
    git("add", "f.txt")
    git("commit", "-q", "-m", "x")
    info = collect_system_info()
    assert info["git"] == {"commit": git("rev-parse", "HEAD"), "dirty": False}
    (tmp_path / "f.txt").write_text("2")
    assert collect_system_info()["git"]["dirty"] is True


def test_cuda_mps_state_from_process_names_and_pipe_dir(tmp_path):
    from edgebench.device.system import collect_system_info, cuda_mps_state

    off = cuda_mps_state(process_names=["python3", "bash"], environ={"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "x")})
    assert off == {"active": False, "daemons": [], "pipe_directory": str(tmp_path / "x"),
                   "pipe_directory_exists": False}
    on = cuda_mps_state(process_names=["nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "python3"],
                        environ={"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)})
    assert on["active"] is True and on["pipe_directory_exists"] is True
    assert on["daemons"] == ["nvidia-cuda-mps-control", "nvidia-cuda-mps-server"]
    assert collect_system_info()["cuda_mps"]["active"] is False  # nothing starts MPS on this machine
