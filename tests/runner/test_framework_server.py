"""Warm workers forked from the framework server (runner/child_process.server_context): whose child they are, the
backend whose framework the server did not import, EDGEBENCH_WORKER_START=spawn, and that a worker dies with the
runner. Each case runs in a fresh interpreter: a process has one server, its modules fixed when it starts."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from repo_paths import REPO

# starts warm workers of the given backends (in order), prints "pid ppid me" for each once it is primed
SCRIPT = """
import os, sys
from edgebench.runner.messages import Primed
from edgebench.runner import child_process
from edgebench.runner.worker_proc import spawn_worker
workers = []
for backend in sys.argv[1].split(","):
    w = spawn_worker(1, 1, {}, "test-worker", preload=(backend, "cpu"))
    workers.append(w)
    msg = w.conn.recv()
    assert isinstance(msg, Primed), msg
    with open(f"/proc/{w.pid}/stat") as fh:
        ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
    print(backend, w.pid, ppid, os.getpid(), flush=True)
if len(sys.argv) > 2:  # die without a word: SIGKILL, no cleanup of any kind
    os.kill(os.getpid(), 9)
for line in sys.stdin:
    pass
child_process.stop([w.child for w in workers], 2.0)
"""


def start(backends: str, *, kill_self: bool = False, **env: str) -> tuple[subprocess.Popen, list[list[str]]]:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, backends, *(["kill"] if kill_self else [])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), **env})
    lines = []
    for _ in backends.split(","):
        line = proc.stdout.readline().split()  # type: ignore[union-attr]
        assert line, proc.communicate(timeout=60)
        lines.append(line)
    return proc, lines


def cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        return fh.read().replace(b"\0", b" ").decode()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_warm_worker_is_forked_by_the_framework_server_not_by_the_runner():
    proc, [(backend, pid, ppid, me)] = start("ort")
    try:
        assert backend == "ort" and ppid != me
        assert "forkserver" in cmdline(int(ppid))  # multiprocessing's server, started by the runner
        assert os.getpgid(int(pid)) == int(pid)  # and still leads a process group of its own
    finally:
        proc.communicate(timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_edgebench_worker_start_spawn_keeps_workers_children_of_the_runner():
    proc, [(_b, _pid, ppid, me)] = start("ort", EDGEBENCH_WORKER_START="spawn")
    proc.communicate(timeout=60)
    assert ppid == me, proc.stderr


def test_a_backend_whose_framework_the_server_did_not_import_is_spawned():
    """The server was started for the null backend (edgebench's worker code only): an ort worker forked from it
    would import onnxruntime after the fork, so it is spawned instead; a second null worker is forked."""
    proc, lines = start("null,ort,null")
    proc.communicate(timeout=60)
    (_b1, _p1, ppid1, me), (_b2, _p2, ppid2, _m2), (_b3, _p3, ppid3, _m3) = lines
    assert ppid1 != me and ppid2 == me and ppid3 == ppid1, proc.stderr


def test_a_worker_forked_by_the_server_dies_with_the_runner():
    """The runner is SIGKILLed: its server leaves (its pipe to the runner closes), and the worker, whose parent the
    server is, gets SIGKILL from the kernel (PR_SET_PDEATHSIG) though it leads its own process group."""
    proc, [(_b, pid, _ppid, _me)] = start("null", kill_self=True)
    proc.communicate(timeout=60)
    assert proc.returncode == -9
    deadline = time.monotonic() + 20
    while alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(int(pid)), f"worker {pid} outlived its runner"
