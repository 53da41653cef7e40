"""The Pareto front per model: throughput up, energy per inference down, tail latency down.

Every configuration (every axis the runs vary: precision, batch, instances, placement, options, power mode,
backend, load) is one point at the medians of its usable repeats (ok rows with a throughput; answer.candidates),
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
Only comparable runs share a front (answer.candidates.setups).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from edgebench.answer.candidates import PERCENTILES, Candidate, LeftOut, candidates, empty_reason, setups
from edgebench.answer.intervals import Interval
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


def percentile_name(column: str | None) -> str:
    """'p99' for 'latency_ms_p99' ('' for None)."""
    return (column or "").removeprefix("latency_ms_")


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
    """The candidates cut to their rows with energy; every row without is counted in left_out with why and kept
    beside the candidate as an incomplete repeat (measured, not pooled), as answer.candidates keeps one."""
    out = []
    for c in mine:
        rows, lacking = [], []
        for row in c.rows:
            if row.get(ENERGY) is None:
                left_out.add(f"{ENERGY} empty: {empty_reason(row, ENERGY)}",
                             f"{ENERGY} empty: {empty_reason(row, ENERGY, keep_numbers=True)}")
                lacking.append(row)
            else:
                rows.append(row)
        if rows:
            out.append(replace(c, rows=rows, incomplete_rows=[*c.incomplete_rows, *lacking],
                               needed=tuple(dict.fromkeys([*c.needed, ENERGY]))))
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
                front.notes.append(f"{NO_POWER} ({percentile_name(lat)}): "
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
