"""The one typed reader of results.csv: every cell back as the type its column has in the schema.

  ""                      -> None (not measured; never 0)
  int column              -> int
  float column            -> float ("nan" -> None: NaN is written as an empty cell, so it only comes from outside)
  bool column             -> True / False ("true" / "false", as the store writes them)
  str column              -> the text as written

A row the harness has just assembled (typed values) passes through `typed_row` unchanged, so a consumer that
gets rows from either side (the sweep's rows, results.csv, a hand-made table) reads them the same way. Columns
that are not in the schema (an older or foreign table) are kept as they come. A cell that does not read as its
column's type is one EdgebenchError naming the file, line and column.

Line handling is the store's: one row is one line; a last line without its newline (a killed write) is not a row
(ResultsStore.resume moves it to results.partial.txt).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.results.schema import COLUMN_NAMES, COLUMN_TYPES, REQUIRED

_BOOLS = {"true": True, "false": False}


def csv_line(cells: Iterable[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(list(cells))
    return buf.getvalue()


HEADER_LINE = csv_line(COLUMN_NAMES)


def parse_cell(name: str, text: str, types: Mapping[str, type] = COLUMN_TYPES) -> Any:
    """The typed value of one cell of column `name` (its type from `types`, the schema's by default; text when it
    has none); ValueError says what the text is not."""
    if text == "":
        return None
    kind = types.get(name, str)
    if kind is str:
        return text
    if kind is bool:
        if text.lower() not in _BOOLS:
            raise ValueError(f"{text!r} is not true/false")
        return _BOOLS[text.lower()]
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    return None if math.isnan(value) else value


def typed_row(row: Mapping[str, Any], where: str = "row", types: Mapping[str, type] = COLUMN_TYPES) -> dict[str, Any]:
    """A copy of `row` with every text cell of a typed column (`types`: the schema's by default) read as its type;
    other values kept as they are."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        if isinstance(value, str) and name in types:
            try:
                value = parse_cell(name, value, types)
            except ValueError as exc:
                raise EdgebenchError(f"{where}: column {name!r}: {exc}") from None
        out[name] = value
    return out


def split_lines(text: str) -> tuple[list[str], str]:
    """(complete lines, each ending in "\n"; the text after the last "\n", i.e. a torn line)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]], parts[-1]


def cells_of(line: str) -> list[str]:
    return next(csv.reader([line]), [])


def edgebench_header(names: list[str]) -> bool:
    """A header some edgebench wrote: it has the required columns, config_hash and edgebench_version."""
    return all(n in names for n in (*REQUIRED, "config_hash", "edgebench_version"))


def read_cells(path: Path) -> tuple[list[dict[str, str]], str]:
    """(complete rows as text cells, partial last line) of a results.csv some edgebench wrote; [] when absent.
    An earlier edgebench's header (other columns, other order) is read by column name: this edgebench's columns
    first ("" where the file has none), then the file's own extra columns."""
    if not path.exists():
        return [], ""
    with open(path, newline="") as fh:
        text = fh.read()
    lines, partial = split_lines(text)
    names = list(COLUMN_NAMES)
    if lines and lines[0] != HEADER_LINE:
        names = cells_of(lines[0])
        if not edgebench_header(names):
            raise EdgebenchError(f"{path}: header differs from this edgebench's columns and is not an earlier "
                                 "edgebench's either; start a new run directory")
    out = []
    for cells in (cells_of(line) for line in lines[1:]):
        if len(cells) != len(names):
            continue
        by_name = dict(zip(names, cells, strict=True))
        out.append({n: by_name.get(n, "") for n in (*COLUMN_NAMES, *[k for k in names if k not in COLUMN_NAMES])})
    return out, partial


def read_rows(path: Path | str) -> list[dict[str, Any]]:
    """Typed rows of a results.csv this edgebench wrote (its exact header), partial last line left out."""
    path = Path(path)
    rows, _partial = read_cells(path)
    return [typed_row(r, f"{path} row {i + 1}") for i, r in enumerate(rows)]


def read_table(path: Path | str, required: tuple[str, ...] = (),
               types: Mapping[str, type] = COLUMN_TYPES) -> list[dict[str, Any]]:
    """Typed rows of any table with a header: results.csv (the report reads older or hand-made ones too: columns may
    be missing or extra), or a table of other columns whose types are given (slo_search.csv); a missing `required`
    column is one EdgebenchError naming the file."""
    path = Path(path)
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise EdgebenchError(f"{path}: missing column(s) {', '.join(missing)}")
        return [typed_row(r, f"{path} line {i + 2}", types) for i, r in enumerate(reader)]
