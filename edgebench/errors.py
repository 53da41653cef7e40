"""Errors a user can act on. Each names the file / field / instance it is about."""

from __future__ import annotations

import signal
import traceback


class EdgebenchError(Exception):
    """Base class: the CLI prints these as one line, never a traceback."""


class ConfigError(EdgebenchError):
    """A profile or model spec is wrong. The message names the file and the field."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: field '{field}'" if field else source
        super().__init__(f"{where}: {problem}")


class ModelError(EdgebenchError):
    """An ONNX file or a model spec cannot be used (corrupt, wrong shape, unknown)."""


class InputError(ModelError):
    """A model input that cannot be fed as asked (name, rank, dim, dtype, vocabulary, data)."""


class BackendError(EdgebenchError):
    """A backend could not prepare or open a session."""


class InstanceError(EdgebenchError):
    """One instance of a run failed; the message names the instance."""


class DiskFullError(EdgebenchError):
    """The disk under --out filled up: the sweep stopped cleanly (rows written so far kept, the row in flight
    removed) and is to be resumed once space is freed. The message names the path and the space needed."""

    def __init__(self, message: str, run_dir: str) -> None:
        super().__init__(message)
        self.run_dir = run_dir


# ------------------------------------------------------------------ an exception as a user-visible reason

SITE_DIRS = ("site-packages", "dist-packages")


def exc_message(exc: BaseException, *, first_line: bool = False, limit: int | None = None) -> str:
    """What `exc` says: str(exc) (only its first line with `first_line`, cut at `limit` characters). An exception
    raised with no message (a bare `assert` in a library, `raise RuntimeError()`) says where it was raised instead,
    'no message, raised at onnxruntime/quantization/quant_utils.py:88 in f: assert x', or else its repr."""
    text = str(exc).strip()
    if text:
        if first_line:
            text = text.splitlines()[0]
    else:
        frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
        if frames:
            last = frames[-1]
            parts = last.filename.replace("\\", "/").split("/")
            site = max((i for i, part in enumerate(parts) if part in SITE_DIRS), default=-1)
            where = "/".join(parts[site + 1:] if site >= 0 else parts[-3:])
            code = f": {' '.join(last.line.split())[:120]}" if last.line else ""
            text = f"no message, raised at {where}:{last.lineno} in {last.name}{code}"
        else:
            text = f"no message ({exc!r})"
    return text[:limit] if limit is not None else text


def exc_text(exc: BaseException, *, first_line: bool = False, limit: int | None = None) -> str:
    """'Type: message' for a reason, a note or an error a user reads; never 'AssertionError: ' with nothing after it
    (exc_message says where a message-less exception was raised)."""
    return f"{type(exc).__name__}: {exc_message(exc, first_line=first_line, limit=limit)}"


# ------------------------------------------------------------------ how a child process ended


def exit_text(code: int) -> str:
    """How a child process ended, from its exit code (multiprocessing's: minus the signal number for a signal):
    'died with SIGKILL', 'died with signal 200' (no such signal), else 'exited with code 3'. The one wording rows,
    notes and errors use, whichever stage started the child (runner.child_process re-exports it; models.export
    may not import the runner)."""
    if code < 0:
        try:
            return f"died with {signal.Signals(-code).name}"
        except ValueError:
            return f"died with signal {-code}"
    return f"exited with code {code}"
