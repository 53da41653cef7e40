"""Throughput against the number of concurrent instances, with the linear-scaling line from the fewest."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from edgebench.report.figure import (
    FigureData,
    Series,
    count_caption,
    facet_slug,
    facet_title,
    facets,
    series_from_rows,
    set_x_axis,
)
from edgebench.results.runs import Run

SCALING_FACET = ("model", "backend", "precision", "batch", "mode", "options", "power_mode")
RUN_MARKERS = "os^Dvp*"
RUN_STYLES = ("-", "--")


def throughput_vs_instances(runs: list[Run]) -> list[FigureData]:
    """Per (model, backend, precision, batch, mode, options) measured at >= 2 instance counts; a dashed
    linear-scaling line from the median ok throughput at the fewest instances, per run."""
    figures = []
    for values, members in facets(runs, SCALING_FACET).items():
        counts = {row.get("instances") for _r, row in members if row.get("status") != "skipped"}
        counts.discard(None)
        if len(counts) < 2:
            continue
        fig = FigureData(facet_slug("throughput_vs_instances", SCALING_FACET, values),
                         f"Scaling: {facet_title(SCALING_FACET, values, [])}", "concurrent instances",
                         ["throughput (samples/s)"])
        fig.counts, fig.caption = count_caption(members)
        by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for run, row in members:
            by_run[run.label].append(row)
        precision = str(dict(zip(SCALING_FACET, values)).get("precision") or "")
        for i, (label, rows) in enumerate(by_run.items()):
            s, _empty = series_from_rows(label if len(runs) > 1 else f"{precision} measured", rows, "instances",
                                         "throughput_ips")
            # the precision's colour as in every figure; runs differ by marker and line style
            s.color_key, s.marker, s.linestyle = precision, RUN_MARKERS[i % len(RUN_MARKERS)], RUN_STYLES[i % 2]
            fig.series.append(s)
            if s.line_x:
                n0, t0 = s.line_x[0], s.line_y[0]
                ref = Series(f"linear scaling from {n0:g} inst." + (f" ({label})" if len(runs) > 1 else ""),
                             color_key="linear", linestyle=(":", "-.")[i % 2], marker="")  # grey, per run
                ref.line_x = sorted(x for x in counts if x is not None and x >= n0)
                ref.line_y = [t0 * x / n0 for x in ref.line_x]
                fig.references.append(ref)
        set_x_axis(fig, {c for c in counts if c is not None})
        fig.x_log = False
        figures.append(fig)
    return figures
