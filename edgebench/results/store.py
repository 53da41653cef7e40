"""results.csv as an append-only, crash-safe row store, and --resume.

Every row is one physical line, written with a single write() of the whole line, then flushed
and fsynced; the file is created (header included) by an atomic rename and its directory is
fsynced. A killed sweep therefore loses at most the row being written, and what it leaves is a
last line without its newline, which `ResultsStore.resume` moves to results.partial.txt (kept,
never silently dropped).

Cell formatting:
  None, NaN      -> ""      (not measured; never 0)
  float          -> repr()  the shortest text that reads back as the identical float, so a
                            number recomputed from the CSV equals the one the harness had;
                            it stays short for short values (0.1 -> "0.1"). Rounding for
                            display is the report's job, not the store's.
  bool           -> "true" / "false"
  list / tuple   -> items formatted as above, joined with ';'
  str            -> as is, line breaks replaced by " | " (one row = one line)

Studies outlive versions: a results.csv written by an earlier edgebench (fewer columns, another order) is
read by column name (columns it lacks read as ""), and `resume` upgrades it to this version's header:
the file as it was is kept verbatim beside it (results.<version>.csv), its rows are rewritten by name,
and columns.json names every column that is empty in those rows because the writing version had none.
A header that is not an edgebench header at all (no config_hash/status/required columns) is refused.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.results.reader import (
    HEADER_LINE,
    cells_of,
    csv_line,
    edgebench_header,
    parse_cell,
    read_cells,
    read_rows,
    split_lines,
)
from edgebench.results.schema import COLUMN_NAMES, COLUMN_TYPES, ColumnTypeError, type_problem

RESULTS = "results.csv"
ATTEMPTS = "attempts.csv"
PARTIAL = "results.partial.txt"
COLUMNS_NOTE = "columns.json"  # written when resume upgraded an earlier edgebench's results.csv
DONE_STATUSES = ("ok", "invalid", "skipped")
# the inference-count rule edgebench applied before validity was per metric (issue 28): a row invalid because its
# window held fewer inferences than run.min_inferences (662: a p99). Such a row was judged by a rule this version
# no longer applies, so --resume measures it again (the old line goes to attempts.csv, like a failed one).
RETIRED_INFERENCE_RULE = re.compile(r"\bonly \d+ inferences in the window; (?:p99 needs|min_inferences is) \d+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def format_cell(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else float.__repr__(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return ";".join(format_cell(v) for v in value)
    if isinstance(value, dict):
        raise ValueError("a mapping cannot be stored in one results.csv cell")
    return _LINE_BREAK.sub(" | ", str(value))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _append_fsync(path: Path, data: bytes) -> None:
    """Append `data` whole or not at all: a write that fails part-way (a full disk) is cut back off, so the
    file never ends in a half line that a reader would have to set aside."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
                os.fsync(fd)
            if exc.filename is None:  # a write() error names no file
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
            raise
    finally:
        os.close(fd)


def _replace_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        _write_all(fd, text.encode())
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        if fd >= 0:
            os.close(fd)
        if os.path.exists(tmp):
            os.unlink(tmp)


def _cell_type_problem(name: str, value: Any) -> str | None:
    """schema.type_problem, except that text is taken where it reads back as the column's type (a row copied from
    results.csv, e.g. "8" in an int column): every cell the store writes reads back typed (results.reader)."""
    if isinstance(value, str) and COLUMN_TYPES[name] is not str:
        try:
            parse_cell(name, value)
        except ValueError as exc:
            return f"{COLUMN_TYPES[name].__name__} column, got text that is not one: {exc}"
        return None
    return type_problem(name, value)


def written_by(rows: list[dict[str, str]]) -> str:
    """The edgebench version(s) that wrote these rows, e.g. '0.1.0' or '0.1.0+0.2.0'; '' when none say."""
    return "+".join(sorted({str(r.get("edgebench_version") or "") for r in rows} - {""}))


def missing_reason(version: str) -> str:
    return f"column did not exist in edgebench {version or '(version not recorded)'}, which wrote these rows"


