"""Figures for papers: the data behind each figure first (plain records a test can check), then drawing.

Each `*_figures` function returns `FigureData` records: the x/y of every plotted point with its row's
status, the median line through the ok points, reference lines, shaded spans and a caption counting
what is not plotted. `render()` draws one record with matplotlib (imported lazily, Agg, no pyplot state)
to PNG and PDF. A figure that cannot be drawn from the data carries `absent_reason` and is not rendered.

How non-ok rows appear: invalid rows are hollow markers (their value is a measurement the row says not to
trust), failed rows are an x on the x axis (they have no value), skipped rows are counted in the caption
with their reasons. Lines join the medians of ok rows only.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import statistics
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.report.runs import Run, num
from edgebench.report.tables import PRECISION_ORDER, precision_rank

FORMATS = ("png", "pdf")
_SLUG = re.compile(r"[^A-Za-z0-9._+]+")
_UNIT = re.compile(r"^(.*)\[(.*)\]$")
_PER_CORE = re.compile(r"^cpu\d+_util_pct$")


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


def slug(*parts: Any) -> str:
    return "_".join(_SLUG.sub("-", str(p)).strip("-") for p in parts if str(p) != "")


def _facet_slug(prefix: str, keys: tuple[str, ...], values: tuple) -> str:
    short = {"instances": "n", "batch": "b"}
    return slug(prefix, *[f"{short.get(k, '')}{v}" if v != "" else "" for k, v in zip(keys, values)])


# ------------------------------------------------------------------------------------ row figures


def _facets(runs: list[Run], keys: tuple[str, ...]) -> dict[tuple, list[tuple[Run, dict[str, str]]]]:
    out: dict[tuple, list[tuple[Run, dict[str, str]]]] = defaultdict(list)
    for run in runs:
        for row in run.rows:
            out[tuple(row.get(k, "") for k in keys)].append((run, row))
    return dict(sorted(out.items(), key=lambda kv: tuple(str(v).zfill(6) for v in kv[0])))


def _series_from_rows(label: str, rows: list[dict[str, str]], x_col: str, y_col: str) -> tuple[Series, int]:
    """(series of every non-skipped row, number of ok/invalid rows whose y cell is empty)."""
    s = Series(label)
    empty = 0
    ok_by_x: dict[float, list[float]] = defaultdict(list)
    for row in rows:
        status = row.get("status", "")
        x = num(row, x_col)
        if status == "skipped" or x is None:
            continue
        y = None if status == "failed" else num(row, y_col)
        if y is None and status != "failed":
            empty += 1
            continue
        s.points.append(Point(x, y, status, row.get("row_index", ""), row.get("reason", "")))
        if status == "ok" and y is not None:
            ok_by_x[x].append(y)
    s.points.sort(key=lambda p: p.x)
    s.line_x = sorted(ok_by_x)
    s.line_y = [statistics.median(ok_by_x[x]) for x in s.line_x]
    return s, empty


def _count_caption(members: list[tuple[Run, dict[str, str]]]) -> tuple[dict[str, int], list[str]]:
    counts: dict[str, int] = defaultdict(int)
    skipped: dict[str, int] = defaultdict(int)
    for _run, row in members:
        counts[row.get("status", "")] += 1
        if row.get("status") == "skipped":
            skipped[row.get("reason", "") or "no reason given"] += 1
    parts = [f"ok {counts.get('ok', 0)}", f"invalid {counts.get('invalid', 0)} (hollow markers)",
             f"failed {counts.get('failed', 0)} (x on the axis: no value)", f"skipped {counts.get('skipped', 0)}"]
    caption = ["rows: " + ", ".join(parts)]
    for reason, n in skipped.items():
        caption.append(f"skipped ({n}): {reason}")
    return dict(counts), caption


def _x_axis(figure: FigureData, xs: set[float]) -> None:
    figure.x_ticks = sorted(xs)
    if xs and min(xs) > 0 and max(xs) / min(xs) >= 8:
        figure.x_log = True


def _facet_title(keys: tuple[str, ...], values: tuple, members: list[tuple[Run, dict[str, str]]]) -> str:
    parts = []
    for k, v in zip(keys, values):
        if v == "" or k == "options" and not v:
            continue
        parts.append(f"{v} inst." if k == "instances" else f"batch {v}" if k == "batch" else str(v))
    placements = sorted({row.get("placement", "") for _r, row in members if row.get("placement")})
    if len(placements) == 1:
        parts.append(placements[0])
    return ", ".join(parts)


BATCH_FACET = ("model", "backend", "instances", "mode", "options", "power_mode")  # power_mode: Jetson nvpmodel


def _vs_batch(runs: list[Run], prefix: str, metrics: list[tuple[str, str, str, str]], y_label: str,
              what: str, log_y: bool = False) -> list[FigureData]:
    """One figure per (model, backend, instances, mode, options); one series per precision (and run when
    several runs are compared) per metric. metrics: (column, label suffix, linestyle, marker)."""
    multi = len(runs) > 1
    figures = []
    for values, members in _facets(runs, BATCH_FACET).items():
        fig = FigureData(_facet_slug(prefix, BATCH_FACET, values), f"{what}: {_facet_title(BATCH_FACET, values, members)}",
                         "batch (images per inference)", [y_label])
        fig.counts, fig.caption = _count_caption(members)
        by_series: dict[tuple, list[dict[str, str]]] = defaultdict(list)
        for run, row in members:
            by_series[(run.label if multi else "", row.get("precision", ""))].append(row)
        markers = "os^Dvp*"
        run_marker = {r.label: markers[i % len(markers)] for i, r in enumerate(runs)}
        run_style = {r.label: ("-", "--", "-.", ":")[i % 4] for i, r in enumerate(runs)}
        xs: set[float] = set()
        empties: dict[str, int] = defaultdict(int)
        for (run_label, precision), rows in sorted(by_series.items(), key=lambda kv: (kv[0][0], precision_rank(kv[0][1]))):
            for col, suffix, style, marker in metrics:
                label = " ".join(p for p in (precision, suffix, f"({run_label})" if run_label else "") if p)
                s, empty = _series_from_rows(label, rows, "batch", col)
                empties[col] += empty
                if not s.points:
                    continue
                s.color_key, s.linestyle = precision, style
                s.marker = run_marker[run_label] if multi else marker
                if multi and len(metrics) == 1:  # runs differ by line style as well as by marker
                    s.linestyle = run_style[run_label]
                fig.series.append(s)
                xs.update(p.x for p in s.points)
        for col, n in empties.items():
            if n:
                fig.caption.append(f"{col} empty in {n} measured row(s): not plotted ({_empty_why(col)})")
        if not fig.series:
            fig.absent_reason = f"no {what.lower()} value in any row of this facet"
        ys = [p.y for s in fig.series for p in s.points if p.y is not None and p.y > 0]
        fig.y_log = bool(log_y and ys and max(ys) / min(ys) > 20)
        _x_axis(fig, xs)
        figures.append(fig)
    return figures


def _empty_why(col: str) -> str:
    if col == "latency_ms_p99":
        return "p99 needs >= 662 inferences"
    if col == "latency_ms_p90":
        return "p90 needs >= 64 inferences"
    if "energy" in col or "power" in col:
        return "no power/energy reading for the row"
    return "not measured"


def throughput_vs_batch(runs: list[Run]) -> list[FigureData]:
    return _vs_batch(runs, "throughput_vs_batch", [("throughput_ips", "", "-", "o")], "throughput (images/s)",
                     "Throughput")


def latency_vs_batch(runs: list[Run]) -> list[FigureData]:
    return _vs_batch(runs, "latency_vs_batch", [("latency_ms_p50", "p50", "-", "o"), ("latency_ms_p99", "p99", "--", "^")],
                     "latency of one inference (ms)", "Latency p50 / p99", log_y=True)


def energy_vs_batch(runs: list[Run]) -> list[FigureData]:
    rows = [row for run in runs for row in run.rows]
    if not any(num(r, "energy_per_inference_mj") is not None for r in rows):
        sources = sorted({r.get("energy_source", "") for r in rows if r.get("energy_source")})
        why = "; ".join(sources) if sources else "no energy_source recorded"
        return [FigureData("energy_vs_batch", "Energy per inference", "batch (images per inference)",
                           ["energy per image (mJ)"],
                           absent_reason=f"no row has energy_per_inference_mj (energy_source: {why})")]
    figures = _vs_batch(runs, "energy_vs_batch", [("energy_per_inference_mj", "", "-", "o")], "energy per image (mJ)",
                        "Energy per inference")
    return [f for f in figures if f.absent_reason is None]


SCALING_FACET = ("model", "backend", "precision", "batch", "mode", "options", "power_mode")


def throughput_vs_instances(runs: list[Run]) -> list[FigureData]:
    """Per (model, backend, precision, batch, mode, options) measured at >= 2 instance counts; a dashed
    linear-scaling line from the median ok throughput at the fewest instances, per run."""
    figures = []
    for values, members in _facets(runs, SCALING_FACET).items():
        counts = {num(row, "instances") for _r, row in members if row.get("status") != "skipped"}
        counts.discard(None)
        if len(counts) < 2:
            continue
        fig = FigureData(_facet_slug("throughput_vs_instances", SCALING_FACET, values),
                         f"Scaling: {_facet_title(SCALING_FACET, values, [])}", "concurrent instances",
                         ["throughput (images/s)"])
        fig.counts, fig.caption = _count_caption(members)
        by_run: dict[str, list[dict[str, str]]] = defaultdict(list)
        for run, row in members:
            by_run[run.label].append(row)
        for i, (label, rows) in enumerate(by_run.items()):
            s, _empty = _series_from_rows(label if len(runs) > 1 else "measured", rows, "instances", "throughput_ips")
            s.color_key = f"run{i}"
            fig.series.append(s)
            if s.line_x:
                n0, t0 = s.line_x[0], s.line_y[0]
                ref = Series(f"linear scaling from {n0:g} inst." + (f" ({label})" if len(runs) > 1 else ""),
                             color_key=s.color_key, linestyle=":", marker="")
                ref.line_x = sorted(x for x in counts if x is not None and x >= n0)
                ref.line_y = [t0 * x / n0 for x in ref.line_x]
                fig.references.append(ref)
        _x_axis(fig, {c for c in counts if c is not None})
        fig.x_log = False
        figures.append(fig)
    return figures


# ------------------------------------------------------------------------------------ power timeline


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
    """[latest instance start, earliest instance end] from latencies.csv.gz, as the row's numbers use."""
    path = row_dir / "latencies.csv.gz"
    if not path.exists():
        return None
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    with gzip.open(path, "rt", newline="") as fh:
        for rec in csv.DictReader(fh):
            inst, s, e = rec["instance"], int(rec["start_ns"]), int(rec["end_ns"])
            first[inst] = min(first.get(inst, s), s)
            last[inst] = max(last.get(inst, e), e)
    if not first:
        return None
    w0, w1 = max(first.values()), min(last.values())
    return (w0, w1) if w1 > w0 else None


