"""One board: sync the project, set up Python, ship ONNX if needed, start the sweep detached, follow, fetch."""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.remote.agent import STATE_DIR, STATE_MARKER
from edgebench.remote.fetch import Fetched, fetch_run
from edgebench.remote.sanitize import check_extras
from edgebench.remote.ship import SHIP_DIR, export_for_board, sweep_models
from edgebench.remote.ssh import SSH_FAILED, AuthError, HostKeyError, RemoteError, Ssh, classify

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
SYNC_EXCLUDES = (".venv/", ".git/", "__pycache__/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
                 "*.egg-info/", "/runs/", "/remote-runs/", f"/{STATE_DIR}/", "/.cache/", "/.device/", "/.whl/",
                 "/.gl/")
VENV_PYTHON = ".venv/bin/python"
PROBE = ("import importlib.util as u, json, sys; print(json.dumps({'version': list(sys.version_info[:3]), "
         "'torch': u.find_spec('torch') is not None, 'onnxruntime': u.find_spec('onnxruntime') is not None}))")


@dataclass(frozen=True)
class RemoteOptions:
    remote_dir: str                       # as passed to ssh/rsync: relative to the home folder, or absolute
    local_dir: Path                       # remote-runs/: fetched runs go to <local_dir>/<board>/<run-id>/
    remote_python: str | None = None      # an existing interpreter on the board (skips `make setup`)
    remote_extras: str | None = None      # EXTRAS for `make setup` there (default: the Makefile's choice)
    export: str = "auto"                  # auto | local | remote
    remote_cache: str | None = None       # EDGEBENCH_CACHE on the board
    local_cache: str | None = None        # this machine's artifact cache (for local export)
    ssh_config: str | None = None
    connect_timeout_s: int = 10
    ssh_options: tuple[str, ...] = ()     # per board, e.g. from an Ansible inventory (ssh -o HostName=... Port=...)


@dataclass
class BoardResult:
    host: str
    ok: bool = False
    message: str = ""
    state: dict[str, Any] = field(default_factory=dict)
    fetched: Fetched | None = None


Say = Callable[[str], None]


