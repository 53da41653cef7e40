"""Text a board sends (log lines, states, ssh's stderr) made safe to print: control characters shown, not obeyed,
and the one check for `make setup` EXTRAS (a list of extras names, nothing a shell or make could read as code).

A board is not trusted: an escape sequence planted in its log (`ESC ] 0 ; title BEL`, `ESC [ 2 J`, a cursor move
hiding a line) would otherwise reach the user's terminal. Every C0 control but tab, DEL and the C1 range are
written as `\\xNN`, so the text stays readable and nothing is dropped silently.
"""

from __future__ import annotations

import re

from edgebench.errors import EdgebenchError

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
EXTRAS_RE = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")


def printable(text: str) -> str:
    """`text` with every control character except tab written as \\xNN."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def check_extras(extras: str, flag: str = "--remote-extras") -> str:
    """The extras list for `make setup EXTRAS=...`: names of pyproject extras, comma-separated; else one line."""
    if not EXTRAS_RE.match(extras):
        raise EdgebenchError(f"{flag} {extras!r}: not a comma-separated list of extras names (letters, digits, "
                             "_ . -), e.g. ort,trt,progress")
    return extras
