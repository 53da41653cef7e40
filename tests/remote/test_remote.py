"""`edgebench remote` against a real OpenSSH server on 127.0.0.1 (tests/sshd_server.py).

The "board" is this machine reached over ssh: the remote folder is a tmp dir, the board's Python is this
venv's interpreter (--remote-python, so nothing is installed), the board's cache is a tmp dir.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import REPO
from sshd_server import SshServer, missing_tools, start_sshd

pytestmark = pytest.mark.skipif(missing_tools() is not None, reason=str(missing_tools()))

SMOKE_FAST = ["--precisions", "fp32", "--batches", "1", "--instances", "1", "--duration", "0.3"]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> SshServer:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def caches(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(this machine's artifact cache, the board's artifact cache), shared by the tests of this module."""
    return tmp_path_factory.mktemp("local-cache"), tmp_path_factory.mktemp("board-cache")


def remote_cmd(sshd: SshServer, caches: tuple[Path, Path], remote_dir: Path, *args: str) -> list[str]:
    """`edgebench remote ACTION? OPTIONS...` with the test's ssh config, board folder, Python and caches;
    args before a '--' are remote options (an action word first), the rest bench args."""
    own, bench = (list(args), []) if "--" not in args else (list(args[:args.index("--")]),
                                                            list(args[args.index("--"):]))
    return [sys.executable, "-m", "edgebench", "--cache", str(caches[0]), "remote", *own,
            "--ssh-config", str(sshd.config), "--remote-dir", str(remote_dir), "--remote-python", sys.executable,
            "--remote-cache", str(caches[1]), *bench]


