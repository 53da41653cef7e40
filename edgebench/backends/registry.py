"""Backend names -> backend classes, imported lazily so a missing framework costs nothing until used.

A name is either a registered one (`BACKEND_NAMES`) or a dotted "package.module:ClassName", so a
backend living outside edgebench can be benchmarked without editing this file.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from edgebench.errors import BackendError, exc_text

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Backend

_REGISTERED: dict[str, str] = {
    "null": "edgebench.backends.null:NullBackend",
    "ort": "edgebench.backends.ort:OrtBackend",
    "torch": "edgebench.backends.torch_backend:TorchBackend",
    "trt": "edgebench.backends.trt:TrtBackend",
}

BACKEND_NAMES: tuple[str, ...] = tuple(_REGISTERED)


def backend_target(name: str) -> str:
    """The "module:Class" a backend name stands for; BackendError for an unknown name."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    module, sep, cls = name.partition(":")
    if sep and module and cls and all(part.isidentifier() for part in (*module.split("."), cls)):
        return name
    raise BackendError(
        f"unknown backend {name!r} (known: {', '.join(BACKEND_NAMES)}; or 'package.module:ClassName')"
    )


def get_backend(name: str) -> Backend:
    """A fresh instance of the backend called `name`."""
    target = backend_target(name)
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendError(f"backend {name!r}: cannot import {module_name}: {exc}") from None
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise BackendError(f"backend {name!r}: module {module_name} has no class {cls_name}")
    try:
        return cls()  # type: ignore[no-any-return]
    except Exception as exc:
        raise BackendError(f"backend {name!r}: {cls_name}() failed: {exc_text(exc)}") from None
