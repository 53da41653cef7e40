"""A text table laid out to fit a width: cells wrap at spaces (a word is never split), then columns are dropped by
priority, and the table says which.

Used by the console (commands/console.py) for the end-of-run table: a terminal of 80 columns gets a table of at most
80 columns. Pure text, standard library only.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass

GAP = 2  # spaces between columns
DROP_BEFORE_WRAP = 9  # a column of this priority or more (empty in every row) goes before any cell is wrapped


@dataclass(frozen=True)
class TextColumn:
    header: str
    cells: list[str]
    priority: int = 0  # 0: never dropped; higher: dropped earlier when the table does not fit


def terminal_width() -> int | None:
    """The width to fit: the terminal's when stdout is one (or $COLUMNS says it), else None (a log or a pipe keeps
    the whole table)."""
    import os

    if os.environ.get("COLUMNS", "").isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def wrap_words(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken only at spaces; a word longer than `width` stays whole
    on its own line (the caller never gives a width below the longest word)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _longest_word(texts: Sequence[str]) -> int:
    return max((len(w) for t in texts for w in t.split(" ")), default=1)


def _natural(col: TextColumn) -> int:
    return max(len(t) for t in [col.header, *col.cells])


def fit_columns(columns: list[TextColumn], width: int | None) -> tuple[list[TextColumn], list[int], list[str]]:
    """(the columns kept, their widths, the headers of the dropped ones). Wrapping comes first (the widest column
    that can still shrink gives one character at a time, down to its longest word), then dropping (the highest
    priority number first, the rightmost among equals)."""
    kept = list(columns)
    dropped: list[str] = []
    while True:
        widths = [_natural(c) for c in kept]
        floors = [max(_longest_word([c.header, *c.cells]), -(-_natural(c) // 2)) for c in kept]  # about 2 lines
        if width is None:
            return kept, widths, dropped
        empty = [i for i, c in enumerate(kept) if c.priority >= DROP_BEFORE_WRAP]
        if sum(widths) + GAP * (len(widths) - 1) > width and empty:
            dropped.append(kept.pop(empty[-1]).header)
            continue
        while sum(widths) + GAP * (len(widths) - 1) > width:
            shrinkable = [i for i, (w, f) in enumerate(zip(widths, floors, strict=True)) if w > f]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i])
            widths[widest] -= 1
        if sum(widths) + GAP * (len(widths) - 1) <= width:
            return kept, widths, dropped
        candidates = [i for i, c in enumerate(kept) if c.priority > 0]
        if not candidates:
            return kept, widths, dropped  # nothing left to drop: wider than the terminal, words still whole
        drop = max(candidates, key=lambda i: (kept[i].priority, i))
        dropped.append(kept.pop(drop).header)


def render(title: str, columns: list[TextColumn], width: int | None) -> str:
    """The table as text: title, header, one (or, where cells wrap, several) lines per row, and a last line naming
    the columns left out to fit `width` (None: nothing is fitted)."""
    kept, widths, dropped = fit_columns(columns, width)
    rows = len(kept[0].cells) if kept else 0
    lines = [title]
    for cells in ([c.header for c in kept], *([c.cells[r] for c in kept] for r in range(rows))):
        wrapped = [wrap_words(text, w) for text, w in zip(cells, widths, strict=True)]
        for k in range(max(len(x) for x in wrapped)):
            line = (" " * GAP).join((x[k] if k < len(x) else "").ljust(w) for x, w in zip(wrapped, widths, strict=True))
            lines.append(line.rstrip())
    if dropped:
        note = f"(not shown at {width} columns: {', '.join(dropped)}; results.csv has every column)"
        lines += wrap_words(note, width or len(note))
    return "\n".join(lines)
