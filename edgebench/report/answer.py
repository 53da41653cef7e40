"""`edgebench best` and the end of `bench` as text: the answer (decided in answer.best) rendered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.answer.best import Answer, Limits, best_answer
from edgebench.answer.candidates import value_text
from edgebench.answer.intervals import METHOD
from edgebench.answer.verdict import Ranked

# ------------------------------------------------------------------------------------ text


def _limit_words(limits: Limits) -> list[str]:
    out = []
    if limits.slo_ms is not None:
        out.append(f"{limits.latency_column()} <= {limits.slo_ms:g} ms (per batch)")
    if limits.power_cap_w is not None:
        out.append(f"power_w_mean <= {limits.power_cap_w:g} W (in each row's power_scope, named below)")
    if limits.max_accuracy_drop_pct is not None:
        out.append(f"accuracy drop vs FP32 <= {limits.max_accuracy_drop_pct:g} percentage points")
    return out


def ranked_line(r: Ranked, unit: str) -> str:
    cand = r.candidate
    limits = ", ".join(value_text(c, v) for c, v in r.limit_values.items())
    scope = f"; power scope {cand.power_scope()}" if "power_w_mean" in r.limit_values else ""
    n = f" (n={r.interval.n})" if r.interval.n > 1 else ""
    invalid = cand.invalid_text([r_col for r_col in r.limit_values])
    return (f"{cand.label()}: {r.interval.text()} {unit}{n}"
            + (f"; worst repeat: {limits}" if limits else "") + scope
            + (f"; not pooled: {invalid}" if invalid else ""))


def to_text(answer: Answer, top: int = 5) -> str:
    lines = [f"edgebench best: {answer.words} ({answer.column}, {answer.unit}); "
             f"median of repeats [{METHOD}]"]
    limit_words = _limit_words(answer.limits)
    lines.append("limits: " + ("; ".join(limit_words) + ", on every repeat that measured it (invalid ones included)" if limit_words else "none given"))
    lines.append("runs: " + "; ".join(f"{r.path} ({r.label})" for r in answer.runs))
    lines += [f"not ranked together: {s}" for s in answer.splits]
    lines += [f"note: {n}" for n in answer.notes]
    if answer.left_out.total():
        lines.append(f"left out: {answer.left_out.total()} row(s) not usable:")
        lines += [f"  {line}" for line in answer.left_out.lines()]
    if not answer.answers:
        lines.append("no usable row: nothing to rank")
    lat = answer.limits.latency_column()
    if any(why.startswith(f"{lat} empty") for why in answer.left_out.counts):
        lines.append(f"hint: rows without {lat} had too few inferences for that percentile; a longer --duration "
                     "gives one, or judge the SLO on another percentile (--slo-percentile p90)")
    for a in answer.answers:
        lines.append("")
        lines.append(f"model {a.model} on {a.setup.label}: {len(a.feasible)} of {a.considered} configuration(s) "
                     "meet every limit")
        if a.setup.caveats:
            lines.append(f"  caveat: not recorded in every run ranked here: {', '.join(a.setup.caveats)}")
        if a.feasible:
            lines.append(f"  best:      {ranked_line(a.feasible[0], answer.unit)}")
            if len(a.feasible) > 1:
                lines.append(f"  runner-up: {ranked_line(a.feasible[1], answer.unit)}")
            lines.append(f"  verdict:   {a.verdict.text}")
            for i, r in enumerate(a.feasible[2:top], start=3):
                lines.append(f"  #{i}:        {ranked_line(r, answer.unit)}")
            if len(a.feasible) > top:
                lines.append(f"  ... {len(a.feasible) - top} more meet every limit")
        else:
            lines.append(f"  {a.verdict.text}")
        if a.missed:
            closest = a.missed[:3]
            lines.append(f"  missed a limit: {len(a.missed)} configuration(s), best by the objective first: "
                         + "; ".join(f"{c.label()} ({why})" for c, why in closest))
    return "\n".join(lines)


def limits_from(args: Any) -> Limits:
    return Limits(slo_ms=getattr(args, "slo_ms", None), percentile=getattr(args, "slo_percentile", None) or "p99",
                  power_cap_w=getattr(args, "power_cap_w", None),
                  max_accuracy_drop_pct=getattr(args, "max_accuracy_drop", None))


def best_text(args: Any) -> str:
    """`edgebench best`'s output for its parsed arguments."""
    answer = best_answer(list(args.run_dirs), args.objective, limits_from(args), args.model)
    return to_text(answer, top=max(int(getattr(args, "top", 5) or 5), 2))


def bench_answer(run_dir: Path, args: Any, by_default: bool = True) -> str | None:
    """The answer `bench` prints at its end: under --objective, --power-cap-w, --max-accuracy-drop (and --slo-ms,
    the SLO search's bound) when given, else, with `by_default`, the default objective (highest throughput, no
    limits) with its confidence; None when nothing was given and not `by_default` (an SLO search, whose own table
    is its answer)."""
    limits = limits_from(args)
    objective = getattr(args, "objective", None)
    if objective is None and limits.power_cap_w is None and limits.max_accuracy_drop_pct is None and not by_default:
        return None
    return to_text(best_answer([run_dir], objective or "throughput", limits))


def next_steps(run_dir: Path) -> str:
    """The lines that close a bench: how to read the run, and where it is."""
    return (f"next: edgebench report {run_dir}   (tables, figures with intervals, summary page)\n"
            f"run folder: {run_dir}")
