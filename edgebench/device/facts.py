"""Probing facts for system.json without raising: a failing probe gives None and its reason.

Below both `system` (the whole machine) and `jetson` (the board's part of it), so each can
gather facts the same way without importing the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgebench.errors import exc_text


class Facts:
    """Gathers facts for system.json: a failing probe gives None and its reason in `unavailable`."""

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}

    def get(self, key: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:  # record why, never raise
            self.unavailable[key] = why(exc)
            return None


def why(exc: BaseException) -> str:
    """One line saying why a probe failed: 'path: strerror', our own LookupError text, else 'Type: message'."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    if isinstance(exc, LookupError) and str(exc):  # our own "why" messages
        return str(exc)
    return exc_text(exc)
