"""nvpmodel power modes as a sweep dimension: switch on request, always put the board back.

Changing the power mode changes the machine for everyone on it, so it is opt-in twice over: the
profile must list `power.modes` AND set `power.allow_changes: true`, and edgebench must run as root.
`PowerModeController` is a context manager:

  enter   the original mode (`nvpmodel -q`) and clocks (`jetson_clocks --store FILE`) are saved
  set()   `nvpmodel -m ID`, then `nvpmodel -q` must report ID (a mode that changes the number of
          online CPUs asks for a reboot interactively and, without a terminal, silently keeps the old
          mode: that is an error naming the mode, never a row measured in the wrong mode)
  exit    `nvpmodel -m <original>` (when a mode was set) and `jetson_clocks --restore FILE`, on success,
          on an exception, and on SIGTERM (turned into SystemExit while the controller is active)

nvpmodel resets the clocks it manages, so the original mode is restored before the clocks.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from edgebench.device.jetson import (
    PowerMode,
    nvpmodel_conf_modes,
    parse_nvpmodel_query,
    parse_power_models,
    run_command,
)
from edgebench.errors import ConfigError, EdgebenchError

REBOOT_HINT = ("modes that change the number of online CPUs need a reboot; nvpmodel asks for it interactively "
               "and keeps the old mode when it has no terminal")


class PowerModeError(EdgebenchError):
    """A power mode could not be read, set or restored; the message names the mode."""


class PowerModeController:
    def __init__(self, *, settle_s: float = 0.0, timeout_s: float = 120.0, require_root: bool = True,
                 state_dir: str | Path | None = None, handle_sigterm: bool = True, root: str | Path = "/") -> None:
        self.settle_s = float(settle_s)
        self.timeout_s = float(timeout_s)
        self.require_root = require_root
        self.state_dir = None if state_dir is None else str(state_dir)
        self.handle_sigterm = handle_sigterm
        self.root = Path(root)
        self.original: PowerMode | None = None
        self.modes: dict[int, str] = {}
        self.calls: list[list[str]] = []  # every command run, in order (for logs and tests)
        self._clocks_file: str | None = None
        self._changed = False
        self._prev_sigterm: Any = None
        self._active = False

    # ------------------------------------------------------------------ commands

    def _run(self, *argv: str) -> Any:
        self.calls.append(list(argv))
        try:
            return run_command(list(argv), timeout_s=self.timeout_s)
        except FileNotFoundError:
            raise PowerModeError(f"{argv[0]} not found on PATH: power modes need a Jetson with L4T (JetPack)") from None
        except OSError as exc:
            raise PowerModeError(f"{' '.join(argv)} could not run: {exc}") from None
        except Exception as exc:  # subprocess.TimeoutExpired
            raise PowerModeError(f"{' '.join(argv)} did not finish: {exc}") from None

    @staticmethod
    def _tail(proc: Any) -> str:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        return lines[-1] if lines else "no output"

    def query(self) -> PowerMode:
        proc = self._run("nvpmodel", "-q")
        if proc.returncode != 0:
            raise PowerModeError(f"nvpmodel -q failed (exit {proc.returncode}): {self._tail(proc)}")
        try:
            return parse_nvpmodel_query(proc.stdout)
        except ValueError as exc:
            raise PowerModeError(str(exc)) from None

    def available_modes(self) -> dict[int, str]:
        """id -> name from `nvpmodel -p --verbose`, else from <root>/etc/nvpmodel.conf."""
        proc = self._run("nvpmodel", "-p", "--verbose")
        modes = parse_power_models(proc.stdout + "\n" + proc.stderr) if proc.returncode == 0 else {}
        if not modes:
            try:
                modes = nvpmodel_conf_modes(self.root)
            except (OSError, LookupError) as exc:
                raise PowerModeError(f"cannot list power modes: nvpmodel -p --verbose gave none and {exc}") from None
        return modes

    def resolve(self, spec: str | int) -> PowerMode:
        """A mode by id (0, "0") or by name (exact, then case-insensitive)."""
        text = str(spec).strip()
        if re.fullmatch(r"\d+", text):
            if int(text) in self.modes:
                return PowerMode(int(text), self.modes[int(text)])
        else:
            exact = [i for i, n in self.modes.items() if n == text]
            folded = [i for i, n in self.modes.items() if n.lower() == text.lower()]
            for hits in (exact, folded):
                if len(hits) == 1:
                    return PowerMode(hits[0], self.modes[hits[0]])
        known = ", ".join(f"{n} (id {i})" for i, n in sorted(self.modes.items()))
        raise PowerModeError(f"power mode {spec!r} is not defined on this board (known: {known})")

    def set(self, spec: str | int) -> PowerMode:
        """Switch to a mode and check that nvpmodel reports it; raises PowerModeError naming the mode."""
        mode = self.resolve(spec)
        self._changed = True  # even a failed nvpmodel -m may have applied part of the mode
        proc = self._run("nvpmodel", "-m", str(mode.id))
        if proc.returncode != 0:
            raise PowerModeError(f"power mode {mode}: nvpmodel -m {mode.id} failed (exit {proc.returncode}): "
                                 f"{self._tail(proc)}")
        if self.settle_s > 0:
            time.sleep(self.settle_s)
        now = self.query()
        if now.id != mode.id:
            raise PowerModeError(f"power mode {mode}: nvpmodel -m {mode.id} exited 0 but nvpmodel -q reports "
                                 f"{now}; {REBOOT_HINT}")
        return now

    # ------------------------------------------------------------------ context

    def __enter__(self) -> PowerModeController:
        if self.require_root and os.geteuid() != 0:
            raise PowerModeError("changing the power mode (nvpmodel, jetson_clocks) needs root: run edgebench with "
                                 "sudo, or remove power.modes from the profile")
        self.original = self.query()
        self.modes = self.available_modes()
        self.modes.setdefault(self.original.id, self.original.name)
        fd, path = tempfile.mkstemp(prefix="edgebench-jetson-clocks-", suffix=".conf", dir=self.state_dir)
        os.close(fd)
        self._clocks_file = path
        proc = self._run("jetson_clocks", "--store", path)
        if proc.returncode != 0:
            os.unlink(path)
            self._clocks_file = None
            raise PowerModeError(f"jetson_clocks --store {path} failed (exit {proc.returncode}): {self._tail(proc)}; "
                                 "nothing was changed")
        self._active = True
        if self.handle_sigterm and threading.current_thread() is threading.main_thread():
            self._prev_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_exit)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        try:
            errors = self.restore()
        finally:
            if self._prev_sigterm is not None:
                signal.signal(signal.SIGTERM, self._prev_sigterm)
                self._prev_sigterm = None
        if errors:
            message = "could not restore the board: " + "; ".join(errors)
            if exc is None:
                raise PowerModeError(message)
            if sys.version_info >= (3, 11):
                exc.add_note(message)
            else:  # Python 3.10 (JetPack 6) has no add_note: say it beside the exception that is on its way
                print(f"edgebench: {message}", file=sys.stderr)
        return False

    def restore(self) -> list[str]:
        """Original mode (if one was set) then the stored clocks; every step is tried, failures returned."""
        if not self._active:
            return []
        self._active = False
        errors: list[str] = []
        assert self.original is not None
        if self._changed:
            try:
                proc = self._run("nvpmodel", "-m", str(self.original.id))
                if proc.returncode != 0:
                    errors.append(f"nvpmodel -m {self.original.id} ({self.original.name}) failed "
                                  f"(exit {proc.returncode}): {self._tail(proc)}")
                elif (now := self.query()).id != self.original.id:
                    errors.append(f"original mode {self.original} not restored: nvpmodel -q reports {now}; "
                                  f"{REBOOT_HINT}")
            except PowerModeError as exc:
                errors.append(str(exc))
        if self._clocks_file is not None:
            try:
                proc = self._run("jetson_clocks", "--restore", self._clocks_file)
                if proc.returncode != 0:
                    errors.append(f"jetson_clocks --restore {self._clocks_file} failed (exit {proc.returncode}): "
                                  f"{self._tail(proc)} (the file is kept)")
                else:
                    os.unlink(self._clocks_file)
            except (PowerModeError, OSError) as exc:
                errors.append(str(exc))
        return errors


def _sigterm_to_exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


# --------------------------------------------------------------------------- sweep integration

class PowerModeSwitcher:
    """Used by the sweep: switches only when the next row's mode differs from the current one, and
    remembers a failed mode so its other rows fail with the same reason without retrying."""

    def __init__(self, controller: PowerModeController | None) -> None:
        self.controller = controller
        self._current: str | None = None
        self._current_mode: PowerMode | None = None
        self._failed: dict[str, str] = {}

    def switch(self, spec: str | None) -> PowerMode | None:
        if spec is None or self.controller is None:
            return None
        if spec in self._failed:
            raise PowerModeError(self._failed[spec])
        if spec != self._current:
            try:
                self._current_mode = self.controller.set(spec)
            except PowerModeError as exc:
                self._failed[spec] = str(exc)
                self._current = None
                raise
            self._current = spec
        return self._current_mode


@contextlib.contextmanager
def power_mode_session(requested: Sequence[str | None], power: Mapping[str, Any], source: str = "profile",
                       **controller_args: Any) -> Iterator[PowerModeSwitcher]:
    """The switcher for a sweep whose rows ask for `requested` modes (None = no change).

    Without any mode nothing is run. With modes, `power.allow_changes` must be true (else a
    ConfigError naming that field); every mode is resolved before the first row, so a typo fails
    before anything is measured; the board is restored when the block ends, however it ends.
    """
    wanted = list(dict.fromkeys(m for m in requested if m is not None))
    if not wanted:
        yield PowerModeSwitcher(None)
        return
    if not power.get("allow_changes"):
        raise ConfigError(source, "power.allow_changes",
                          f"power.modes {wanted} would change the board's power mode (nvpmodel, needs root); "
                          "set power.allow_changes: true to allow it")
    args = {"settle_s": power.get("settle_s", 0.0), **controller_args}
    with PowerModeController(**args) as controller:
        for spec in wanted:
            controller.resolve(spec)
        yield PowerModeSwitcher(controller)
