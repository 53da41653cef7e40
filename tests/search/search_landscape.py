"""A known landscape for the search's pure tests: synthetic configurations of one model (precision x batch x
instances, two repeats each) whose rows come from a closed-form function, so the true answer over the full grid is
known (computed by the answer layer itself) and a replay of the search (as benchmarks/search_eval.replay drives
it) can be checked against it.

Per-batch latency grows with batch and with instances (contention) and shrinks with a faster precision; throughput
is batch x instances / latency: higher batch and more instances raise throughput and latency, so a latency limit
binds and the throughput-latency front has several members.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from edgebench.answer.candidates import IDENTITY, load_source
from edgebench.search.decide import Decision, decide
from edgebench.search.goal import Goal, current_answer
from edgebench.search.space import SearchPoint, make_point

SPEED = {"fp32": 1.0, "fp16": 1.8, "int8": 3.0}  # k_precision: how much faster than fp32
BATCHES = (1, 2, 4, 8, 16)
INSTANCES = (1, 2, 4)
REPEATS = 2
MODEL = "net"
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def benchmark_module(name: str) -> ModuleType:
    """benchmarks/<name>.py imported as `name`, with benchmarks/ on the path as when the script runs (one benchmark
    imports another, surrogate_coverage imports search_eval, and both get the one copy; appended, so it shadows
    nothing)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.append(str(BENCHMARKS))
    return importlib.import_module(name)


def stored_grid(path: Path) -> tuple[list[SearchPoint], dict[str, dict[str, Any]]]:
    """A measured grid as the search sees its plan: benchmarks/search_eval.points_of itself (one point per
    configuration, its rows in repeat order; every row by config hash), so a test replays what the evaluation does."""
    return benchmark_module("search_eval").points_of(list(load_source(path).rows))


def latency_ms(precision: str, batch: int, instances: int) -> float:
    """Per-batch latency of the landscape (p90), before run-to-run noise."""
    return 2.0 * (1.0 + batch / 8.0) * (1.0 + 0.25 * (instances - 1)) / SPEED[precision]


def throughput_ips(precision: str, batch: int, instances: int) -> float:
    return batch * instances * 1000.0 / latency_ms(precision, batch, instances)


def fields_of(precision: str, batch: int, instances: int) -> dict[str, Any]:
    return {"model": MODEL, "backend": "null", "precision": precision, "batch": batch, "instances": instances,
            "mode": "process", "placement": "+".join(["cpu"] * instances)}


def grid() -> tuple[list[SearchPoint], dict[str, dict[str, Any]]]:
    """(the points in plan order, every planned row by config hash: 'h<i>r<j>' is point i's repeat j). Repeat j
    is off the function by a deterministic +-1% (throughput up, latency down on repeat 0; the reverse on 1)."""
    points, rows = [], {}
    i = 0
    for precision in SPEED:
        for batch in BATCHES:
            for instances in INSTANCES:
                fields = fields_of(precision, batch, instances)
                hashes = [f"h{i}r{j}" for j in range(REPEATS)]
                points.append(make_point(fields, hashes))
                for j, h in enumerate(hashes):
                    noise = 0.01 if j % 2 == 0 else -0.01
                    row = {k: None for k in IDENTITY}
                    row.update(fields)
                    row.update({"config_hash": h, "repeat": j, "status": "ok", "reason": "",
                                "throughput_ips": throughput_ips(precision, batch, instances) * (1 + noise),
                                "latency_ms_p90": latency_ms(precision, batch, instances) * (1 - noise),
                                "latency_ms_p50": latency_ms(precision, batch, instances) * 0.8 * (1 - noise),
                                "power_w_mean": None, "energy_per_inference_mj": None})
                    rows[h] = row
                i += 1
    return points, rows


def point_of(points: Iterable[SearchPoint]) -> dict[str, str]:
    return {h: p.key for p in points for h in p.hashes}


def answer_keys(goal: Goal, rows: Iterable[dict[str, Any]], points: list[SearchPoint]) -> tuple[str, ...]:
    """The answer's configurations over `rows`: (best,) or the front's members, sorted."""
    (state,) = current_answer(goal, list(rows), point_of(points)).values()
    return tuple(state.answer_keys[:1]) if goal.mode == "best" else tuple(sorted(state.answer_keys))


def replay(points: list[SearchPoint], answer_row: Callable[[str], dict[str, Any]], goal: Goal, *, seed: int = 0,
           surrogate: str = "gp", budget: int | None = None, measured: dict[str, dict[str, Any]] | None = None,
           max_steps: int = 200) -> tuple[Decision, list[tuple[str, str, list[str], str]], dict[str, dict[str, Any]]]:
    """The search run to its stop, every row it asks for answered by `answer_row(hash)`: (the final decision,
    the picks in order as (phase, point key, hashes, why), the rows measured). `measured`: rows known before it starts."""
    measured = dict(measured or {})
    budget = sum(p.planned_rows for p in points) if budget is None else budget
    po = point_of(points)
    picks: list[tuple[str, str, list[str], str]] = []
    for _ in range(max_steps):
        d = decide(points, measured, goal, budget_left=budget - len(measured), seed=seed, surrogate=surrogate,
                   point_of=po)
        if d.pick is None:
            return d, picks, measured
        assert d.pick.hashes, d.pick
        assert not set(d.pick.hashes) & set(measured), f"asked again for a measured row: {d.pick}"
        picks.append((d.pick.phase, d.pick.key, list(d.pick.hashes), d.pick.why))
        for h in d.pick.hashes:
            measured[h] = answer_row(h)
    raise AssertionError(f"no stop after {max_steps} steps: {picks[-5:]}")
