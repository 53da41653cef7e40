"""Paper tables from run rows, each written as CSV, Markdown and LaTeX (booktabs).

- results:  one line per results.csv row (model, backend, precision, batch, instances/placement,
            throughput, latency p50/p99, power, energy per inference, accuracy, status and reason);
- speedup:  each precision over strict fp32 per batch with the spread over repeats (report.speedup);

Every interval cell states the coverage it really has (answer.intervals): '[lo, hi]' where it reaches 95%,
'[lo, hi] 75%' below; the CSV carries it as a fraction in *_ci_coverage beside *_ci_lo / *_ci_hi.
- scaling:  throughput vs instances with the efficiency against linear scaling from the fewest instances;
- slo_search: the SLO searches side by side, one line per option set x GPU sharing mode (report.slo_table).

CSV cells keep full precision (empty = not measured); Markdown and LaTeX round for reading. Every
non-ok row stays in the results table with its status; in LaTeX its reason becomes a lettered note
under the table so the columns stay narrow, in Markdown and CSV the reason is a column.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from edgebench.answer.intervals import METHOD, Interval, median_ci
from edgebench.report.accuracy_table import accuracy_table
from edgebench.report.anchors import anchors_table, load_anchors, match_anchors
from edgebench.report.compare import cross_run_table
from edgebench.report.repeats_table import CELL_NOTE, interval_cell, repeats_table
from edgebench.report.slo_table import slo_table
from edgebench.report.speedup import BASELINE, speedup_rows
from edgebench.report.table_format import (  # noqa: F401 - PRECISION_ORDER, latex_escape: used via this module
    PRECISION_ORDER,
    Col,
    Table,
    fmt_num,
    latex_escape,
    precision_rank,
)
from edgebench.results.runs import Run
from edgebench.results.sample_unit import in_unit, sample_noun


def _multi(runs: list[Run]) -> bool:
    return len(runs) > 1


def _has(records: list[dict[str, Any]], key: str) -> bool:
    return any(r.get(key) not in (None, "") for r in records)


def _row_sort_key(row: dict[str, Any]) -> tuple:
    return (row.get("model") or "", row.get("backend") or "", row.get("mode") or "", row.get("options") or "",
            int(row.get("instances") or 0), precision_rank(row.get("precision") or ""), int(row.get("batch") or 0),
            int(row.get("row_index") or 0))


# ---------------------------------------------------------------------------------------- results


def results_table(runs: list[Run]) -> Table:
    records = []
    for run in runs:
        for row in sorted(run.rows, key=_row_sort_key):
            records.append({
                "run": run.label, "row_index": row.get("row_index", ""), "repeat": row.get("repeat"),
                "model": row.get("model") or "", "backend": row.get("backend") or "",
                "precision": row.get("precision") or "", "batch": row.get("batch"),
                "instances": row.get("instances"), "placement": row.get("placement") or "",
                "mode": row.get("mode") or "", "options": row.get("options") or "",
                "power_mode": row.get("power_mode") or "",
                "throughput_ips": row.get("throughput_ips"), "latency_ms_p50": row.get("latency_ms_p50"),
                "latency_ms_p99": row.get("latency_ms_p99"), "power_w_mean": row.get("power_w_mean"),
                "energy_per_inference_mj": row.get("energy_per_inference_mj"),
                "accuracy_top1_agreement_pct": row.get("accuracy_top1_agreement_pct"),
                "status": row.get("status") or "", "reason": row.get("reason") or "",
            })
    cols = [Col("run", "Run")] if _multi(runs) else []
    cols += [Col("row_index", "Row"), Col("model", "Model"), Col("backend", "Backend"), Col("precision", "Precision"),
             Col("batch", "Batch", True), Col("instances", "Inst.", True), Col("placement", "Placement"),
             Col("mode", "Mode")]
    if _has(records, "options"):
        cols.append(Col("options", "Options"))
    if _has(records, "power_mode"):
        cols.append(Col("power_mode", "Power mode"))
    if any(r["repeat"] for r in records):  # --repeats N: which measurement of its configuration the row is
        cols.append(Col("repeat", "Repeat", True))
    cols += [Col("throughput_ips", "Throughput (img/s)", True), Col("latency_ms_p50", "p50 (ms)", True),
             Col("latency_ms_p99", "p99 (ms)", True), Col("power_w_mean", "Power (W)", True),
             Col("energy_per_inference_mj", "Energy (mJ/img)", True),
             Col("accuracy_top1_agreement_pct", "Top-1 agr. vs fp32 (%)", True),
             Col("status", "Status"), Col("reason", "Reason")]
    counts: dict[str, int] = defaultdict(int)
    for rec in records:
        counts[str(rec["status"])] += 1
    notes = ["rows: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())),
             "empty cell = not measured (never 0): p99 needs >= 662 inferences; power/energy need a power sampler"]
    return Table("results", "Results per configuration", cols, records, notes, latex_notes_from="reason")


def _int(value: Any) -> int | None:
    """speedup_rows' group keys are text ("8"): the batch / instances of a speedup record as numbers."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------------------- speedup


