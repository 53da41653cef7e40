"""Comparisons across runs (boards, devices, software versions): the same configuration side by side.

A configuration is (model, backend, precision, batch, instances, mode, options); placement names differ
between boards (cuda:0, gpu, dla0), so it is shown but not part of the key. For each configuration
measured in two or more runs, every run gets one line: median throughput and energy per inference of its
ok rows and their ratio to the first run given on the command line (the reference). A run with no ok row
for a configuration keeps its line, with ok/all showing why its values are empty.

Every line says how far its ratio can be read (answer/comparability.py): the setup facts in which this run's
rows differ from the reference's (versions, board, power mode, threads, provider, weights, input data, engine
cache...); a ratio between setups that differ in more than one fact is labelled CONFOUNDED.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from edgebench.answer.comparability import differences, pair_label, run_differences, run_facts
from edgebench.report.table_format import Col, Table, precision_rank
from edgebench.results.runs import Run

COMPARE_KEYS = ("model", "backend", "precision", "batch", "instances", "mode", "options", "power_mode")


def _median_ok(rows: list[dict[str, Any]], column: str) -> float | None:
    vals = [v for r in rows if r.get("status") == "ok" and (v := r.get(column)) is not None]
    return statistics.median(vals) if vals else None


def cross_run_records(runs: list[Run]) -> tuple[list[dict[str, Any]], int]:
    """(records, configurations measured in only one run and therefore left out)."""
    per_key: dict[tuple, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for i, run in enumerate(runs):
        for row in run.rows:
            if row.get("status") == "skipped":
                continue
            per_key[tuple(row.get(k) or "" for k in COMPARE_KEYS)][i].append(row)
    records = []
    single = 0
    order = sorted(per_key, key=lambda k: (k[0], k[1], k[5], k[6], int(k[4] or 0), precision_rank(k[2]), int(k[3] or 0)))
    for key in order:
        by_run = per_key[key]
        if len(by_run) < 2:
            single += 1
            continue
        ref_facts = run_facts(runs[0], by_run.get(0, [])) if by_run.get(0) else None
        ref_tput = _median_ok(by_run.get(0, []), "throughput_ips")
        ref_energy = _median_ok(by_run.get(0, []), "energy_per_inference_mj")
        for i, run in enumerate(runs):
            rows = by_run.get(i, [])
            tput = _median_ok(rows, "throughput_ips")
            energy = _median_ok(rows, "energy_per_inference_mj")
            rec: dict[str, Any] = dict(zip(COMPARE_KEYS, key))
            if i == 0 or ref_facts is None or not rows:
                setup = "reference" if i == 0 else ""
            else:
                setup = pair_label(differences([ref_facts, run_facts(run, rows)]))
            rec.update(
                setup_vs_reference=setup,
                batch=int(key[3]) if key[3] else None, instances=int(key[4]) if key[4] else None,
                run=run.label, reference="yes" if i == 0 else "",
                placement=rows[0].get("placement") or "" if rows else "",
                ok_all=f"{sum(r.get('status') == 'ok' for r in rows)}/{len(rows)}" if rows else "not run",
                throughput_ips_median=tput, energy_per_inference_mj_median=energy,
                throughput_ratio=tput / ref_tput if tput is not None and ref_tput else None,
                energy_ratio=energy / ref_energy if energy is not None and ref_energy else None,
            )
            records.append(rec)
    return records, single


def cross_run_table(runs: list[Run]) -> Table:
    records, single = cross_run_records(runs)
    cols = [Col("model", "Model"), Col("backend", "Backend"), Col("precision", "Precision"),
            Col("batch", "Batch", True), Col("instances", "Inst.", True), Col("mode", "Mode")]
    for key, header in (("options", "Options"), ("power_mode", "Power mode")):
        if any(r.get(key) for r in records):
            cols.append(Col(key, header))
    cols += [Col("run", "Run"), Col("placement", "Placement"), Col("ok_all", "ok/all"),
             Col("throughput_ips_median", "Throughput median (img/s)", True),
             Col("throughput_ratio", "Throughput / reference (x)", True),
             Col("energy_per_inference_mj_median", "Energy median (mJ/img)", True),
             Col("energy_ratio", "Energy / reference (x)", True),
             Col("setup_vs_reference", "Setup vs reference")]
    notes = [f"reference run: {runs[0].label} ({runs[0].path})",
             "medians of ok rows; a ratio is empty when either side has no ok value"]
    diffs = run_differences(runs)
    if diffs:
        notes.append("the runs differ in: " + "; ".join(
            f"{d.fact} ({' vs '.join(d.values)})" for d in diffs))
    else:
        notes.append("the runs record the same setup (see the report's comparability section)")
    notes.append("Setup vs reference: the facts this configuration's rows differ in; CONFOUNDED = more than one, "
                 "so the ratio is not the effect of one factor")
    if single:
        notes.append(f"{single} configuration(s) measured in only one run are not compared")
    return Table("cross_run", "The same configurations across runs", cols, records, notes)
