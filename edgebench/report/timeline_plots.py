"""Power timelines: power (W) and utilization (%) over one row's life from its telemetry_*.csv files,
the measured window (the instances' overlap, from latencies.npz) shaded.

A row whose telemetry holds no power channel (a host without readable RAPL, a sampler that lost power) gets no
timeline: utilization alone is not a power timeline. Its figure carries an absent reason with NO_POWER, and the
summary states all such rows in one line.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from edgebench.report.figure import FigureData, Series, slug
from edgebench.results.confine import inside, link_problem
from edgebench.results.latency_file import latency_path, read_latencies
from edgebench.results.runs import Run

_UNIT = re.compile(r"^(.*)\[(.*)\]$")
_PER_CORE = re.compile(r"^cpu\d+_util_pct$")
NO_POWER = "no power channel"  # in the absent reason of a row whose telemetry holds no power (summary groups them)
SKIPPED = "skipped"  # ... of a row that was skipped (grouped too)


def _read_telemetry(path: Path) -> tuple[list[int], dict[str, tuple[str, list[float | None]]]]:
    """(t_ns, {channel: (unit, values)}) from a telemetry_<source>.csv written by Timeline.to_csv."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header or header[0] != "t_ns":
            raise ValueError(f"{path}: first column is not t_ns")
        names = []
        for cell in header[1:]:
            m = _UNIT.match(cell)
            names.append((m.group(1), m.group(2)) if m else (cell, ""))
        t_ns: list[int] = []
        cols: list[list[float | None]] = [[] for _ in names]
        for line in reader:
            if not line:
                continue
            t_ns.append(int(line[0]))
            for i in range(len(names)):
                cell = line[i + 1] if i + 1 < len(line) else ""
                cols[i].append(float(cell) if cell else None)
    return t_ns, {n: (u, cols[i]) for i, (n, u) in enumerate(names)}


def _overlap_window(row_dir: Path) -> tuple[int, int] | None:
    """[latest instance start, earliest instance end] from the row's latencies (latencies.npz, or an earlier
    edgebench's latencies.csv.gz), as the row's numbers use."""
    path = latency_path(row_dir)
    if path is None or path.is_symlink():
        return None
    spans = read_latencies(path).spans_ns()
    if not spans:
        return None
    w0, w1 = max(s for s, _e in spans.values()), min(e for _s, e in spans.values())
    return (w0, w1) if w1 > w0 else None


def power_timeline(run: Run, row: dict[str, Any], tag: str = "") -> FigureData:
    """Power (W) and utilization (%) over the row's life, the measured window shaded."""
    idx = row.get("row_index", "")
    title = (f"Row {idx}: {row.get('model')} {row.get('backend')} {row.get('precision')} b{row.get('batch')} "
             f"x{row.get('instances')} {row.get('placement')} [{row.get('status')}]")
    fig = FigureData(slug("power_timeline", tag, f"row{str(idx).zfill(4)}"), title,
                     "time since measurement start (s)", ["power (W)", "utilization (%)"])
    fig.counts = {row.get("status") or "": 1}
    if row.get("status") == "skipped":
        fig.absent_reason = f"row {idx}: {SKIPPED} ({row.get('reason') or ''}): nothing ran"
        return fig
    art = row.get("artifact_dir") or ""
    row_dir = run.path / art if art else None
    if row_dir is not None and (problem := link_problem(run.path, row_dir)) is not None:
        fig.absent_reason = f"row {idx}: {problem}; not read"
        return fig
    if row_dir is None or not row_dir.is_dir():
        fig.absent_reason = f"row {idx}: no per-row folder ({art or 'artifact_dir empty'}) in {run.path}"
        return fig
    files = [f for f in sorted(row_dir.glob("telemetry_*.csv")) if inside(run.path, f)]
    if not files:
        fig.absent_reason = f"row {idx}: no telemetry_*.csv in {row_dir} (no sampler ran or it wrote nothing)"
        return fig
    meta: dict[str, Any] = {}
    if (row_dir / "row.json").exists() and inside(run.path, row_dir / "row.json"):
        meta = json.loads((row_dir / "row.json").read_text())
    start_ns = int(meta.get("measure_start_ns") or 0)
    end_ns = int(meta.get("measure_end_ns") or 0)
    traces: list[tuple[str, str, str, list[int], list[float | None]]] = []
    for path in files:
        source = path.stem.removeprefix("telemetry_")
        t_ns, channels = _read_telemetry(path)
        for name, (unit, values) in channels.items():
            traces.append((source, name, unit, t_ns, values))
    t0 = start_ns or min((t[3][0] for t in traces if t[3]), default=0)
    power_seen = False
    for source, name, unit, t_ns, values in traces:
        if unit == "mW":
            panel, scale = 0, 1e-3
            power_seen = power_seen or any(v is not None for v in values)
        elif unit == "%" and name.endswith("_util_pct") and not _PER_CORE.match(name):
            panel, scale = 1, 1.0
        else:
            continue
        s = Series(f"{source} {name.removesuffix('_mw').removesuffix('_pct')}", kind="trace", panel=panel,
                   color_key=f"{source}:{name}", linestyle="-", marker="")
        s.line_x = [(t - t0) / 1e9 for t, v in zip(t_ns, values) if v is not None]
        s.line_y = [v * scale for v in values if v is not None]
        if s.line_x:
            fig.series.append(s)
    window = _overlap_window(row_dir)
    if window:
        fig.spans.append(((window[0] - t0) / 1e9, (window[1] - t0) / 1e9, "measured window (instance overlap)"))
    elif start_ns and end_ns:
        fig.spans.append((0.0, (end_ns - t0) / 1e9, "measure phase (no latencies: overlap unknown)"))
    if start_ns:
        fig.vlines.append((0.0, "barrier release"))
    if end_ns:
        fig.vlines.append(((end_ns - t0) / 1e9, "stop signalled"))
    if not power_seen:  # a flat CPU line alone is no power timeline: not drawn, the summary says why in one line
        notes = [n for t in meta.get("telemetry", []) for n in t.get("notes", [])
                 if "cost" not in n.lower()] or [row.get("energy_source") or "no power channel recorded"]
        fig.absent_reason = (f"row {idx}: {NO_POWER} in " + ", ".join(p.name for p in files) + " ("
                             + "; ".join(notes) + ")")
        fig.caption.append("no power reading: " + "; ".join(notes))
        return fig
    mean = row.get("power_w_mean")
    fig.caption.append(f"power_w_mean over the window (results.csv): {mean:.4g} W" if mean is not None
                       else "power_w_mean empty in results.csv")
    if mean is not None and fig.spans:
        x0, x1, _label = fig.spans[0]
        ref = Series("power_w_mean (results.csv)", color_key="mean", linestyle="--", marker="")
        ref.line_x, ref.line_y = [x0, x1], [mean, mean]
        fig.references.append(ref)
    if row.get("status") != "ok":
        fig.caption.append(f"row status {row.get('status')}: {row.get('reason') or ''}")
    return fig


