"""The Pareto front rendered: its table (CSV, Markdown, LaTeX) and its figure. The front itself (which
configurations are on it, and whether their repeats settle that) is decided in answer.pareto."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.answer.intervals import METHOD, Interval
from edgebench.answer.pareto import ENERGY, THROUGHPUT, ParetoFront, ParetoPoint, percentile_name  # noqa: F401
from edgebench.report.figure import coverage_words, slug
from edgebench.report.paper_style import new_figure, precision_color, save, style, write_caption
from edgebench.report.repeats_table import CELL_NOTE, interval_cell
from edgebench.report.table_format import Col, Table, precision_rank


def front_slug(front: ParetoFront) -> str:
    return slug("pareto", front.model, front.setup)


# ------------------------------------------------------------------------------------ table


def front_title(fronts: list[ParetoFront]) -> str:
    """What the fronts with members are drawn over: energy where measured, latency where every point has one."""
    drawn = [f for f in fronts if f.members()] or fronts
    energy = {f.has_energy for f in drawn}
    if energy == {False}:
        return "Pareto front: throughput vs latency"
    if energy == {True, False}:
        return "Pareto front: throughput vs energy per inference (where measured) vs latency"
    return "Pareto front: throughput vs energy per inference vs latency"


def pareto_table(fronts: list[ParetoFront], name: str = "pareto") -> Table:
    cols = [Col("model", "Model"), Col("setup", "Setup"), Col("configuration", "Configuration"),
            Col("throughput_ips", "Throughput (samples/s)", True), Col("throughput_ci", "interval (coverage)"),
            Col("energy_per_inference_mj", "Energy (mJ/sample)", True), Col("energy_ci", "interval (coverage)"),
            Col("latency_column", "Latency pct."), Col("latency_ms", "Latency (ms/batch)", True),
            Col("latency_ci", "interval (coverage)"), Col("repeats", "n", True), Col("power_scope", "power scope", csv_only=True),
            Col("front_over", "front over", csv_only=True),
            Col("invalid_repeats", "repeats not pooled (invalid, or ok without an objective)")]
    records = []
    for f in fronts:
        over = ", ".join(f"{col} {'up' if up else 'down'}" for col, up in f.objectives)
        for p in f.members():
            lat, energy = p.latency, p.energy
            records.append({
                "model": f.model, "setup": f.setup, "configuration": p.candidate.label(),
                "throughput_ips": p.throughput.median, "throughput_ci": _ci(p.throughput),
                "energy_per_inference_mj": None if energy is None else energy.median,
                "energy_ci": "" if energy is None else _ci(energy),
                "latency_column": percentile_name(f.latency_column),
                "latency_ms": None if lat is None else lat.median, "latency_ci": "" if lat is None else _ci(lat),
                "repeats": p.throughput.n, "power_scope": p.candidate.power_scope(), "front_over": over,
                "invalid_repeats": p.candidate.invalid_text([col for col, _up in f.objectives])})
    notes = ["the Pareto front per model: no other configuration is at least as good in every objective and better "
             "in one (medians over repeats): throughput up, energy per inference down where power was measured, "
             f"latency down where every configuration has a percentile; interval: {METHOD}", CELL_NOTE,
             "energy is per sample (per image); latency per inference (per batch)"]
    if any(f.members() and not f.has_energy for f in fronts):
        notes.append("energy cells are empty where no power was measured (no power sampler: see each row's "
                     "energy_source); those fronts are over throughput and latency")
    notes += sorted({n for f in fronts for n in f.notes})
    return Table(name, front_title(fronts), cols, records, notes)


def _ci(iv: Interval) -> str:
    return "n=1" if iv.median is not None and iv.lo is None else interval_cell(iv)


# ------------------------------------------------------------------------------------ figure


def _err(iv: Interval | None) -> tuple[float, float]:
    if iv is None or iv.median is None or iv.lo is None or iv.hi is None:
        return (0.0, 0.0)
    return (iv.median - iv.lo, iv.hi - iv.median)


def _median(iv: Interval | None) -> float | None:
    return None if iv is None else iv.median


def draw_front(front: ParetoFront, out_dir: Path, formats: tuple[str, ...] = ("png", "pdf"),
               width: str = "single") -> tuple[list[Path], list[str]]:
    """Throughput (x) vs energy per inference (y): one colour per precision, marker size by latency, the front
    joined by a line, dominated points faded, intervals as bars (the caption states their coverage). With no power
    measured, y is the latency percentile the front is over (marker size constant). (files, caption lines)."""
    from matplotlib.lines import Line2D

    if not front.objectives:
        raise ValueError(f"{front_slug(front)}: no front to draw ({'; '.join(front.notes) or 'no objectives'})")
    energy = front.has_energy

    def y_of(p: ParetoPoint) -> Interval | None:
        return p.energy if energy else p.latency

    stem = f"{front_slug(front)}_{width}"
    with style():
        fig, ax = new_figure(width)
        lats = [p.latency.median for p in front.points if p.latency is not None and p.latency.median is not None]
        lo, hi = (min(lats), max(lats)) if lats else (0.0, 0.0)

        def size(p: ParetoPoint) -> float:
            if not energy or p.latency is None or p.latency.median is None or hi == lo:
                return 28.0
            return 12.0 + 60.0 * (p.latency.median - lo) / (hi - lo)

        precisions = []
        for p in front.points:
            prec = str(p.candidate.identity.get("precision") or "")
            if prec not in precisions:
                precisions.append(prec)
            color = precision_color(prec)
            alpha = 1.0 if p.on_front else 0.3
            x_err, y_err = _err(p.throughput), _err(y_of(p))
            ax.errorbar([p.throughput.median], [_median(y_of(p))], xerr=[[x_err[0]], [x_err[1]]],
                        yerr=[[y_err[0]], [y_err[1]]], fmt="none", ecolor=color, alpha=alpha,
                        elinewidth=0.8, capsize=1.5, zorder=2)
            ax.scatter([p.throughput.median], [_median(y_of(p))], s=size(p), color=color, alpha=alpha,
                       edgecolors="black" if p.on_front else "none", linewidths=0.6, zorder=3)
        members = sorted(front.members(), key=lambda p: p.throughput.median or 0.0)
        ax.plot([p.throughput.median for p in members], [_median(y_of(p)) for p in members], color="black",
                linewidth=0.8, linestyle="--", zorder=1)
        ax.set_xlabel("throughput (samples/s)")
        ax.set_ylabel("energy per inference (mJ/sample)" if energy
                      else f"{percentile_name(front.latency_column)} latency (ms/batch)")
        ys = [y for y in (_median(y_of(p)) for p in front.points) if y]
        if ys and min(ys) > 0 and max(ys) / min(ys) >= 8:
            ax.set_yscale("log")  # the frugal (quick) end, where the front is, keeps its resolution
        ax.grid(True, alpha=0.3)
        handles = [Line2D([], [], marker="o", linestyle="", color=precision_color(prec), label=prec)
                   for prec in sorted(precisions, key=_prec_key)]
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8, label="front"))
        ax.legend(handles=handles, loc="upper right" if energy else "best", frameon=False, handletextpad=0.2,
                  borderaxespad=0.2)
        files = save(fig, out_dir, stem, formats)
    pct = percentile_name(front.latency_column)
    covs = coverage_words(iv.coverage for p in front.points for iv in (p.throughput, y_of(p))
                          if iv is not None and iv.lo is not None)
    if not energy:
        lat_words = f"no power measured: y is {pct} latency per batch (lower is better); marker size constant"
    elif front.latency_column:
        lat_words = f"marker size grows with {pct} latency ({lo:.3g} to {hi:.3g} ms per batch)"
    else:
        lat_words = "latency not measured in every configuration: marker size constant"
    caption = [f"{sum(p.on_front for p in front.points)} of {len(front.points)} configurations on the front "
               "(outlined, joined by the dashed line); dominated ones faded",
               f"colour = precision; {lat_words}",
               f"bars: interval of the median over repeats{', ' + covs if covs else ''} ({METHOD})"]
    if energy:
        caption.append("energy per sample (per image), power in each row's power_scope: "
                       + ", ".join(sorted({p.candidate.power_scope() for p in front.points})))
    caption += front.notes
    y_words = "energy per inference" if energy else f"{pct} latency (no power measured)"
    title = f"Pareto front of {front.model} on {front.setup}: throughput vs {y_words}"
    write_caption(out_dir, stem, title, caption)
    return files, [title, *caption]


def _prec_key(prec: str) -> Any:
    return precision_rank(prec)
