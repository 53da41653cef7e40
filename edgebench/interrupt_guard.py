"""A Ctrl-C that waits for the import it lands in.

A KeyboardInterrupt raised while a module is being imported can leave the process broken instead of stopped:
ONNX Runtime's pybind11 extension fails with "ImportError: initialization failed", numpy's lazy attribute loader
recurses into a RecursionError, and a pybind11 callback can abort the whole process ("terminate called after
throwing an instance of 'pybind11::error_already_set'", exit -6; seen in CI on `bench` interrupted mid-sweep).
edgebench imports its frameworks lazily (so `edgebench --help` needs none of them), which means mid-sweep, where
a user's Ctrl-C can land.

While `interrupts_wait_for_imports()` is active, a SIGINT that arrives while the main thread is inside an import
is held and raised as KeyboardInterrupt as soon as no import is on the stack (checked every RECHECK_S by a
one-shot interval timer, SIGALRM); anywhere else it is raised at once, as Python's own handler does.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

IMPORT_MACHINERY = frozenset({"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"})
RECHECK_S = 0.02


def inside_import(frame: FrameType | None) -> bool:
    """True when `frame` or any caller of it is the import machinery (a module's top-level code, or Python
    called back from an extension while it initialises, runs below importlib's frames)."""
    while frame is not None:
        if frame.f_code.co_filename in IMPORT_MACHINERY:
            return True
        frame = frame.f_back
    return False


class _HeldInterrupt:
    def __init__(self) -> None:
        self.pending = False

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.pending = True
        self.deliver_when_safe(signum, frame)

    def deliver_when_safe(self, signum: int, frame: FrameType | None) -> None:
        if not self.pending:
            return
        if inside_import(frame):
            signal.setitimer(signal.ITIMER_REAL, RECHECK_S)  # look again once the import may be over
            return
        self.pending = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_wait_for_imports() -> Iterator[None]:
    """Hold a Ctrl-C that lands inside an import until the import ends (see the module's doc). Does nothing off
    the main thread (only it can set signal handlers) or when SIGINT is not Python's default handler (a caller
    that handles Ctrl-C its own way keeps it)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    held = _HeldInterrupt()
    previous_alarm = signal.signal(signal.SIGALRM, held.deliver_when_safe)
    signal.signal(signal.SIGINT, held.on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_alarm)
    if held.pending:  # the block ended before the timer looked again: the Ctrl-C is not lost
        raise KeyboardInterrupt