def timeline_figures(runs: list[Run], max_rows: int | None = None) -> list[FigureData]:
    """A power timeline per row (skipped rows are listed as absent); at most max_rows drawn per run."""
    out = []
    for i, run in enumerate(runs):
        if not (run.path / "rows").is_dir():  # a results.csv alone (e.g. copied from a board): one absence
            out.append(FigureData(slug("power_timeline", f"run{i + 1}"), f"Power timelines of {run.label}",
                                  "time (s)", ["power (W)"],
                                  absent_reason=f"{run.path}: no rows/ folder (results.csv only): no power timeline "
                                                f"for its {len(run.rows)} rows"))
            continue
        drawn = 0
        for row in sorted(run.rows, key=lambda r: int(r.get("row_index") or 0)):
            fig = power_timeline(run, row, f"run{i + 1}" if len(runs) > 1 else "")
            if fig.absent_reason is None:
                if max_rows is not None and drawn >= max_rows:
                    fig.absent_reason = f"row {row.get('row_index')}: not drawn (--max-timelines {max_rows})"
                else:
                    drawn += 1
            out.append(fig)
    return out


def _rows_of(figures: list[FigureData]) -> str:
    which = [(f.absent_reason or "").split(":", 1)[0].removeprefix("row ") for f in figures]
    return "row " + ", ".join(which[:12]) + (" ..." if len(which) > 12 else "")


def grouped_absences(figures: list[FigureData]) -> tuple[list[str], list[FigureData]]:
    """(one line per kind of absence shared by many rows: no power channel, skipped; the other absent figures).
    The no-power line names the samplers' notes, the skipped line the distinct skip reasons."""
    absent = [f for f in figures if f.absent_reason]
    no_power = [f for f in absent if f.absent_reason and f": {NO_POWER} in " in f.absent_reason]
    skipped = [f for f in absent if f.absent_reason and f": {SKIPPED} (" in f.absent_reason]
    lines = []
    if no_power:
        why = sorted({c.removeprefix("no power reading: ") for f in no_power for c in f.caption
                      if c.startswith("no power reading: ")})
        lines.append(f"No power timeline for {len(no_power)} row(s) ({_rows_of(no_power)}): their telemetry holds "
                     f"{NO_POWER}, and utilization alone is not drawn ({'; '.join(why)})")
    if skipped:
        reasons = sorted({(f.absent_reason or "").split(f": {SKIPPED} (", 1)[1].removesuffix("): nothing ran")
                          for f in skipped})
        lines.append(f"No power timeline for {len(skipped)} skipped row(s) ({_rows_of(skipped)}): nothing ran ("
                     + "; ".join(reasons) + ")")
    rest = [f for f in absent if f not in no_power and f not in skipped]
    return lines, rest
