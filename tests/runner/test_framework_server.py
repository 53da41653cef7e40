"""Warm workers forked from the framework server (run.worker_start: forkserver; runner/child_process.server_context):
whose child they are, the backend whose framework the server did not import, spawned by default, and that a worker
dies with the runner. Each case runs in a fresh interpreter: a process has one server, its modules fixed when it starts."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from repo_paths import REPO

# starts warm workers of the given backends (in order; from the server unless argv[2] is "spawn"), prints
# "backend pid ppid me" for each once it is primed
SCRIPT = """
import os, sys
from edgebench.runner.messages import Primed
from edgebench.runner import child_process
from edgebench.runner.worker_proc import spawn_worker
workers = []
for backend in sys.argv[1].split(","):
    w = spawn_worker(1, 1, {}, "test-worker", preload=(backend, "cpu"), from_server=sys.argv[2] != "spawn")
    workers.append(w)
    msg = w.conn.recv()
    assert isinstance(msg, Primed), msg
    with open(f"/proc/{w.pid}/stat") as fh:
        ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
    print(backend, w.pid, ppid, os.getpid(), flush=True)
if sys.argv[3] == "kill":  # die without a word: SIGKILL, no cleanup of any kind
    os.kill(os.getpid(), 9)
for line in sys.stdin:
    pass
child_process.stop([w.child for w in workers], 2.0)
"""


def start(backends: str, *, kill_self: bool = False, how: str = "server") -> tuple[subprocess.Popen, list[list[str]]]:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, backends, how, "kill" if kill_self else "stay"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**{k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"},
                                 "PYTHONPATH": str(REPO)})
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
        with open(f"/proc/{ppid}/environ", "rb") as fh:  # it imported the framework under the worker's thread caps
            assert b"OMP_NUM_THREADS=1" in fh.read().split(b"\0")
        assert os.getpgid(int(pid)) == int(pid)  # and still leads a process group of its own
    finally:
        proc.communicate(timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_by_default_a_warm_worker_is_spawned_a_child_of_the_runner():
    proc, [(_b, _pid, ppid, me)] = start("ort", how="spawn")
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


def test_a_profile_asking_for_the_server_gets_rows_whose_workers_column_says_so(tmp_path):
    """`edgebench bench` as a user runs it: run.worker_start: forkserver, two null instances, two repeats; every
    row measured, its `workers` column naming the forked workers; the default names none."""
    from cli_runs import cli, cli_env, null_profile, read_rows

    env = cli_env(tmp_path / "cache")
    for way, forked in (("forkserver", "2 forked from the framework server"), ("spawn", None)):
        prof = null_profile(tmp_path, f"fs-{way}", sweep={"instances": [2]},
                            run={"repeats": 2, "worker_start": way} if way != "spawn" else {"repeats": 2})
        done = cli(env, "bench", "--device", str(prof), "--out", str(tmp_path / way))
        assert done.returncode == 0, done.stderr
        (results,) = (tmp_path / way).glob("*/results.csv")
        rows = read_rows(results)
        # measured (a null row's short window may still be judged unstable: that is the window, not the start)
        assert len(rows) == 2 and {r["status"] for r in rows} <= {"ok", "invalid"}, rows
        for row in rows:
            assert row["workers"].startswith("warm: ")
            assert (forked in row["workers"]) if forked else ("forked" not in row["workers"]), row["workers"]
