"""Latency vs load: p50 and p99 latency of fixed-rate / slo-search rows against the number of streams.

One figure per (model, backend, precision, batch, mode, gpu_sharing, rate per stream). Latency there counts
queueing (end - scheduled arrival), so the p99 curve bends up where the device runs out of capacity; the
SLO of slo-search rows is a dashed horizontal line, and the caption lists offered vs achieved rate per
stream count. Closed-loop rows are not load curves and are left out.

Where one configuration ran under several option sets or GPU sharing modes (eager / cuda_graph, time-slicing /
mps), one more figure puts their p99 curves side by side (latency_vs_load_compared).
"""

from __future__ import annotations

from collections import defaultdict

from edgebench.report.figure import (
    FigureData,
    Series,
    count_caption,
    facet_slug,
    facets,
    series_from_rows,
    set_x_axis,
)
from edgebench.results.runs import Run

LOAD_FACET = ("model", "backend", "precision", "batch", "mode", "gpu_sharing", "rate_per_stream_hz", "options")
OPEN_LOOP = ("fixed-rate", "slo-search")
VARIANT = ("options", "gpu_sharing")  # what the side-by-side figure compares
COMPARE_FACET = tuple(k for k in LOAD_FACET if k not in VARIANT)


def latency_vs_load(runs: list[Run]) -> list[FigureData]:
    return [*_per_variant(runs), *latency_vs_load_compared(runs)]


def variant_label(row: dict[str, str]) -> str:
    return f"{row.get('options') or 'default options'}, {row.get('gpu_sharing') or 'time-slicing'}"


def latency_vs_load_compared(runs: list[Run]) -> list[FigureData]:
    """p99 vs streams, one series per option set x GPU sharing mode, for configurations that ran under two or more."""
    figures = []
    for values, members in facets(runs, COMPARE_FACET).items():
        rows = [row for _r, row in members if row.get("scenario") in OPEN_LOOP]
        by_variant: dict[str, list[dict[str, str]]] = defaultdict(list)
        for row in rows:
            by_variant[variant_label(row)].append(row)
        if len(by_variant) < 2:
            continue
        keys = dict(zip(COMPARE_FACET, values))
        rate = float(keys["rate_per_stream_hz"])
        fig = FigureData(facet_slug("latency_vs_load_compared", COMPARE_FACET, values),
                         f"p99 vs load, side by side: {keys['model']} {keys['backend']} {keys['precision']} "
                         f"b{keys['batch']}, streams of {rate:g}/s", f"streams (each {rate:g} arrivals/s)",
                         ["p99 latency incl. queueing (ms)"])
        fig.counts, fig.caption = count_caption([(r, row) for r, row in members if row.get("scenario") in OPEN_LOOP])
        for label in sorted(by_variant):
            s, _empty = series_from_rows(label, by_variant[label], "instances", "latency_ms_p99")
            if s.points:
                s.color_key = label
                fig.series.append(s)
        xs = {p.x for s in fig.series for p in s.points}
        slos = _slo_lines(fig, rows, xs)
        if not fig.series:
            fig.absent_reason = "no p99 in any open-loop row of these option sets / sharing modes"
        ys = [p.y for s in fig.series for p in s.points if p.y is not None and p.y > 0] + slos
        fig.y_log = bool(ys and max(ys) / min(ys) > 20)
        set_x_axis(fig, xs)
        figures.append(fig)
    return figures


def _per_variant(runs: list[Run]) -> list[FigureData]:
    figures = []
    for values, members in facets(runs, LOAD_FACET).items():
        members = [(r, row) for r, row in members if row.get("scenario") in OPEN_LOOP]
        if not members:
            continue
        rate = values[LOAD_FACET.index("rate_per_stream_hz")]
        keys = dict(zip(LOAD_FACET, values))
        title = (f"Latency vs load: {keys['model']} {keys['backend']} {keys['precision']} b{keys['batch']}, "
                 f"streams of {float(rate):g}/s" + (f", {keys['gpu_sharing']}" if keys["gpu_sharing"] else ""))
        fig = FigureData(facet_slug("latency_vs_load", LOAD_FACET, values), title,
                         f"streams (each {float(rate):g} arrivals/s)", ["latency incl. queueing (ms)"])
        fig.counts, fig.caption = count_caption(members)
        rows = [row for _r, row in members]
        for col, label, style, marker in (("latency_ms_p50", "p50", "-", "o"), ("latency_ms_p99", "p99", "--", "^")):
            s, _empty = series_from_rows(label, rows, "instances", col)
            if s.points:  # the precision's colour as in every figure; p50 and p99 differ by line and marker
                s.color_key, s.linestyle, s.marker = str(keys["precision"]), style, marker
                fig.series.append(s)
        xs = {p.x for s in fig.series for p in s.points}
        slos = _slo_lines(fig, rows, xs)
        rates: dict[float, list[str]] = defaultdict(list)
        for row in sorted(rows, key=lambda r: r.get("instances") or 0):
            n, offered, achieved = row.get("instances"), row.get("offered_rate_hz"), row.get("achieved_rate_hz")
            if n is not None and offered is not None and achieved is not None:
                met = {True: ", SLO met", False: ", SLO missed"}.get(bool(row["slo_met"]), "") \
                    if row.get("slo_met") is not None else ""
                rates[n].append(f"{n:g}: {achieved:.4g}/{offered:.4g}{met}")
        if rates:
            fig.caption.append("streams: achieved/offered inferences per second: "
                               + "; ".join(t for n in sorted(rates) for t in rates[n]))
        if not fig.series:
            fig.absent_reason = "no latency value in any fixed-rate row of this facet"
        ys = [p.y for s in fig.series for p in s.points if p.y is not None and p.y > 0] + slos
        fig.y_log = bool(ys and max(ys) / min(ys) > 20)
        set_x_axis(fig, xs)
        figures.append(fig)
    return figures


def _slo_lines(fig: FigureData, rows: list[dict], xs: set) -> list[float]:
    """A dotted reference line per SLO the rows were judged against, across the figure's x range; the SLOs."""
    slos = sorted({v for row in rows if (v := row.get("slo_ms")) is not None})
    for slo in slos:
        ref = Series(f"SLO p99 <= {slo:g} ms", color_key="slo", linestyle=":", marker="")
        ref.line_x, ref.line_y = sorted(xs), [slo] * len(xs)
        fig.references.append(ref)
    return slos
