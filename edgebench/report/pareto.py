"""The Pareto front per model: throughput up, energy per inference down, tail latency down.

Every configuration (every axis the runs vary: precision, batch, instances, placement, options, power mode,
backend, load) is one point at the medians of its usable repeats (ok rows with a throughput; report.candidates),
with 95% bootstrap intervals. A point is on the front when no other point is at least as good in every objective
and better in one (on the medians: an interval that straddles the front is visible as a bar in the figure and as
the interval in the table). What a front is over is recorded in `ParetoFront.objectives`, (column,
higher_is_better) in order:
- energy per inference when some usable row of the model has one (rows without it are left out and counted with
  why); with none (no power sampler: a CPU host without RAPL) the front is over throughput and latency and says so;
- latency is the highest percentile every point has (p99 needs 662 inferences per row; a short window gives p90
  only), named in the table and the caption; with none, the front is over throughput and energy and says so;
- throughput alone is not a front: with neither energy nor a latency percentile, objectives is empty, no point is
  on the front and the notes say why.
Only comparable runs share a front (report.candidates.setups).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.report.candidates import PERCENTILES, Candidate, LeftOut, candidates, empty_reason, setups
from edgebench.report.figure import slug
from edgebench.report.intervals import METHOD, Interval
from edgebench.report.paper_style import new_figure, precision_color, save, style, write_caption
from edgebench.report.table_format import Col, Table, fmt_num, precision_rank
from edgebench.results.runs import Run

THROUGHPUT = "throughput_ips"
ENERGY = "energy_per_inference_mj"
NO_POWER = "no power measured: the front is over throughput and latency"
Objective = tuple[str, bool]  # (column, higher_is_better)


@dataclass
class ParetoPoint:
    candidate: Candidate
    throughput: Interval
    energy: Interval | None  # None: no power measured for this model (the front is over throughput and latency)
    latency: Interval | None  # of the front's latency_column; None: no percentile every point has
    on_front: bool = False

    def interval(self, column: str) -> Interval | None:
        """The point's interval of an objective column (a latency_ms_* column is the front's latency)."""
        if column == THROUGHPUT:
            return self.throughput
        if column == ENERGY:
            return self.energy
        if column.startswith("latency_ms_"):
            return self.latency
        raise KeyError(f"{column} is not an objective of a Pareto point ({THROUGHPUT}, {ENERGY}, latency_ms_*)")


@dataclass
class ParetoFront:
    model: str
    setup: str
    latency_column: str | None  # None: no latency percentile every point has
    points: list[ParetoPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # what the front is computed over, in order: (column, higher_is_better); [] = no front (throughput alone)
    objectives: list[Objective] = field(default_factory=list)

    @property
    def has_energy(self) -> bool:
        return any(col == ENERGY for col, _ in self.objectives)

    def mark(self) -> None:
        mark_front(self.points, self.objectives)

    def members(self) -> list[ParetoPoint]:
        return sorted((p for p in self.points if p.on_front), key=lambda p: -(p.throughput.median or 0.0))

    def slug(self) -> str:
        return slug("pareto", self.model, self.setup)


def front_objectives(has_energy: bool, latency_column: str | None) -> list[Objective]:
    """Throughput up, then energy down (when measured), then latency down (when every point has a percentile);
    [] when that leaves throughput alone, which is not a front."""
    out: list[Objective] = [(THROUGHPUT, True)]
    if has_energy:
        out.append((ENERGY, False))
    if latency_column is not None:
        out.append((latency_column, False))
    return out if len(out) >= 2 else []


def interval_end(iv: Interval | None, higher_is_better: bool, end: str = "median") -> float | None:
    """An objective's value in its own units: the median, or the interval's "better" / "worse" end for an
    objective where higher (or lower) is better; the median where there is no interval (one repeat)."""
    value = None if iv is None else iv.median
    if iv is not None and end != "median":
        bound = iv.hi if (end == "better") == higher_is_better else iv.lo
        value = bound if bound is not None else value
    return value


def _objectives(p: ParetoPoint, objectives: list[Objective], end: str = "median") -> tuple[float, ...]:
    """Values to minimise, in the order of `objectives` (a higher-is-better one negated; a missing value is the
    worst, so it never dominates). `end`: as interval_end."""
    out = []
    for column, higher_is_better in objectives:
        value = interval_end(p.interval(column), higher_is_better, end)
        out.append(math.inf if value is None else (-value if higher_is_better else value))
    return tuple(out)


def membership_settled(points: list[ParetoPoint], objectives: list[Objective]) -> list[bool | None]:
    """Per point, whether its repeats settle its place: True when it is on the front even with it at the worse
    end of its intervals and every other point at the better end of theirs; False when some point at its worse
    end dominates it at its better end; None when the intervals leave it open (a front that differs from this
    one only in such points is the same front within the measurements' noise)."""
    if len(objectives) < 2:
        return [False for _ in points]
    better = [_objectives(p, objectives, "better") for p in points]
    worse = [_objectives(p, objectives, "worse") for p in points]
    out: list[bool | None] = []
    for i in range(len(points)):
        others = [j for j in range(len(points)) if j != i]
        if any(dominates(worse[j], better[i]) for j in others):
            out.append(False)
        elif not any(dominates(better[j], worse[i]) for j in others):
            out.append(True)
        else:
            out.append(None)
    return out


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def mark_front(points: list[ParetoPoint], objectives: list[Objective]) -> None:
    """Set on_front: not dominated over `objectives`. Fewer than 2 objectives are not a front: none is on it."""
    if len(objectives) < 2:
        for p in points:
            p.on_front = False
        return
    values = [_objectives(p, objectives) for p in points]
    for i, p in enumerate(points):
        p.on_front = not any(dominates(values[j], values[i]) for j in range(len(points)) if j != i)


def latency_column(cands: list[Candidate]) -> str | None:
    for pct in PERCENTILES:
        col = f"latency_ms_{pct}"
        if cands and all(c.values(col) for c in cands):
            return col
    return None


def _with_energy(mine: list[Candidate], left_out: LeftOut) -> list[Candidate]:
    """The candidates cut to their rows with energy; every row without is counted in left_out with why."""
    out = []
    for c in mine:
        rows = []
        for row in c.rows:
            if row.get(ENERGY) is None:
                left_out.add(f"{ENERGY} empty: {empty_reason(row, ENERGY)}")
            else:
                rows.append(row)
        if rows:
            out.append(Candidate(c.identity, c.setup, rows, run_mode=c.run_mode))
    return out


def _no_energy_why(mine: list[Candidate]) -> str:
    whys = sorted({empty_reason(r, ENERGY) for c in mine for r in c.rows})
    return "; ".join(whys[:2]) + (f"; and {len(whys) - 2} more" if len(whys) > 2 else "")


def pareto_fronts(runs: list[Run], left_out: LeftOut | None = None) -> list[ParetoFront]:
    left_out = left_out if left_out is not None else LeftOut()
    fronts = []
    groups, splits = setups(runs)
    for setup in groups:
        cands = candidates(setup.runs, setup.label, (THROUGHPUT,), left_out)
        for model in sorted({c.model for c in cands}):
            mine = [c for c in cands if c.model == model]
            has_energy = any(c.values(ENERGY) for c in mine)
            no_energy_why = "" if has_energy else _no_energy_why(mine)
            if has_energy:
                mine = _with_energy(mine, left_out)  # some rows have energy: those without are left out, as before
            lat = latency_column(mine)
            front = ParetoFront(model, setup.label, lat, notes=list(splits),
                                objectives=front_objectives(has_energy, lat))
            if not has_energy and lat is None:
                front.notes.append(f"no power measured and no latency percentile in every configuration: throughput "
                                   f"alone is not a front, so {model} has none (energy_per_inference_mj empty: "
                                   f"{no_energy_why}; a p50 needs 10 inferences per row)")
            elif not has_energy:
                front.notes.append(f"{NO_POWER} ({_pct(lat)}): "
                                   f"energy_per_inference_mj is empty in every ok row of {model} ({no_energy_why})")
            elif lat is None:
                front.notes.append("no latency percentile is measured in every configuration: the front is over "
                                   "throughput and energy only")
            if lat is not None and lat != "latency_ms_p99":
                front.notes.append(f"latency is {lat}: not every configuration has a p99 (662 inferences needed)")
            front.points = [ParetoPoint(c, c.interval(THROUGHPUT), c.interval(ENERGY) if has_energy else None,
                                        c.interval(lat) if lat else None) for c in mine]
            front.mark()
            fronts.append(front)
    return fronts


# ------------------------------------------------------------------------------------ table


def _pct(column: str | None) -> str:
    return (column or "").removeprefix("latency_ms_")


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
            Col("throughput_ips", "Throughput (samples/s)", True), Col("throughput_ci", "95% CI"),
            Col("energy_per_inference_mj", "Energy (mJ/sample)", True), Col("energy_ci", "95% CI"),
            Col("latency_column", "Latency pct."), Col("latency_ms", "Latency (ms/batch)", True),
            Col("latency_ci", "95% CI"), Col("repeats", "n", True), Col("power_scope", "power scope", csv_only=True),
            Col("front_over", "front over", csv_only=True)]
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
                "latency_column": _pct(f.latency_column),
                "latency_ms": None if lat is None else lat.median, "latency_ci": "" if lat is None else _ci(lat),
                "repeats": p.throughput.n, "power_scope": p.candidate.power_scope(), "front_over": over})
    notes = ["the Pareto front per model: no other configuration is at least as good in every objective and better "
             "in one (medians over repeats): throughput up, energy per inference down where power was measured, "
             f"latency down where every configuration has a percentile; {METHOD}",
             "energy is per sample (per image); latency per inference (per batch)"]
    if any(f.members() and not f.has_energy for f in fronts):
        notes.append("energy cells are empty where no power was measured (no power sampler: see each row's "
                     "energy_source); those fronts are over throughput and latency")
    notes += sorted({n for f in fronts for n in f.notes})
    return Table(name, front_title(fronts), cols, records, notes)


