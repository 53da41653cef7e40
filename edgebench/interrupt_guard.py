"""A Ctrl-C that waits for the import it lands in.

A KeyboardInterrupt raised while a module is being imported can leave the process broken instead of stopped:
ONNX Runtime's pybind11 extension fails with "ImportError: initialization failed", numpy's lazy attribute loader
recurses into a RecursionError, and a pybind11 callback can abort the whole process ("terminate called after
throwing an instance of 'pybind11::error_already_set'", exit -6; seen in CI on `bench` interrupted mid-sweep).
edgebench imports its frameworks lazily (so `edgebench --help` needs none of them), which means mid-sweep, where
a user's Ctrl-C can land.

While `interrupts_wait_for_imports()` is active, a SIGINT that arrives while the main thread is inside an import
is held and raised as KeyboardInterrupt as soon as no import is on the stack (checked every RECHECK_S by a
one-shot interval timer, SIGALRM); anywhere else it is raised at once, as Python's own handler does. A held one the
timer happens to raise inside a __del__ or a finalizer, where Python prints and drops it, is held again
(sys.unraisablehook) instead of lost.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

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
        self.raised: KeyboardInterrupt | None = None  # the last one delivered (to know it if it was swallowed)

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
        self.raised = KeyboardInterrupt()
        raise self.raised

    def swallowed(self, unraisable: Any) -> bool:
        """Called for an exception Python could not raise (one raised in a __del__ or a finalizer is printed and
        dropped): when it is the Ctrl-C just delivered, hold it again and look again soon, so it is not lost."""
        if self.raised is None or unraisable.exc_value is not self.raised:
            return False
        self.raised, self.pending = None, True
        signal.setitimer(signal.ITIMER_REAL, RECHECK_S)
        return True


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
    previous_hook = sys.unraisablehook

    def unraisable(u: Any) -> None:
        if not held.swallowed(u):
            previous_hook(u)

    previous_alarm = signal.signal(signal.SIGALRM, held.deliver_when_safe)
    signal.signal(signal.SIGINT, held.on_sigint)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_alarm)
        sys.unraisablehook = previous_hook
    if held.pending:  # the block ended before the timer looked again: the Ctrl-C is not lost
        raise KeyboardInterrupt
