"""The answer to "which configuration should I run, under my limits, and how sure is that?" (`edgebench best`;
rendered by report.answer).

Pure functions over typed rows (answer.candidates groups them into configurations and comparable setups):

- limits: a latency SLO on one latency percentile (p99 by default), a power cap on power_w_mean (in the row's
  power_scope, which the answer names), an accuracy floor as a drop vs FP32 in percentage points;
- a configuration meets a limit when *every* repeat that measured the limit's column meets it, an invalid repeat
  included (a measured violation is a violation; a capacity answer holds only if it holds on every repeat); its
  "worst repeat" is the worst of all of them. It ranks on its usable (ok) repeats, and its line names each invalid
  repeat with its values and why. Failed and skipped rows measured nothing; an ok row whose objective column is
  empty is not usable; each is counted with why;
- the best by the objective (median over usable repeats with its order-statistic interval, answer.intervals,
  whose coverage is stated), the runner-up, and whether the best is resolved at 95%. The best is picked from the
  data, so the test accounts for the pick (issue 54; answer.verdict): the best is resolved when its repeats rank above those of
  EVERY other configuration that meets the limits, each by the exact rank-sum test at the two-sided level
  (answer.intervals.picked_confidence: 1 - 2p of the one-sided test). For two alike configurations that bounds
  the chance of declaring either one better by 2 x 2.5%; for more, a declared best must also have beaten every
  other, which only lowers it. Measured, not assumed: benchmarks/selection_ties.py,
  docs/results/calibration/selection-ties.md (k = 2, 5, 20 alike configurations, n = 3..10: <= 5% within the
  binomial interval). Configurations with too few repeats for any outcome to reach 95% against the best's are not
  compared and the verdict names them (the choice reads repeat counts, never values). 4 vs 4 repeats all apart can reach it (1 - 2/70 = 97.1%; 3 vs 3 reaches 90%; 3 vs 5 and 2 vs 8 can too). The
  rank test's level assumes that configurations which perform alike vary alike across repeats (with the same
  median and a 2x-10x wider spread on one side it said "resolved" in up to 9.7% of trials), so when two repeats'
  ranges differ more than SPREAD_ALIKE_RATIO times the best must also be wholly apart at >= 6 repeats each
  (measured: <= 5% on spreads 2x-100x apart, the same table). Otherwise the verdict says the confidence it has
  against the closest other configuration and roughly how many repeats would settle it.

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
    setups,
)
from edgebench.answer.int8_speed import slow_int8_notes
from edgebench.answer.verdict import Ranked, Verdict, verdict_of
from edgebench.results.runs import Run

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


def accuracy_resolution_note(runs: list[Run], limits: Limits) -> str | None:
    """One line when the accuracy limit is finer than one sample of the fewest samples an accuracy was measured on
    (a drop over N samples moves in steps of 100/N pp), naming the samples a limit that fine needs; else None."""
    limit = limits.max_accuracy_drop_pct
    if limit is None or limit <= 0:
        return None
    counts = [int(r["accuracy_samples"]) for run in runs for r in run.rows
              if r.get("precision") != "fp32" and isinstance(r.get("accuracy_samples"), int) and r["accuracy_samples"] > 0
              and (r.get("accuracy_top1_agreement_pct") is not None or r.get("accuracy_top1_pct") is not None)]
    if not counts or 100.0 / min(counts) <= limit:
        return None
    fewest = min(counts)
    return (f"the accuracy limit {limit:g} pp is finer than one sample: accuracy was measured on as few as {fewest} "
            f"samples, where one sample is {100.0 / fewest:.3g} pp, so a drop reads 0 or >= {100.0 / fewest:.3g} pp; a "
            f"{limit:g} pp limit needs >= {math.ceil(100.0 / limit)} samples (run.accuracy_samples, or a labelled "
            "accuracy.dataset that large)")


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


def limit_miss(cand: Candidate, limits: Limits) -> str | None:
    """The first limit some repeat of `cand` breaks, in words ('latency_ms_p90 8.47 > 6 on repeat 1 (invalid:
    throughput unstable ...), worst of 3 repeats'), or None when every repeat that measured each limit meets it."""
    for col, bound in limits.columns():
        measured = cand.every_value(col)
        if not measured:
            continue
        worst, row = max(measured, key=lambda vr: vr[0])  # every limit is an upper bound
        if worst > bound:
            which = f"repeat {row.get('repeat')}" + (f" (invalid: {row.get('reason') or 'no reason recorded'})"
                                                      if row.get("status") == "invalid" else "")
            return f"{col} {worst:.4g} > {bound:g} on {which}, worst of {len(measured)} repeat(s)"
    return None


def rank(cands: list[Candidate], column: str, higher: bool, limits: Limits
         ) -> tuple[list[Ranked], list[tuple[Candidate, str]]]:
    """(configurations whose every repeat meets every limit, best first; the others with the first limit a repeat
    misses)."""
    feasible, missed = [], []
    for cand in cands:
        miss = limit_miss(cand, limits)
        if miss is not None:
            missed.append((cand, miss))
            continue
        worst = {col: max(v for v, _r in measured) for col, _bound in limits.columns()
                 if (measured := cand.every_value(col))}
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
            verdict = (verdict_of(feasible, column, higher) if feasible
                       else Verdict(None, "no configuration meets every limit"))
            answer.answers.append(ModelAnswer(name, setup, len(mine), feasible, missed, verdict))
    if (coarse := accuracy_resolution_note(runs, limits)) is not None:
        answer.notes.append(coarse)
    answer.notes += slow_int8_notes(runs)  # int8 slower than fp32: said, with the cause where one can be checked
    if model is not None and not any(r.get("model") == model for run in runs for r in run.rows):
        found = sorted({str(r.get("model")) for run in runs for r in run.rows})
        answer.notes.append(f"--model {model}: no row of that model (the runs have: {', '.join(found)})")
    return answer
