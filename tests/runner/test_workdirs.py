"""Temp folders of the runner (issue 21): a harness killed with SIGKILL leaves <tmp>/edgebench-run-<pid>-*; the next
start removes those whose owner process is gone, and never a live harness's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from repo_paths import REPO

from edgebench.runner.workdirs import (
    OWNER,
    make_workdir,
    process_start_ticks,
    remove_stale_workdirs,
    stale_workdirs,
)

MAKE_AND_WAIT = ("import sys, time; from edgebench.runner.workdirs import make_workdir; "
                 "print(make_workdir(sys.argv[1]), flush=True); time.sleep(600)")


def owner_process(root: Path) -> tuple[subprocess.Popen, Path]:
    """A real process that made its workdir under root and is still running."""
    proc = subprocess.Popen([sys.executable, "-c", MAKE_AND_WAIT, str(root)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_only_folders_of_dead_owners_are_removed(tmp_path):
    dead, dead_dir = owner_process(tmp_path)
    live, live_dir = owner_process(tmp_path)
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait(timeout=30)
        assert dead_dir.name.startswith(f"edgebench-run-{dead.pid}-") and live_dir.name.startswith(
            f"edgebench-run-{live.pid}-")
        (dead_dir / "instance0.npy").write_bytes(b"x" * 100)  # what a killed row leaves
        no_owner = tmp_path / "edgebench-run-old"  # an older edgebench's, or one being created: no owner record
        no_owner.mkdir()
        unrelated = tmp_path / "something-else"
        unrelated.mkdir()
        assert stale_workdirs(str(tmp_path)) == [dead_dir]
        assert remove_stale_workdirs(str(tmp_path)) == [dead_dir]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live_dir.name, "edgebench-run-old",
                                                                    "something-else"])
        assert live.poll() is None  # untouched and still running
    finally:
        live.kill()
        live.wait(timeout=30)


def test_a_reused_pid_does_not_keep_a_dead_owners_folder(tmp_path):
    """The recorded pid now belongs to a process that started later (pid reuse): the folder is stale."""
    live, live_dir = owner_process(tmp_path)
    try:
        record = json.loads((live_dir / OWNER).read_text())
        assert record == {"pid": live.pid, "start_ticks": process_start_ticks(live.pid)}
        assert stale_workdirs(str(tmp_path)) == []
        (live_dir / OWNER).write_text(json.dumps({"pid": live.pid, "start_ticks": record["start_ticks"] - 1}))
        assert stale_workdirs(str(tmp_path)) == [live_dir]
    finally:
        live.kill()
        live.wait(timeout=30)


def test_own_folder_is_never_stale(tmp_path):
    mine = Path(make_workdir(str(tmp_path)))
    assert mine.name.startswith(f"edgebench-run-{os.getpid()}-")
    assert stale_workdirs(str(tmp_path)) == [] and mine.is_dir()


def test_next_sweep_removes_what_a_sigkilled_harness_left(tmp_path):
    """`edgebench run` killed with SIGKILL mid-measurement leaves its temp folder; the next `edgebench run` removes it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1",
           "EDGEBENCH_CACHE": os.environ.get("EDGEBENCH_CACHE") or str(tmp_path / "cache")}
    args = [sys.executable, "-m", "edgebench", "run", "--model", "tiny_cnn", "--backend", "null", "--device", "smoke",
            "--out", str(tmp_path / "runs")]
    proc = subprocess.Popen([*args, "--duration", "60"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(tmp.glob("edgebench-run-*/instance*")) \
                and not list(tmp.glob("edgebench-run-*/owner.json")):
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    left = list(tmp.glob("edgebench-run-*"))
    assert [p.name.startswith(f"edgebench-run-{proc.pid}-") for p in left] == [True]
    again = subprocess.run([*args, "--duration", "0.3"], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"edgebench: removed 1 temp folder(s) of killed sweeps: {left[0]}" in again.stdout
    assert list(tmp.glob("edgebench-run-*")) == []  # the new run's own folder is gone too (normal cleanup)