def power_timeline(run: Run, row: dict[str, str], tag: str = "") -> FigureData:
    """Power (W) and utilization (%) over the row's life, the measured window shaded."""
    idx = row.get("row_index", "")
    title = (f"Row {idx}: {row.get('model')} {row.get('backend')} {row.get('precision')} b{row.get('batch')} "
             f"x{row.get('instances')} {row.get('placement')} [{row.get('status')}]")
    fig = FigureData(slug("power_timeline", tag, f"row{str(idx).zfill(4)}"), title,
                     "time since measurement start (s)", ["power (W)", "utilization (%)"])
    fig.counts = {row.get("status", ""): 1}
    if row.get("status") == "skipped":
        fig.absent_reason = f"row {idx} was skipped ({row.get('reason', '')}): nothing ran"
        return fig
    art = row.get("artifact_dir", "")
    row_dir = run.path / art if art else None
    if row_dir is None or not row_dir.is_dir():
        fig.absent_reason = f"row {idx}: no per-row folder ({art or 'artifact_dir empty'}) in {run.path}"
        return fig
    files = sorted(row_dir.glob("telemetry_*.csv"))
    if not files:
        fig.absent_reason = f"row {idx}: no telemetry_*.csv in {row_dir} (no sampler ran or it wrote nothing)"
        return fig
    meta: dict[str, Any] = {}
    if (row_dir / "row.json").exists():
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
    if not power_seen:
        notes = [n for t in meta.get("telemetry", []) for n in t.get("notes", [])
                 if "cost" not in n.lower()] or [row.get("energy_source", "") or "no power channel recorded"]
        fig.caption.append("no power reading in " + ", ".join(p.name for p in files) + ": " + "; ".join(notes))
        fig.y_labels = ["utilization (%)"]
        fig.title += " - no power reading"
        for s in fig.series:
            s.panel = 0
    else:
        mean = num(row, "power_w_mean")
        fig.caption.append(f"power_w_mean over the window (results.csv): {mean:.4g} W" if mean is not None
                           else "power_w_mean empty in results.csv")
        if mean is not None and fig.spans:
            x0, x1, _label = fig.spans[0]
            ref = Series("power_w_mean (results.csv)", color_key="mean", linestyle="--", marker="")
            ref.line_x, ref.line_y = [x0, x1], [mean, mean]
            fig.references.append(ref)
    if row.get("status") != "ok":
        fig.caption.append(f"row status {row.get('status')}: {row.get('reason', '')}")
    if not fig.series:
        fig.absent_reason = (f"row {idx}: {', '.join(p.name for p in files)} hold no power (mW) or utilization (%) "
                             "channel")
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
        for row in sorted(run.rows, key=lambda r: int(num(r, "row_index") or 0)):
            fig = power_timeline(run, row, f"run{i + 1}" if len(runs) > 1 else "")
            if fig.absent_reason is None:
                if max_rows is not None and drawn >= max_rows:
                    fig.absent_reason = f"row {row.get('row_index')}: not drawn (--max-timelines {max_rows})"
                else:
                    drawn += 1
            out.append(fig)
    return out


