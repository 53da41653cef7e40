"""A backend whose warm-worker preload raises (tests/runner/test_warm_pool.py); importable by spawned workers
because tests/ is on their sys.path."""

from __future__ import annotations

from edgebench.backends.null import NullBackend


class FailingPreload(NullBackend):
    name = "preload_fail"

    @staticmethod
    def preload(device: str) -> None:
        raise RuntimeError(f"preload refused on {device}")


class CloseFailsSession:
    """Wraps a null session; close() raises like a torch session whose stream hit a sticky CUDA error."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def close(self) -> None:
        self._inner.close()
        raise RuntimeError("CUDA error: an illegal memory access was encountered")


class CloseFails(NullBackend):
    name = "close_fails"

    def open(self, prepared, placement):
        return CloseFailsSession(super().open(prepared, placement))


class SlowPreload(NullBackend):
    """Its framework takes 30 s to import: a spare that cannot be primed before a window."""

    name = "slow_preload"

    @staticmethod
    def preload(device: str) -> None:
        import time

        time.sleep(30)
