"""The search's space-filling design, which configuration to measure while the surrogate cannot be trusted yet,
and the level check before a best-goal stop.

A level of a categorical axis (a precision, a backend, an option set) with nothing measured is covered first, so a
corner such as fp16 is never left unmeasured because the seeds missed it; then, while the surrogate cannot tell the
configurations apart (`distrust`), the open configuration farthest from every measured one (maximin in the
encoder's features). Before a best-goal stop, a level whose usable rows sit at fewer than 2 (batch, instances)
positions is measured where the answer is (`thin_level`), and so is an unmeasured configuration whose predicted
infeasibility alone keeps it from changing the answer, unless its level's next smaller batch already misses a limit
(`decider`). decide.py asks; this module only answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from edgebench.search.space import Encoder, SearchPoint
from edgebench.search.surrogate import LINEAR_METRICS, Fitted, min_sd

FLAT_SDS = 2.0  # predictions within FLAT_SDS x the noise floor of each other over the whole space are "nearly equal"
Normals = Mapping[str, Mapping[str, tuple[float, float]]]  # metric -> point key -> (mean, sd), modelled space


def effective_features(points: Sequence[SearchPoint], encoder: Encoder) -> int:
    """Numeric axes that vary, plus (levels - 1) of every categorical axis that varies: the fewest configurations
    that can fix a model linear in the features."""
    numeric = int(len({p.batch for p in points}) > 1) + int(len({p.instances for p in points}) > 1)
    axes: dict[str, int] = {}
    for name, _value in encoder.levels:
        axes[name] = axes.get(name, 0) + 1
    return numeric + sum(n - 1 for n in axes.values())


def varying_features(points: Sequence[SearchPoint], encoder: Encoder) -> list[int]:
    """Indices of the gp features (Encoder.row) that vary over the points."""
    out = [i for i, vals in enumerate(({p.batch for p in points}, {p.instances for p in points})) if len(vals) > 1]
    return out + [2 + j for j in range(len(encoder.levels))]


def uncovered(points: Sequence[SearchPoint], status: Mapping[str, list[dict[str, Any]]],
               fresh: Sequence[SearchPoint], encoder: Encoder) -> tuple[str, SearchPoint] | None:
    """The first level of a categorical axis that varies with no configuration measured (any status) and one
    still to measure, and its configuration farthest from every measured one; None when every level is covered."""
    tried = [p for p in points if status[p.key]]
    for name, value in encoder.levels:
        if any(p.categories.get(name, "") == value for p in tried):
            continue
        mine = [p for p in fresh if p.categories.get(name, "") == value]
        if mine:
            return f"{name} {value or '(none)'}", farthest(mine, tried, encoder)
    return None


def thin_level(points: Sequence[SearchPoint], status: Mapping[str, list[dict[str, Any]]],
               usable: Mapping[str, list[dict[str, Any]]], candidates: Sequence[SearchPoint], best: SearchPoint,
               encoder: Encoder) -> tuple[SearchPoint, str, int] | None:
    """The check before a best-goal stop on `best`: (the configuration to measure first, its level in words, how
    many (batch, instances) positions that level's usable rows sit at), or None. For each level of a categorical
    axis that varies (a precision, a backend, an option set) other than the best's, whose usable rows sit at fewer
    than 2 positions: its configuration with the best's other categories nearest the best's batch and instances
    (the same ones where the plan has them), if it is one of the `candidates` (decide's leave out a configuration
    with no accuracy pass) and was never tried (no row of any status in `status`). One position gives the
    surrogate no curve of that level of its own: what it says of the level at the best's batch is a guess from the
    other levels, and the limits' surrogates of that level are the same guess, so its predicted feasibility is not
    read. A level none of whose configurations shares the best's other categories is not checked. Once that row is
    in (or the configuration was tried), the level is not asked for again at this answer. `uncovered`'s twin: that
    one asks for a level with no row at all."""
    open_keys = {p.key for p in candidates if not status[p.key]}
    at = encoder.numeric(best)
    for name, value in encoder.levels:
        if best.categories.get(name, "") == value:
            continue
        level = [p for p in points if p.categories.get(name, "") == value]
        positions = {(p.batch, p.instances) for p in level if usable[p.key]}
        if len(positions) >= 2:
            continue
        twins = [p for p in level if all(p.categories.get(n, "") == v for n, v in best.categories.items() if n != name)]
        if not twins:
            continue
        q = min(twins, key=lambda p: sum((a - b) ** 2 for a, b in zip(encoder.numeric(p), at)))
        if q.key in open_keys:
            return q, f"{name} {value}", len(positions)
    return None


def decider(points: Sequence[SearchPoint], status: Mapping[str, list[dict[str, Any]]],
            candidates: Sequence[SearchPoint], p_beats: Mapping[str, float], p_feasible: Mapping[str, float],
            floor: float, misses: Callable[[SearchPoint], bool], frontier: bool = False) -> SearchPoint | None:
    """The check before a best-goal stop whose confidence rests on a predicted infeasibility (issue 54): of the
    candidates never tried (no row of any status) that the surrogate puts more likely than not over a limit
    (`p_feasible` < 0.5) but that would change the answer if they met the limits (`p_beats` >= `floor`,
    explore_min_prob), the one most likely to beat it; None when there is none. One is passed over when its own
    level's measured neighbour already says it misses: the configuration with the same categories and instances one
    batch step below it (the plan's next smaller batch) has a measured repeat over a limit (`misses`); latency and
    power mostly grow with batch. Only the next step: on the H100 grid fp16 b16 has a repeat at p90 8.47 ms while
    fp16 b32's are 5.8-6.1 and b64's 7.9, so a miss further down says little. What the model says of an unmeasured
    configuration otherwise leans on other levels' rows at that position: on the H100 grid one outlier repeat of amp
    b64 (p90 10.15 ms; its other repeats 7.68) put fp16 b64, never measured, at 11.2 [9.6, 13.0] ms, P(meets
    the 7.9 ms limit) = 5e-6, and 7 of 20 searches stopped on fp16 b32, 29% slower; fp16 b64's worst p90 is 7.896.
    `frontier` (shipped: decide.DECIDER_FRONTIER): only a candidate whose level's next smaller batch was measured
    (ok or invalid rows) and misses no limit, where the level's own rows contradict the prediction; a level with
    nothing measured just below is left to the model. Without it the check cost 51% more rows on knife-edge sets."""
    levels: dict[tuple, list[SearchPoint]] = {}
    for p in points:
        levels.setdefault(_level_of(p), []).append(p)
    chosen: SearchPoint | None = None
    for p in candidates:
        if status[p.key] or p_feasible.get(p.key, 1.0) >= 0.5 or p_beats.get(p.key, 0.0) < floor:
            continue
        below = [q for q in levels[_level_of(p)] if q.batch < p.batch]
        step = max(below, key=lambda q: q.batch) if below else None
        if step is not None and status[step.key] and misses(step):
            continue
        # frontier: only where the level's own next smaller batch was measured (ok or invalid rows: measured values
        # either way) and meets every limit, where its rows contradict an infeasibility other levels' rows predict
        if frontier and (step is None or not any(r.get("status") in ("ok", "invalid") for r in status[step.key])):
            continue
        if chosen is None or p_beats[p.key] > p_beats[chosen.key]:
            chosen = p
    return chosen


def _level_of(p: SearchPoint) -> tuple:
    """A configuration's categories and instance count: what stays the same along its batches."""
    return (*sorted(p.categories.items()), p.instances)


def farthest(candidates: Sequence[SearchPoint], tried: Sequence[SearchPoint], encoder: Encoder) -> SearchPoint:
    """The candidate farthest (maximin, in the encoder's features) from every configuration tried; ties: the first
    in the plan's order."""
    rows = [encoder.row(t) for t in tried]

    def gap(p: SearchPoint) -> float:
        x = encoder.row(p)
        return min((sum((a - b) ** 2 for a, b in zip(x, r)) for r in rows), default=0.0)

    return max(candidates, key=lambda p: (gap(p), -candidates.index(p)))


def distrust(fits: Mapping[str, Fitted], points: Sequence[SearchPoint], normals: Normals,
              metrics: list[tuple[str, bool]], encoder: Encoder) -> str | None:
    """Why the surrogate cannot tell this model's configurations apart on a metric the answer reads (not fitted
    yet; predictions nearly equal over every configuration; its length scales collapsed or its noise taking most of
    the variance: Fitted.collapsed); None when it can on every one."""
    varying = varying_features(points, encoder)
    names = ["log2 batch", "log2 instances", *[f"{n} {v}" for n, v in encoder.levels]]
    for col, _higher in metrics:
        fitted = fits.get(col)
        if fitted is None:
            return f"{col}: fewer than 2 values to fit"
        mus = [normals[col][p.key][0] for p in points]
        floor = min_sd(col)
        if max(mus) - min(mus) < FLAT_SDS * floor:
            spread = (f"{max(mus) - min(mus):.3g} pp" if col in LINEAR_METRICS
                      else f"{math.exp(max(mus) - min(mus)) - 1:.1%}")
            return f"{col}: predictions within {spread} of each other over every configuration"
        if (why := fitted.collapsed(varying, names)) is not None:
            return why
    return None
