"""The search's own files in the run folder, never mixed with measured cells (results.csv holds only measurements):

- predictions.csv: every configuration of the plan, what the search knows of it (measured / predicted / failed /
  invalid only, rows measured and usable), the surrogate's prediction of every metric the answer reads with its 95%
  interval, P(meets every limit) and P(measuring it changes the answer); rewritten (atomically) after every step;
- search.csv: one line per step: what it picked to measure and why, and, as the pick was made, the rows measured so
  far (rows_used) of the budget and the answer over them (answer_after: the answer after the steps before it); the
  last line is the stop and its reason, with the final answer.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from edgebench.atomic_files import write_bytes_atomic
from edgebench.search.decide import Decision, Predicted

STEP_COLUMNS = ("step", "phase", "model", "configuration", "rows_measured_now", "p_changes_answer", "why",
                "rows_used", "budget_rows", "answer_after")


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def write_predictions(path: Path, predictions: list[Predicted]) -> None:
    metrics = sorted({c for p in predictions for c in p.metrics})
    cols = ["model", "configuration", "state", "rows_measured", "rows_usable", "p_meets_limits", "p_changes_answer"]
    for m in metrics:
        cols += [f"predicted_{m}", f"predicted_{m}_lo95", f"predicted_{m}_hi95"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for p in predictions:
        line = [p.model, p.label, p.state, p.rows_measured, p.rows_usable, p.p_feasible, p.p_change]
        for m in metrics:
            line += list(p.metrics.get(m, (None, None, None)))
        w.writerow([_fmt(v) for v in line])
    write_bytes_atomic(path, buf.getvalue().encode())


def append_step(path: Path, step: int, decision: Decision, labels: dict[str, tuple[str, str]], rows_used: int,
                budget: int) -> None:
    """One line of search.csv (the header first when the file is new); `labels`: point key -> (model, label)."""
    new = not path.exists()
    pick = decision.pick
    answer = "; ".join(f"{m}: {s.text}" for m, s in sorted(decision.answers.items()) if s.text)
    model, label = labels.get(pick.key, ("", "")) if pick is not None else ("", "")
    line = [step, pick.phase if pick else "stop", model, label, len(pick.hashes) if pick else 0,
            pick.p_change if pick else None, pick.why if pick else decision.stop, rows_used, budget, answer]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if new:
        w.writerow(STEP_COLUMNS)
    w.writerow([_fmt(v) for v in line])
    with path.open("a") as f:
        f.write(buf.getvalue())
        f.flush()
