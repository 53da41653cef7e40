"""Accuracy vs precision per model: top-1/top-5 against labels, the change from fp32, agreement with fp32.

One line per (run, model, weights, backend, options, precision) that has labelled accuracy (rows with
accuracy_top1_pct); rows of several batches / instance counts of one such group are scored on the same images,
so the line shows their median and how many rows it pools. Only ok and invalid rows count (accuracy is computed
outside the window, so a row made invalid by its timing still has it).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from edgebench.report.table_format import Col, Table, precision_rank
from edgebench.results.runs import Run

GROUP_KEYS = ("model", "weights", "backend", "options", "precision")


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [v for r in rows if (v := r.get(key)) is not None]
    return statistics.median(values) if values else None


def accuracy_records(run: Run) -> list[dict[str, Any]]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in run.rows:
        if row.get("status") in ("ok", "invalid") and row.get("accuracy_top1_pct") is not None:
            groups[tuple(row.get(k) or "" for k in GROUP_KEYS)].append(row)
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], k[3], precision_rank(k[4]))):
        rows = groups[key]
        rec: dict[str, Any] = dict(zip(GROUP_KEYS, key), run=run.label, rows=len(rows),
                                   accuracy_top1_pct=_median(rows, "accuracy_top1_pct"),
                                   accuracy_top5_pct=_median(rows, "accuracy_top5_pct"),
                                   accuracy_top1_agreement_pct=_median(rows, "accuracy_top1_agreement_pct"),
                                   accuracy_samples=rows[0].get("accuracy_samples") or None,
                                   calibration=rows[0].get("calibration_source") or "")
        out.append(rec)
    fp32 = {(r["model"], r["weights"], r["backend"], r["options"]): r["accuracy_top1_pct"]
            for r in out if r["precision"] == "fp32"}
    for rec in out:
        base = fp32.get((rec["model"], rec["weights"], rec["backend"], rec["options"]))
        rec["top1_change_vs_fp32_pp"] = (rec["accuracy_top1_pct"] - base) if base is not None else None
    return out


def accuracy_table(runs: list[Run]) -> Table | None:
    """None when no row was scored against labels (the table would be empty)."""
    records = [rec for run in runs for rec in accuracy_records(run)]
    if not records:
        return None
    cols = [Col("run", "Run")] if len(runs) > 1 else []
    cols += [Col("model", "Model"), Col("weights", "Weights"), Col("backend", "Backend")]
    if any(r["options"] for r in records):
        cols.append(Col("options", "Options"))
    cols += [Col("precision", "Precision"), Col("accuracy_top1_pct", "Top-1 (%)", True),
             Col("accuracy_top5_pct", "Top-5 (%)", True),
             Col("top1_change_vs_fp32_pp", "Top-1 change vs fp32 (pp)", True),
             Col("accuracy_top1_agreement_pct", "Top-1 agr. vs fp32 (%)", True),
             Col("accuracy_samples", "Images", True), Col("rows", "Rows", True), Col("calibration", "Calibration")]
    notes = ["top-1/top-5 against the data set's labels on the same evaluated images for every precision; "
             "change vs fp32 = this precision minus fp32 of the same backend and weights (percentage points)",
             "int8 calibration images are a subset disjoint from the evaluated ones when the source is 'labelled'"]
    return Table("accuracy", "Accuracy vs precision per model (labelled images)", cols, records, notes)
