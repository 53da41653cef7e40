"""The board side of `edgebench remote`: start a sweep detached, report its state, stream its log.

Runs on the board from the synced project folder (the current directory), standard library only:

  python -m edgebench.remote.agent start -- bench --device orin ...   start a detached supervisor, print JSON
  python -m edgebench.remote.agent status                              print the state as JSON
  python -m edgebench.remote.agent follow [--offset N]                 stream the log until the sweep ends,
                                                                       then one line: STATE_MARKER + JSON

The supervisor is its own session leader (setsid), with stdin/stdout/stderr off the ssh channel, so a
dropped ssh connection neither signals nor blocks it. It runs `python -m edgebench ARGS` with output to
.edgebench-remote/logs/<launch-id>.log and keeps .edgebench-remote/state.json up to date: launch id,
supervisor pid, sweep pid, log, run folder (from the sweep's "run folder" line), status, exit code.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

STATE_DIR = ".edgebench-remote"
STATE_FILE = "state.json"
STATE_MARKER = "@@edgebench-remote-state@@ "
RUN_FOLDER_RE = re.compile(r"^edgebench: run folder (.+)$", re.MULTILINE)
POLL_S = 0.2
START_WAIT_S = 20.0


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def state_path(root: Path) -> Path:
    return root / STATE_DIR / STATE_FILE


def read_state(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(state_path(root).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def write_state(root: Path, state: dict[str, Any]) -> None:
    path = state_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(state, fh, indent=2, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def proc_identity(pid: int) -> str | None:
    """The kernel's boot id and the process's start time (clock ticks after boot, /proc/PID/stat field 22):
    a pid that a later process, or a process after a reboot, got again has another identity. None off Linux."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        with open(f"/proc/{pid}/stat") as fh:
            start_ticks = fh.read().rsplit(")", 1)[-1].split()[19]
    except (OSError, IndexError):
        return None
    return f"{boot_id}:{start_ticks}"


def pid_alive(pid: Any, identity: Any = None) -> bool:
    """Whether `pid` runs and, when the state recorded its identity, is still that same process."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    if isinstance(identity, str):
        now = proc_identity(pid)
        if now is not None and now != identity:
            return False  # the pid was reused (e.g. the board rebooted): the supervisor is gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purpose (Linux only; elsewhere trust kill -0)
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def current_state(root: Path) -> dict[str, Any]:
    """The state file plus `alive`; a 'running' sweep whose supervisor is gone becomes 'lost'."""
    state = read_state(root)
    if state is None:
        return {"status": "none", "reason": f"no sweep was started in {root}"}
    alive = pid_alive(state.get("supervisor_pid"), state.get("supervisor_identity"))
    state["alive"] = alive
    if state.get("status") in ("starting", "running") and not alive:
        state["status"] = "lost"
        state["reason"] = "the supervisor process is gone without recording an exit code (board rebooted, or killed)"
    return state


def _child_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("COLUMNS", "160")  # the log is no terminal: keep the sweep's progress lines unwrapped
    return env


def cmd_start(root: Path, argv: list[str]) -> int:
    state = current_state(root)
    if state.get("status") in ("starting", "running"):
        print(f"a sweep is already running here (launch {state.get('launch_id')}, pid {state.get('pid')}); "
              "attach to it or wait for it to end", file=sys.stderr)
        return 3
    launch_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    log_rel = f"{STATE_DIR}/logs/{launch_id}.log"
    (root / log_rel).parent.mkdir(parents=True, exist_ok=True)
    write_state(root, {"launch_id": launch_id, "status": "starting", "argv": argv, "log": log_rel,
                       "started_utc": _now(), "run_dir": None, "exit_code": None})
    with open(root / log_rel, "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "edgebench.remote.agent", "supervise", launch_id, "--", *argv],
            cwd=root, env=_child_env(root), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, close_fds=True,
        )
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        state = read_state(root) or {}
        if state.get("launch_id") == launch_id and state.get("status") in ("running", "finished"):
            print(json.dumps(state, sort_keys=True), flush=True)
            return 0
        time.sleep(POLL_S)
    print(f"the supervisor did not report within {START_WAIT_S:g} s; see {log_rel}", file=sys.stderr)
    return 4


def cmd_supervise(root: Path, launch_id: str, argv: list[str]) -> int:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    state = read_state(root) or {}
    if state.get("launch_id") != launch_id:
        print(f"state file belongs to launch {state.get('launch_id')}, not {launch_id}", file=sys.stderr)
        return 5
    log_path = root / state["log"]
    with open(log_path, "ab") as log:
        child = subprocess.Popen([sys.executable, "-u", "-m", "edgebench", *argv], cwd=root, env=_child_env(root),
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def forward(signum: int, _frame: Any) -> None:  # `kill <supervisor>` stops the sweep like Ctrl-C would
        child.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    state.update(status="running", supervisor_pid=os.getpid(), supervisor_identity=proc_identity(os.getpid()),
                 pid=child.pid)
    write_state(root, state)
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if state.get("run_dir") is None and _note_run_dir(log_path, state):
            write_state(root, state)
    _note_run_dir(log_path, state)
    state.update(status="finished", exit_code=code, finished_utc=_now())
    write_state(root, state)
    return 0


def _note_run_dir(log_path: Path, state: dict[str, Any]) -> bool:
    try:
        match = RUN_FOLDER_RE.search(log_path.read_text(errors="replace"))
    except OSError:
        return False
    if match:
        state["run_dir"] = match.group(1).strip()
        return True
    return False


def cmd_follow(root: Path, offset: int) -> int:
    out = sys.stdout.buffer
    state = current_state(root)
    log_rel = state.get("log")
    if not isinstance(log_rel, str):
        print(STATE_MARKER + json.dumps(state, sort_keys=True), flush=True)
        return 0
    with open(root / log_rel, "rb") as log:
        log.seek(offset)
        while True:
            finished = state.get("status") not in ("starting", "running")
            chunk = log.read(1 << 16)
            if chunk:
                out.write(chunk)
                out.flush()
                continue
            if finished:  # read to the end after the sweep ended: nothing is lost
                break
            time.sleep(POLL_S)
            state = current_state(root)
    out.write(b"\n" + (STATE_MARKER + json.dumps(state, sort_keys=True) + "\n").encode())
    out.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m edgebench.remote.agent")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("args", nargs=argparse.REMAINDER)
    sv = sub.add_parser("supervise")
    sv.add_argument("launch_id")
    sv.add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("status")
    f = sub.add_parser("follow")
    f.add_argument("--offset", type=int, default=0)
    args = p.parse_args(argv)
    root = Path.cwd()
    rest = [a for a in getattr(args, "args", [])]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if args.cmd == "start":
        return cmd_start(root, rest)
    if args.cmd == "supervise":
        return cmd_supervise(root, args.launch_id, rest)
    if args.cmd == "status":
        print(json.dumps(current_state(root), sort_keys=True))
        return 0
    return cmd_follow(root, max(0, args.offset))


if __name__ == "__main__":
    raise SystemExit(main())
