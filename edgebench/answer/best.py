"""The answer to "which configuration should I run, under my limits, and how sure is that?" (`edgebench best`;
rendered by report.answer).

Pure functions over typed rows (answer.candidates groups them into configurations and comparable setups):

- limits: a latency SLO on one latency percentile (p99 by default), a power cap on power_w_mean (in the row's
  power_scope, which the answer names), an accuracy floor as a drop vs FP32 in percentage points;
- a configuration meets a limit when *every* usable repeat meets it (a capacity answer holds only if it holds on
  every repeat); invalid, failed and skipped rows are not usable, nor an ok row whose objective or limit column
  is empty; each is counted with why;
- the best by the objective (median over repeats with its 95% bootstrap interval), the runner-up, and whether
  the gap is resolved: the intervals are apart, or P(best better) >= 0.95 from an independent bootstrap of the
  two medians; otherwise a tie within noise with a rough "measure N more repeats" (interval half-widths shrink
  as 1/sqrt(n)).

Accuracy drop (percentage points): with labelled accuracy on both sides, the FP32 row's accuracy_top1_pct (same
model, backend and batch if measured, else the model's FP32 median) minus the row's; otherwise
100 - accuracy_top1_agreement_pct (share of inputs whose top-1 differs from the FP32 reference). An FP32 row is
the reference: its drop is 0.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from edgebench.answer.candidates import (
    Candidate,
    LeftOut,
    Setup,
    candidates,
    load_sources,
    prob_better,
    setups,
)
from edgebench.answer.intervals import Interval
from edgebench.results.runs import Run

LEVEL_PROB = 0.95
# objective name -> (column, higher is better, unit, words)
OBJECTIVES: dict[str, tuple[str, bool, str, str]] = {
    "throughput": ("throughput_ips", True, "samples/s", "highest throughput"),
    "energy": ("energy_per_inference_mj", False, "mJ/sample", "lowest energy per inference (per sample)"),
    "latency": ("latency_ms_{p}", False, "ms", "lowest {p} latency (per batch)"),
}
ACCURACY_DROP = "accuracy_drop_pct"  # derived per row by `with_accuracy_drop`; not a results.csv column


@dataclass(frozen=True)
class Limits:
    slo_ms: float | None = None
    percentile: str = "p99"  # which latency_ms_<p> the SLO and the latency objective read
    power_cap_w: float | None = None
    max_accuracy_drop_pct: float | None = None

    def latency_column(self) -> str:
        return f"latency_ms_{self.percentile}"

    def columns(self) -> list[tuple[str, float]]:
        """(column, upper bound) of every limit given."""
        out = []
        if self.slo_ms is not None:
            out.append((self.latency_column(), self.slo_ms))
        if self.power_cap_w is not None:
            out.append(("power_w_mean", self.power_cap_w))
        if self.max_accuracy_drop_pct is not None:
            out.append((ACCURACY_DROP, self.max_accuracy_drop_pct))
        return out

    def any(self) -> bool:
        return bool(self.columns())


def objective_column(objective: str, limits: Limits) -> tuple[str, bool, str, str]:
    column, higher, unit, words = OBJECTIVES[objective]
    return column.format(p=limits.percentile), higher, unit, words.format(p=limits.percentile)


# ------------------------------------------------------------------------------------ accuracy drop


def with_accuracy_drop(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the rows with ACCURACY_DROP set (None when neither labelled accuracy nor agreement is recorded)."""
    fp32_top1: dict[tuple, list[float]] = {}
    for r in rows:
        if r.get("precision") == "fp32" and r.get("status") == "ok" and r.get("accuracy_top1_pct") is not None:
            for key in ((r.get("model"), r.get("backend"), r.get("batch")), (r.get("model"),)):
                fp32_top1.setdefault(key, []).append(float(r["accuracy_top1_pct"]))
    out = []
    for r in rows:
        drop: float | None = None
        ref = fp32_top1.get((r.get("model"), r.get("backend"), r.get("batch"))) or fp32_top1.get((r.get("model"),))
        if r.get("precision") == "fp32":
            drop = 0.0
        elif r.get("accuracy_top1_pct") is not None and ref:
            drop = statistics.median(ref) - float(r["accuracy_top1_pct"])
        elif r.get("accuracy_top1_agreement_pct") is not None:
            drop = 100.0 - float(r["accuracy_top1_agreement_pct"])
        out.append({**r, ACCURACY_DROP: drop})
    return out


# ------------------------------------------------------------------------------------ the answer


@dataclass
class Ranked:
    candidate: Candidate
    interval: Interval  # of the objective
    limit_values: dict[str, float]  # column -> worst repeat (the value the limit was judged on)


@dataclass
class Verdict:
    resolved: bool | None  # None: no runner-up, or too few repeats to tell
    text: str
    prob_best_better: float | None = None
    more_repeats: int | None = None


@dataclass
class ModelAnswer:
    model: str
    setup: Setup
    considered: int  # configurations with usable rows
    feasible: list[Ranked]  # best first
    missed: list[tuple[Candidate, str]]  # configurations that miss a limit, with the first limit missed
    verdict: Verdict


@dataclass
class Answer:
    objective: str
    column: str
    higher_is_better: bool
    unit: str
    words: str
    limits: Limits
    runs: list[Any]
    answers: list[ModelAnswer] = field(default_factory=list)
    left_out: LeftOut = field(default_factory=LeftOut)
    splits: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def best(self) -> list[tuple[str, Ranked]]:
        return [(a.model, a.feasible[0]) for a in self.answers if a.feasible]


def _worst(values: list[float]) -> float:
    return max(values)  # every limit is an upper bound


