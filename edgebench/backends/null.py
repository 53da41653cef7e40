"""The null backend: no framework, no work. Running it measures the harness's own per-inference cost.

With no options its `infer()` returns at once, so the runner's latencies are the runner's overhead
(two clock reads, two stores and a loop). Options (RunConfig.options -> Prepared.options) turn it
into a scripted instance for harness tests:

  sleep_s        float  simulated work per infer (time.sleep), e.g. 0.002
  serial_device  str    path of a lock file: infer() holds an exclusive flock on it while it sleeps, so all
                        instances given the same path share one simulated device that serves one inference
                        at a time (capacity 1 / sleep_s inferences per second in total, whatever the count)
  fail_instance  int    the instance index that fails; the fail_* options need it
  fail_phase     str    "open" (inside Backend.open), "warmup" or "measure"; default "measure"
  fail_after     int    completed inferences in that phase before the fault; default 0
  fail_how       str    "raise" -> RuntimeError("null backend: injected fault ...")
                        "exit"  -> os._exit(3)
                        "kill"  -> SIGKILL to its own process
                        "hang"  -> sleeps forever, never returns to the runner's loop (and ignores
                                   SIGTERM when it runs on the process's main thread, like a process
                                   stuck in a driver call), so only SIGKILL ends it
                        default "raise"

Phases reach the session through the runner's optional `set_phase(name)` hook (see runner.worker).
`outputs()` returns {"output": the fed input reshaped to [batch, -1][:, :10]} so accuracy plumbing
can be checked end to end without a framework.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from edgebench.backends.base import Env, Placement, Prepared
from edgebench.errors import BackendError
from edgebench.models.model_artifact import ModelArtifact

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts

NULL_OPTIONS = ("sleep_s", "serial_device", "fail_instance", "fail_phase", "fail_after", "fail_how")
FAIL_PHASES = ("open", "warmup", "measure")
FAIL_HOWS = ("raise", "exit", "kill", "hang")
EXIT_CODE = 3


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validated null-backend options with defaults filled in; BackendError names the bad option."""
    unknown = sorted(set(options) - set(NULL_OPTIONS))
    if unknown:
        raise BackendError(f"null backend: unknown option(s) {', '.join(unknown)} (known: {', '.join(NULL_OPTIONS)})")
    out = {
        "sleep_s": options.get("sleep_s", 0.0),
        "serial_device": options.get("serial_device"),
        "fail_instance": options.get("fail_instance"),
        "fail_phase": options.get("fail_phase", "measure"),
        "fail_after": options.get("fail_after", 0),
        "fail_how": options.get("fail_how", "raise"),
    }
    if not isinstance(out["sleep_s"], (int, float)) or isinstance(out["sleep_s"], bool) or out["sleep_s"] < 0:
        raise BackendError(f"null backend: option sleep_s={out['sleep_s']!r} must be a number >= 0")
    if out["serial_device"] is not None and (not isinstance(out["serial_device"], str) or not out["serial_device"]):
        raise BackendError(f"null backend: option serial_device={out['serial_device']!r} must be a file path")
    fi = out["fail_instance"]
    if fi is not None and (not isinstance(fi, int) or isinstance(fi, bool) or fi < 0):
        raise BackendError(f"null backend: option fail_instance={fi!r} must be an instance index >= 0")
    if fi is None and any(k in options for k in ("fail_phase", "fail_after", "fail_how")):
        raise BackendError("null backend: options fail_phase/fail_after/fail_how need fail_instance")
    if out["fail_phase"] not in FAIL_PHASES:
        raise BackendError(f"null backend: option fail_phase={out['fail_phase']!r} is not one of {', '.join(FAIL_PHASES)}")
    fa = out["fail_after"]
    if not isinstance(fa, int) or isinstance(fa, bool) or fa < 0:
        raise BackendError(f"null backend: option fail_after={fa!r} must be an int >= 0")
    if out["fail_how"] not in FAIL_HOWS:
        raise BackendError(f"null backend: option fail_how={out['fail_how']!r} is not one of {', '.join(FAIL_HOWS)}")
    return out


