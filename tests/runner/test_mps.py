"""CUDA MPS lifecycle on a CPU machine: a fake nvidia-cuda-mps-control on PATH (a real executable that
daemonizes a real process and records every call) stands in for the driver's. Nothing here changes a GPU.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from fake_mps import FAKE
from repo_paths import REPO

from edgebench.backends.null import NullBackend
from edgebench.cli import main
from edgebench.commands.options import EXIT_NOTHING_MEASURED
from edgebench.config.run_config import RunConfig
from edgebench.models.inputs import InputDesc
from edgebench.models.model_artifact import ModelArtifact
from edgebench.runner.mps import MPS_CONTROL, MpsError, gpu_sharing
from edgebench.runner.orchestrator import run_instances


@pytest.fixture
def fake_mps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bin folder holding the fake control program, put first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / MPS_CONTROL
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def calls(log_dir: Path) -> list[str]:
    path = log_dir / "fake-calls.log"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (the fake's daemon is reparented, not reaped by us) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def mps_cfg(placement: str = "cuda:0", **kw) -> RunConfig:
    base = dict(model="null", backend="null", precision="fp32", batch=1, placements=(placement,) * 2,
                warmup_s=0.05, duration_s=0.3, max_duration_s=3.0, min_inferences=10, accuracy_samples=0,
                load_timeout_s=30.0, barrier_timeout_s=10.0, collect_timeout_s=10.0, gpu_sharing="mps")
    base.update(kw)
    return RunConfig(**base)


def test_instances_run_as_clients_of_a_daemon_started_before_and_quit_after(fake_mps, tmp_path):
    cfg = mps_cfg()
    artifact = ModelArtifact(model="null", precision="fp32", onnx_path="unused.onnx", sha256="0" * 64,
                             inputs=(InputDesc("input", shape=(3, 4, 4)),))
    prepared = NullBackend().prepare(cfg, artifact, cache=None)  # type: ignore[arg-type]
    seen: dict[int, dict[str, str]] = {}
    daemon_pid: list[int] = []

    def read_env(pids: list[int]) -> None:  # while the instances run: their real environment, and the daemon
        for pid in pids:
            raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            seen[pid] = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
        daemon_pid.append(int((Path(sharing.env["CUDA_MPS_PIPE_DIRECTORY"]) / "daemon.pid").read_text()))

    row_dir = tmp_path / "row"
    with gpu_sharing(cfg, row_dir) as sharing:
        assert calls(row_dir / "mps-log") == ["start"]
        outcome = run_instances(cfg, prepared, child_env=sharing.env, on_measure_start=read_env)
        assert calls(row_dir / "mps-log") == ["start"]  # not stopped while the row runs
    assert outcome.status == "ok", outcome.reason
    assert sharing.mode == "mps" and sharing.notes == []
    assert len(seen) == 2
    for env in seen.values():
        assert env["CUDA_MPS_PIPE_DIRECTORY"] == sharing.env["CUDA_MPS_PIPE_DIRECTORY"]
        assert env["CUDA_MPS_LOG_DIRECTORY"] == str((row_dir / "mps-log").resolve())
    assert calls(row_dir / "mps-log") == ["start", "quit"]
    assert not alive(daemon_pid[0])
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ  # the orchestrator's own environment is unchanged


def test_time_slicing_and_cpu_rows_never_touch_the_daemon(fake_mps, tmp_path):
    for cfg in (mps_cfg(gpu_sharing="time-slicing"), mps_cfg(placement="cpu")):
        with gpu_sharing(cfg, tmp_path / "row") as sharing:
            assert sharing.env == {} and sharing.mode == "time-slicing"
    assert not (tmp_path / "row").exists()


def test_daemon_is_quit_when_the_row_raises(fake_mps, tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with gpu_sharing(mps_cfg(), tmp_path / "row"):
            raise RuntimeError("boom")
    assert calls(tmp_path / "row" / "mps-log") == ["start", "quit"]


def test_daemon_is_quit_when_edgebench_gets_sigterm(fake_mps, tmp_path):
    script = textwrap.dedent(f"""
        import time
        from edgebench.config.profile import RunConfig
        from edgebench.runner.mps import gpu_sharing
        cfg = RunConfig(model="m", backend="null", precision="fp32", batch=1, placements=("cuda:0",),
                        gpu_sharing="mps")
        with gpu_sharing(cfg, {str(tmp_path / 'row')!r}) as sharing:
            print(sharing.env["CUDA_MPS_PIPE_DIRECTORY"], flush=True)
            time.sleep(60)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    pid = int((Path(proc.stdout.readline().strip()) / "daemon.pid").read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM
    assert calls(tmp_path / "row" / "mps-log") == ["start", "quit"]
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_start_failure_names_the_program_and_its_error(fake_mps, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MPS_FAIL", "start")
    with pytest.raises(MpsError, match=r"nvidia-cuda-mps-control -d failed \(exit 1\): An instance of this daemon"):
        with gpu_sharing(mps_cfg(), tmp_path / "row"):
            pytest.fail("the row must not run without its daemon")


def test_quit_failure_is_stated_not_swallowed(fake_mps, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MPS_FAIL", "quit")
    with gpu_sharing(mps_cfg(), tmp_path / "row") as sharing:
        pass
    assert len(sharing.notes) == 1 and "quit failed (exit 1)" in sharing.notes[0]
    assert "CUDA_MPS_PIPE_DIRECTORY=" in sharing.notes[0]


def test_a_long_row_path_gets_a_short_pipe_folder_that_is_removed_after(fake_mps, tmp_path):
    deep = tmp_path / ("x" * 60) / ("y" * 40)
    with gpu_sharing(mps_cfg(), deep) as sharing:
        pipe = Path(sharing.env["CUDA_MPS_PIPE_DIRECTORY"])
        assert len(str(pipe)) <= 60 and (pipe / "control").exists()
        assert Path(sharing.env["CUDA_MPS_LOG_DIRECTORY"]) == (deep / "mps-log").resolve()
    assert not pipe.exists()
    assert calls(deep / "mps-log") == ["start", "quit"]


PROFILE = """\
name: mpsnull
extends: base
sweep:
  models: [tiny_cnn]
  backends: ["null"]
  batches: [1]
  instances: [2]
  accelerator: "{accelerator}"
run:
  warmup_s: 0.05
  duration_s: 0.3
  min_inferences: 20
  accuracy_samples: 0
  stability_tolerance_pct: 80.0
"""


def bench(tmp_path: Path, accelerator: str, *extra: str) -> list[dict[str, str]]:
    pytest.importorskip("torch", reason="the sweep exports tiny_cnn to ONNX with torch (pip install 'edgebench[export]')")
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "p.yaml").write_text(PROFILE.format(accelerator=accelerator))
    out = tmp_path / f"runs-{accelerator.replace(':', '')}"
    main(["--cache", str(tmp_path / "cache"), "bench", "--device", str(tmp_path / "p.yaml"), "--out", str(out), *extra])
    (run,) = out.iterdir()
    with open(run / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_sweep_rows_are_labelled_and_each_mps_row_has_its_own_daemon(fake_mps, tmp_path):
    (row,) = bench(tmp_path, "cuda:0", "--gpu-sharing", "mps")
    assert (row["status"], row["gpu_sharing"], row["scenario"]) == ("ok", "mps", "closed-loop"), row["reason"]
    run = next((tmp_path / "runs-cuda0").iterdir())
    assert calls(run / row["artifact_dir"] / "mps-log") == ["start", "quit"]
    (plain,) = bench(tmp_path / "plain", "cuda:0")
    assert plain["gpu_sharing"] == "time-slicing"


def skipped_plan(tmp_path: Path, accelerator: str, capsys: Any) -> str:
    """A plan whose one configuration is skipped: bench measures nothing, exits 4 (issue 28) and says why."""
    pytest.importorskip("torch", reason="the sweep exports tiny_cnn to ONNX with torch (pip install 'edgebench[export]')")
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "p.yaml").write_text(PROFILE.format(accelerator=accelerator))
    out = tmp_path / "runs"
    rc = main(["--cache", str(tmp_path / "cache"), "bench", "--device", str(tmp_path / "p.yaml"), "--out", str(out),
               "--gpu-sharing", "mps"])
    assert rc == EXIT_NOTHING_MEASURED and not out.exists()  # no run folder for a plan that measures nothing
    return capsys.readouterr().err


def test_missing_program_or_cpu_placement_skips_the_row_with_its_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert "needs nvidia-cuda-mps-control on PATH" in skipped_plan(tmp_path, "cuda:0", capsys)
    assert "applies to CUDA placements" in skipped_plan(tmp_path / "cpu", "cpu", capsys)
