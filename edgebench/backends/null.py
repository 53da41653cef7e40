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
from typing import TYPE_CHECKING, Any, Literal, get_args

from edgebench.backends.base import Env, Placement, Prepared
from edgebench.backends.options import BackendOptions, must, validated
from edgebench.config.typed import Field, model_validator
from edgebench.errors import BackendError
from edgebench.models.model_artifact import ModelArtifact

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts

FailPhase = Literal["open", "warmup", "measure"]
FailHow = Literal["raise", "exit", "kill", "hang"]
FAIL_PHASES: tuple[str, ...] = get_args(FailPhase)
FAIL_HOWS: tuple[str, ...] = get_args(FailHow)
EXIT_CODE = 3


class NullOptions(BackendOptions):
    """The null backend's options: a per-inference sleep, a serial device to hold, an injected fault."""

    sleep_s: float = Field(default=0.0, ge=0.0, json_schema_extra=must("a number >= 0"))
    serial_device: str | None = Field(default=None, min_length=1, json_schema_extra=must("a file path"))
    fail_instance: int | None = Field(default=None, ge=0, json_schema_extra=must("an instance index >= 0"))
    fail_phase: FailPhase = "measure"
    fail_after: int = Field(default=0, ge=0, json_schema_extra=must("an int >= 0"))
    fail_how: FailHow = "raise"

    @model_validator(mode="after")
    def _fault_needs_an_instance(self) -> NullOptions:
        if self.fail_instance is None and self.model_fields_set & {"fail_phase", "fail_after", "fail_how"}:
            raise ValueError("options fail_phase/fail_after/fail_how need fail_instance")
        return self


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validated null-backend options with defaults filled in; BackendError names the bad option."""
    return validated(NullOptions, "null", options).model_dump()


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
