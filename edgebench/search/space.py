"""The search space: every planned configuration (its repeats folded together) as one point with features.

A point's rows are its planned repeats, named by config hash in repeat order, so the rows a search measures are
exactly the rows a full grid sweep would write (same hashes: a search run and a grid run of one profile can be
compared row by row, and --resume finds finished rows). Features: log2 batch and log2 instances (throughput and
power scale roughly as powers of both), and every categorical axis that varies across the points (backend,
precision, the set of devices used, mode, options, power mode, GPU sharing, load), one-hot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgebench.answer.candidates import IDENTITY, Candidate

CATEGORICAL = ("backend", "precision", "devices", "mode", "options", "power_mode", "gpu_sharing", "load")


@dataclass
class SearchPoint:
    key: str  # stable id: the hash of its first planned repeat
    model: str
    label: str  # for people: 'ort int8 b16 2x cpu'
    batch: int
    instances: int
    categories: dict[str, str]  # CATEGORICAL -> value
    hashes: list[str] = field(default_factory=list)  # planned repeats, in repeat order

    @property
    def planned_rows(self) -> int:
        return len(self.hashes)


def devices_of(placement: str) -> str:
    """The set of devices a placement uses, as one category: 'cpu+cpu' -> 'cpu', 'cuda:0+dla0+dla0' -> 'cuda:0+dla0'
    (the instance count is the numeric feature)."""
    return "+".join(sorted(set(str(placement or "").split("+"))))


def point_label(fields: Mapping[str, Any]) -> str:
    """The configuration's label as the answer layer writes it (answer.candidates.Candidate.label: 'ort int8 b16 2x
    cpu' and whatever else is set), so predictions.csv, search.csv and `edgebench best` name it alike."""
    return Candidate({k: fields.get(k) for k in IDENTITY}, setup="").label()


def make_point(fields: Mapping[str, Any], hashes: Sequence[str]) -> SearchPoint:
    """A point from one configuration's identity (answer.candidates.IDENTITY: a row's cells, or a RunConfig's as
    its rows would hold them) and its planned repeats' hashes."""
    rate = fields.get("rate_per_stream_hz")
    load = f"{rate:g}Hz {fields.get('arrival')}" if isinstance(rate, (int, float)) else ""
    cats = {"backend": fields.get("backend"), "precision": fields.get("precision"),
            "devices": devices_of(str(fields.get("placement") or "")), "mode": fields.get("mode"),
            "options": fields.get("options"), "power_mode": fields.get("power_mode"),
            "gpu_sharing": fields.get("gpu_sharing"), "load": load}
    return SearchPoint(key=hashes[0], model=str(fields.get("model") or ""), label=point_label(fields),
                       batch=int(fields.get("batch") or 1), instances=int(fields.get("instances") or 1),
                       categories={k: "" if v is None else str(v) for k, v in cats.items()}, hashes=list(hashes))


class Encoder:
    """Points -> feature rows: [log2 batch, log2 instances] scaled to [0, 1] over the space, then one 0/1 column
    per value of every categorical axis that varies in the space (an axis with one value carries no information)."""

    def __init__(self, space: Iterable[SearchPoint]) -> None:
        points = list(space)
        self.lb = self._range([math.log2(p.batch) for p in points])
        self.li = self._range([math.log2(p.instances) for p in points])
        self.levels: list[tuple[str, str]] = []
        for name in CATEGORICAL:
            values = sorted({p.categories.get(name, "") for p in points})
            if len(values) > 1:
                self.levels += [(name, v) for v in values]

    @staticmethod
    def _range(values: list[float]) -> tuple[float, float]:
        lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
        return lo, (hi - lo) or 1.0

    def numeric(self, p: SearchPoint) -> tuple[float, float]:
        return ((math.log2(p.batch) - self.lb[0]) / self.lb[1], (math.log2(p.instances) - self.li[0]) / self.li[1])

    def onehot(self, p: SearchPoint) -> list[float]:
        return [1.0 if p.categories.get(name, "") == value else 0.0 for name, value in self.levels]

    def row(self, p: SearchPoint) -> list[float]:
        return [*self.numeric(p), *self.onehot(p)]


def spread_seeds(points: Sequence[SearchPoint], encoder: Encoder, count: int, first: int) -> list[SearchPoint]:
    """`count` points spread over the space: the point at index `first` (the search seed picks it), then greedy
    farthest-point (maximin) in the encoder's feature space. Deterministic: a resumed search gets the same seeds."""
    chosen: list[SearchPoint] = []
    pool = list(points)
    row = {p.key: encoder.row(p) for p in pool}  # each point's features, once

    def gap(p: SearchPoint, c: SearchPoint) -> float:
        return sum((a - b) ** 2 for a, b in zip(row[p.key], row[c.key]))

    if pool:
        chosen.append(pool.pop(first % len(pool)))
    nearest = {p.key: gap(p, chosen[0]) for p in pool} if chosen else {}  # to the nearest chosen point so far
    while len(chosen) < count and pool:
        gaps = [nearest[p.key] for p in pool]
        best = pool[gaps.index(max(gaps))]  # ties: the earlier point of the plan's order
        chosen.append(best)
        pool.remove(best)
        for p in pool:  # only the new point can bring one nearer
            nearest[p.key] = min(nearest[p.key], gap(p, best))
    return chosen