def _verdict(best: Ranked, runner: Ranked | None, column: str, higher: bool) -> Verdict:
    if runner is None:
        return Verdict(None, "no runner-up: only one configuration meets every limit")
    a, b = best.interval, runner.interval
    va, vb = best.candidate.values(column), runner.candidate.values(column)
    diff = abs((a.median or 0.0) - (b.median or 0.0))
    if a.lo is None or b.lo is None or a.hi is None or b.hi is None:
        return Verdict(None, "cannot tell from one repeat (no interval): measure >= 3 repeats of both "
                             "(bench --repeats 3)")
    apart = (a.lo > b.hi) if higher else (a.hi < b.lo)
    prob = prob_better(va, vb, higher)
    if apart:
        return Verdict(True, f"resolved: the 95% intervals do not overlap (P(best better) = {prob:.3f})", prob)
    if prob is not None and prob >= LEVEL_PROB:
        return Verdict(True, f"resolved: P(best better) = {prob:.3f} >= {LEVEL_PROB} (bootstrap of both medians; "
                             "the intervals overlap)", prob)
    half = (a.hi - a.lo) / 2 + (b.hi - b.lo) / 2
    n = min(a.n, b.n)
    if diff == 0 or half == 0:
        return Verdict(False, "tie: the medians are equal; more repeats would not separate them", prob)
    needed = math.ceil(n * (half / diff) ** 2)
    more = max(needed - n, 1)
    return Verdict(False, f"tie within noise (P(best better) = {prob:.3f}): the intervals overlap; roughly {more} "
                          f"more repeat(s) of each (n = {needed}) would separate a gap this size, if it is real "
                          "(interval width ~ 1/sqrt(n))", prob, more)


def search_note(run: Run) -> str | None:
    """For a run folder an adaptive search wrote (bench --search: search.csv, predictions.csv): how many of its
    plan's configurations it measured; the others are predictions, never ranked."""
    path = Path(run.path)
    predictions = path / "predictions.csv"
    if not path.is_dir() or not (path / "search.csv").is_file() or not predictions.is_file():
        return None
    import csv

    with predictions.open(newline="") as fh:
        states = [r.get("state", "") for r in csv.DictReader(fh)]
    measured = sum(1 for s in states if s != "predicted")
    return (f"{path.name} is an adaptive search (bench --search): {measured} of its plan's {len(states)} "
            "configurations measured; only those are ranked (the others' predictions are in predictions.csv)")


def tied_with_best(feasible: list[Ranked], column: str, higher: bool) -> list[Ranked]:
    """The configurations (after the best) the measurements cannot separate from the best: the verdict of best
    against each is not resolved (intervals overlap and P(best better) < LEVEL_PROB, or no interval to tell)."""
    if not feasible:
        return []
    return [r for r in feasible[1:] if not _verdict(feasible[0], r, column, higher).resolved]


def rank(cands: list[Candidate], column: str, higher: bool, limits: Limits
         ) -> tuple[list[Ranked], list[tuple[Candidate, str]]]:
    """(configurations meeting every limit, best first; the others with the first limit they miss)."""
    feasible, missed = [], []
    for cand in cands:
        worst = {col: _worst(cand.values(col)) for col, _bound in limits.columns()}
        miss = next((f"{col} {worst[col]:.4g} > {bound:g} (worst of {len(cand.rows)} repeat(s))"
                     for col, bound in limits.columns() if worst[col] > bound), None)
        if miss is not None:
            missed.append((cand, miss))
            continue
        feasible.append(Ranked(cand, cand.interval(column), worst))
    sign = -1.0 if higher else 1.0
    feasible.sort(key=lambda r: (sign * (r.interval.median or 0.0), r.candidate.sort_key()))
    # the ones that would have ranked highest first: what a limit cost
    missed.sort(key=lambda m: (sign * (m[0].interval(column).median or 0.0), m[0].sort_key()))
    return feasible, missed


def best_answer(paths: list[Path | str], objective: str = "throughput", limits: Limits | None = None,
                model: str | None = None) -> Answer:
    return answer_from_runs(load_sources(paths), objective, limits, model)


def answer_from_runs(runs: list[Run], objective: str = "throughput", limits: Limits | None = None,
                     model: str | None = None) -> Answer:
    """The answer over loaded runs (their rows are not changed: the accuracy drop is added to copies)."""
    limits = limits or Limits()
    column, higher, unit, words = objective_column(objective, limits)
    answer = Answer(objective, column, higher, unit, words, limits, runs)
    answer.notes += [n for r in runs for n in r.notes if "set aside" in n]
    answer.notes += [n for r in runs if (n := search_note(r)) is not None]
    needed = tuple(dict.fromkeys([column, *[c for c, _ in limits.columns()]]))
    groups, answer.splits = setups(runs)
    for setup in groups:
        with_drop = [replace(r, rows=with_accuracy_drop(r.rows)) for r in setup.runs]
        cands = candidates(with_drop, setup.label, needed, answer.left_out, model)
        for name in sorted({c.model for c in cands}):
            mine = [c for c in cands if c.model == name]
            feasible, missed = rank(mine, column, higher, limits)
            verdict = (_verdict(feasible[0], feasible[1] if len(feasible) > 1 else None, column, higher)
                       if feasible else Verdict(None, "no configuration meets every limit"))
            answer.answers.append(ModelAnswer(name, setup, len(mine), feasible, missed, verdict))
    if model is not None and not any(r.get("model") == model for run in runs for r in run.rows):
        found = sorted({str(r.get("model")) for run in runs for r in run.rows})
        answer.notes.append(f"--model {model}: no row of that model (the runs have: {', '.join(found)})")
    return answer