def run_remote(cmd: list[str], cwd: Path, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def fetched_runs(local: Path, board: str) -> list[Path]:
    root = local / "remote-runs" / board
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []


def rows_of(run: Path) -> list[dict[str, str]]:
    with open(run / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def remote_state(remote_dir: Path) -> dict:
    return json.loads((remote_dir / ".edgebench-remote" / "state.json").read_text())


# --------------------------------------------------------------------------- a whole sweep

@pytest.mark.slow
def test_host_profile_runs_remotely_with_onnx_exported_here(sshd, caches, tmp_path):
    """The `host` profile (reduced: mobilenet_v2, fp32+int8, 1 and 2 instances, 1 s windows) through the whole
    remote path: sync, ONNX exported here and shipped (--export local), detached sweep, progress, fetch."""
    board_dir = tmp_path / "board"
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "--host", "board", "--device", "host", "--export", "local",
                                 "--", "--models", "mobilenet_v2", "--precisions", "fp32,int8", "--instances", "1,2",
                                 "--duration", "1"), cwd=tmp_path, timeout_s=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[board] exported here and shipped ONNX for mobilenet_v2" in proc.stdout
    assert "[board] [4/4] mobilenet_v2/ort/int8/b1/2x cpu/process" in proc.stdout  # progress streamed back (one naming of placement: 2x cpu)
    runs = fetched_runs(tmp_path, "board")
    assert len(runs) == 1 and runs[0].name.endswith("-host")
    rows = rows_of(runs[0])
    assert sorted((r["precision"], r["instances"]) for r in rows) == [("fp32", "1"), ("fp32", "2"),
                                                                      ("int8", "1"), ("int8", "2")]
    assert all(r["status"] in ("ok", "invalid") and float(r["throughput_ips"]) > 0 for r in rows), rows
    # the board measured the shipped file, not an export of its own: same bytes as the export made here
    assert {r["weights"] for r in rows} == {"from-onnx"}
    shipped = board_dir / ".edgebench-remote" / "onnx" / "mobilenet_v2.onnx"
    from edgebench.models.artifacts import sha256_file

    assert {r["onnx_sha256"] for r in rows if r["precision"] == "fp32"} == {sha256_file(shipped)}
    local_exports = list((caches[0] / "onnx").glob("*/mobilenet_v2.onnx"))
    assert [sha256_file(p) for p in local_exports] == [sha256_file(shipped)]
    assert (runs[0] / "system.json").is_file() and (runs[0] / "profile.yaml").is_file()
    assert len(list((runs[0] / "rows").iterdir())) == 4

    status = run_remote(remote_cmd(sshd, caches, board_dir, "status", "--host", "board"), cwd=tmp_path)
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"sweep finished (exit 0), run runs/{runs[0].name}" in status.stdout


# --------------------------------------------------------------------------- dropped connection

def _ssh_followers(pid: int) -> list:
    import psutil

    return [p for p in psutil.Process(pid).children(recursive=True)
            if p.name() == "ssh" and any("follow" in part for part in p.cmdline())]


def test_killed_ssh_leaves_the_sweep_running_then_attach_and_fetch_get_all_rows(sshd, caches, tmp_path):
    board_dir = tmp_path / "board"
    cmd = remote_cmd(sshd, caches, board_dir, "--host", "board", "--device", "smoke", "--export", "remote",
                     "--", "--precisions", "fp32", "--batches", "1,4", "--instances", "1,2", "--duration", "0.5")
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until the first row is being measured, then cut the connection
        seen.append(line)
        if "[1/4]" in line and "running" in line:
            break
    followers = _ssh_followers(proc.pid)
    assert len(followers) == 1, "".join(seen)
    followers[0].send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    out = "".join(seen) + rest
    assert proc.returncode == 1, out
    assert "connection lost while following the sweep" in out and "edgebench remote attach --host board" in out

    # the sweep went on without its ssh connection; its supervisor notes the run folder from the log every
    # agent.POLL_S, so the line the follower saw may be a poll ahead of state.json
    deadline = time.monotonic() + 10
    while not (state := remote_state(board_dir))["run_dir"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state["status"] in ("running", "finished") and state["run_dir"], state
    assert not (tmp_path / "remote-runs" / "board").exists() or not fetched_runs(tmp_path, "board")

    attach = run_remote(remote_cmd(sshd, caches, board_dir, "attach", "--host", "board"), cwd=tmp_path)
    assert attach.returncode == 0, attach.stdout + attach.stderr
    assert "rows: " in attach.stdout  # the sweep's own summary, streamed from the log
    runs = fetched_runs(tmp_path, "board")
    assert [r.name for r in runs] == [Path(state["run_dir"]).name]
    rows = rows_of(runs[0])
    assert sorted((r["batch"], r["instances"]) for r in rows) == [("1", "1"), ("1", "2"), ("4", "1"), ("4", "2")]
    assert all(r["status"] in ("ok", "invalid") for r in rows), rows
    assert remote_state(board_dir)["exit_code"] == 0

    (runs[0] / "results.csv").unlink()  # fetch again: the run folder comes back complete
    fetch = run_remote(remote_cmd(sshd, caches, board_dir, "fetch", "--host", "board"), cwd=tmp_path)
    assert fetch.returncode == 0, fetch.stdout + fetch.stderr
    assert len(rows_of(runs[0])) == 4


# --------------------------------------------------------------------------- several boards, failures

def test_unreachable_board_fails_clearly_while_the_other_finishes(sshd, caches, tmp_path):
    board_dir = tmp_path / "board"
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "--host", "deadboard,board", "--device", "smoke",
                                 "--export", "remote", "--", *SMOKE_FAST), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"[deadboard] FAILED: deadboard: unreachable while trying to create the remote folder (ssh: connect to " \
           f"host 127.0.0.1 port {sshd.dead_port}: Connection refused)" in proc.stdout
    assert "[board] OK: sweep finished (exit 0)" in proc.stdout
    assert "1 of 2 boards failed: deadboard" in proc.stderr
    assert len(rows_of(fetched_runs(tmp_path, "board")[0])) == 1
    assert not (tmp_path / "remote-runs" / "deadboard").exists()


def test_host_key_mismatch_is_refused_and_nothing_runs(sshd, caches, tmp_path):
    board_dir = tmp_path / "board"
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "--host", "badkey", "--device", "smoke",
                                 "--export", "remote", "--", *SMOKE_FAST), cwd=tmp_path)
    assert proc.returncode == 1
    assert "[badkey] FAILED: badkey: host key does NOT match known_hosts" in proc.stdout
    assert "nothing was run" in proc.stdout and "Host key verification failed" in proc.stdout
    assert not board_dir.exists()  # not even the folder was created


def test_unknown_host_key_is_refused_not_recorded(sshd, caches, tmp_path):
    board_dir = tmp_path / "board"
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "status", "--host", "newboard"), cwd=tmp_path)
    assert proc.returncode == 1
    assert "[newboard] FAILED: newboard: host key not verified (not in known_hosts); refused" in proc.stdout
    assert not (sshd.root / "known_hosts_new").exists()  # never accepted silently
    assert not board_dir.exists()


def test_foreign_remote_folder_is_never_synced_into(sshd, caches, tmp_path):
    board_dir = tmp_path / "someone-elses"
    board_dir.mkdir()
    (board_dir / "thesis.tex").write_text("precious")
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "--host", "board", "--device", "smoke",
                                 "--export", "remote", "--", *SMOKE_FAST), cwd=tmp_path)
    assert proc.returncode == 1
    assert "is not empty and was not made by edgebench remote; refusing to sync" in proc.stdout
    assert sorted(p.name for p in board_dir.iterdir()) == ["thesis.tex"]


