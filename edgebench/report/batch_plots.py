"""Throughput, latency (p50/p99) and energy per inference against batch size: one figure per
(model, backend, instances, mode, options, power mode), one series per precision (and run, when runs are compared).
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


def _vs_batch(runs: list[Run], prefix: str, metrics: list[tuple[str, str, str, str]], y_label: str,
              what: str, log_y: bool = False) -> list[FigureData]:
    """One figure per (model, backend, instances, mode, options); one series per precision (and run when
    several runs are compared) per metric. metrics: (column, label suffix, linestyle, marker)."""
    multi = len(runs) > 1
    figures = []
    for values, members in facets(runs, BATCH_FACET).items():
        fig = FigureData(facet_slug(prefix, BATCH_FACET, values), f"{what}: {facet_title(BATCH_FACET, values, members)}",
                         "batch (images per inference)", [y_label])
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
                s, empty = series_from_rows(label, rows, "batch", col)
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
    return _vs_batch(runs, "throughput_vs_batch", [("throughput_ips", "", "-", "o")], "throughput (images/s)",
                     "Throughput")


def latency_vs_batch(runs: list[Run]) -> list[FigureData]:
    return _vs_batch(runs, "latency_vs_batch", [("latency_ms_p50", "p50", "-", "o"), ("latency_ms_p99", "p99", "--", "^")],
                     "latency of one inference (ms)", "Latency p50 / p99", log_y=True)


def energy_vs_batch(runs: list[Run]) -> list[FigureData]:
    rows = [row for run in runs for row in run.rows]
    if not any(r.get("energy_per_inference_mj") is not None for r in rows):
        sources = sorted({r.get("energy_source") or "" for r in rows if r.get("energy_source")})
        why = "; ".join(sources) if sources else "no energy_source recorded"
        return [FigureData("energy_vs_batch", "Energy per inference", "batch (images per inference)",
                           ["energy per image (mJ)"],
                           absent_reason=f"no row has energy_per_inference_mj (energy_source: {why})")]
    figures = _vs_batch(runs, "energy_vs_batch", [("energy_per_inference_mj", "", "-", "o")], "energy per image (mJ)",
                        "Energy per inference")
    return [f for f in figures if f.absent_reason is None]