class Board:
    def __init__(self, host: str, opts: RemoteOptions, say: Say) -> None:
        self.opts = opts
        self.ssh = Ssh(host, opts.ssh_config, opts.connect_timeout_s, opts.ssh_options)
        self.host = host
        self.say = say
        self.abs_dir = ""  # the remote folder's absolute path, from the board's `pwd`

    # ----------------------------------------------------------------- commands on the board

    def _in_dir(self, argv: list[str], env: dict[str, str] | None = None) -> str:
        """A shell command that runs argv inside the remote folder; every word quoted."""
        prefix = ["env", *(f"{k}={v}" for k, v in (env or {}).items())] if env else []
        return f"cd -- {shlex.quote(self.opts.remote_dir)} && {shlex.join([*prefix, *argv])}"

    def _python(self) -> str:
        return self.opts.remote_python or VENV_PYTHON

    def _agent(self, *args: str) -> str:
        env = {"PYTHONPATH": self.abs_dir or "."}
        if self.opts.remote_cache:
            env["EDGEBENCH_CACHE"] = self.opts.remote_cache
        return self._in_dir([self._python(), "-m", "edgebench.remote.agent", *args], env)

    def prepare_dir(self) -> None:
        """Create the remote folder; refuse one that holds other things (the sync deletes extra files)."""
        d = shlex.quote(self.opts.remote_dir)
        out = self.ssh.check(
            f"mkdir -p -- {d} && cd -- {d} && pwd && if [ -d {STATE_DIR} ] || [ -z \"$(ls -A)\" ]; "
            f"then mkdir -p {STATE_DIR} && echo ours; else echo foreign; fi",
            what="create the remote folder")
        lines = out.strip().splitlines()
        if len(lines) < 2:
            raise RemoteError(f"{self.host}: unexpected answer while creating the remote folder: {out!r}")
        if lines[-1] != "ours":
            raise RemoteError(f"{self.host}: remote folder {lines[0]} is not empty and was not made by edgebench "
                              "remote; refusing to sync into it (the sync deletes files the project does not have). "
                              "Choose another --remote-dir.")
        self.abs_dir = lines[0]

    def read_state(self) -> dict[str, Any]:
        out = self.ssh.check(self._agent("status"), what="read the sweep state")
        return _parse_state(self.host, out.strip().splitlines()[-1] if out.strip() else "")

    def refuse_if_running(self) -> None:
        """Before syncing: a running sweep must not have its code replaced under it."""
        if not self.opts.remote_python:
            probe = self.ssh.run(self._in_dir(["test", "-x", VENV_PYTHON]), what="look for the board's venv")
            if probe.returncode != 0:
                return  # no venv yet: never ran here
        proc = self.ssh.run(self._agent("status"), what="read the sweep state")
        if proc.returncode != 0:
            return  # first use: the agent is not synced yet
        state = _parse_state(self.host, proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "")
        if state.get("status") in ("starting", "running"):
            raise RemoteError(f"{self.host}: a sweep is already running there (launch {state.get('launch_id')}, "
                              f"run {state.get('run_dir')}); use `edgebench remote attach --host {self.host}`")

    def sync(self) -> None:
        missing = [n for n in ("pyproject.toml", "Makefile", "edgebench", "models", "profiles")
                   if not (PROJECT_ROOT / n).exists()]
        if missing:
            raise RemoteError(f"{PROJECT_ROOT} is not an edgebench source checkout (no {', '.join(missing)}); "
                              "edgebench remote syncs the checkout it runs from: use `pip install -e .` of a clone")
        args = ["-rlt", "--safe-links", "--delete", "--chmod=Du=rwx,Fu=rw,Fgo=r,Dgo=rx"]
        args += [f"--exclude={e}" for e in (*SYNC_EXCLUDES, *git_ignored(PROJECT_ROOT))]
        args += [f"{PROJECT_ROOT}/", self.ssh.remote(f"{self.opts.remote_dir}/")]
        self.ssh.rsync(args, what="sync the project")

    def setup(self) -> dict[str, Any]:
        if not self.opts.remote_python:
            if self.opts.remote_extras:
                try:
                    check_extras(self.opts.remote_extras)
                except EdgebenchError as exc:
                    raise RemoteError(f"{self.host}: {exc}") from None
            # quoted for the board's shell by _in_dir; the Makefile takes it as a variable, never as recipe text
            extras = [f"EXTRAS={self.opts.remote_extras}"] if self.opts.remote_extras else []
            self.say(" ".join(["make setup", *extras, "(installs packages the first time)"]))
            self.ssh.check(self._in_dir(["make", "setup", *extras]),
                           what="set up the board's venv (make setup)", timeout_s=3600)
        out = self.ssh.check(self._in_dir([self._python(), "-c", PROBE]), what="check the board's Python")
        try:
            info = json.loads(out.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            raise RemoteError(f"{self.host}: unexpected answer from the board's Python: {out!r}") from None
        if list(info.get("version", []))[:2] < [3, 10]:
            raise RemoteError(f"{self.host}: {self._python()} is Python {info.get('version')}; edgebench needs >= 3.10")
        return info

    def ship_onnx(self, bench_args: list[str]) -> list[str]:
        models = sweep_models(bench_args)
        with tempfile.TemporaryDirectory(prefix="edgebench-ship-") as tmp:
            shipment = export_for_board(models, self.abs_dir, Path(tmp), self.opts.local_cache)
            self.ssh.rsync(["-rt", "--delete", f"{shipment.staging}/onnx/",
                            self.ssh.remote(f"{self.opts.remote_dir}/{SHIP_DIR}/")], what="ship the ONNX files")
            self.ssh.rsync(["-rt", f"{shipment.staging}/models/", self.ssh.remote(f"{self.opts.remote_dir}/models/")],
                           what="ship the model specs")
        return models

    def start(self, bench_args: list[str]) -> dict[str, Any]:
        out = self.ssh.check(self._agent("start", "--", "bench", *bench_args), what="start the sweep")
        return _parse_state(self.host, out.strip().splitlines()[-1] if out.strip() else "")

    def follow(self, offset: int = 0) -> dict[str, Any]:
        """Stream the log until the sweep ends; the final state. RemoteError when the connection drops."""
        argv = self.ssh.argv(self._agent("follow", "--offset", str(offset)))
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        state: dict[str, Any] | None = None
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            if line.startswith(STATE_MARKER):
                state = _parse_state(self.host, line[len(STATE_MARKER):])
            elif line.strip():
                self.say(line)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        code = proc.wait()
        if state is None:
            said = ""
            if code == SSH_FAILED:
                exc = classify(self.host, "follow the sweep", err)
                if isinstance(exc, (HostKeyError, AuthError)):
                    raise exc
                # e.g. "Timeout, server not responding" (ServerAlive) or a reset: the link dropped, not the sweep
                lines = err.strip().splitlines()
                said = f": {lines[-1]}" if lines else ""
            raise RemoteError(f"{self.host}: connection lost while following the sweep (ssh exit {code}{said}); the "
                              f"sweep goes on on the board: `edgebench remote attach --host {self.host}` to reconnect, "
                              f"`edgebench remote fetch --host {self.host}` for the results")
        return state

    def fetch(self, state: dict[str, Any]) -> Fetched:
        return fetch_run(self.ssh, self.opts.remote_dir, state.get("run_dir"), self.opts.local_dir)


def git_ignored(root: Path) -> list[str]:
    """What git ignores in the project (.gitignore, .git/info/exclude), as anchored rsync excludes;
    empty when the project is not a git checkout (SYNC_EXCLUDES still apply)."""
    try:
        proc = subprocess.run(["git", "-C", str(root), "ls-files", "--others", "--ignored", "--exclude-standard",
                               "--directory", "-z"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    return ["/" + p for p in proc.stdout.decode(errors="replace").split("\0") if p]


def _parse_state(host: str, text: str) -> dict[str, Any]:
    try:
        state = json.loads(text)
    except json.JSONDecodeError:
        raise RemoteError(f"{host}: unreadable sweep state from the board: {text[:200]!r}") from None
    if not isinstance(state, dict):
        raise RemoteError(f"{host}: unreadable sweep state from the board: {text[:200]!r}")
    return state


# --------------------------------------------------------------------------- whole flows

def run_board(host: str, opts: RemoteOptions, bench_args: list[str], say: Say) -> BoardResult:
    """sync -> setup -> (ship ONNX) -> start detached -> follow -> fetch, for one board."""
    board = Board(host, opts, say)
    result = BoardResult(host)
    try:
        board.prepare_dir()
        board.refuse_if_running()
        say(f"sync project -> {board.abs_dir}")
        board.sync()
        info = board.setup()
        local = opts.export == "local" or (opts.export == "auto" and not info.get("torch"))
        if local:
            models = board.ship_onnx(bench_args)
            say(f"exported here and shipped ONNX for {', '.join(models)} (board has torch: {info.get('torch')})")
        state = board.start(bench_args)
        say(f"sweep started detached (launch {state.get('launch_id')}, pid {state.get('pid')})")
        return _finish(board, board.follow(), result, say)
    except RemoteError as exc:
        result.message = str(exc)
        return result


def attach_board(host: str, opts: RemoteOptions, say: Say, fetch: bool = True) -> BoardResult:
    board = Board(host, opts, say)
    result = BoardResult(host)
    try:
        _started_state(board, host)
        state = board.follow(0)
        if not fetch:
            result.state, result.ok = state, state.get("exit_code") == 0
            result.message = _state_line(state)
            return result
        return _finish(board, state, result, say)
    except RemoteError as exc:
        result.message = str(exc)
        return result


def fetch_board(host: str, opts: RemoteOptions, say: Say) -> BoardResult:
    board = Board(host, opts, say)
    result = BoardResult(host)
    try:
        state = _started_state(board, host)
        if state.get("status") in ("starting", "running"):
            say("the sweep is still running: fetching the rows written so far")
        return _finish(board, state, result, say)
    except RemoteError as exc:
        result.message = str(exc)
        return result


def status_board(host: str, opts: RemoteOptions, say: Say) -> BoardResult:
    board = Board(host, opts, say)
    result = BoardResult(host)
    try:
        board.prepare_dir()
        result.state = board.read_state()
        result.ok = result.state.get("status") != "none"
        result.message = _state_line(result.state)
    except RemoteError as exc:
        result.message = str(exc)
    return result


def _started_state(board: Board, host: str) -> dict[str, Any]:
    """The board's sweep state; RemoteError when no sweep was ever started in the remote folder."""
    board.prepare_dir()
    state = board.read_state()
    if state.get("status") == "none":
        raise RemoteError(f"{host}: no sweep was started in {board.abs_dir}")
    return state


def _finish(board: Board, state: dict[str, Any], result: BoardResult, say: Say) -> BoardResult:
    result.state = state
    fetched = board.fetch(state)
    result.fetched = fetched
    for name in fetched.skipped:
        say(f"not fetched (symlinks and special files never are): {name}")
    done = state.get("status") == "finished"
    result.ok = done and state.get("exit_code") == 0
    result.message = f"{_state_line(state)}; fetched {fetched.files} files to {fetched.path}"
    return result


def _state_line(state: dict[str, Any]) -> str:
    status = state.get("status")
    if status == "finished":
        return f"sweep finished (exit {state.get('exit_code')}), run {state.get('run_dir')}"
    if status in ("starting", "running"):
        return f"sweep running (pid {state.get('pid')}), run {state.get('run_dir')}"
    return f"sweep {status}: {state.get('reason', '')} (run {state.get('run_dir')})"
