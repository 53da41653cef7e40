"""A disk that fills up under --out: which exceptions mean it (disk_full_cause) and the one line that says so
(disk_full_error). Every size the line states was measured: the row folders this run (else earlier runs in the same
--out folder) wrote, with the timestamp chunk files each held on the same disk while it ran (row.json `stamps`:
they are removed once the row's files are written, but the row needed the room), and what the unfinished row had
written before it was removed. Before any row was written, how
much a row needs is said to be unknown; no number is made up (issue 37: a made-up 1 MiB floor told a user with
2 MiB free to free 1 MiB while a row took 6-18 MiB)."""

from __future__ import annotations

import contextlib
import errno
import json
import shutil
from pathlib import Path

from edgebench.errors import DiskFullError
from edgebench.file_sizes import tree_bytes
from edgebench.results.reader import HEADER_LINE

DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
EARLIER_RUNS = 20  # at most this many other run folders under --out are measured (the newest by name)


def disk_full_cause(exc: BaseException | None) -> OSError | None:
    """The 'no space left' / 'quota exceeded' OSError in exc or the exceptions it came from, else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def size_text(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _row_folders(run_dir: Path) -> list[Path]:
    rows = run_dir / "rows"
    return [d for d in rows.iterdir() if d.is_dir()] if rows.is_dir() else []


def results_line_bytes(results: Path, rows: int) -> int:
    """What one more results.csv line takes: the file's bytes per row written so far (its header shared out), or
    the header's length before the first row (which writes the header too)."""
    try:
        return -(-results.stat().st_size // rows) if rows else len(HEADER_LINE)
    except OSError:
        return len(HEADER_LINE)


def row_need(row_dir: Path) -> tuple[int, int]:
    """(its folder's bytes, the bytes of timestamp chunk files it held on the results disk while it ran: row.json's
    `stamps`, 0 when they were elsewhere or not recorded)."""
    stamps = 0
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        record = json.loads((row_dir / "row.json").read_text()).get("stamps") or {}
        if record.get("on_results_disk") is True:
            stamps = max(0, int(record.get("bytes", 0)))
    return tree_bytes(row_dir), stamps


def largest_row(run_dir: Path) -> tuple[int, str] | None:
    """(bytes, where) of the largest row written so far, its folder and the timestamp files it held on this disk
    while it ran: this run's, else those of earlier runs under the same --out folder; None when there is none."""
    here = _row_folders(run_dir)
    if here:
        return _largest([row_need(d) for d in here], f"the largest of this run's {len(here)} row folder(s)")
    with contextlib.suppress(OSError):
        others = sorted((d for d in run_dir.parent.iterdir() if d.is_dir() and d != run_dir), reverse=True)
        earlier = [r for d in others[:EARLIER_RUNS] for r in _row_folders(d)]
        if earlier:
            return _largest([row_need(d) for d in earlier],
                            f"the largest of {len(earlier)} row folder(s) of earlier runs in {run_dir.parent}")
    return None


def _largest(needs: list[tuple[int, int]], where: str) -> tuple[int, str]:
    folder, stamps = max(needs, key=sum)
    if stamps:
        where += f", {size_text(folder)} kept and {size_text(stamps)} of timestamp files while it ran"
    return folder + stamps, where


def disk_full_error(exc: OSError, run_dir: Path, results: Path, *, rows_kept: int,
                    unfinished_bytes: int = 0) -> DiskFullError:
    """One line: what could not be written, the space free now, what a row needs as measured (or that it is not
    known yet), whether rows are kept, how much to free and how to go on. `rows_kept`: the rows in `results`;
    `unfinished_bytes`: what the row in flight had written when the disk filled (its folder is removed)."""
    try:
        free = shutil.disk_usage(run_dir).free
    except OSError:
        free = 0
    where = exc.filename or run_dir
    what = "no space left on device" if exc.errno == errno.ENOSPC else "disk quota exceeded"
    unfinished = (f"; the unfinished row had written {size_text(unfinished_bytes)} when it stopped"
                  if unfinished_bytes else "")
    largest = largest_row(run_dir)
    line = results_line_bytes(results, rows_kept)
    if largest is not None and largest[0] >= unfinished_bytes:
        need = largest[0] + line
        size = f"a row takes about {size_text(need)} ({largest[1]}, and its results.csv line){unfinished}"
    elif unfinished_bytes:  # the unfinished row alone says something: it needed more than it wrote
        need = unfinished_bytes + line
        measured = f"; {largest[1]} is {size_text(largest[0])}" if largest else ""
        size = (f"a row takes more than {size_text(unfinished_bytes)} (the unfinished row had written that much when "
                f"it stopped{measured})")
    else:
        need = 0
        size = ("how much a row takes is not known yet (no row folder has been written here to measure; the "
                "unfinished one needed more than was free while it ran)")
    if need > free:
        room = f"free at least {size_text(need - free)} more ({size_text(need)} in all)"
    elif need:
        room = (f"free more than {size_text(need)}: {size_text(free)} is free now, yet the unfinished row did not "
                "fit (it needed more than the rows before it, or something else filled the disk meanwhile)")
    else:
        room = "free more space"
    if rows_kept:
        kept = f"the {rows_kept} row(s) in {results} are kept whole and the unfinished row was removed"
    else:
        state = "has no rows" if results.exists() else "does not exist yet"
        kept = f"no row was written yet ({results} {state}) and the unfinished row was removed"
    return DiskFullError(f"{what}: could not write {where} ({size_text(free)} free now; {size}); {kept}: {room}, "
                         f"then resume with: edgebench bench --resume {run_dir}", str(run_dir))
