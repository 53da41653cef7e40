"""models/in_child.py: a model-building step in a spawned process, its result and every way it can end, seen from
the harness (real spawned processes)."""

from __future__ import annotations

import os
import signal

import pytest

from edgebench.errors import ModelError
from edgebench.models.in_child import run_in_child


def sidecar(n: int) -> dict:
    return {"pid": os.getpid(), "n": n}


def bare_assert(_n: int) -> dict:
    raise AssertionError  # a library's bare `assert`: no message


def refuses(_n: int) -> dict:
    raise ModelError("tiny: the step refuses this graph")


def killed(_n: int) -> dict:
    os.kill(os.getpid(), signal.SIGKILL)
    return {}


def test_the_step_runs_in_another_process_and_its_result_comes_back():
    out = run_in_child("tiny", "int8 quantization", sidecar, 3)
    assert out["n"] == 3 and out["pid"] != os.getpid()


def test_a_message_less_error_says_where_it_was_raised_not_where_it_was_re_raised():
    with pytest.raises(ModelError) as err:
        run_in_child("tiny", "int8 quantization", bare_assert, 1)
    text = str(err.value)
    assert text.startswith("tiny: int8 quantization failed: AssertionError: no message, raised at ")
    assert "tests/models/test_in_child.py:" in text and "in bare_assert" in text
    assert "edgebench/models/in_child.py" not in text  # before: "raised at edgebench/models/in_child.py:55 ... raise payload"


def test_a_model_error_crosses_as_raised_and_a_killed_step_is_named():
    with pytest.raises(ModelError, match=r"^tiny: the step refuses this graph$"):
        run_in_child("tiny", "fp16 conversion", refuses, 1)
    with pytest.raises(ModelError, match=r"^tiny: the export process died with SIGKILL before it finished"):
        run_in_child("tiny", "export", killed, 1)


def test_a_step_dies_with_the_harness_that_asked_for_it(tmp_path):
    """The harness (a fresh interpreter here) starts a step that would run for a minute and is SIGKILLed, as the
    OOM killer ends it: the step's process is ended by the kernel too (PR_SET_PDEATHSIG), instead of going on
    with its memory. Without the request the step outlives its harness (it is re-parented and sleeps on)."""
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "step.pid"
    script = (
        "import os, signal, sys, time\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from edgebench.models.in_child import run_in_child\n"
        "import test_in_child\n"
        "import threading\n"
        "threading.Thread(target=run_in_child, args=('tiny', 'int8 quantization', test_in_child.sleeps, sys.argv[1]),"
        " daemon=True).start()\n"
        "deadline = time.monotonic() + 60\n"
        "while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    err = tmp_path / "harness.err"
    with open(err, "w") as stderr:  # not a pipe: an orphaned step holding it would keep run() waiting
        proc = subprocess.run([sys.executable, "-c", script, str(pid_file), os.path.dirname(__file__)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, timeout=90)
    assert proc.returncode == -9, err.read_text()
    step = int(pid_file.read_text())
    deadline = time.monotonic() + 20
    while _alive(step) and time.monotonic() < deadline:
        time.sleep(0.1)
    outlived = _alive(step)
    if outlived:
        os.kill(step, signal.SIGKILL)
    assert not outlived, f"the step's process {step} outlived its harness"


def sleeps(pid_file: str) -> dict:
    import time
    from pathlib import Path

    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(120)
    return {}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
