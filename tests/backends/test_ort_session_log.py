"""ONNX Runtime's session warnings (issue 37): the row's, never printed on the console. The probe process opens the
row's session inside a framework_log() block, whose ORT callback (1.32+) takes them: row.json keeps them as
`probe.framework_log`. A measuring instance logs them only where its stderr is already a log file (ORT's C++ logger
writes to file descriptor 2 itself). Measured with real sessions in child processes whose stderr is a file or a pipe:
one OrtSession, then `edgebench run --onnx` (its probe and its instance processes inherit the harness's stderr)."""

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


def ort_takes_callback() -> bool:
    ort = pytest.importorskip("onnxruntime", reason="a real ONNX Runtime session")
    return callable(getattr(ort, "set_default_logger_callback", None))

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
import sys
from edgebench.backends.base import Placement, Prepared
from edgebench.backends.ort import OrtSession
from edgebench.models.inputs import InputDesc

prepared = Prepared(backend="ort", model_path=sys.argv[1], inputs=(InputDesc("pixels", shape=(3, 16, 16)),),
                    batch=1, precision="fp32")
session = OrtSession(prepared, Placement(device="cpu", instance=0))
session.feed(prepared.feeds(1, 0))
session.infer()
print(sorted(session.outputs()))
"""


def test_a_real_session_warning_goes_to_a_stderr_file_and_not_to_a_pipe(tmp_path):
    pytest.importorskip("onnxruntime", reason="a real ONNX Runtime session")
    model = classifier_with_an_unused_initializer(tmp_path / "unused.onnx")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-c", OPEN_ONE_SESSION, str(model)]

    with open(tmp_path / "instance.log", "w") as log:  # stderr already a file: the warning is kept there
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env, timeout=120)
    kept = (tmp_path / "instance.log").read_text()
    assert done.returncode == 0, kept
    assert done.stdout.strip() == "['logits']"
    assert WARNING_LINE in kept and "[W:onnxruntime" in kept, kept

    piped = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)  # stderr a pipe: errors only
    assert piped.returncode == 0, piped.stderr
    assert "onnxruntime" not in piped.stdout + piped.stderr, piped.stderr


IN_A_CAPTURE = """
import json
import sys
from edgebench.backends.base import Placement, Prepared
from edgebench.backends.ort import OrtSession
from edgebench.models.framework_log import framework_log
from edgebench.models.inputs import InputDesc

prepared = Prepared(backend="ort", model_path=sys.argv[1], inputs=(InputDesc("pixels", shape=(3, 16, 16)),),
                    batch=1, precision="fp32")
with framework_log() as lines:  # as the probe process opens its session
    session = OrtSession(prepared, Placement(device="cpu", instance=0))
    session.feed(prepared.feeds(1, 0))
    session.infer()
print(json.dumps(lines))
"""


def test_a_session_made_inside_a_capture_logs_its_warning_there_and_not_on_stderr(tmp_path):
    if not ort_takes_callback():
        pytest.skip("this ONNX Runtime has no set_default_logger_callback (older than 1.32): nothing takes them")
    model = classifier_with_an_unused_initializer(tmp_path / "unused.onnx")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-c", IN_A_CAPTURE, str(model)]
    for stderr_is in ("pipe", "file"):
        with open(tmp_path / f"{stderr_is}.log", "w") as log:
            done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE if stderr_is == "pipe" else log,
                                  text=True, env=env, timeout=120)
        err = done.stderr if stderr_is == "pipe" else (tmp_path / f"{stderr_is}.log").read_text()
        assert done.returncode == 0, err
        lines = json.loads(done.stdout)
        assert [line for line in lines if WARNING_LINE in line and line.startswith("onnxruntime [W] ")], lines
        assert "onnxruntime" not in err, err  # a log file too: the lines are the row's


def test_edgebench_run_keeps_the_warning_in_row_json_and_off_the_console(tmp_path):
    """`edgebench run --onnx` twice, with accuracy samples (so a probe opens the session first): captured (stderr a
    pipe, as on a console) no ONNX Runtime line, the warning in row.json's probe record; with `2> run.log` the
    instance's warning is in run.log as well."""
    pytest.importorskip("onnxruntime", reason="running ONNX models needs onnxruntime")
    model = classifier_with_an_unused_initializer(tmp_path / "unused.onnx")
    profile = tmp_path / "ortlog.yaml"
    profile.write_text(f"name: ortlog\nextends: {REPO / 'profiles' / 'smoke.yaml'}\n"
                       "run: {warmup_s: 0.1, duration_s: 0.3, min_inferences: 5, stability_tolerance_pct: 10000, "
                       "accuracy_samples: 4}\n")
    env = cli_env(tmp_path / "cache")
    args = ("--onnx", str(model), "--device", str(profile))

    def probe_log(out: Path) -> list[str]:
        (row_json,) = out.glob("*/rows/*/row.json")
        probe = json.loads(row_json.read_text())["probe"]
        assert probe is not None, "no probe ran"
        return probe["framework_log"]

    console = run(env, *args, "--out", str(tmp_path / "console"))
    assert console.returncode == 0, console.stdout + console.stderr
    assert one_row(tmp_path / "console")["status"] == "ok"
    assert "onnxruntime" not in console.stdout + console.stderr, console.stderr
    if ort_takes_callback():
        assert any(WARNING_LINE in line for line in probe_log(tmp_path / "console")), probe_log(tmp_path / "console")

    log = tmp_path / "run.log"
    with open(log, "w") as fh:
        logged = subprocess.run([sys.executable, "-m", "edgebench", "run", *args, "--out", str(tmp_path / "logged")],
                                stdout=subprocess.PIPE, stderr=fh, text=True, env=env, cwd=REPO, timeout=600)
    assert logged.returncode == 0, log.read_text()
    assert one_row(tmp_path / "logged")["status"] == "ok"
    assert WARNING_LINE in log.read_text(), log.read_text()  # the measuring instance's, its stderr a file
    assert "onnxruntime" not in logged.stdout
    if ort_takes_callback():
        assert any(WARNING_LINE in line for line in probe_log(tmp_path / "logged"))
