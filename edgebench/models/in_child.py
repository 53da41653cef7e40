"""A model-building step in a spawned process of its own: the export (torch), the fp16 conversion and the int8
quantization with its calibration (ONNX Runtime). What they import and allocate (torch ~0.5 GB; a quantizer's
calibration holds every activation range and the graph several times over) then never stays in the harness,
which on an 8 GB board runs the whole sweep beside the instances (issue 37).

run_in_child(name, what, fn, *args) calls fn(*args) there and returns its result, a dict of the step's sidecar
fields, as plain JSON types (a TorchVersion or a numpy scalar would import its framework when unpickled). The
step's exception is raised here as it was raised there (a ModelError keeps its message; one that cannot cross
processes crosses as a ModelError with its text); a child that dies without a word (the OOM killer) is a
ModelError naming the model, the step and how it ended. `fn` must be importable by name (a module-level
function): the child is spawned, never forked (the harness may hold threads or a CUDA context). The child dies
with the harness (process_lifetime.die_with_parent): a calibration holding gigabytes does not go on after the OOM
killer or a kill -9 ended the sweep that asked for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from edgebench.errors import ModelError, exc_text, exit_text
from edgebench.process_lifetime import die_with_parent

IN_CHILD = True  # a test that injects a fault into a step in-process sets it False
CHILD_EXIT_GRACE_S = 30.0


def run_in_child(name: str, what: str, fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """fn(*args) in a spawned process; `name` (the model) and `what` (the step: 'export', 'int8 quantization')
    word the error of a child that died."""
    if not IN_CHILD:
        return fn(*args)
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, name, what, fn, args, os.getpid()),
                       name=f"edgebench-{what.split()[0]}-{name}")
    proc.start()
    send.close()
    try:
        status, payload = receive.recv()
    except (EOFError, OSError):
        proc.join(CHILD_EXIT_GRACE_S)
        if proc.exitcode is None:  # the pipe closed, the process did not end: `finally` kills it
            raise ModelError(f"{name}: the {what} process closed its pipe without a result and was still "
                             f"running {CHILD_EXIT_GRACE_S:g} s later") from None
        raise ModelError(f"{name}: the {what} process {exit_text(proc.exitcode)} before it finished "
                         "(out of memory?)") from None
    except Exception as exc:  # noqa: BLE001 - an exception that pickled there but does not unpickle here
        raise ModelError(f"{name}: {what} failed and its error could not be read back: {exc_text(exc)}") from None
    finally:
        receive.close()
        proc.join(CHILD_EXIT_GRACE_S)
        if proc.exitcode is None:
            proc.kill()
            proc.join()
    if status == "ok":
        return payload  # type: ignore[no-any-return]
    raise payload


def _child(send: Any, name: str, what: str, fn: Callable[..., dict[str, Any]], args: tuple[Any, ...],
           parent_pid: int | None = None) -> None:
    """The step's process: ("ok", its result as JSON types) or ("error", the exception)."""
    import json
    import pickle

    die_with_parent(parent_pid)

    try:
        result: tuple[str, Any] = ("ok", json.loads(json.dumps(fn(*args))))
    except BaseException as exc:  # noqa: BLE001 - every ending is reported to the harness, which raises it
        # as raised, unless it has no message (a bare `assert`: where it was raised is known only here) or cannot
        # cross processes: then its text does
        crosses = isinstance(exc, ModelError) or bool(str(exc))
        if crosses:
            try:
                pickle.dumps(exc)
            except Exception:  # noqa: BLE001 - whatever pickling an exception raises
                crosses = False
        result = ("error", exc if crosses else ModelError(f"{name}: {what} failed: {exc_text(exc)}"))
    send.send(result)
    send.close()
