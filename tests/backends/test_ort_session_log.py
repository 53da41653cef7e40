"""ONNX Runtime's session warnings (issue 37): in the row's own files (row.json), never printed on the console. Where ORT
takes a Python callback (1.32+) the session's warnings are captured while it is made; an older ORT's C++ logger writes
to file descriptor 2 itself, so there they are kept only where an instance's stderr is already a log file. Measured
with real sessions in child processes whose stderr is a file or a pipe: one OrtSession (both ways: the older one by
turning the callback off), then `edgebench run --onnx` (its instance a worker process that inherits the harness's
stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import cli_env, one_row, run
from odd_models import conv_classifier
from repo_paths import REPO

from edgebench.backends.ort import ORT_ERROR, ORT_WARNING, session_log_severity
from edgebench.models.framework_log import ort_takes_callback

UNUSED = "unused_weight"
WARNING_LINE = f"Removing initializer '{UNUSED}'"  # ORT 1.x, graph.cc CleanUnusedInitializersAndNodeArgs, [W:...]


def classifier_with_an_unused_initializer(path: Path) -> Path:
    """The odd_models classifier at 16x16 with an initializer no node reads: ORT's CPU provider warns that it
    removes it, at every session it builds."""
    pytest.importorskip("onnx", reason="the test graph is written with onnx.helper")
    return conv_classifier(path, hw=(16, 16), unused=UNUSED)


def test_warnings_only_where_stderr_is_a_regular_file(tmp_path):
    with open(tmp_path / "log.txt", "w") as log:
        assert session_log_severity(log.fileno()) == ORT_WARNING
    read, write = os.pipe()
    try:
        assert session_log_severity(write) == ORT_ERROR  # the console of a captured subprocess
    finally:
        os.close(read)
        os.close(write)
    with open(os.devnull, "w") as null:
        assert session_log_severity(null.fileno()) == ORT_ERROR
    closed = os.open(os.devnull, os.O_RDONLY)
    os.close(closed)
    assert session_log_severity(closed) == ORT_ERROR  # cannot be told: errors only


OPEN_ONE_SESSION = """
import json
import sys
import edgebench.backends.ort as ort_backend
from edgebench.backends.base import Placement, Prepared
from edgebench.models.inputs import InputDesc

if sys.argv[2] == "no-callback":  # an ONNX Runtime older than set_default_logger_callback
    ort_backend.ort_takes_callback = lambda: False
prepared = Prepared(backend="ort", model_path=sys.argv[1], inputs=(InputDesc("pixels", shape=(3, 16, 16)),),
                    batch=1, precision="fp32")
session = ort_backend.OrtSession(prepared, Placement(device="cpu", instance=0))
session.feed(prepared.feeds(1, 0))
session.infer()
print(sorted(session.outputs()))
print(json.dumps(session.framework_log))
"""


def open_one_session(model: Path, how: str, stderr: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", OPEN_ONE_SESSION, str(model), how], stdout=subprocess.PIPE,
                          stderr=stderr, text=True, env=env, timeout=120)


def test_a_real_session_warning_is_the_sessions_and_never_on_stderr(tmp_path):
    pytest.importorskip("onnxruntime", reason="a real ONNX Runtime session")
    if not ort_takes_callback():
        pytest.skip("this ONNX Runtime has no set_default_logger_callback (older than 1.32): nothing to capture with")
    model = classifier_with_an_unused_initializer(tmp_path / "unused.onnx")
    with open(tmp_path / "instance.log", "w") as log:
        done = open_one_session(model, "callback", log)
    kept = (tmp_path / "instance.log").read_text()
    assert done.returncode == 0, kept
    outputs, logged = done.stdout.strip().splitlines()
    assert outputs == "['logits']"
    (line,) = json.loads(logged)
    assert WARNING_LINE in line and line.startswith("onnxruntime [W] "), line
    assert "onnxruntime" not in kept, kept  # not in the stderr file either: it is the row's
    piped = open_one_session(model, "callback", subprocess.PIPE)
    assert piped.returncode == 0 and WARNING_LINE in piped.stdout, piped.stderr
    assert "onnxruntime" not in piped.stderr, piped.stderr


def test_without_the_callback_a_warning_goes_to_a_stderr_file_and_not_to_a_pipe(tmp_path):
    pytest.importorskip("onnxruntime", reason="a real ONNX Runtime session")
    model = classifier_with_an_unused_initializer(tmp_path / "unused.onnx")
    with open(tmp_path / "instance.log", "w") as log:  # stderr already a file: the warning is kept there
        done = open_one_session(model, "no-callback", log)
    kept = (tmp_path / "instance.log").read_text()
    assert done.returncode == 0, kept
    assert done.stdout.strip().splitlines() == ["['logits']", "[]"]  # nothing captured: it went to stderr
    assert WARNING_LINE in kept and "[W:onnxruntime" in kept, kept

    piped = open_one_session(model, "no-callback", subprocess.PIPE)  # stderr a pipe: errors only
    assert piped.returncode == 0, piped.stderr
    assert "onnxruntime" not in piped.stderr, piped.stderr


def test_edgebench_run_keeps_the_instances_warning_in_row_json_and_off_the_console(tmp_path):
    """`edgebench run --onnx` twice: captured (stderr a pipe, as on a console) and with `2> run.log`: no ONNX Runtime
    line on either, the instance's warning in its row.json."""
    pytest.importorskip("onnxruntime", reason="running ONNX models needs onnxruntime")
    if not ort_takes_callback():
        pytest.skip("this ONNX Runtime has no set_default_logger_callback (older than 1.32): its warnings stay in a "
                    "stderr file, tested above")
    model = classifier_with_an_unused_initializer(tmp_path / "unused.onnx")
    profile = tmp_path / "ortlog.yaml"
    profile.write_text(f"name: ortlog\nextends: {REPO / 'profiles' / 'smoke.yaml'}\n"
                       "run: {warmup_s: 0.1, duration_s: 0.3, min_inferences: 5, stability_tolerance_pct: 10000, "
                       "accuracy_samples: 0}\n")
    env = cli_env(tmp_path / "cache")
    args = ("--onnx", str(model), "--device", str(profile))

    def instance_log(out: Path) -> list[str]:
        (row_json,) = out.glob("*/rows/*/row.json")
        (instance,) = json.loads(row_json.read_text())["instances"]
        return instance["framework_log"]

    console = run(env, *args, "--out", str(tmp_path / "console"))
    assert console.returncode == 0, console.stdout + console.stderr
    assert one_row(tmp_path / "console")["status"] == "ok"
    assert "onnxruntime" not in console.stdout + console.stderr, console.stderr
    assert any(WARNING_LINE in line for line in instance_log(tmp_path / "console")), instance_log(tmp_path / "console")

    log = tmp_path / "run.log"
    with open(log, "w") as fh:
        logged = subprocess.run([sys.executable, "-m", "edgebench", "run", *args, "--out", str(tmp_path / "logged")],
                                stdout=subprocess.PIPE, stderr=fh, text=True, env=env, cwd=REPO, timeout=600)
    assert logged.returncode == 0, log.read_text()
    assert one_row(tmp_path / "logged")["status"] == "ok"
    assert "onnxruntime" not in log.read_text() + logged.stdout, log.read_text()
    assert any(WARNING_LINE in line for line in instance_log(tmp_path / "logged"))