def test_a_running_sweep_is_not_synced_over(sshd, caches, tmp_path):
    board_dir = tmp_path / "board"
    state_dir = board_dir / ".edgebench-remote"
    state_dir.mkdir(parents=True)
    (state_dir / "state.json").write_text(json.dumps({  # a live supervisor: this test process
        "launch_id": "L1", "status": "running", "supervisor_pid": os.getpid(), "pid": os.getpid(),
        "run_dir": "runs/r0", "log": ".edgebench-remote/logs/L1.log"}))
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "--host", "board", "--device", "smoke",
                                 "--export", "remote", "--", *SMOKE_FAST), cwd=tmp_path)
    assert proc.returncode == 1
    assert "a sweep is already running there (launch L1, run runs/r0)" in proc.stdout
    assert sorted(p.name for p in board_dir.iterdir()) == [".edgebench-remote"]  # nothing synced


# --------------------------------------------------------------------------- injection

def test_shell_metacharacters_in_arguments_reach_the_board_verbatim(sshd, caches, tmp_path):
    canaries = [tmp_path / f"pwned{i}" for i in range(3)]
    board_dir = tmp_path / f"board dir;$(touch {canaries[0]})"
    evil_models = [f"x; touch {canaries[1]}", f"$(touch {canaries[2]})"]
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "--host", "board", "--device", "smoke", "--export", "remote",
                                 "--", "--models", ",".join(evil_models), *SMOKE_FAST), cwd=tmp_path)
    assert [c.exists() for c in canaries] == [False, False, False], proc.stdout
    assert (board_dir / "pyproject.toml").is_file()  # the odd folder name was used literally, by ssh and rsync
    state = remote_state(board_dir)
    assert state["argv"][state["argv"].index("--models") + 1] == ",".join(evil_models)
    # edgebench on the board saw the literal name and rejected it as an unknown model
    assert "unknown model 'x; touch" in proc.stdout
    assert proc.returncode == 1 and state["exit_code"] == 2


# --------------------------------------------------------------------------- a hostile board

def _plant_state(board_dir: Path, run_dir: str) -> None:
    state_dir = board_dir / ".edgebench-remote"
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "state.json").write_text(json.dumps({
        "launch_id": "x", "status": "finished", "exit_code": 0, "run_dir": run_dir, "supervisor_pid": 0,
        "log": ".edgebench-remote/x.log"}))


@pytest.mark.parametrize("run_dir", ["../../etc", "/etc", "runs/../../secret", "runs/a/b", "runs/..", "runs"])
def test_hostile_run_folder_names_are_refused(sshd, caches, tmp_path, run_dir):
    board_dir = tmp_path / "board"
    _plant_state(board_dir, run_dir)
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "fetch", "--host", "board"), cwd=tmp_path)
    assert proc.returncode == 1
    assert f"the board reported run folder {run_dir!r}, which is not runs/<run-id>" in proc.stdout
    board_out = tmp_path / "remote-runs" / "board"
    assert not board_out.exists() or list(board_out.iterdir()) == []


def test_symlinks_on_the_board_are_never_followed_nor_fetched(sshd, caches, tmp_path):
    board_dir = tmp_path / "board"
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "results.csv").write_text("model\nstolen\n")
    (secret / "key").write_text("private")
    run = board_dir / "runs" / "r1"
    (run / "rows").mkdir(parents=True)
    (run / "results.csv").write_text("model\ntiny_cnn\n")
    (run / "passwd").symlink_to("/etc/passwd")
    (run / "rows" / "escape").symlink_to(secret)
    (board_dir / "runs" / "linked").symlink_to(secret)

    _plant_state(board_dir, "runs/linked")  # the run folder itself is a symlink out of runs/
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "fetch", "--host", "board"), cwd=tmp_path)
    assert proc.returncode == 1
    assert "runs/linked is not a folder on the board (missing, or a symlink: never followed)" in proc.stdout
    assert not (tmp_path / "remote-runs" / "board" / "linked").exists()

    _plant_state(board_dir, "runs/r1")  # a real run folder with symlinks inside
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "fetch", "--host", "board"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    local = tmp_path / "remote-runs" / "board" / "r1"
    got = sorted(str(p.relative_to(local)) for p in local.rglob("*"))
    assert got == ["results.csv", "rows"]
    assert "not fetched (symlinks and special files never are)" in proc.stdout
    assert not any(p.is_symlink() for p in (tmp_path / "remote-runs").rglob("*"))


# --------------------------------------------------------------------------- pure checks (no ssh)

