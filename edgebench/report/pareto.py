"""The Pareto front per model: throughput up, energy per inference down, tail latency down.

Every configuration (every axis the runs vary: precision, batch, instances, placement, options, power mode,
backend, load) is one point at the medians of its usable repeats (ok rows with throughput and energy; report.
candidates), with 95% bootstrap intervals. A point is on the front when no other point is at least as good in
all three and better in one (on the medians: an interval that straddles the front is visible as a bar in the
figure and as the interval in the table). Latency is the highest percentile every point has (p99 needs 662
inferences per row; a short window gives p90 only), named in the table and the caption; with none, the front
is over throughput and energy and says so. Only comparable runs share a front (report.candidates.setups).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.report.candidates import PERCENTILES, Candidate, LeftOut, candidates, setups
from edgebench.report.figure import slug
from edgebench.report.intervals import METHOD, Interval
from edgebench.report.paper_style import new_figure, precision_color, save, style, write_caption
from edgebench.report.table_format import Col, Table, fmt_num, precision_rank
from edgebench.results.runs import Run

THROUGHPUT = "throughput_ips"
ENERGY = "energy_per_inference_mj"


@dataclass
class ParetoPoint:
    candidate: Candidate
    throughput: Interval
    energy: Interval
    latency: Interval | None
    on_front: bool = False


@dataclass
class ParetoFront:
    model: str
    setup: str
    latency_column: str | None  # None: no latency percentile every point has
    points: list[ParetoPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def members(self) -> list[ParetoPoint]:
        return sorted((p for p in self.points if p.on_front), key=lambda p: -(p.throughput.median or 0.0))

    def slug(self) -> str:
        return slug("pareto", self.model, self.setup)


def _objectives(p: ParetoPoint) -> tuple[float, ...]:
    """Values to minimise: -throughput, energy, latency."""
    out = [-(p.throughput.median or 0.0), p.energy.median or 0.0]
    if p.latency is not None and p.latency.median is not None:
        out.append(p.latency.median)
    return tuple(out)


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def mark_front(points: list[ParetoPoint]) -> None:
    values = [_objectives(p) for p in points]
    for i, p in enumerate(points):
        p.on_front = not any(dominates(values[j], values[i]) for j in range(len(points)) if j != i)


def latency_column(cands: list[Candidate]) -> str | None:
    for pct in PERCENTILES:
        col = f"latency_ms_{pct}"
        if cands and all(c.values(col) for c in cands):
            return col
    return None


def pareto_fronts(runs: list[Run], left_out: LeftOut | None = None) -> list[ParetoFront]:
    left_out = left_out if left_out is not None else LeftOut()
    fronts = []
    groups, splits = setups(runs)
    for setup in groups:
        cands = candidates(setup.runs, setup.label, (THROUGHPUT, ENERGY), left_out)
        for model in sorted({c.model for c in cands}):
            mine = [c for c in cands if c.model == model]
            lat = latency_column(mine)
            front = ParetoFront(model, setup.label, lat, notes=list(splits))
            if lat is None:
                front.notes.append("no latency percentile is measured in every configuration: the front is over "
                                   "throughput and energy only")
            elif lat != "latency_ms_p99":
                front.notes.append(f"latency is {lat}: not every configuration has a p99 (662 inferences needed)")
            front.points = [ParetoPoint(c, c.interval(THROUGHPUT), c.interval(ENERGY),
                                        c.interval(lat) if lat else None) for c in mine]
            mark_front(front.points)
            fronts.append(front)
    return fronts


# ------------------------------------------------------------------------------------ table


def pareto_table(fronts: list[ParetoFront], name: str = "pareto") -> Table:
    cols = [Col("model", "Model"), Col("setup", "Setup"), Col("configuration", "Configuration"),
            Col("throughput_ips", "Throughput (samples/s)", True), Col("throughput_ci", "95% CI"),
            Col("energy_per_inference_mj", "Energy (mJ/sample)", True), Col("energy_ci", "95% CI"),
            Col("latency_column", "Latency pct."), Col("latency_ms", "Latency (ms/batch)", True),
            Col("latency_ci", "95% CI"), Col("repeats", "n", True), Col("power_scope", "power scope", csv_only=True)]
    records = []
    for f in fronts:
        for p in f.members():
            lat = p.latency
            records.append({
                "model": f.model, "setup": f.setup, "configuration": p.candidate.label(),
                "throughput_ips": p.throughput.median, "throughput_ci": _ci(p.throughput),
                "energy_per_inference_mj": p.energy.median, "energy_ci": _ci(p.energy),
                "latency_column": (f.latency_column or "").removeprefix("latency_ms_"),
                "latency_ms": None if lat is None else lat.median, "latency_ci": "" if lat is None else _ci(lat),
                "repeats": p.throughput.n, "power_scope": p.candidate.power_scope()})
    notes = [f"the Pareto front per model: no other configuration has higher throughput, lower energy per "
             f"inference and lower latency at once (medians over repeats); {METHOD}",
             "energy is per sample (per image); latency per inference (per batch)"]
    notes += sorted({n for f in fronts for n in f.notes})
    return Table(name, "Pareto front: throughput vs energy per inference vs latency", cols, records, notes)


def _ci(iv: Interval) -> str:
    if iv.median is None:
        return ""
    if iv.lo is None or iv.hi is None:
        return "n=1"
    return f"[{fmt_num(iv.lo)}, {fmt_num(iv.hi)}]"


# ------------------------------------------------------------------------------------ figure


def _err(iv: Interval) -> tuple[float, float]:
    if iv.median is None or iv.lo is None or iv.hi is None:
        return (0.0, 0.0)
    return (iv.median - iv.lo, iv.hi - iv.median)


def draw_front(front: ParetoFront, out_dir: Path, formats: tuple[str, ...] = ("png", "pdf"),
               width: str = "single") -> tuple[list[Path], list[str]]:
    """Throughput (x) vs energy per inference (y): one colour per precision, marker size by latency, the front
    joined by a line, dominated points faded, 95% intervals as bars. (files, caption lines)."""
    from matplotlib.lines import Line2D

    stem = f"{front.slug()}_{width}"
    with style():
        fig, ax = new_figure(width)
        lats = [p.latency.median for p in front.points if p.latency is not None and p.latency.median is not None]
        lo, hi = (min(lats), max(lats)) if lats else (0.0, 0.0)

        def size(p: ParetoPoint) -> float:
            if p.latency is None or p.latency.median is None or hi == lo:
                return 28.0
            return 12.0 + 60.0 * (p.latency.median - lo) / (hi - lo)

        precisions = []
        for p in front.points:
            prec = str(p.candidate.identity.get("precision") or "")
            if prec not in precisions:
                precisions.append(prec)
            color = precision_color(prec)
            alpha = 1.0 if p.on_front else 0.3
            ax.errorbar([p.throughput.median], [p.energy.median], xerr=[[_err(p.throughput)[0]], [_err(p.throughput)[1]]],
                        yerr=[[_err(p.energy)[0]], [_err(p.energy)[1]]], fmt="none", ecolor=color, alpha=alpha,
                        elinewidth=0.8, capsize=1.5, zorder=2)
            ax.scatter([p.throughput.median], [p.energy.median], s=size(p), color=color, alpha=alpha,
                       edgecolors="black" if p.on_front else "none", linewidths=0.6, zorder=3)
        members = sorted(front.members(), key=lambda p: p.throughput.median or 0.0)
        ax.plot([p.throughput.median for p in members], [p.energy.median for p in members], color="black",
                linewidth=0.8, linestyle="--", zorder=1)
        ax.set_xlabel("throughput (samples/s)")
        ax.set_ylabel("energy per inference (mJ/sample)")
        energies = [p.energy.median for p in front.points if p.energy.median]
        if energies and min(energies) > 0 and max(energies) / min(energies) >= 8:
            ax.set_yscale("log")  # the frugal end, where the front is, keeps its resolution
        ax.grid(True, alpha=0.3)
        handles = [Line2D([], [], marker="o", linestyle="", color=precision_color(prec), label=prec)
                   for prec in sorted(precisions, key=_prec_key)]
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8, label="front"))
        ax.legend(handles=handles, loc="upper right", frameon=False, handletextpad=0.2, borderaxespad=0.2)
        files = save(fig, out_dir, stem, formats)
    lat_words = (f"marker size grows with {front.latency_column.removeprefix('latency_ms_')} latency "
                 f"({lo:.3g} to {hi:.3g} ms per batch)" if front.latency_column else "latency not measured in every "
                 "configuration: marker size constant")
    caption = [f"{sum(p.on_front for p in front.points)} of {len(front.points)} configurations on the front "
               "(outlined, joined by the dashed line); dominated ones faded",
               f"colour = precision; {lat_words}", f"bars: 95% bootstrap intervals over repeats ({METHOD})",
               "energy per sample (per image), power in each row's power_scope: "
               + ", ".join(sorted({p.candidate.power_scope() for p in front.points})), *front.notes]
    title = f"Pareto front of {front.model} on {front.setup}: throughput vs energy per inference"
    write_caption(out_dir, stem, title, caption)
    return files, [title, *caption]


def _prec_key(prec: str) -> Any:
    return precision_rank(prec)