def _inject(how: str, instance: int, phase: str, done: int) -> None:
    if how == "raise":
        raise RuntimeError(f"null backend: injected fault in instance {instance} after {done} {phase} inferences")
    if how == "exit":
        os._exit(EXIT_CODE)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:  # "hang"
        time.sleep(3600)


class NullBackend:
    name = "null"

    def supports(self, cfg: RunConfig, env: Env) -> str | None:
        return None

    def prepare(self, cfg: RunConfig, model: ModelArtifact, cache: Artifacts) -> Prepared:
        options = dict(cfg.options)
        check_options(options)
        return Prepared.for_artifact(
            self.name, cfg, model, options=options,
            info={"provider": "none", "note": "null backend: no framework, measures harness overhead"})

    def open(self, prepared: Prepared, placement: Placement) -> NullSession:
        opts = check_options(dict(prepared.options))
        faulty = opts["fail_instance"] == placement.instance
        if faulty and opts["fail_phase"] == "open":
            _inject(opts["fail_how"], placement.instance, "open", 0)
        if faulty or opts["sleep_s"] > 0 or opts["serial_device"]:
            return ScriptedNullSession(prepared.first_input.name, placement.instance, opts, faulty)
        return NullSession(prepared.first_input.name)


class NullSession:
    """Does nothing in infer(); the lean path used to measure the runner's overhead."""

    def __init__(self, input_name: str) -> None:
        self._input_name = input_name
        self._fed: np.ndarray | None = None

    def feed(self, inputs: dict[str, np.ndarray]) -> None:
        if self._input_name not in inputs:
            raise BackendError(f"null backend: feed() needs input {self._input_name!r}, got {sorted(inputs)}")
        self._fed = inputs[self._input_name]

    def infer(self) -> None:
        pass

    def outputs(self) -> dict[str, np.ndarray]:
        import numpy as np

        if self._fed is None:
            raise BackendError("null backend: outputs() before feed()")
        x = self._fed
        return {"output": np.ascontiguousarray(x.reshape(x.shape[0], -1)[:, :10])}

    def close(self) -> None:
        self._fed = None


class ScriptedNullSession(NullSession):
    """Null session that sleeps per infer and/or injects one fault in one phase."""

    def __init__(self, input_name: str, instance: int, opts: dict[str, Any], faulty: bool) -> None:
        super().__init__(input_name)
        self._instance = instance
        self._sleep_s = float(opts["sleep_s"])
        self._fail_phase = opts["fail_phase"] if faulty else None
        self._fail_after = int(opts["fail_after"])
        self._fail_how = str(opts["fail_how"])
        self._phase = ""
        self._done = 0
        self._device_fd: int | None = None
        if opts["serial_device"]:
            self._device_fd = os.open(opts["serial_device"], os.O_RDWR | os.O_CREAT, 0o644)

    def set_phase(self, phase: str) -> None:
        """Runner hook: the phase the next infer() calls belong to ("warmup", "measure")."""
        self._phase = phase
        self._done = 0

    def infer(self) -> None:
        if self._phase == self._fail_phase and self._done >= self._fail_after:
            _inject(self._fail_how, self._instance, self._phase, self._done)
        if self._device_fd is not None:
            import fcntl

            fcntl.flock(self._device_fd, fcntl.LOCK_EX)
            try:
                time.sleep(self._sleep_s)
            finally:
                fcntl.flock(self._device_fd, fcntl.LOCK_UN)
        elif self._sleep_s:
            time.sleep(self._sleep_s)
        self._done += 1

    def close(self) -> None:
        super().close()
        if self._device_fd is not None:
            os.close(self._device_fd)
            self._device_fd = None