def test_run_id_validation_and_remote_dir_arguments():
    from edgebench.remote.fetch import board_folder_name, run_id_of
    from edgebench.remote.ssh import RemoteError, check_host, remote_dir_arg

    assert run_id_of("b", "runs/20250101-000000-orin") == "20250101-000000-orin"
    for bad in ("runs/..", "runs/.hidden", "runs/a b", None, 3, "", "runs/a\nb", "runs\\..\\x"):
        with pytest.raises(RemoteError, match="b: the board reported"):
            run_id_of("b", bad)
    assert remote_dir_arg("~/edgebench") == "edgebench"
    assert remote_dir_arg("/opt/eb/") == "/opt/eb"
    for bad in ("~", "/", ".", "..", "../x", "~bob/x"):
        with pytest.raises(RemoteError):
            remote_dir_arg(bad)
    for bad in ("-oProxyCommand=touch /tmp/x", "a b", "host;id", ""):
        with pytest.raises(RemoteError, match="expected user@board"):
            check_host(bad)
    assert board_folder_name("nvidia@orin-1.lab") == "nvidia@orin-1.lab"
    assert board_folder_name("../x") == "_x"


def test_out_and_resume_are_refused_before_any_board(tmp_path):
    from edgebench.cli import main

    t0 = time.monotonic()
    assert main(["remote", "--host", "nowhere.invalid", "--", "--out", "/tmp/x"]) == 2
    assert main(["remote", "--host", "nowhere.invalid", "--device", "smoke", "--", "--device", "host"]) == 2
    assert time.monotonic() - t0 < 5  # refused locally, no ssh attempted


def test_a_link_dropped_mid_follow_says_connection_lost_and_how_to_reattach(tmp_path, monkeypatch):
    """ssh exits 255 when the link dies under it (ServerAlive timeout, reset): that is a lost connection with the
    attach hint, not a generic ssh failure; a host-key refusal stays a HostKeyError."""
    from edgebench.remote.board import Board, RemoteOptions
    from edgebench.remote.ssh import HostKeyError, RemoteError, Ssh

    said: list[str] = []
    board = Board("board", RemoteOptions(remote_dir="eb", local_dir=tmp_path), said.append)
    script = "echo 'edgebench: [1/4] running'; echo '{err}' >&2; exit 255"
    monkeypatch.setattr(Ssh, "argv", lambda self, cmd: ["sh", "-c", script.format(
        err="Timeout, server 127.0.0.1 not responding.")])
    with pytest.raises(RemoteError, match="connection lost while following the sweep") as info:
        board.follow()
    assert "Timeout, server 127.0.0.1 not responding." in str(info.value)
    assert "edgebench remote attach --host board" in str(info.value)
    assert said == ["edgebench: [1/4] running"]
    monkeypatch.setattr(Ssh, "argv", lambda self, cmd: ["sh", "-c", script.format(err="Host key verification failed.")])
    with pytest.raises(HostKeyError):
        board.follow()


def test_a_reused_supervisor_pid_is_not_taken_for_the_running_sweep(tmp_path):
    """After a reboot the recorded supervisor pid may belong to another process: its identity (boot id + start
    time) differs, so the sweep is 'lost', not 'running' forever (attach would wait, start would refuse)."""
    from edgebench.remote.agent import current_state, proc_identity, write_state

    me = proc_identity(os.getpid())
    if me is None:
        pytest.skip("no /proc/<pid>/stat here (not Linux): identities cannot be read")
    write_state(tmp_path, {"launch_id": "L1", "status": "running", "supervisor_pid": os.getpid(),
                           "supervisor_identity": me, "log": "x.log"})
    assert current_state(tmp_path)["status"] == "running"
    write_state(tmp_path, {"launch_id": "L1", "status": "running", "supervisor_pid": os.getpid(),
                           "supervisor_identity": "another-boot:12345", "log": "x.log"})
    state = current_state(tmp_path)
    assert state["status"] == "lost" and state["alive"] is False