def judged_by_retired_rule(row: dict[str, Any]) -> bool:
    """An invalid row whose reason names the inference-count rule of earlier versions (RETIRED_INFERENCE_RULE),
    whatever else it names: its status was decided by a rule this version no longer applies."""
    return row.get("status") == "invalid" and bool(RETIRED_INFERENCE_RULE.search(str(row.get("reason") or "")))


class ResultsStore:
    """Rows of one run in <run_dir>/results.csv, columns from report.schema.COLUMNS."""

    def __init__(self, run_dir: Path | str) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / RESULTS
        self.attempts_path = self.run_dir / ATTEMPTS
        self.partial_path = self.run_dir / PARTIAL
        # filled by resume(): what it found and moved
        self.resume_report: dict[str, int] = {}

    # ------------------------------------------------------------------ writing

    def append(self, row: dict[str, Any]) -> None:
        """Write one row and fsync it. Unknown keys and a value of the wrong type for its column (schema.type_problem)
        are internal errors naming the column and the step that wrote it (a results.row.Row, as the row steps build
        it, knows its writers); missing keys are left empty."""
        unknown = [k for k in row if k not in COLUMN_NAMES]
        if unknown:
            raise ValueError(f"{self.path}: unknown results column(s): {', '.join(map(str, unknown))}")
        writers = getattr(row, "writers", {})
        for name, value in row.items():
            if problem := _cell_type_problem(name, value):
                raise ColumnTypeError(f"{self.path}: column {name!r} written by {writers.get(name, 'the caller')}: "
                                      f"{problem}")
        cells = []
        for name in COLUMN_NAMES:
            try:
                cells.append(format_cell(row.get(name)))
            except ValueError as exc:
                raise ValueError(f"{self.path}: column {name!r}: {exc}") from None
        self._ensure_file(self.path)
        _append_fsync(self.path, csv_line(cells).encode())

    def _ensure_file(self, path: Path) -> None:
        """Create `path` with the header by an atomic rename, or check the header it has."""
        if path.exists() and path.stat().st_size > 0:
            with open(path, newline="") as fh:
                first = fh.readline()
            if first != HEADER_LINE:
                names = cells_of(first)
                hint = ("written by an earlier edgebench: `edgebench bench --resume` upgrades it (columns matched "
                        "by name)" if edgebench_header(names) else "not an edgebench results.csv; start a new run "
                        "directory")
                raise EdgebenchError(f"{path}: header differs from this edgebench's columns ({hint})")
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        _replace_atomic(path, HEADER_LINE)

    # ------------------------------------------------------------------ reading

    def rows(self) -> list[dict[str, str]]:
        """Complete rows of results.csv as the text written ("" = empty); a partial last line is not a row.
        Consumers read typed values with records() (results.reader)."""
        return read_cells(self.path)[0]

    def records(self) -> list[dict[str, Any]]:
        """Complete rows of results.csv, typed per the schema (None = empty): results.reader.read_rows."""
        return read_rows(self.path)

    def attempt_rows(self) -> list[dict[str, str]]:
        """Rows moved out of results.csv by resume() (failed attempts, kept for the record)."""
        return read_cells(self.attempts_path)[0]

    def done_hashes(self) -> set[str]:
        """config_hash of every row that needs no re-run: status ok, invalid or skipped; not an invalid row judged by
        the retired inference-count rule (judged_by_retired_rule)."""
        return {r["config_hash"] for r in self.records()
                if r["status"] in DONE_STATUSES and r["config_hash"] and not judged_by_retired_rule(r)}

    # ------------------------------------------------------------------ resume

    @classmethod
    def resume(cls, run_dir: Path | str) -> ResultsStore:
        """Open an existing run for --resume and repair it.

        - a last line without its newline (killed mid-write) goes to results.partial.txt;
          so does any complete line with the wrong number of cells;
        - rows with status "failed" go to attempts.csv (they will be re-run), and so do invalid rows that an earlier
          edgebench judged by the retired inference-count rule (judged_by_retired_rule: "only 373 inferences in the
          window; p99 needs 662"): measured again, they are judged per metric (ok, the p99 empty with its reason);
        - results.csv is rewritten atomically (temp + rename) with the remaining lines, verbatim.
        """
        store = cls(run_dir)
        report = {"kept": 0, "failed_moved": 0, "partial_lines": 0}  # + rejudged_moved when there were any
        store.resume_report = report
        if not store.path.exists():
            return store
        with open(store.path, newline="") as fh:
            text = fh.read()
        lines, torn = split_lines(text)
        broken: list[str] = [torn] if torn else []
        if not lines:  # nothing but a torn header (cannot happen: the header is renamed in)
            if broken:
                _append_fsync(store.partial_path, (broken[0] + "\n").encode())
                report["partial_lines"] = 1
            _replace_atomic(store.path, HEADER_LINE)
            return store
        if lines[0] != HEADER_LINE:
            lines = store._upgrade(lines)
        keep: list[str] = []
        failed: list[str] = []
        rejudged = 0
        for line in lines[1:]:
            cells = cells_of(line)
            if len(cells) != len(COLUMN_NAMES):
                broken.append(line.rstrip("\n"))
            elif cells[COLUMN_NAMES.index("status")] == "failed":
                failed.append(line)
            elif judged_by_retired_rule(dict(zip(COLUMN_NAMES, cells, strict=True))):
                failed.append(line)
                rejudged += 1
            else:
                keep.append(line)
        # Save what leaves results.csv first: a kill in between duplicates, never loses.
        if broken:
            _append_fsync(store.partial_path, "".join(b + "\n" for b in broken).encode())
        if failed:
            store._ensure_file(store.attempts_path)
            _append_fsync(store.attempts_path, "".join(failed).encode())
        if broken or failed:
            _replace_atomic(store.path, HEADER_LINE + "".join(keep))
        report.update(kept=len(keep), failed_moved=len(failed) - rejudged, partial_lines=len(broken))
        if rejudged:
            report["rejudged_moved"] = rejudged
        return store

    def _upgrade(self, lines: list[str]) -> list[str]:
        """An earlier edgebench's results.csv -> this version's header, rows matched by column name.

        The file as it was is kept verbatim (results.<version>.csv) before results.csv is replaced; columns.json
        names the columns these rows lack (empty, with the reason) and any the old file had that this version
        dropped (their values stay in the kept copy). Returns the new lines (header first)."""
        names = cells_of(lines[0])
        if not edgebench_header(names):
            raise EdgebenchError(f"{self.path}: header differs from this edgebench's columns and is not an earlier "
                                 "edgebench's either; cannot resume this run directory")
        old_rows = [dict(zip(names, c, strict=True)) for line in lines[1:] if len(c := cells_of(line)) == len(names)]
        version = written_by(old_rows)
        backup = self.run_dir / f"results.{version or 'unversioned'}.csv"
        n = 2
        while backup.exists():
            backup = self.run_dir / f"results.{version or 'unversioned'}.{n}.csv"
            n += 1
        _replace_atomic(backup, "".join(lines))
        torn = [line for line in lines[1:] if len(cells_of(line)) != len(names)]
        new_lines = [HEADER_LINE]
        new_lines += [csv_line([row.get(c, "") for c in COLUMN_NAMES]) for row in old_rows]
        new_lines += torn  # kept as they were: resume() moves them to results.partial.txt
        added = [c for c in COLUMN_NAMES if c not in names]
        note = {"upgraded_from": version, "kept_as": backup.name, "rows": len(old_rows),
                "empty_columns": {c: missing_reason(version) for c in added},
                "dropped_columns": [c for c in names if c not in COLUMN_NAMES]}
        _replace_atomic(self.run_dir / COLUMNS_NOTE, json.dumps(note, indent=1) + "\n")
        _replace_atomic(self.path, "".join(new_lines))
        self.resume_report["upgraded_from"] = 1
        return new_lines
