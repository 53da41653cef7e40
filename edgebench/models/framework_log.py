"""ONNX Runtime's own log while edgebench builds an artifact (int8 quantization, fp16 conversion): kept with the
artifact, never on the console (issue 37: "Please consider to run pre-processing", "Expected bias ... to be an
initializer" and VerifyOutputSizes warnings filled the console of every int8 row).

Two channels carry it:
- Python: onnxruntime.quantization logs through the root logger (`logging.warning(...)`, which also installs a
  stderr handler with basicConfig when the root logger has none). For the block, the root logger's handlers are one
  capture: warnings become lines; errors, and edgebench's own records, still reach the console.
- C++: the default ORT logger prints warnings to stderr for sessions made with default options (the quantizer's
  calibration sessions). Where ORT takes a Python callback (set_default_logger_callback, in recent releases such
  as 1.32) its warnings become lines too (those of ORT's own worker threads still go to its platform sink); an
  older ORT has its default severity raised to ERROR for the block. Either way the default logger is back to the
  platform sink at WARNING (ORT's default; it has no getter) afterwards.
The lines go to the artifact's sidecar (`framework_log`), which every row run from the artifact carries in its
row.json. The probe process (runner/probe.py) opens the row's session in such a block too: that session logs
warnings (capturing()), its creation's and its runs', and row.json keeps them as `probe.framework_log`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

ORT_WARNING, ORT_ERROR = 2, 3  # ORT's severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal
ORT_LEVELS = "VIWEF"
MAX_LINES = 50
MAX_LINE_CHARS = 500


class _Capture(logging.Handler):
    """Warnings become lines; errors and edgebench's own records go on to `console` as they would have."""

    def __init__(self, lines: list[str], console: list[logging.Handler]) -> None:
        super().__init__(logging.WARNING)
        self.lines = lines
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.name == "edgebench" or record.name.startswith("edgebench."):
            for handler in self.console:
                if record.levelno >= handler.level:
                    handler.handle(record)
            return
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a library's bad format string must not stop the build
            text = str(record.msg)
        where = f"{record.filename}:{record.lineno}" if record.name == "root" else record.name  # logging.warning()
        self.lines.append(f"{where} {record.levelname.lower()}: {text.strip()}")


_OPEN: list[list[str]] = []  # the open framework_log() blocks' lines, innermost last: ORT's warnings go to the last
# while a block routes ORT's log: (the undo that restores ORT's default logger, whether the callback takes warnings)
_ROUTE: list[tuple[Callable[[], None], bool]] = []


def _ort_route() -> tuple[Callable[[], None], bool]:
    """Route ORT's C++ log to the innermost open block's lines (or, without the callback, drop its warnings); the
    first block that asks does it, blocks opened inside it share it, and it is undone when that block closes."""
    try:
        import onnxruntime as ort
    except ImportError:
        return (lambda: None), False
    errors = logging.getLogger("edgebench.onnxruntime")

    def callback(severity: int, _category: str, _logid: str, where: str, message: str) -> None:
        text = f"onnxruntime [{ORT_LEVELS[min(max(severity, 0), 4)]}] {where}: {message.strip()}"
        if severity >= ORT_ERROR:
            errors.error("%s", text)
        elif _OPEN:
            _OPEN[-1].append(text)

    set_callback = getattr(ort, "set_default_logger_callback", None)
    if set_callback is not None:
        with contextlib.suppress(Exception):  # an ORT that refuses it: the severity below does
            set_callback(callback, ORT_WARNING)

            def undo() -> None:
                set_callback(None, ORT_WARNING)
                ort.set_default_logger_severity(ORT_WARNING)

            return undo, True
    ort.set_default_logger_severity(ORT_ERROR)
    return (lambda: ort.set_default_logger_severity(ORT_WARNING)), False


def capturing() -> bool:
    """Whether ORT's warnings go to a framework_log() block's lines right now (its callback is installed): a session
    made now may log warnings (backends/ort.py) without reaching the console. The probe process opens its session
    inside one (runner/probe.py); a measuring process never does."""
    return bool(_ROUTE) and _ROUTE[0][1]  # a route exists only inside the block that made it


@contextlib.contextmanager
def framework_log(onnxruntime: bool = True) -> Iterator[list[str]]:
    """The block's framework warnings, as lines (see the module doc); the console sees only errors. `onnxruntime`:
    route ORT's C++ log too (importing it, when it is installed); a torch probe has no use for it."""
    lines: list[str] = []
    root = logging.getLogger()
    saved = root.handlers[:]
    last_resort = [logging.lastResort] if logging.lastResort is not None else []
    root.handlers = [_Capture(lines, saved or last_resort)]
    _OPEN.append(lines)
    routed = False
    try:
        if onnxruntime and not _ROUTE:
            _ROUTE.append(_ort_route())
            routed = True
        yield lines
    finally:
        _OPEN.pop()
        root.handlers = saved
        if routed:
            undo, _taking = _ROUTE.pop()
            undo()


def summary(lines: list[str]) -> list[str]:
    """The lines once each, in order, a repeat counted ('... (x4)'); at most MAX_LINES of MAX_LINE_CHARS."""
    counts: dict[str, int] = {}
    for line in lines:
        key = line[:MAX_LINE_CHARS]
        counts[key] = counts.get(key, 0) + 1
    out = [f"{line} (x{n})" if n > 1 else line for line, n in counts.items()]
    return out[:MAX_LINES] + ([f"... {len(out) - MAX_LINES} more"] if len(out) > MAX_LINES else [])
