"""nvpmodel power-mode control and the power-mode sweep dimension, against fake `nvpmodel` and
`jetson_clocks` executables first on PATH that keep the board's state in a JSON file (real subprocesses)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import REPO

from edgebench.config.profile import profile_from_dict
from edgebench.config.run_config import RunConfig
from edgebench.device.power_modes import PowerModeController, PowerModeError, power_mode_session
from edgebench.errors import ConfigError

MODES = {"0": "MAXN", "1": "MODE_15W", "2": "MODE_30W", "3": "MODE_50W"}

# nvpmodel: -q, -p --verbose, -m ID. "fail" ids exit 1 (as NVPM ERROR), "ignore" ids exit 0 and keep the old
# mode (what nvpmodel does for a mode needing a reboot when it has no terminal). Setting a mode resets clocks.
FAKE_NVPMODEL = r'''
import json, os, sys
state_path, log_path = os.environ["FAKE_JETSON_STATE"], os.environ["FAKE_JETSON_LOG"]
state = json.load(open(state_path))
open(log_path, "a").write(" ".join(["nvpmodel", *sys.argv[1:]]) + "\n")
args = sys.argv[1:]
if args == ["-q"]:
    print("NVPM WARN: fan mode is not set!")
    print("NV Power Mode: " + state["modes"][str(state["mode"])])
    print(state["mode"])
elif args[:1] == ["-p"]:
    for i, name in state["modes"].items():
        print(f"NVPM VERB: POWER_MODEL: ID={i} NAME={name}")
elif args[:1] == ["-m"]:
    if args[1] in state["fail"]:
        print("NVPM ERROR: Error opening /sys/devices/gpu.0/railgate_enable", file=sys.stderr)
        sys.exit(1)
    if args[1] not in state["ignore"]:
        state["mode"] = int(args[1])
        state["clocks"] = "mode-default"
    json.dump(state, open(state_path, "w"))
else:
    sys.exit(2)
'''
FAKE_JETSON_CLOCKS = r'''
import json, os, sys
state_path, log_path = os.environ["FAKE_JETSON_STATE"], os.environ["FAKE_JETSON_LOG"]
state = json.load(open(state_path))
args = sys.argv[1:]
open(log_path, "a").write(" ".join(["jetson_clocks", *(["--store", "FILE"] if args[:1] == ["--store"] else
                                                        ["--restore", "FILE"] if args[:1] == ["--restore"] else args)])
                          + "\n")
if args[:1] == ["--store"]:
    open(args[1], "w").write(state["clocks"])
elif args[:1] == ["--restore"]:
    state["clocks"] = open(args[1]).read()
elif args == []:
    state["clocks"] = "pinned"
json.dump(state, open(state_path, "w"))
'''


class Board:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.state_path = tmp_path / "state.json"
        self.log_path = tmp_path / "calls.log"
        self.log_path.write_text("")
        for name, body in (("nvpmodel", FAKE_NVPMODEL), ("jetson_clocks", FAKE_JETSON_CLOCKS)):
            path = self.bin / name
            path.write_text(f"#!{sys.executable}\n{body}")
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        self.write(mode=1, clocks="pinned", fail=[], ignore=[])
        self.env = {"FAKE_JETSON_STATE": str(self.state_path), "FAKE_JETSON_LOG": str(self.log_path),
                    "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)

    def write(self, **changes: object) -> None:
        state = self.state() if self.state_path.exists() else {"modes": MODES}
        state.update(changes)
        self.state_path.write_text(json.dumps(state))

    def state(self) -> dict:
        return json.loads(self.state_path.read_text())

    def calls(self) -> list[str]:
        return self.log_path.read_text().splitlines()


@pytest.fixture
def board(tmp_path, monkeypatch) -> Board:
    return Board(tmp_path, monkeypatch)


OPEN = ["nvpmodel -q", "nvpmodel -p --verbose", "jetson_clocks --store FILE"]


def test_switches_and_restores_mode_then_clocks(board, tmp_path):
    with PowerModeController(require_root=False, state_dir=tmp_path) as ctl:
        assert ctl.original is not None and (ctl.original.id, ctl.original.name) == (1, "MODE_15W")
        assert ctl.set("MAXN").id == 0
        assert board.state()["mode"] == 0 and board.state()["clocks"] == "mode-default"
        assert ctl.set(2).name == "MODE_30W"  # by id
        assert ctl.set("mode_50w").id == 3  # case-insensitive name
        assert board.state()["mode"] == 3
    assert board.state()["mode"] == 1 and board.state()["clocks"] == "pinned"
    assert board.calls() == OPEN + [
        "nvpmodel -m 0", "nvpmodel -q", "nvpmodel -m 2", "nvpmodel -q", "nvpmodel -m 3", "nvpmodel -q",
        "nvpmodel -m 1", "nvpmodel -q", "jetson_clocks --restore FILE",  # mode first: nvpmodel resets clocks
    ]
    assert list(tmp_path.glob("edgebench-jetson-clocks-*")) == []  # the stored clocks file is cleaned up


def test_restores_after_an_exception_mid_sweep(board, tmp_path):
    with pytest.raises(RuntimeError, match="row blew up"):
        with PowerModeController(require_root=False, state_dir=tmp_path) as ctl:
            ctl.set("MODE_50W")
            raise RuntimeError("row blew up")
    assert board.state()["mode"] == 1 and board.state()["clocks"] == "pinned"
    assert board.calls()[-3:] == ["nvpmodel -m 1", "nvpmodel -q", "jetson_clocks --restore FILE"]


def test_failing_mode_is_named_and_the_board_restored(board, tmp_path):
    board.write(fail=["3"])
    with pytest.raises(PowerModeError) as info:
        with PowerModeController(require_root=False, state_dir=tmp_path) as ctl:
            ctl.set("MAXN")
            ctl.set("MODE_50W")
    msg = str(info.value)
    assert "MODE_50W (id 3)" in msg and "nvpmodel -m 3 failed (exit 1)" in msg and "railgate_enable" in msg
    assert board.state()["mode"] == 1 and board.state()["clocks"] == "pinned"


def test_mode_that_silently_does_not_apply_is_an_error(board, tmp_path):
    board.write(ignore=["2"])
    with pytest.raises(PowerModeError, match=r"MODE_30W \(id 2\).*exited 0 but nvpmodel -q reports MODE_15W.*reboot"):
        with PowerModeController(require_root=False, state_dir=tmp_path) as ctl:
            ctl.set("MODE_30W")
    assert board.state()["mode"] == 1 and board.calls()[-1] == "jetson_clocks --restore FILE"


def test_unknown_mode_and_missing_root_change_nothing(board, tmp_path, monkeypatch):
    with pytest.raises(PowerModeError, match=r"'60W' is not defined.*MAXN \(id 0\), MODE_15W \(id 1\)"):
        with PowerModeController(require_root=False, state_dir=tmp_path) as ctl:
            ctl.set("60W")
    assert not any(c.startswith("nvpmodel -m") for c in board.calls())
    board.log_path.write_text("")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(PowerModeError, match="needs root"):
        with PowerModeController(state_dir=tmp_path):
            pass
    assert board.calls() == []


def test_sigterm_mid_sweep_still_restores(board, tmp_path):
    ready = tmp_path / "ready"
    code = (
        "import time\n"
        "from edgebench.device.power_modes import PowerModeController\n"
        f"with PowerModeController(require_root=False, state_dir={str(tmp_path)!r}) as ctl:\n"
        "    ctl.set('MAXN')\n"
        f"    open({str(ready)!r}, 'w').write('x')\n"
        "    time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **board.env, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 30
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ready.exists(), "child never reached the sweep"
    assert board.state()["mode"] == 0
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert board.state()["mode"] == 1 and board.state()["clocks"] == "pinned"
    assert board.calls()[-1] == "jetson_clocks --restore FILE"


# ----------------------------------------------------------------------------- profile, plan, sweep


def profile(power: dict) -> object:
    return profile_from_dict({"name": "jetson-test", "sweep": {"models": ["tiny_cnn"], "backends": ["null"],
                                                                "batches": [1, 2]},
                              "power": power}, "test.yaml")


def test_plan_refuses_modes_without_allow_changes_and_labels_rows():
    from edgebench.backends.base import Env
    from edgebench.pipeline.plan import expand

    env = Env.detect()
    with pytest.raises(ConfigError) as info:
        expand(profile({"modes": ["MAXN", 3]}), env)
    assert info.value.field == "power.allow_changes"
    planned = expand(profile({"modes": ["MAXN", 3], "allow_changes": True}), env)
    assert [(p.cfg.power_mode, p.cfg.batch) for p in planned] == [("MAXN", 1), ("MAXN", 2), ("3", 1), ("3", 2)]
    assert planned[0].cfg.label().endswith("/pm=MAXN")
    assert planned[0].cfg.config_hash() != planned[2].cfg.config_hash()
    assert [p.cfg.power_mode for p in expand(profile({}), env)] == [None, None]
    with pytest.raises(ConfigError, match="power.modes"):
        profile({"modes": [True]})


def test_config_hash_differs_only_when_a_power_mode_is_set():
    base = RunConfig("m", "ort", "fp32", 1, ("cpu",))
    assert "pm=" not in base.label()
    assert RunConfig("m", "ort", "fp32", 1, ("cpu",), power_mode="MAXN").config_hash() != base.config_hash()
    assert RunConfig("m", "ort", "fp32", 1, ("cpu",), power_mode=None).config_hash() == base.config_hash()


def run_fake_sweep(board: Board, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, modes: list) -> list[dict]:
    """run_sweep with the real power-mode switching; `execute` is replaced by a stub that records the
    board's mode at the moment each row would have been measured."""
    from edgebench.backends.base import Env
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline import sweep
    from edgebench.pipeline.plan import expand
    from edgebench.pipeline.row_steps import RowFacts
    from edgebench.results.row import Verdict
    from edgebench.results.store import ResultsStore

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    prof = profile({"modes": modes, "allow_changes": True, "settle_s": 0.0})
    planned = expand(prof, Env.detect())

    def fake_execute(cfg, profile, models, row_dir, idle_power_w=None, pool=None, since_s=None):
        return RowFacts(verdict=Verdict(judged=("ok", f"ran in {board.state()['modes'][str(board.state()['mode'])]}")))

    monkeypatch.setattr(sweep, "execute", fake_execute)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    models = sweep.ModelCache(Artifacts(tmp_path / "cache"), {})
    return sweep.run_sweep(planned, prof, run_dir, ResultsStore(run_dir), models)