def all_figures(runs: list[Run], max_timelines: int | None = None) -> list[FigureData]:
    from edgebench.report.load_plots import latency_vs_load

    return [*throughput_vs_batch(runs), *throughput_vs_instances(runs), *latency_vs_batch(runs),
            *energy_vs_batch(runs), *latency_vs_load(runs), *timeline_figures(runs, max_timelines)]


# ------------------------------------------------------------------------------------ drawing


def matplotlib_missing() -> str | None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        return f"matplotlib is not installed ({exc}); pip install 'edgebench[report]'"
    return None


def _colors(figure: FigureData) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    keys = []
    for s in [*figure.series, *figure.references]:
        if s.color_key not in keys:
            keys.append(s.color_key)
    out = {}
    free = [i for i in range(10) if i >= len(PRECISION_ORDER)]
    for key in keys:
        if key in PRECISION_ORDER:  # the same precision has the same colour in every figure
            out[key] = cmap(PRECISION_ORDER.index(key))
        else:
            out[key] = cmap(free.pop(0) if free else len(out) % 10)
            free = free or list(range(10))
    return out


def render(figure: FigureData, out_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Draw one figure to out_dir/<name>.<fmt>; returns the files (also kept in figure.files)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    if figure.absent_reason is not None:
        raise ValueError(f"figure {figure.name} has no data: {figure.absent_reason}")
    panels = len(figure.y_labels)
    fig = Figure(figsize=(7.0, 3.2 + 1.8 * panels), layout="constrained")
    FigureCanvasAgg(fig)  # Agg, without pyplot's global state
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    colors = _colors(figure)
    for ax, label in zip(axes, figure.y_labels):
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    for x0, x1, label in figure.spans:
        for i, ax in enumerate(axes):
            ax.axvspan(x0, x1, color="tab:green", alpha=0.15, label=label if i == 0 else None)
    for x, label in figure.vlines:
        for i, ax in enumerate(axes):
            ax.axvline(x, color="0.4", linestyle="--", linewidth=0.8)
            if i == 0:
                ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                            fontsize=7, color="0.3")
    statuses_seen: set[str] = set()
    for s in figure.series:
        ax = axes[s.panel]
        color = colors[s.color_key]
        if s.kind == "trace":
            ax.plot(s.line_x, s.line_y, color=color, linestyle=s.linestyle, linewidth=1.6 if "total" in s.label else 1.0,
                    label=s.label)
            continue
        if s.line_x:
            ax.plot(s.line_x, s.line_y, color=color, linestyle=s.linestyle, linewidth=1.4)
        # one legend entry per series: its colour, line style and marker
        ax.plot([], [], color=color, linestyle=s.linestyle, marker=s.marker, markersize=5, label=s.label)
        ok = s.xy("ok")
        inv = s.xy("invalid")
        if ok:
            ax.scatter([p[0] for p in ok], [p[1] for p in ok], color=color, marker=s.marker, s=28, zorder=3)
            statuses_seen.add("ok")
        if inv:
            ax.scatter([p[0] for p in inv], [p[1] for p in inv], facecolors="none", edgecolors=color,
                       marker=s.marker, s=34, linewidths=1.2, zorder=3)
            statuses_seen.add("invalid")
        failed = [p for p in s.points if p.status == "failed"]
        if failed:
            ax.scatter([p.x for p in failed], [0.02] * len(failed), transform=ax.get_xaxis_transform(), color="red",
                       marker="x", s=40, zorder=4, clip_on=False)
            statuses_seen.add("failed")
    for ref in figure.references:
        axes[ref.panel].plot(ref.line_x, ref.line_y, color=colors[ref.color_key], linestyle=ref.linestyle,
                             linewidth=1.2, label=ref.label)
    ax0 = axes[-1]
    ax0.set_xlabel(figure.x_label)
    if figure.x_log:
        ax0.set_xscale("log", base=2)
    if figure.x_ticks and any(s.kind == "points" for s in figure.series):
        lo, hi = min(figure.x_ticks), max(figure.x_ticks)  # failed rows (x on the axis) do not autoscale
        if figure.x_log:
            ax0.set_xlim(lo / 1.25, hi * 1.25)
        else:
            pad = 0.05 * (hi - lo) if hi > lo else 0.5
            ax0.set_xlim(lo - pad, hi + pad)
    if figure.x_ticks and len(figure.x_ticks) <= 16:
        ax0.xaxis.set_major_locator(FixedLocator(figure.x_ticks))
        ax0.xaxis.set_minor_locator(NullLocator())
        ax0.xaxis.set_major_formatter(ScalarFormatter())
    for i, (ax, label) in enumerate(zip(axes, figure.y_labels)):
        if "(%)" in label:  # utilization: the whole 0..100 scale, so 90 % does not look like 0
            top = max([100.0, *[max(s.line_y) for s in figure.series if s.panel == i and s.line_y]])
            ax.set_ylim(0, top * 1.04)
        elif figure.y_log:
            ax.set_yscale("log")
        elif any(s.kind == "points" for s in figure.series) or "(W)" in label:
            ax.set_ylim(bottom=0)
    proxies = []
    if "ok" in statuses_seen:
        proxies.append(Line2D([], [], color="0.3", marker="o", linestyle="", label="ok (filled)"))
    if "invalid" in statuses_seen:
        proxies.append(Line2D([], [], color="0.3", marker="o", markerfacecolor="none", linestyle="",
                              label="invalid (hollow)"))
    if "failed" in statuses_seen:
        proxies.append(Line2D([], [], color="red", marker="x", linestyle="", label="failed (no value)"))
    for i, ax in enumerate(axes):
        handles, labels = ax.get_legend_handles_labels()
        if i == 0:
            handles += proxies
            labels += [p.get_label() for p in proxies]
        if not handles:
            continue
        if len(axes) == 1 and max(len(lab) for lab in labels) > 30:  # long run labels: below, the plot keeps its width
            ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.14 if i == len(axes) - 1
                      else -0.02), borderaxespad=0, ncol=1)
        else:
            ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
                      handlelength=3)
    fig.suptitle(figure.title, fontsize=10)
    if figure.caption:
        wrapped = "\n".join(textwrap.fill(c, 110) for c in figure.caption)
        fig.text(0.0, 0.0, wrapped, fontsize=6.5, va="top", ha="left", color="0.25", transform=fig.transFigure)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for fmt in formats:
        path = out_dir / f"{figure.name}.{fmt}"
        fig.savefig(path, dpi=150, bbox_inches="tight")
        files.append(path)
    figure.files = files
    return files
