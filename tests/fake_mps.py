"""A fake nvidia-cuda-mps-control for CPU machines: a real executable that daemonizes a real process and
records every call in $CUDA_MPS_LOG_DIRECTORY/fake-calls.log (used by tests/runner/test_mps.py and the SLO
search over GPU sharing modes). Nothing here touches a GPU."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from edgebench.runner.mps import MPS_CONTROL

FAKE = """\
#!{python}
# fake nvidia-cuda-mps-control: `-d` starts a daemon process and its control pipe, `quit` on stdin stops it
import os, subprocess, sys, time
pipe, log = os.environ["CUDA_MPS_PIPE_DIRECTORY"], os.environ["CUDA_MPS_LOG_DIRECTORY"]
def record(what):
    with open(os.path.join(log, "fake-calls.log"), "a") as fh:
        fh.write(f"{{what}} pipe={{pipe}} log={{log}}\\n")
if sys.argv[1:] == ["-d"]:
    if os.environ.get("FAKE_MPS_FAIL") == "start":
        print("An instance of this daemon is already running", file=sys.stderr)
        sys.exit(1)
    record("start")
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(pipe, "daemon.pid"), "w") as fh:
        fh.write(str(daemon.pid))
    os.mkfifo(os.path.join(pipe, "control"))
    sys.exit(0)
command = sys.stdin.read().strip()
record(command)
if command == "quit":
    with open(os.path.join(pipe, "daemon.pid")) as fh:
        pid = int(fh.read())
    os.kill(pid, 15)
    os.unlink(os.path.join(pipe, "control"))
    sys.exit(1 if os.environ.get("FAKE_MPS_FAIL") == "quit" else 0)
sys.exit(2)
"""


def install_fake_mps(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake control program in `bin_dir`, put first on PATH for the test."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / MPS_CONTROL
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return exe
