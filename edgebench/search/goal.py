"""What the search is after, and the answer the measured rows give so far.

The current answer is computed by the answer layer itself (answer.best for the best under limits,
answer.pareto for the front) over the rows measured so far, so the search stops on the answer `edgebench best` and
`edgebench report` will print for its run folder, and an answer never holds a predicted value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.answer.best import ACCURACY_DROP, Limits, answer_from_runs, objective_column
from edgebench.answer.pareto import interval_end, pareto_fronts
from edgebench.results.runs import Run


@dataclass(frozen=True)
class Goal:
    mode: str  # best | pareto
    objective: str = "throughput"  # best: throughput | energy | latency
    limits: Limits = field(default_factory=Limits)

    def objective_column(self) -> tuple[str, bool]:
        column, higher, _unit, _words = objective_column(self.objective, self.limits)
        return column, higher

    def describe(self) -> str:
        if self.mode == "pareto":
            return "the Pareto front (throughput up, energy per inference down where power is measured, latency down)"
        _column, _higher, _unit, words = objective_column(self.objective, self.limits)
        limits = ", ".join(f"{col} <= {bound:g}" for col, bound in self.limits.columns())
        return f"the {words} configuration" + (f" with {limits} on every repeat" if limits else "")


@dataclass
class ModelState:
    """One model's answer over the measured rows."""
    model: str
    objectives: list[tuple[str, bool]]  # what the answer ranks on: (column, higher is better)
    answer_keys: list[str] = field(default_factory=list)  # best, runner-up / front members: points (by key)
    # best mode: what a configuration must beat to change the answer rather than tie with it: the far end of the
    # best's 95% interval (its median while it has one repeat)
    to_beat: float | None = None
    front: list[tuple[float, ...]] = field(default_factory=list)  # pareto: members' medians, each objective
    # pareto: each member at the far (better) end of its 95% interval, each objective (its median while it has one
    # repeat): what a configuration must escape to change the front rather than tie with it
    front_far: list[tuple[float, ...]] = field(default_factory=list)
    text: str = ""  # one line for people


def current_answer(goal: Goal, rows: Sequence[dict[str, Any]], point_of: Mapping[str, str]) -> dict[str, ModelState]:
    """model -> its answer over `rows` (the measured rows, any status); `point_of`: config hash -> point key."""
    run = Run(path=Path("search"), rows=list(rows))
    out: dict[str, ModelState] = {}
    if goal.mode == "best":
        column, higher = goal.objective_column()
        answer = answer_from_runs([run], goal.objective, goal.limits)
        for a in answer.answers:
            st = ModelState(a.model, [(column, higher)])
            for ranked in a.feasible[:2]:
                st.answer_keys.append(point_key(ranked.candidate.rows, point_of))
            if a.feasible:
                best = a.feasible[0]
                st.to_beat = interval_end(best.interval, higher, "better")
                st.text = f"{best.candidate.label()}: {best.interval.text()}"
            out[a.model] = st
        return out
    for front in pareto_fronts([run]):
        st = ModelState(front.model, list(front.objectives))
        members = front.members()
        st.answer_keys = [point_key(p.candidate.rows, point_of) for p in members]
        for p in members:
            for values, end in ((st.front, "median"), (st.front_far, "better")):
                values.append(tuple(_number(interval_end(p.interval(col), higher, end))
                                    for col, higher in front.objectives))
        st.text = f"{len(members)} of {len(front.points)} configuration(s) on the front"
        out[front.model] = st
    return out


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def point_key(rows: Sequence[dict[str, Any]], point_of: Mapping[str, str]) -> str:
    """The search point (key) the first of `rows` with a known config hash belongs to; "" for none."""
    for r in rows:
        if (k := point_of.get(str(r.get("config_hash")))) is not None:
            return k
    return ""


__all__ = ["ACCURACY_DROP", "Goal", "ModelState", "current_answer", "point_key"]