def test_sweep_switches_once_per_group_and_restores(board, tmp_path, monkeypatch):
    rows = run_fake_sweep(board, tmp_path, monkeypatch, ["MAXN", "2"])
    assert [(r["power_mode"], r["batch"], r["reason"]) for r in rows] == [
        ("MAXN", 1, "ran in MAXN"), ("MAXN", 2, "ran in MAXN"),
        ("MODE_30W", 1, "ran in MODE_30W"), ("MODE_30W", 2, "ran in MODE_30W")]
    assert [c for c in board.calls() if c.startswith("nvpmodel -m")] == ["nvpmodel -m 0", "nvpmodel -m 2", "nvpmodel -m 1"]
    assert board.state()["mode"] == 1 and board.state()["clocks"] == "pinned"


def test_sweep_fails_the_rows_of_a_mode_that_cannot_be_set(board, tmp_path, monkeypatch):
    board.write(fail=["3"])
    rows = run_fake_sweep(board, tmp_path, monkeypatch, ["MODE_50W", "MAXN"])
    assert [r["status"] for r in rows] == ["failed", "failed", "ok", "ok"]
    assert "MODE_50W (id 3)" in rows[0]["reason"] and rows[1]["reason"] == rows[0]["reason"]
    assert rows[2]["reason"] == "ran in MAXN"
    assert [c for c in board.calls() if c.startswith("nvpmodel -m")] == ["nvpmodel -m 3", "nvpmodel -m 0", "nvpmodel -m 1"]
    assert board.state()["mode"] == 1 and board.state()["clocks"] == "pinned"


def test_sweep_with_a_typo_fails_before_any_row(board, tmp_path, monkeypatch):
    with pytest.raises(PowerModeError, match="'25W' is not defined"):
        run_fake_sweep(board, tmp_path, monkeypatch, ["MAXN", "25W"])
    assert not any(c.startswith("nvpmodel -m") for c in board.calls())
    assert board.state()["clocks"] == "pinned" and board.calls()[-1] == "jetson_clocks --restore FILE"


def test_session_without_modes_runs_nothing(board):
    with power_mode_session([None, None], {"allow_changes": False}) as power:
        assert power.switch(None) is None
    assert board.calls() == []
