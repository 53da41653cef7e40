"""A backend whose warm-worker preload raises (tests/runner/test_warm_pool.py); importable by spawned workers
because tests/ is on their sys.path."""

from __future__ import annotations

from edgebench.backends.null import NullBackend


class FailingPreload(NullBackend):
    name = "preload_fail"

    @staticmethod
    def preload(device: str) -> None:
        raise RuntimeError(f"preload refused on {device}")