def test_boards_in_parallel_export_one_at_a_time(tmp_path, monkeypatch):
    """Two boards without torch export in two threads into one cache; export_onnx must not run twice at once
    (it would take the other's temporary file for an exporter's extra file, and torch's exporters are not
    thread-safe)."""
    import threading
    from types import SimpleNamespace

    import edgebench.models.export
    from edgebench.remote.ship import export_for_board

    active = [0]
    most = [0]
    lock = threading.Lock()

    def fake_export(spec, cache, seed=0):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.3)
        path = tmp_path / f"{threading.get_ident()}.onnx"
        path.write_bytes(b"onnx")
        with lock:
            active[0] -= 1
        return SimpleNamespace(path=path, sha256="0" * 64)

    monkeypatch.setattr(edgebench.models.export, "export_onnx", fake_export)
    threads = [threading.Thread(target=export_for_board, args=(["tiny_cnn"], "/eb", tmp_path / f"s{i}", None))
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert all((tmp_path / f"s{i}" / "models" / "tiny_cnn.yaml").is_file() for i in range(2))


# --------------------------------------------------------------------------- issue 21: EXTRAS, board text

EXTRAS_INJECTION = "x]' ; touch {m} ; '["


def test_remote_extras_injection_is_refused_before_any_board(sshd, caches, tmp_path):
    marker = tmp_path / "pwned"
    board_dir = tmp_path / "board"
    cmd = [sys.executable, "-m", "edgebench", "--cache", str(caches[0]), "remote", "--host", "board",
           "--ssh-config", str(sshd.config), "--remote-dir", str(board_dir),
           "--remote-extras", EXTRAS_INJECTION.format(m=marker), "--", *SMOKE_FAST]
    proc = run_remote(cmd, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == (f"edgebench: error: --remote-extras {EXTRAS_INJECTION.format(m=marker)!r}: not a "
                           "comma-separated list of extras names (letters, digits, _ . -), e.g. ort,trt,progress\n")
    assert not marker.exists() and not board_dir.exists()


def test_extras_reach_make_on_the_board_as_data_never_as_shell(sshd, tmp_path):
    """What Board.setup sends (`cd DIR && make setup EXTRAS=...`, every word quoted) run on the real sshd with the
    issue's injection string: the board's Makefile refuses it and no shell runs it. Board.setup itself refuses
    it before sending anything."""
    import shutil as sh

    from edgebench.remote.board import Board, RemoteOptions
    from edgebench.remote.ssh import RemoteError

    if sh.which("make") is None:
        pytest.skip("GNU make is not installed")
    board_dir = tmp_path / "board"
    board_dir.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        sh.copy(REPO / name, board_dir)
    (board_dir / "fakepy").write_text("#!/bin/sh\nmkdir -p v/bin && touch v/ran\n")
    (board_dir / "fakepy").chmod(0o755)
    said: list[str] = []
    marker = tmp_path / "pwned"
    injection = EXTRAS_INJECTION.format(m=marker)
    board = Board("board", RemoteOptions(remote_dir=str(board_dir), local_dir=tmp_path / "local",
                                         remote_extras=injection, ssh_config=str(sshd.config)), said.append)
    proc = board.ssh.run(board._in_dir(["make", "setup", "PYTHON=./fakepy", "VENV=v", f"EXTRAS={injection}"]),
                         what="make setup")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"make setup: EXTRAS={injection} is not a comma-separated list of extras names" in proc.stderr
    assert not marker.exists() and not (board_dir / "v").exists()
    with pytest.raises(RemoteError, match=r"^board: --remote-extras .* not a comma-separated list"):
        board.setup()
    assert not marker.exists() and not (board_dir / "v").exists() and said == []
    # a good list goes through to the board's make (here a stand-in python, so nothing is installed)
    ok = board.ssh.run(board._in_dir(["make", "setup", "PYTHON=./fakepy", "VENV=v", "EXTRAS=ort,dev"]),
                       what="make setup")
    assert (board_dir / "v" / "ran").exists(), ok.stdout + ok.stderr


def test_escape_sequences_from_a_board_are_shown_not_sent_to_the_terminal(sshd, caches, tmp_path):
    board_dir = tmp_path / "board"
    _plant_state(board_dir, "runs/r1\x1b[2J")
    (board_dir / ".edgebench-remote" / "x.log").write_bytes(
        b"[1/1] tiny_cnn ok\n\x1b]0;owned\x07\x1b[2J\x1b[1A\rfake: all rows ok\xc2\x9b31m \x9b\n")
    proc = run_remote(remote_cmd(sshd, caches, board_dir, "attach", "--host", "board", "--no-fetch"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not any(c in proc.stdout + proc.stderr for c in "\x1b\x07\r\x9b")
    assert "[board] [1/1] tiny_cnn ok" in proc.stdout
    # a C1 CSI sent as UTF-8 is shown as \x9b; a lone 0x9b byte is not UTF-8 and arrives as U+FFFD
    assert "[board] \\x1b]0;owned\\x07\\x1b[2J\\x1b[1A\\x0dfake: all rows ok\\x9b31m \ufffd" in proc.stdout
    assert "[board] OK: sweep finished (exit 0), run runs/r1\\x1b[2J" in proc.stdout