def speedup_table(runs: list[Run]) -> Table:
    records = []
    for run in runs:  # never across runs: fp32 of one board is not the baseline of another
        for rec in speedup_rows(run.rows):
            rec = dict(rec, run=run.label, ok_all=f"{rec['repeats_ok']}/{rec['repeats_all']}",
                       batch=_int(rec["batch"]), instances=_int(rec["instances"]))
            # one pairing (one ok repeat a side) has no range: its min and max are the same number
            rec["speedup_range"] = (f"{fmt_num(rec['speedup_min'], 3)}..{fmt_num(rec['speedup_max'], 3)}"
                                    if rec["speedup_min"] is not None and rec["speedup_min"] != rec["speedup_max"]
                                    else "")
            rec["speedup_ci"] = "baseline" if rec["precision"] == BASELINE else interval_cell(
                Interval(rec["speedup_vs_fp32"], rec["speedup_ci_lo"], rec["speedup_ci_hi"], rec["repeats_ok"],
                         rec["speedup_ci_coverage"]), lower_bound=True)
            rec["throughput_ci"] = interval_cell(Interval(rec["throughput_ips_median"], rec["throughput_ips_ci_lo"],
                                                          rec["throughput_ips_ci_hi"], rec["repeats_ok"],
                                                          rec["throughput_ips_ci_coverage"]))
            records.append(rec)
    records.sort(key=lambda r: (r["run"], r["model"], r["backend"], r["mode"], r["options"], r["instances"] or 0,
                                r["batch"] or 0, precision_rank(r["precision"])))
    cols = [Col("run", "Run")] if _multi(runs) else []
    cols += [Col("model", "Model"), Col("backend", "Backend"), Col("batch", "Batch", True),
             Col("instances", "Inst.", True), Col("mode", "Mode")]
    if _has(records, "options"):
        cols.append(Col("options", "Options"))
    if _has(records, "power_mode"):
        cols.append(Col("power_mode", "Power mode"))
    cols += [Col("precision", "Precision"), Col("ok_all", "ok/all repeats"),
             Col("throughput_ips_median", "Throughput median (img/s)", True),
             Col("throughput_ci", "Throughput interval, coverage (img/s)"),
             Col("throughput_ips_ci_lo", "Throughput interval low (img/s)", True, csv_only=True),
             Col("throughput_ips_ci_hi", "Throughput interval high (img/s)", True, csv_only=True),
             Col("throughput_ips_ci_coverage", "Throughput interval coverage (fraction)", True, csv_only=True),
             Col("speedup_vs_fp32", "Speedup vs fp32 (x)", True),
             Col("speedup_ci", "Speedup interval, coverage (x)"),
             Col("speedup_ci_lo", "Speedup interval low (x)", True, csv_only=True),
             Col("speedup_ci_hi", "Speedup interval high (x)", True, csv_only=True),
             Col("speedup_ci_coverage", "Speedup interval coverage, lower bound (fraction)", True, csv_only=True),
             Col("speedup_range", "Range (x)"),
             Col("speedup_min", "Speedup min (x)", True, csv_only=True),
             Col("speedup_max", "Speedup max (x)", True, csv_only=True),
             Col("tensor_core_time_pct_median", "TC time (%)", True),
             Col("energy_per_inference_mj_median", "Energy median (mJ/img)", True)]
    return Table("speedup", "Speedup over strict fp32 per batch (median of ok repeats; range = worst..best pairing)",
                  cols, records,
                  ["only ok rows count; ok/all shows repeats that were invalid or failed; skipped rows are left out",
                   "no speedup without an ok fp32 row for the same configuration",
                   f"interval: {METHOD}; 'n=1' = one ok repeat, no interval", CELL_NOTE,
                   "speedup interval: [lo_p / hi_fp32, hi_p / lo_fp32] from the two medians' intervals; its coverage "
                   "is the product of theirs, a lower bound ('>=56.2%': 3 and 3 repeats)"])


# ---------------------------------------------------------------------------------------- scaling

SCALING_KEYS = ("model", "backend", "precision", "batch", "mode", "options", "power_mode")


