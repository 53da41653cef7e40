"""A figure as data: the points, lines, spans and caption of one figure, before any drawing.

`FigureData` records are plain data a test can check; `report.render` draws them. The faceting helpers
here (rows grouped into one figure per configuration, series of row values with the median line through
the ok points, the caption counting rows by status) are shared by every figure kind built from result rows:
batch_plots, scaling_plots, load_plots.

How rows appear: ok rows of one x (repeats) are drawn as their median with its interval as a bar, whose coverage
(answer.intervals: 75% at 3 repeats, >= 95% from 6) the caption states (one ok repeat: the point alone); invalid rows are hollow markers (their value is a measurement the row says not to
trust), failed rows are an x on the x axis (they have no value), skipped rows are counted in the caption
with their reasons. Lines join the medians of ok rows only.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.answer.intervals import median_ci, percent
from edgebench.results.runs import Run

_SLUG = re.compile(r"[^A-Za-z0-9._+]+")


@dataclass
class Point:
    x: float
    y: float | None  # None: the row has no value (failed, or the cell is empty)
    status: str
    row_index: str = ""
    reason: str = ""


@dataclass
class Series:
    label: str
    points: list[Point] = field(default_factory=list)
    line_x: list[float] = field(default_factory=list)  # medians of ok points per x
    line_y: list[float] = field(default_factory=list)
    # the interval of each median (answer.intervals) and its coverage; None where one ok repeat has no interval;
    # empty for lines that are not medians of rows (telemetry traces, references)
    line_lo: list[float | None] = field(default_factory=list)
    line_hi: list[float | None] = field(default_factory=list)
    line_coverage: list[float | None] = field(default_factory=list)
    line_n: list[int] = field(default_factory=list)  # ok repeats behind each median
    color_key: str = ""
    linestyle: str = "-"
    marker: str = "o"
    panel: int = 0
    kind: str = "points"  # "points" (rows) or "trace" (a telemetry channel: line only)

    def xy(self, status: str) -> list[tuple[float, float | None]]:
        return [(p.x, p.y) for p in self.points if p.status == status]


@dataclass
class FigureData:
    name: str  # file stem
    title: str
    x_label: str
    y_labels: list[str]  # one per panel
    series: list[Series] = field(default_factory=list)
    references: list[Series] = field(default_factory=list)  # e.g. linear scaling, dashed grey
    spans: list[tuple[float, float, str]] = field(default_factory=list)  # shaded x ranges with a label
    vlines: list[tuple[float, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # rows in the figure's facet, by status
    caption: list[str] = field(default_factory=list)
    x_log: bool = False
    y_log: bool = False  # set when the plotted values span more than 20x (latency p50 vs p99)
    x_ticks: list[float] = field(default_factory=list)
    absent_reason: str | None = None
    files: list[Path] = field(default_factory=list)

    def invalid_points(self) -> list[tuple[str, float, float | None]]:
        return [(s.label, p.x, p.y) for s in self.series for p in s.points if p.status == "invalid"]


def short_placement(placement: Any) -> str:
    """A row's placement column for a title or a file name: runs of one placement counted, 'cuda:0+cuda:0+dla0'
    -> '2xcuda:0+dla0' (a 28-stream SLO probe's column is 28 'cuda:0' joined)."""
    parts = str(placement).split("+")
    out: list[list[Any]] = []
    for part in parts:
        if out and out[-1][0] == part:
            out[-1][1] += 1
        else:
            out.append([part, 1])
    return "+".join(p if n == 1 else f"{n}x{p}" for p, n in out)


SLUG_MAX = 150  # a file name holds 255 bytes; a stem gets suffixes (_single.png, .caption.tex) after it


def slug(*parts: Any) -> str:
    """File-name stem of parts joined with '_'; one longer than SLUG_MAX (28 placements 'cuda-0+cuda-0+...' made
    a 700-byte name, and `report` died with 'File name too long') is cut and ends in a hash of the whole, so two
    stems that share their start stay apart."""
    whole = "_".join(_SLUG.sub("-", str(p)).strip("-") for p in parts if str(p) != "")
    if len(whole) <= SLUG_MAX:
        return whole
    import hashlib

    return f"{whole[:SLUG_MAX - 13]}-{hashlib.sha256(whole.encode()).hexdigest()[:12]}"


def coverage_words(coverages: Iterable[float | None], lower_bound: bool = False) -> str:
    """The coverage of the interval bars drawn, for a caption: 'coverage 75%' when all are alike, else
    'coverage 50-75%'; 'coverage >= 56.2%' for lower bounds (a ratio's); '' when no bar is drawn."""
    covs = sorted({c for c in coverages if c is not None})
    if not covs:
        return ""
    lo, hi = percent(covs[0]), percent(covs[-1])
    return f"coverage {'>= ' if lower_bound else ''}" + (lo if lo == hi else f"{lo.removesuffix('%')}-{hi}")


def facet_slug(prefix: str, keys: tuple[str, ...], values: tuple) -> str:
    short = {"instances": "n", "batch": "b"}
    return slug(prefix, *[f"{short.get(k, '')}{v}" if v != "" else "" for k, v in zip(keys, values)])


# ------------------------------------------------------------------------------------ faceting rows


def facets(runs: list[Run], keys: tuple[str, ...]) -> dict[tuple, list[tuple[Run, dict[str, Any]]]]:
    """Rows of every run grouped by their values of `keys` (one figure per group), in a stable order."""
    out: dict[tuple, list[tuple[Run, dict[str, Any]]]] = defaultdict(list)
    for run in runs:
        for row in run.rows:
            out[tuple(row.get(k) or "" for k in keys)].append((run, row))
    return dict(sorted(out.items(), key=lambda kv: tuple(str(v).zfill(6) for v in kv[0])))


def series_from_rows(label: str, rows: list[dict[str, Any]], x_col: str, y_col: str) -> tuple[Series, int]:
    """(series of every non-skipped row, number of ok/invalid rows whose y cell is empty)."""
    s = Series(label)
    empty = 0
    ok_by_x: dict[float, list[float]] = defaultdict(list)
    for row in rows:
        status = row.get("status") or ""
        x = row.get(x_col)
        if status == "skipped" or x is None:
            continue
        y = None if status == "failed" else row.get(y_col)
        if y is None and status != "failed":
            empty += 1
            continue
        index = row.get("row_index")
        s.points.append(Point(x, y, status, "" if index is None else str(index), row.get("reason") or ""))
        if status == "ok" and y is not None:
            ok_by_x[x].append(y)
    s.points.sort(key=lambda p: p.x)
    s.line_x = sorted(ok_by_x)
    intervals = [median_ci(ok_by_x[x]) for x in s.line_x]
    s.line_y = [statistics.median(ok_by_x[x]) for x in s.line_x]
    s.line_lo = [iv.lo for iv in intervals]
    s.line_hi = [iv.hi for iv in intervals]
    s.line_coverage = [iv.coverage for iv in intervals]
    s.line_n = [iv.n for iv in intervals]
    return s, empty


def count_caption(members: list[tuple[Run, dict[str, Any]]]) -> tuple[dict[str, int], list[str]]:
    """(rows by status, caption lines counting them and naming why rows were skipped)."""
    counts: dict[str, int] = defaultdict(int)
    skipped: dict[str, int] = defaultdict(int)
    for _run, row in members:
        counts[row.get("status") or ""] += 1
        if row.get("status") == "skipped":
            skipped[row.get("reason") or "no reason given"] += 1
    parts = [f"ok {counts.get('ok', 0)}", f"invalid {counts.get('invalid', 0)} (hollow markers)",
             f"failed {counts.get('failed', 0)} (x on the axis: no value)", f"skipped {counts.get('skipped', 0)}"]
    caption = ["rows: " + ", ".join(parts)]
    for reason, n in skipped.items():
        caption.append(f"skipped ({n}): {reason}")
    return dict(counts), caption


def set_x_axis(figure: FigureData, xs: set[float]) -> None:
    """Ticks at the measured x values; a log2 axis when they span 8x or more."""
    figure.x_ticks = sorted(xs)
    if xs and min(xs) > 0 and max(xs) / min(xs) >= 8:
        figure.x_log = True


def facet_title(keys: tuple[str, ...], values: tuple, members: list[tuple[Run, dict[str, Any]]]) -> str:
    parts = []
    for k, v in zip(keys, values):
        if v == "" or k == "options" and not v:
            continue
        parts.append(f"{v} inst." if k == "instances" else f"batch {v}" if k == "batch" else str(v))
    placements = sorted({row.get("placement") or "" for _r, row in members if row.get("placement")})
    if len(placements) == 1:
        parts.append(placements[0])
    return ", ".join(parts)
