"""Figures for papers: the data behind each figure first (plain records a test can check), then drawing.

Each figure function returns `FigureData` records (report/figure.py): the x/y of every plotted point with
its row's status, the median line through the ok points, reference lines, shaded spans and a caption
counting what is not plotted. `render()` (report/render.py) draws one record with matplotlib to PNG and PDF.
A figure that cannot be drawn from the data carries `absent_reason` and is not rendered.

One figure kind per module: batch_plots (throughput / latency / energy vs batch), scaling_plots
(throughput vs instances), load_plots (latency vs load), slo_window_plots (latency over the window of an SLO
search's probes at N and N+1), timeline_plots (power timelines). This module
lists them in report order and keeps the names callers import from `edgebench.report.plots`.
"""

from __future__ import annotations

from edgebench.answer.comparability import run_differences
from edgebench.report.batch_plots import energy_vs_batch, latency_vs_batch, throughput_vs_batch
from edgebench.report.figure import FigureData, Point, Series, slug
from edgebench.report.load_plots import latency_vs_load
from edgebench.report.render import FORMATS, matplotlib_missing, render
from edgebench.report.scaling_plots import throughput_vs_instances
from edgebench.report.slo_window_plots import latency_over_window
from edgebench.report.timeline_plots import power_timeline, timeline_figures
from edgebench.results.runs import Run

__all__ = ["FORMATS", "FigureData", "Point", "Series", "all_figures", "energy_vs_batch", "latency_vs_batch",
           "latency_vs_load", "matplotlib_missing", "power_timeline", "render", "slug", "throughput_vs_batch",
           "throughput_vs_instances", "timeline_figures"]


def all_figures(runs: list[Run], max_timelines: int | None = None) -> list[FigureData]:
    figures = [*throughput_vs_batch(runs), *throughput_vs_instances(runs), *latency_vs_batch(runs),
               *energy_vs_batch(runs), *latency_vs_load(runs), *latency_over_window(runs),
               *timeline_figures(runs, max_timelines)]
    if len(runs) > 1:  # a figure that sets runs side by side says what else differs between them
        diffs = run_differences(runs)
        note = ("runs differ in: " + "; ".join(f"{d.fact} ({' vs '.join(d.values)})" for d in diffs)
                if diffs else "the runs record the same setup")
        for fig in figures:
            if not fig.name.startswith("power_timeline"):
                fig.caption.append(note)
    return figures
