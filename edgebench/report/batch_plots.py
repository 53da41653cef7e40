"""Throughput, latency (p50/p99) and energy per inference against batch size: one figure per
(model, backend, instances, mode, options, power mode), one series per precision (and run, when runs are compared).

Figures fit the axes the run has: when every row ran at one batch (the host profile sweeps models, precisions
and instances at batch 1), no vs-batch figure of one point per line is drawn; latency and energy are drawn
against the instance count instead (throughput vs instances is scaling_plots'), and one line says why. A facet
that has a single batch while others have several is not drawn either, with the same reason.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from edgebench.report.figure import (
    FigureData,
    count_caption,
    facet_slug,
    facet_title,
    facets,
    series_from_rows,
    set_x_axis,
)
from edgebench.report.table_format import precision_rank
from edgebench.results.runs import Run

BATCH_FACET = ("model", "backend", "instances", "mode", "options", "power_mode")  # power_mode: Jetson nvpmodel
INSTANCES_FACET = ("model", "backend", "batch", "mode", "options", "power_mode")
X_AXES = {"batch": ("batch (samples per inference)", BATCH_FACET), "instances": ("concurrent instances", INSTANCES_FACET)}


def measured_values(runs: list[Run], col: str) -> set[float]:
    return {v for run in runs for row in run.rows if row.get("status") != "skipped" and (v := row.get(col)) is not None}


def x_axis(runs: list[Run]) -> str | None:
    """'batch' when the rows span two or more batches, else 'instances' when they span two or more instance
    counts, else None (one point per configuration: the tables say it better than a figure)."""
    if len(measured_values(runs, "batch")) >= 2:
        return "batch"
    if len(measured_values(runs, "instances")) >= 2:
        return "instances"
    return None


def one_batch_note(runs: list[Run], what: str, prefix: str) -> FigureData:
    batches = sorted(measured_values(runs, "batch"))
    alt = x_axis(runs)
    instead = ("drawn against concurrent instances instead" if alt == "instances" and what != "Throughput" else
               "see throughput vs instances" if alt == "instances" else "see the results and repeats tables")
    return FigureData(prefix, f"{what} vs batch", "batch (samples per inference)", [""],
                      absent_reason=f"every row ran at batch {', '.join(f'{b:g}' for b in batches) or '?'}: a vs-batch "
                                    f"figure would have one point per line ({instead}; sweep.batches with 2+ values "
                                    "draws it)")


def _vs_batch(runs: list[Run], prefix: str, metrics: list[tuple[str, str, str, str]], y_label: str,
              what: str, log_y: bool = False, x_col: str = "batch") -> list[FigureData]:
    """One figure per (model, backend, instances, mode, options) (x_col batch) or per (model, backend, batch,
    mode, options) (x_col instances); one series per precision (and run when several runs are compared) per
    metric. metrics: (column, label suffix, linestyle, marker). A facet with one x value is not drawn."""
    multi = len(runs) > 1
    figures = []
    x_label, facet_keys = X_AXES[x_col]
    for values, members in facets(runs, facet_keys).items():
        fig = FigureData(facet_slug(prefix, facet_keys, values), f"{what}: {facet_title(facet_keys, values, members)}",
                         x_label, [y_label])
        fig.counts, fig.caption = count_caption(members)
        by_series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
        for run, row in members:
            by_series[(run.label if multi else "", row.get("precision") or "")].append(row)
        markers = "os^Dvp*"
        run_marker = {r.label: markers[i % len(markers)] for i, r in enumerate(runs)}
        run_style = {r.label: ("-", "--", "-.", ":")[i % 4] for i, r in enumerate(runs)}
        xs: set[float] = set()
        empties: dict[str, int] = defaultdict(int)
        for (run_label, precision), rows in sorted(by_series.items(), key=lambda kv: (kv[0][0], precision_rank(kv[0][1]))):
            for col, suffix, style, marker in metrics:
                label = " ".join(p for p in (precision, suffix, f"({run_label})" if run_label else "") if p)
                s, empty = series_from_rows(label, rows, x_col, col)
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
        elif len(xs) < 2:
            fig.absent_reason = (f"{fig.title}: one {x_col} value ({', '.join(f'{x:g}' for x in sorted(xs))}) in this "
                                 "facet: one point per line, see the tables")
        ys = [p.y for s in fig.series for p in s.points if p.y is not None and p.y > 0]
        fig.y_log = bool(log_y and ys and max(ys) / min(ys) > 20)
        set_x_axis(fig, xs)
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
    if x_axis(runs) != "batch":  # throughput vs instances is scaling_plots' figure
        return [one_batch_note(runs, "Throughput", "throughput_vs_batch")]
    return _vs_batch(runs, "throughput_vs_batch", [("throughput_ips", "", "-", "o")], "throughput (samples/s)",
                     "Throughput")


LATENCY = [("latency_ms_p50", "p50", "-", "o"), ("latency_ms_p99", "p99", "--", "^")]


def latency_vs_batch(runs: list[Run]) -> list[FigureData]:
    axis = x_axis(runs)
    if axis is None:
        return [one_batch_note(runs, "Latency p50 / p99", "latency_vs_batch")]
    prefix = "latency_vs_batch" if axis == "batch" else "latency_vs_instances"
    figures = _vs_batch(runs, prefix, LATENCY, "latency of one inference (ms/batch)", "Latency p50 / p99", log_y=True,
                        x_col=axis)
    return figures if axis == "batch" else [one_batch_note(runs, "Latency p50 / p99", "latency_vs_batch"), *figures]


def energy_vs_batch(runs: list[Run]) -> list[FigureData]:
    rows = [row for run in runs for row in run.rows]
    if not any(r.get("energy_per_inference_mj") is not None for r in rows):
        sources = sorted({r.get("energy_source") or "" for r in rows if r.get("energy_source")})
        why = "; ".join(sources) if sources else "no energy_source recorded"
        return [FigureData("energy_vs_batch", "Energy per inference", "batch (samples per inference)",
                           ["energy per inference (mJ/sample)"],
                           absent_reason=f"no row has energy_per_inference_mj (energy_source: {why})")]
    axis = x_axis(runs)
    if axis is None:
        return [one_batch_note(runs, "Energy per inference", "energy_vs_batch")]
    figures = _vs_batch(runs, "energy_vs_batch" if axis == "batch" else "energy_vs_instances",
                        [("energy_per_inference_mj", "", "-", "o")], "energy per inference (mJ/sample)", "Energy per inference",
                        x_col=axis)
    return [f for f in figures if f.absent_reason is None]