def _ci(iv: Interval) -> str:
    if iv.median is None:
        return ""
    if iv.lo is None or iv.hi is None:
        return "n=1"
    return f"[{fmt_num(iv.lo)}, {fmt_num(iv.hi)}]"


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
    joined by a line, dominated points faded, 95% intervals as bars. With no power measured, y is the latency
    percentile the front is over (marker size constant). (files, caption lines)."""
    from matplotlib.lines import Line2D

    if not front.objectives:
        raise ValueError(f"{front.slug()}: no front to draw ({'; '.join(front.notes) or 'no objectives'})")
    energy = front.has_energy

    def y_of(p: ParetoPoint) -> Interval | None:
        return p.energy if energy else p.latency

    stem = f"{front.slug()}_{width}"
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
                      else f"{_pct(front.latency_column)} latency (ms/batch)")
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
    pct = _pct(front.latency_column)
    if not energy:
        lat_words = f"no power measured: y is {pct} latency per batch (lower is better); marker size constant"
    elif front.latency_column:
        lat_words = f"marker size grows with {pct} latency ({lo:.3g} to {hi:.3g} ms per batch)"
    else:
        lat_words = "latency not measured in every configuration: marker size constant"
    caption = [f"{sum(p.on_front for p in front.points)} of {len(front.points)} configurations on the front "
               "(outlined, joined by the dashed line); dominated ones faded",
               f"colour = precision; {lat_words}", f"bars: 95% bootstrap intervals over repeats ({METHOD})"]
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
