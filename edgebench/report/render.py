"""Drawing a `FigureData` with matplotlib (imported lazily, Agg, no pyplot state) to PNG and PDF.

The same precision has the same colour in every figure; ok points are filled, invalid hollow, failed an x
on the axis. A figure with `absent_reason` is refused: it has nothing to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.report.figure import FigureData
from edgebench.report.paper_style import write_caption
from edgebench.report.table_format import PRECISION_ORDER

FORMATS = ("png", "pdf")


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


def series_drawn(s: Any) -> bool:
    """A series draws something: a line, a point with a value, or a failed row's x."""
    return bool(s.line_x) or any(p.y is not None or p.status == "failed" for p in s.points)


def render(figure: FigureData, out_dir: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Draw one figure to out_dir/<name>.<fmt>, its title and notes to <name>.caption.txt/.tex; returns the image
    files (figure.files keeps them and the captions)."""
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
        # one legend entry per series that draws something: its colour, line style and marker
        if series_drawn(s):
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
    # the title and the notes are a caption's job: <name>.caption.txt/.tex beside the figure, not drawn into it
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for fmt in formats:
        path = out_dir / f"{figure.name}.{fmt}"
        fig.savefig(path, dpi=150, bbox_inches="tight")
        files.append(path)
    captions = write_caption(out_dir, figure.name, figure.title, figure.caption)
    figure.files = files + captions  # the summary links the captions with the figure
    return files