def scaling_records(run: Run) -> list[dict[str, Any]]:
    """Per configuration with >= 2 instance counts: median ok throughput at each count and its efficiency
    = throughput(n) / (throughput(n0) * n / n0), n0 the fewest instances with an ok row."""
    groups: dict[tuple, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in run.rows:
        n = row.get("instances")
        if n is None or row.get("status") == "skipped":
            continue
        groups[tuple(row.get(k) or "" for k in SCALING_KEYS)][n].append(row)
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], precision_rank(k[2]), int(k[3] or 0), k[4], k[5])):
        by_n = groups[key]
        if len(by_n) < 2:
            continue
        medians: dict[int, float | None] = {}
        cis: dict[int, Interval] = {}
        for n, rows in by_n.items():
            tput = [t for r in rows if r.get("status") == "ok" and (t := r.get("throughput_ips")) is not None]
            cis[n] = median_ci(tput)
            medians[n] = cis[n].median
        ok_ns = [n for n in sorted(by_n) if medians[n] is not None]
        # the baseline is the fewest instances measured: when those rows are not ok there is none (a 2-instance
        # row at 100% of itself says nothing about scaling)
        n0 = ok_ns[0] if ok_ns and ok_ns[0] == min(by_n) else None
        for n in sorted(by_n):
            rows = by_n[n]
            rec: dict[str, Any] = dict(zip(SCALING_KEYS, key), run=run.label, batch=_int(key[3]), instances=n,
                                       placement=rows[0].get("placement") or "",
                                       ok_all=f"{sum(r.get('status') == 'ok' for r in rows)}/{len(rows)}",
                                       throughput_ips_median=medians[n], baseline_instances=n0,
                                       throughput_ips_ci_lo=cis[n].lo, throughput_ips_ci_hi=cis[n].hi,
                                       throughput_ips_ci_coverage=cis[n].coverage,
                                       throughput_ci=interval_cell(cis[n]),
                                       throughput_ips_per_instance=None, throughput_ips_linear=None,
                                       scaling_efficiency_pct=None)
            med, base = medians[n], (medians[n0] if n0 is not None else None)
            if med is not None:
                rec["throughput_ips_per_instance"] = med / n
            if n0 is not None and base is not None:
                linear = base * n / n0
                rec["throughput_ips_linear"] = linear
                if med is not None:
                    rec["scaling_efficiency_pct"] = 100.0 * med / linear
            out.append(rec)
    return out


def scaling_table(runs: list[Run]) -> Table:
    records = [rec for run in runs for rec in scaling_records(run)]
    cols = [Col("run", "Run")] if _multi(runs) else []
    cols += [Col("model", "Model"), Col("backend", "Backend"), Col("precision", "Precision"),
             Col("batch", "Batch", True), Col("mode", "Mode")]
    if _has(records, "options"):
        cols.append(Col("options", "Options"))
    if _has(records, "power_mode"):
        cols.append(Col("power_mode", "Power mode"))
    cols += [Col("instances", "Inst.", True), Col("ok_all", "ok/all"),
             Col("throughput_ips_median", "Throughput median (img/s)", True),
             Col("throughput_ci", "Throughput interval, coverage (img/s)"),
             Col("throughput_ips_ci_lo", "Throughput interval low (img/s)", True, csv_only=True),
             Col("throughput_ips_ci_hi", "Throughput interval high (img/s)", True, csv_only=True),
             Col("throughput_ips_ci_coverage", "Throughput interval coverage (fraction)", True, csv_only=True),
             Col("throughput_ips_per_instance", "Per instance (img/s)", True),
             Col("throughput_ips_linear", "Linear from fewest (img/s)", True),
             Col("scaling_efficiency_pct", "Scaling efficiency (%)", True)]
    notes = ["efficiency = throughput(n) / (throughput(n0) * n / n0), n0 = fewest instances measured; only ok rows "
             "count; no efficiency when the n0 rows are not ok (no baseline)",
             f"interval: {METHOD}; 'n=1' = one ok repeat, no interval", CELL_NOTE]
    if not records:
        notes.append("no configuration was measured at two or more instance counts")
    return Table("scaling", "Throughput scaling with concurrent instances", cols, records, notes)


def all_tables(runs: list[Run]) -> list[Table]:
    tables = [results_table(runs), repeats_table(runs), speedup_table(runs), scaling_table(runs)]

    if (accuracy := accuracy_table(runs)) is not None:  # only when rows were scored against labels
        tables.append(accuracy)
    if (slo := slo_table(runs)) is not None:  # only runs with an SLO search (slo_search.csv)
        tables.append(slo)
    if len(runs) > 1:
        tables.append(cross_run_table(runs))
    matches, _unmatched = match_anchors(runs, load_anchors())
    if matches:  # only when a row's setup matches a published result (the summary says why not otherwise)
        tables.append(anchors_table(matches))
    noun = sample_noun(r for run in runs for r in run.rows)  # img/s for images, samples/s otherwise
    for t in tables:
        t.columns = [replace(c, header=in_unit(c.header, noun)) for c in t.columns]
    return tables
