"""Drawing a `FigureData` with matplotlib (imported lazily, Agg, no pyplot state) to PNG and PDF, the way every
paper figure is drawn (report.paper_style): at single-column (3.5 in) and double-column (7.16 in) width, text
>= 7 pt at that print size, the same colour for a precision in every figure, the title and notes in a caption
file beside the figure (not drawn into it), and one legend under the plot that names only what is drawn.

Ok rows of one x are drawn as their median with its interval as a bar (answer.intervals; the caption states the
bars' coverage, e.g. 75% at 3 repeats; one ok repeat: the point alone); invalid rows are hollow markers, failed
rows an x on the axis. A figure with `absent_reason` is refused: it has nothing to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.answer.intervals import METHOD
from edgebench.report.figure import FigureData, Series, coverage_words
from edgebench.report.paper_style import (
    PRECISION_COLORS,
    SINGLE_COLUMN_IN,
    WIDTHS,
    precision_color,
    save,
    style,
    write_caption,
)

FORMATS = ("png", "pdf")
# colours of what is not a precision (telemetry channels, runs, option sets): none of them a precision's colour
OTHER_COLORS = ("#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#8c6d31", "#843c39", "#7b4173", "#637939",
                "#3182bd")
# reference lines (timeline_plots' mean power, scaling_plots' linear scaling, load_plots' SLO): greys
REFERENCE_COLORS = {"mean": "#404040", "linear": "#606060", "slo": "#404040"}
PANEL_HEIGHT_IN = SINGLE_COLUMN_IN * 0.75  # one panel: the paper figures' aspect
MORE_PANEL_IN = 1.5  # each further panel (they share the x axis)
LEGEND_ROW_IN = 0.16  # one row of 7 pt legend text
INTERVAL_NOTE = "points: median of the ok repeats of a configuration; bars: the interval of that median"


def interval_note(figure: FigureData) -> str:
    """The caption line that says what the bars are and the coverage they really have (the least and the most of
    the bars drawn: 'coverage 75%' at 3 repeats each, 'coverage 50-75%' at 2 and 3)."""
    covs = coverage_words(c for s in figure.series for lo, c in zip(s.line_lo, s.line_coverage) if lo is not None)
    return f"{INTERVAL_NOTE}{', ' + covs if covs else ''} ({METHOD}); one ok repeat: the point alone"


def matplotlib_missing() -> str | None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        return f"matplotlib is not installed ({exc}); pip install 'edgebench[report]'"
    return None


def _colors(figure: FigureData) -> dict[str, str]:
    """A colour per series key: a precision's own colour (paper_style), a reference line's grey, else the next
    unused other colour."""
    out: dict[str, str] = {}
    others = 0
    for s in [*figure.series, *figure.references]:
        if s.color_key in out:
            continue
        if s.color_key in PRECISION_COLORS:
            out[s.color_key] = precision_color(s.color_key)
        elif s.color_key in REFERENCE_COLORS:
            out[s.color_key] = REFERENCE_COLORS[s.color_key]
        else:
            out[s.color_key] = OTHER_COLORS[others % len(OTHER_COLORS)]
            others += 1
    return out


def series_drawn(s: Series) -> bool:
    """A series draws something: a line, a point with a value, or a failed row's x."""
    return bool(s.line_x) or any(p.y is not None or p.status == "failed" for p in s.points)


def has_intervals(figure: FigureData) -> bool:
    return any(lo is not None for s in figure.series for lo in s.line_lo)


def _draw_points(ax: Any, s: Series, color: str) -> set[str]:
    """Medians with interval bars joined by a line, invalid rows hollow, failed rows an x; the statuses drawn."""
    seen = set()
    if s.line_x:
        lo = [(m - v) if v is not None else 0.0 for m, v in zip(s.line_y, s.line_lo or [None] * len(s.line_y))]
        hi = [(v - m) if v is not None else 0.0 for m, v in zip(s.line_y, s.line_hi or [None] * len(s.line_y))]
        ax.errorbar(s.line_x, s.line_y, yerr=[lo, hi], color=color, linestyle=s.linestyle, marker=s.marker,
                    markersize=3.5, linewidth=1.0, elinewidth=0.8, capsize=2, zorder=3)
        seen.add("ok")
    inv = s.xy("invalid")
    if inv:
        ax.scatter([p[0] for p in inv], [p[1] for p in inv], facecolors="none", edgecolors=color, marker=s.marker,
                   s=16, linewidths=0.9, zorder=3)
        seen.add("invalid")
    failed = [p for p in s.points if p.status == "failed"]
    if failed:
        ax.scatter([p.x for p in failed], [0.02] * len(failed), transform=ax.get_xaxis_transform(), color="red",
                   marker="x", s=20, linewidths=0.9, zorder=4, clip_on=False)
        seen.add("failed")
    return seen


