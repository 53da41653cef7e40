"""The per-layer page of a report: for every row with rows/<i>/layers.csv (trt option layer_profile), a
horizontal bar figure of its top layers (mean ms per inference, coloured by GPU/DLA, share in the label) and
a table, written to <report>/layers.md with the figures under <report>/figures/layers_<row>.<fmt> (double-column
width, the title in layers_<row>.caption.txt/.tex)."""

from __future__ import annotations

from pathlib import Path

from edgebench.report.paper_style import DOUBLE_COLUMN_IN, save, style, write_caption
from edgebench.results.confine import inside
from edgebench.results.layer_profile import LayerRow, read_layers_csv, top_layers

TOP_N = 15
DEVICE_COLOURS = {"GPU": "#4c72b0", "DLA": "#dd8452"}


def short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def draw_top_layers(rows: list[LayerRow], out_base: Path, title: str, formats: tuple[str, ...] = ("png",),
                    top: int = TOP_N) -> list[Path]:
    """The figure of the `top` slowest layers at double-column width (7.16 in: layer names need it; text >= 7 pt),
    its title in <name>.caption.txt/.tex beside it (report.paper_style); the image files written."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    chosen = top_layers(rows, top)[::-1]  # slowest at the top of the chart
    with style():
        fig = Figure(figsize=(DOUBLE_COLUMN_IN, 0.16 * len(chosen) + 0.8), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.barh(range(len(chosen)), [r.time_ms for r in chosen],
                color=[DEVICE_COLOURS.get(r.device, "#888888") for r in chosen])
        ax.set_yticks(range(len(chosen)))
        ax.set_yticklabels([f"{short(r.layer)} ({r.share_pct:.1f}%)" for r in chosen])
        ax.set_xlabel("time per inference (ms)")
        devices = [d for d in DEVICE_COLOURS if any(r.device == d for r in chosen)]
        ax.legend(handles=[Patch(color=DEVICE_COLOURS[d], label=d) for d in devices], loc="lower right",
                  frameon=False)
        files = save(fig, out_base.parent, out_base.name, formats)
    write_caption(out_base.parent, out_base.name, title,
                  ["mean time per inference of each layer (TensorRT IProfiler, outside the measured window); "
                   "share of the sum of layer times in brackets; colour: the engine's device (GPU or DLA)"])
    return files


def write_layer_page(run_dirs: list[Path], out_dir: Path, formats: tuple[str, ...] = ("png",),
                     top: int = TOP_N) -> Path | None:
    """<out_dir>/layers.md for every layers.csv under the runs' rows/; None when no row has one."""
    found = [(run, csv) for run in run_dirs for csv in sorted((run / "rows").glob("*/layers.csv"))
             if inside(run, csv)]  # never through a link out of the run folder
    if not found:
        return None
    lines = ["# Per-layer time (TensorRT IProfiler, outside the measured window)", ""]
    for run, csv_path in found:
        rows = read_layers_csv(csv_path)
        row_name = csv_path.parent.name
        for engine in dict.fromkeys(r.engine for r in rows):
            mine = [r for r in rows if r.engine == engine]
            title = f"{run.name} / row {row_name} / engine {engine}: top {min(top, len(mine))} of {len(mine)} layers"
            base = out_dir / "figures" / f"layers_{run.name}_{row_name}_{engine}"
            files = draw_top_layers(mine, base, title, formats, top)
            total = sum(r.time_ms for r in mine)
            dla = sum(r.share_pct for r in mine if r.device == "DLA")
            lines += [f"## {title}", "",
                      f"Sum of layer times {total:.3f} ms per inference; on DLA {dla:.1f}%. "
                      f"Source: {csv_path.relative_to(run).as_posix()} of {run}.", "",
                      f"![top layers]({files[0].relative_to(out_dir).as_posix()})", "",
                      "| layer | type | device | ms | share % |", "| --- | --- | --- | ---: | ---: |"]
            lines += [f"| {short(r.layer, 90).replace('|', '/')} | {r.type} | {r.device} | {r.time_ms:.4f} | "
                      f"{r.share_pct:.2f} |" for r in top_layers(mine, top)]
            lines.append("")
    page = out_dir / "layers.md"
    out_dir.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines))
    return page
