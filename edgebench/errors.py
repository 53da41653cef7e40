"""Errors a user can act on. Each names the file / field / instance it is about."""

from __future__ import annotations


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