def _x_axis(ax: Any, figure: FigureData) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.set_xlabel(figure.x_label)
    if figure.x_log:
        ax.set_xscale("log", base=2)
    if figure.x_ticks and any(s.kind == "points" for s in figure.series):
        lo, hi = min(figure.x_ticks), max(figure.x_ticks)  # failed rows (x on the axis) do not autoscale
        if figure.x_log:
            ax.set_xlim(lo / 1.25, hi * 1.25)
        else:
            pad = 0.05 * (hi - lo) if hi > lo else 0.5
            ax.set_xlim(lo - pad, hi + pad)
    if figure.x_ticks and len(figure.x_ticks) <= 16:
        ax.xaxis.set_major_locator(FixedLocator(figure.x_ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(ScalarFormatter())


def _y_axes(axes: list[Any], figure: FigureData) -> None:
    for i, (ax, label) in enumerate(zip(axes, figure.y_labels)):
        if "(%)" in label:  # utilization: the whole 0..100 scale, so 90 % does not look like 0
            top = max([100.0, *[max(s.line_y) for s in figure.series if s.panel == i and s.line_y]])
            ax.set_ylim(0, top * 1.04)
        elif figure.y_log:
            ax.set_yscale("log")
        elif any(s.kind == "points" for s in figure.series) or "(W)" in label:
            ax.set_ylim(bottom=0)


def _status_proxies(statuses: set[str]) -> list[Any]:
    """Legend entries for how non-ok rows look, only for statuses this figure draws (ok needs none)."""
    from matplotlib.lines import Line2D

    proxies = []
    if "invalid" in statuses:
        proxies.append(Line2D([], [], color="0.3", marker="o", markerfacecolor="none", linestyle="",
                              label="invalid row (hollow)"))
    if "failed" in statuses:
        proxies.append(Line2D([], [], color="red", marker="x", linestyle="", label="failed row (no value)"))
    return proxies


def _draw(figure: FigureData, width: str) -> Any:
    """The matplotlib Figure of one FigureData at one column width (call inside paper_style.style())."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    panels = len(figure.y_labels)
    height = PANEL_HEIGHT_IN + MORE_PANEL_IN * (panels - 1)
    fig = Figure(figsize=(WIDTHS[width], height), layout="constrained")
    FigureCanvasAgg(fig)  # Agg, without pyplot's global state
    axes = list(fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0])
    colors = _colors(figure)
    handles: list[Any] = []
    for ax, label in zip(axes, figure.y_labels):
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    for x0, x1, label in figure.spans:
        for ax in axes:
            ax.axvspan(x0, x1, color="tab:green", alpha=0.15, linewidth=0)
        if label not in [h.get_label() for h in handles]:
            handles.append(_span_proxy(label))
    for x, label in figure.vlines:
        for i, ax in enumerate(axes):
            ax.axvline(x, color="0.4", linestyle="--", linewidth=0.8)
            if i == 0:
                ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                            fontsize=7, color="0.3", bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8,
                                                           "pad": 0.5})
    statuses: set[str] = set()
    for s in figure.series:
        ax, color = axes[s.panel], colors[s.color_key]
        linestyle: Any = s.linestyle
        if s.kind == "trace":
            ax.plot(s.line_x, s.line_y, color=color, linestyle=linestyle, linewidth=1.2 if "total" in s.label else 0.8)
            handles.append(Line2D([], [], color=color, linestyle=linestyle, label=s.label))
            continue
        statuses |= _draw_points(ax, s, color)
        if series_drawn(s):  # one legend entry per series that draws something, as it is drawn
            if s.line_x:  # medians joined by a line
                handles.append(Line2D([], [], color=color, linestyle=linestyle, marker=s.marker, markersize=3.5,
                                      label=s.label))
            else:  # invalid (hollow) or failed rows only
                handles.append(Line2D([], [], color=color, linestyle="", marker=s.marker, markersize=3.5,
                                      markerfacecolor="none", label=s.label))
    for ref in figure.references:
        ref_style: Any = ref.linestyle
        axes[ref.panel].plot(ref.line_x, ref.line_y, color=colors[ref.color_key], linestyle=ref_style, linewidth=1.0)
        handles.append(Line2D([], [], color=colors[ref.color_key], linestyle=ref_style, label=ref.label))
    _x_axis(axes[-1], figure)
    _y_axes(axes, figure)
    handles += _status_proxies(statuses)
    if handles:
        longest = max(len(h.get_label()) for h in handles)
        per_row = max(1, int((WIDTHS[width] - 0.2) * 72 / 7 / 0.55 / (longest + 4)))  # 7 pt text ~ 0.55 em/char
        ncol = min(len(handles), per_row)
        rows = -(-len(handles) // ncol)
        fig.set_size_inches(WIDTHS[width], height + LEGEND_ROW_IN * rows + 0.05)
        fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False, handlelength=2.2,
                   columnspacing=1.0)
    return fig


def _span_proxy(label: str) -> Any:
    from matplotlib.patches import Patch

    return Patch(color="tab:green", alpha=0.15, label=label)


def render(figure: FigureData, out_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Draw one figure to out_dir/<name>_single.<fmt> and <name>_double.<fmt>, its title and notes to
    <name>.caption.txt/.tex; returns the image files (figure.files keeps them and the captions)."""
    if figure.absent_reason is not None:
        raise ValueError(f"figure {figure.name} has no data: {figure.absent_reason}")
    if has_intervals(figure) and not any(line.startswith(INTERVAL_NOTE) for line in figure.caption):
        figure.caption.append(interval_note(figure))
    files: list[Path] = []
    for width in WIDTHS:
        with style():
            files += save(_draw(figure, width), out_dir, f"{figure.name}_{width}", formats)
    captions = write_caption(out_dir, figure.name, figure.title, figure.caption)
    figure.files = files + captions  # the summary links the captions with the figure
    return files
